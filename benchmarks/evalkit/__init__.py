"""The benchmarks' generators of labelled data: synthetic reprints (``edits``), daily template
reports (``templates``) and pairs made from corpora (``pairs``); newscrawl.evaluation scores them.
docs/design/fingerprint.md#quality-evaluation.
"""

from __future__ import annotations

from evalkit.edits import EDITS, EditContext
from evalkit.pairs import Doc, PairSet, load_sogou, load_thucnews, make_pairs

__all__ = ["EDITS", "Doc", "EditContext", "PairSet", "load_sogou", "load_thucnews", "make_pairs"]
