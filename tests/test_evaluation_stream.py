"""The stream benchmark on a small corpus of its own: the stream, its labels, the scoring.

Runs ``benchmarks/make_stream.py`` and ``benchmarks/bench_stream.py`` (``newscrawl dedup`` on an
embedded Redis) on generated texts, so it needs none of the shared corpora.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from mockportal import Article

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_stream  # noqa: E402
import make_stream  # noqa: E402
from evalkit.edits import STREAM_EDITS, EditContext  # noqa: E402
from evalkit.templates import daily_reports  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A corpus directory shaped like the dev corpora: 8 THUCNews lines, 4 SogouCS records (one
    body under two URLs), Sohu pairs (one same-event pair whose texts are near-identical)."""
    root = tmp_path_factory.mktemp("corpus")
    thuc = root / "thucnews_sample"
    thuc.mkdir()
    lines = [f"科技\t{Article.generate(f't{i}').text.replace(chr(10), '')}" for i in range(8)]
    (thuc / "cnews.dev500.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sogou = root / "sogoucs_smarty_sample"
    sogou.mkdir()
    same = Article.generate("s-same").text.replace("\n", "")
    bodies = [("http://s.example/1", "标题一", Article.generate("s1").text.replace("\n", "")),
              ("http://s.example/2", "标题二", same),
              ("http://s.example/3", "标题三", ""),
              ("http://s.example/2/index.shtml", "标题二", same)]  # fmt: skip
    records = "".join(
        f"<doc>\n<url>{u}</url>\n<docno>x</docno>\n<contenttitle>{t}</contenttitle>\n"
        f"<content>{c}</content>\n</doc>\n"
        for u, t, c in bodies
    )
    (sogou / "news_sohusite_xml.smarty.dat").write_text(records, encoding="utf-8")
    sohu = root / "sohu2021_textmatch_text2vec"
    sohu.mkdir()
    near = Article.generate("p-near").text.replace("\n", "")
    pairs = [
        {"sentence1": Article.generate("p1a").text, "sentence2": Article.generate("p1b").text,
         "label": 5},
        {"sentence1": near, "sentence2": near.replace("，", ",", 1) + "。", "label": 5},
        {"sentence1": Article.generate("p3a").text, "sentence2": Article.generate("p3b").text,
         "label": 0},
    ]  # fmt: skip
    for name in ("dd", "dc"):
        rows = pairs if name == "dd" else pairs[:1]
        (sohu / f"{name}-test.jsonl").write_text(
            "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in rows), encoding="utf-8"
        )
    return root


@pytest.fixture(scope="module")
def stream_dir(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stream")
    stream, summary = make_stream.build(corpus, seed=3, days=4, sohu_pairs=5)
    make_stream.write(out, stream, summary)
    return out


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_stream_and_labels(stream_dir: Path, corpus: Path) -> None:
    stream, labels = read(stream_dir / "stream.jsonl"), read(stream_dir / "labels.jsonl")
    assert [d["id"] for d in stream] == [lab["id"] for lab in labels]
    assert all(set(d) == {"id", "text", "url", "title"} for d in stream)
    assert len({d["url"] for d in stream}) == len(stream)
    position = {d["id"]: n for n, d in enumerate(stream)}
    for lab in labels:
        assert lab["length"] == len(stream[position[lab["id"]]]["text"])
        if lab["kind"] == "reprint":
            assert position[lab["original"]] < position[lab["id"]]
            assert lab["edit"]
        else:
            assert lab["original"] is None and lab["edit"] == []
    by_id = {lab["id"]: lab for lab in labels}
    # the SogouCS body under two URLs: the later one is a reprint of the earlier one, "exact"
    twins = sorted((d for d in stream if d["url"].startswith("http://s.example/2")),
                   key=lambda d: position[d["id"]])  # fmt: skip
    assert len(twins) == 2
    assert by_id[twins[1]["id"]]["kind"] == "reprint"
    assert by_id[twins[1]["id"]]["edit"] == ["exact"]
    assert by_id[twins[1]["id"]]["original"] == twins[0]["id"]
    assert by_id[twins[0]["id"]]["kind"] == "original"
    # the near-identical Sohu pair: one document (Jaccard >= 0.9), the other pair two distinct ones
    assert by_id["sohu-dd-001b"]["kind"] == "reprint" or by_id["sohu-dd-001a"]["kind"] == "reprint"
    assert {by_id[f"sohu-dd-000{s}"]["kind"] for s in "ab"} <= {"original", "distinct"}
    # every series reports every day (双色球 only on its draw days), each a distinct text
    templates = [lab for lab in labels if lab["kind"] == "template"]
    assert len(templates) == len(list(daily_reports(4, start=make_stream.START, seed=3)))
    texts = [stream[position[lab["id"]]]["text"] for lab in templates]
    assert len(set(texts)) == len(texts)
    # the Sohu pair left out of the stream
    assert not {"sohu-dd-002a", "sohu-dd-002b"} & set(position)
    # deterministic
    again, _ = make_stream.build(corpus, seed=3, days=4, sohu_pairs=5)
    assert [d.stream_json() for d in again] == (stream_dir / "stream.jsonl").read_text(
        encoding="utf-8").splitlines()  # fmt: skip


def test_template_reports_are_distinct_and_reproducible() -> None:
    reports = list(daily_reports(5, seed=7))
    assert len({r.kind for r in reports}) >= 8 and len({r.series for r in reports}) >= 15
    assert len({r.text for r in reports}) == len(reports)
    assert all(r.text.startswith(r.title + "\n") for r in reports)
    assert [r.text for r in daily_reports(5, seed=7)] == [r.text for r in reports]
    assert [r.text for r in daily_reports(5, seed=8)] != [r.text for r in reports]


@pytest.mark.parametrize("kind", sorted(STREAM_EDITS))
def test_stream_edits_change_the_text(kind: str) -> None:
    text = Article.generate("edit").text
    ctx = EditContext(others=[Article.generate(f"o{i}").text for i in range(3)])
    edited = STREAM_EDITS[kind](text, random.Random(1), ctx)
    assert edited != text
    assert edited == STREAM_EDITS[kind](text, random.Random(1), ctx)


def test_score_counts_each_kind_of_drop() -> None:
    stream = [{"id": i, "url": f"u:{i}", "text": ""} for i in
              ("a", "b", "a~r1", "t1", "t2", "c", "c~r1", "d", "a~r2")]  # fmt: skip
    lab = {
        "a": ("original", None, [], None, []),
        "b": ("distinct", None, [], None, ["c"]),
        "a~r1": ("reprint", "a", ["footer"], None, []),
        "t1": ("template", None, [], "fx/x/a 2026-03-02", []),
        "t2": ("template", None, [], "fx/x/a 2026-03-03", []),
        "c": ("original", None, [], None, ["b"]),
        "c~r1": ("reprint", "c", ["typos", "tag"], None, ["b"]),
        "d": ("distinct", None, [], None, []),
        "a~r2": ("reprint", "a", ["truncate"], None, []),
    }
    labels = [{"id": i, "kind": k, "original": o, "edit": e, "length": 300, "source": "x",
               "group": "fx/x/a" if n else None, "name": n, "near": near}
              for i, (k, o, e, n, near) in lab.items()]  # fmt: skip
    fp = {"a": 0, "b": 0xFF, "a~r1": 1, "t1": 0xF000, "t2": 0xF001, "c": 0xF0F0, "c~r1": 0xF0F1,
          "d": 0xFFFF, "a~r2": 0x7}  # fmt: skip
    dup = {"a~r1": ("u:a", 1), "t2": ("u:t1", 1), "c": ("u:b", 4), "c~r1": ("b", 5),
           "d": ("u:a~r1", 3), "a~r2": ("u:unknown", 2)}  # fmt: skip
    rows = [{"id": d["id"], "simhash": f"{fp[d['id']]:016x}",
             "duplicate_of": dup.get(d["id"], (None, None))[0],
             "distance": dup.get(d["id"], (None, None))[1]} for d in stream]  # fmt: skip
    s = bench_stream.score(stream, labels, rows)
    assert s["correct_drops"] == 1  # a~r1 as a
    assert s["ambiguous_drops"] == 2  # c as b, c~r1 as b (by id): listed in "near"
    assert s["wrong_by_kind"] == {"template": 1, "distinct": 1, "reprint": 1}
    assert s["reprints_catchable"] == 3 and s["recall"] == round(1 / 3, 4)
    assert s["precision"] == 0.25
    assert s["templates"]["dropped_names"] == ["fx/x/a 2026-03-03 (d=1, as t1)"]
    assert s["by_edit"]["footer"]["recall"] == 1.0 and s["by_edit"]["truncate"]["recall"] == 0.0
    assert s["by_edit"]["(all reprints)"] == {"n": 3, "caught": 1, "recall": round(1 / 3, 4)}


def test_newscrawl_dedup_on_the_stream(stream_dir: Path) -> None:
    stream, labels = read(stream_dir / "stream.jsonl"), read(stream_dir / "labels.jsonl")
    rows, seconds = bench_stream.run_cli(stream_dir / "stream.jsonl")
    assert [r["id"] for r in rows] == [d["id"] for d in stream] and seconds > 0
    s = bench_stream.score(stream, labels, rows)
    url = {d["id"]: d["url"] for d in stream}
    exact = [(lab["id"], lab["original"]) for lab in labels if lab["edit"] == ["exact"]]
    assert len(exact) == 2  # the SogouCS twins and the near-identical Sohu pair
    for ident, original in exact:
        row = next(r for r in rows if r["id"] == ident)
        assert row["distance"] == 0 and row["duplicate_of"] == url[original]
    assert s["correct_drops"] >= 1 and s["reprints_catchable"] >= s["correct_drops"]
    assert s["wrong_drops"] == 0
    assert "| newscrawl dedup |" in bench_stream.markdown(
        [{"run": "newscrawl dedup", "docs_per_s": 1.0, "score": s}])  # fmt: skip
