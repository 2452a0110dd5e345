"""Quality evaluation of fingerprints: labelled reprint pairs, precision/recall, markdown reports.

make_pairs(docs, seed=0) -> PairSet        # positives per edit kind + same-category negatives
evaluate(pairs, fingerprinter) -> EvalReport
format_report(report) -> str               # markdown
run_eval(path) -> str                      # what ``newscrawl eval PAIRS.jsonl`` prints
"""

from __future__ import annotations

from newscrawl.evaluation.edits import EDITS, EditContext
from newscrawl.evaluation.evaluate import (
    EvalReport,
    KindRow,
    LengthRow,
    ThresholdRow,
    evaluate,
    format_report,
    run_eval,
)
from newscrawl.evaluation.pairs import (
    Doc,
    Pair,
    PairFormatError,
    PairSet,
    load_sogou,
    load_sohu_pairs,
    load_thucnews,
    make_pairs,
    read_pairs,
    write_pairs,
)

__all__ = [
    "EDITS",
    "Doc",
    "EditContext",
    "EvalReport",
    "KindRow",
    "LengthRow",
    "Pair",
    "PairFormatError",
    "PairSet",
    "ThresholdRow",
    "evaluate",
    "format_report",
    "load_sogou",
    "load_sohu_pairs",
    "load_thucnews",
    "make_pairs",
    "read_pairs",
    "run_eval",
    "write_pairs",
]
