"""The benchmarks' generators of labelled data: synthetic reprints (``edits``), daily template
reports (``templates``) and pairs made from corpora (``pairs``).

Scoring is newscrawl's own (:mod:`newscrawl.evaluation`, ``newscrawl eval``); this package only
makes the pairs and streams the benchmarks score. Scripts under ``benchmarks/`` import it as
``evalkit`` (their directory is first on ``sys.path``).
"""

from __future__ import annotations

from evalkit.edits import EDITS, EditContext
from evalkit.pairs import (
    Doc,
    PairSet,
    char3_jaccard,
    load_sogou,
    load_sohu_pairs,
    load_thucnews,
    make_pairs,
)

__all__ = [
    "EDITS",
    "Doc",
    "EditContext",
    "PairSet",
    "char3_jaccard",
    "load_sogou",
    "load_sohu_pairs",
    "load_thucnews",
    "make_pairs",
]
