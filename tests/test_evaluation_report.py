from __future__ import annotations

from pathlib import Path

from newscrawl.evaluation import Pair, evaluate, format_report, run_eval
from newscrawl.simhash import fingerprint, hamming


class TableFingerprinter:
    """A stand-in fingerprinter with chosen values: expected numbers can be worked out by hand."""

    version = "table"

    def __init__(self, table: dict[str, int | None]) -> None:
        self.table = table

    def fingerprint(self, text: str) -> int | None:
        return self.table[text]


def test_precision_recall_by_hand() -> None:
    fp = TableFingerprinter(
        {"a": 0b0, "a1": 0b1, "a3": 0b111, "a5": 0b11111, "b": 0b11, "c": 0b1111, "n": None}
    )
    pairs = [
        Pair("a", "a1", True, "k1"),  # d=1
        Pair("a", "a3", True, "k1"),  # d=3
        Pair("a", "a5", True, "k2"),  # d=5
        Pair("a", "n", True, "k2"),  # no fingerprint: never found
        Pair("a", "b", False, "neg"),  # d=2 -> false positive at k >= 2
        Pair("a", "c", False, "neg"),  # d=4
    ]
    rep = evaluate(pairs, fp)
    rows = {r.threshold: r for r in rep.thresholds}
    assert (rows[0].tp, rows[0].fp, rows[0].fn) == (0, 0, 4)
    assert rows[0].precision == 1.0 and rows[0].recall == 0.0
    assert (rows[1].tp, rows[1].fp) == (1, 0)
    assert (rows[2].tp, rows[2].fp) == (1, 1) and rows[2].precision == 0.5
    assert (rows[3].tp, rows[3].fp, rows[3].fn) == (2, 1, 2)
    assert (rows[5].tp, rows[5].fp, rows[5].fn, rows[5].tn) == (3, 2, 1, 0)
    assert rows[8].recall == 0.75
    kinds = {k.kind: k for k in rep.kinds}
    assert (kinds["k1"].matched, kinds["k1"].pairs, kinds["k1"].rate) == (2, 2, 1.0)
    assert (kinds["k2"].matched, kinds["k2"].no_fingerprint) == (0, 1)
    assert kinds["neg"].matched == 1 and not kinds["neg"].duplicate
    assert rep.positives == 4 and rep.negatives == 2 and rep.texts == 7
    md = format_report(rep)
    assert "| 3 **(chosen)** | 0.6667 | 0.5000 | 2 | 1 | 2 |" in md
    assert "| k2 | yes | 2 | 0 | 0.000 | 1 | 5 | 5 |" in md


def test_recall_by_length_of_the_first_text() -> None:
    short, mid, long_ = "s" * 10, "m" * 700, "l" * 2500
    fp = TableFingerprinter({short: 0, mid: 0, long_: 0, "x": 0b1111, "y": 0b1})
    pairs = [
        Pair(short, "y", True, "k"),  # d=1, < 500 characters
        Pair(short, "x", True, "k"),  # d=4: missed
        Pair(mid, "y", True, "k"),  # 500-999
        Pair(long_, "x", True, "k"),  # >= 2000, missed
        Pair(long_, "y", False, "neg"),  # negatives are not in the length table
    ]
    rep = evaluate(pairs, fp)
    rows = {r.label: (r.pairs, r.matched) for r in rep.lengths}
    assert rows == {"0-499": (2, 1), "500-999": (1, 1), ">= 2,000": (1, 0)}
    assert "| >= 2,000 | 1 | 0 | 0.000 |" in format_report(rep)


def test_run_eval_with_the_real_fingerprinter(tmp_path: Path) -> None:
    body = (
        "国家统计局今天发布数据，一季度国内生产总值同比增长百分之五点三，比上年四季度加快零点一个百分点。"
        "统计局新闻发言人表示，国民经济开局良好，工业生产稳定增长，消费市场持续恢复，就业形势总体稳定。"
    ) * 3
    other = (
        "湖人队在主场以一百零五比九十八击败马刺队，科比全场砍下三十二分，加索尔贡献两双，球队锁定西部第一。"
        "赛后主教练表示球员们表现出色，但季后赛才是真正的考验，球队需要保持专注。"
    ) * 3
    pairs = [
        Pair(body, body, True, "exact"),
        Pair(body, body.replace("，", ","), True, "width"),
        Pair(body, other, False, "same_category"),
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(p.to_json() + "\n" for p in pairs), encoding="utf-8")
    md = run_eval(str(path))
    fa, fo = fingerprint(body), fingerprint(other)
    assert fa is not None and fo is not None and hamming(fa, fo) > 3
    assert "| 3 **(chosen)** | 1.0000 | 1.0000 | 2 | 0 | 0 |" in md
    assert "| same_category | no | 1 | 0 | 0.000 | 0 |" in md
