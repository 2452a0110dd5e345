from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from newscrawl.evaluation import Pair, PairFormatError, read_pairs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from evalkit import EDITS, Doc, EditContext, make_pairs  # noqa: E402
from evalkit.edits import sentences  # noqa: E402

BASE = [
    "国家统计局今天发布数据，一季度国内生产总值同比增长百分之五点三。",
    "统计局新闻发言人表示，国民经济开局良好，工业生产稳定增长！",
    "消费市场持续恢复，固定资产投资规模扩大，就业形势总体稳定？",
    "专家认为，随着一系列稳增长政策落地见效，经济回升向好的态势将进一步巩固。",
    "下一步，有关部门将加大宏观政策调控力度，着力扩大国内需求。",
    "分析人士指出，外部环境依然复杂严峻，部分企业经营仍面临困难。",
]
TEXT = "一季度经济数据发布\n" + "".join(BASE)
OTHER = (
    "湖人队在主场击败马刺队，科比全场砍下三十二分。"
    "球队锁定西部第一，主教练表示满意。季后赛才是真正的考验。"
)
CTX = EditContext(others=[OTHER])


def run(kind: str, seed: int = 1, text: str = TEXT) -> str:
    return EDITS[kind](text, random.Random(seed), CTX)


@pytest.mark.parametrize("kind", sorted(EDITS))
def test_every_edit_is_deterministic_and_changes_the_text(kind: str) -> None:
    assert run(kind, 5) == run(kind, 5)
    assert run(kind, 5) != TEXT


def test_sentences_roundtrip() -> None:
    parts = sentences(TEXT)
    assert "".join(parts) == TEXT
    assert len(parts) == 7  # headline line + six sentences


def test_source_line_and_footer() -> None:
    for seed in range(6):
        out = run("source_line", seed)
        assert "来源：" in out and "责任编辑：" in out
        assert out.startswith(TEXT) or out.endswith(TEXT)
        foot = run("footer", seed)
        assert foot.startswith(TEXT + "\n") and 31 + 1 <= len(foot) - len(TEXT) <= 49 + 1


def test_drop_and_insert_one_sentence() -> None:
    for seed in range(6):
        dropped = sentences(run("drop_sentence", seed))
        original = sentences(TEXT)
        assert len(dropped) == len(original) - 1
        assert dropped[0] == original[0]  # never the first
        assert all(s in original for s in dropped)
        inserted = sentences(run("insert_sentence", seed))
        assert len(inserted) == len(original) + 1
        extra = [s for s in inserted if s not in original]
        assert len(extra) == 1 and extra[0] in sentences(OTHER)


def test_headline_keeps_body() -> None:
    body = TEXT[TEXT.index("\n") :]
    for seed in range(6):
        out = run("headline", seed)
        assert out.endswith(body) and out != TEXT


def test_width_typos_truncate() -> None:
    w = run("width", 1, TEXT + "ABC 2024")
    assert "ＡＢＣ" in w and "２０２４" in w and "，" not in w
    for seed in range(6):
        t = run("typos", seed)
        assert len(t) == len(TEXT)
        assert 2 <= sum(a != b for a, b in zip(t, TEXT, strict=True)) <= 4
        cut = run("truncate", seed)
        assert TEXT.startswith(cut)
        assert 0.8 * 0.8 * len(TEXT) <= len(cut) <= 0.95 * len(TEXT) + 1


def _docs() -> list[Doc]:
    docs = []
    for i in range(6):
        rot = BASE[i:] + BASE[:i]
        docs.append(
            Doc(text=f"标题{i}\n" + "".join(rot) + f"第{i}篇。" * 3, category="c" + str(i % 2))
        )
    docs.append(Doc(text=docs[0].text, category="c0"))  # an exact duplicate in the corpus
    docs.append(Doc(text="太短了", category="c0"))
    return docs


def test_make_pairs_deterministic_labelled(tmp_path: Path) -> None:
    a = make_pairs(_docs(), seed=3, negatives_per_doc=2)
    b = make_pairs(_docs(), seed=3, negatives_per_doc=2)
    assert a.pairs == b.pairs
    assert make_pairs(_docs(), seed=4).pairs != a.pairs
    kinds = {p.kind for p in a.pairs if p.duplicate}
    assert kinds == set(EDITS) | {"exact"}
    exact = [p for p in a.pairs if p.kind == "exact"]
    assert len(exact) == 1 and exact[0].a == exact[0].b
    assert all(len(p.a) >= 200 for p in a.pairs)  # the too-short doc is skipped
    negatives = [p for p in a.pairs if not p.duplicate]
    # the texts here share most sentences: near-identical negatives are left out, and counted
    assert sum(a.excluded.values()) + len(negatives) == 6 * 2
    assert all(p.a != p.b and p.kind == "same_category" for p in negatives)
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(p.to_json() + "\n" for p in a.pairs), encoding="utf-8")
    assert list(read_pairs(path)) == a.pairs
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert set(first) == {"a", "b", "duplicate", "kind"}


def test_make_pairs_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown edit kinds"):
        make_pairs(_docs(), kinds=["nope"])


def test_read_pairs_reports_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = Pair("甲", "乙", True, "x").to_json()
    path.write_text(good + "\n\n{not json}\n", encoding="utf-8")
    with pytest.raises(PairFormatError, match=r"bad.jsonl:3"):
        list(read_pairs(path))
    path.write_text(good + '\n{"a": "x", "b": "y", "duplicate": "yes"}\n', encoding="utf-8")
    with pytest.raises(PairFormatError, match=r"bad.jsonl:2: 'duplicate'"):
        list(read_pairs(path))
