"""The article store (newscrawl/storage.py) is never torn: real files, a real full filesystem.

A write cut short (a crash, a full disk) leaves an incomplete last line: the next write moves it
to ``<file>.torn`` instead of gluing the next record to it. A write that fails is undone and
raised as ``StoreWriteError``. Readers trust only complete lines that parse, and name a bad line
by file and line number.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from newscrawl.storage import (
    ArticleStore,
    StoreWriteError,
    find_articles,
    iter_articles,
    read_records,
)

DAY = 20000 * 86400.0  # 2024-10-04, UTC
DAY_FILE = "2024-10-04.jsonl"


def lines_of(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return data.splitlines()


def test_a_torn_last_line_is_set_aside_and_the_next_record_is_intact(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = ArticleStore(tmp_path)
    store.write({"url": "http://a/1", "text": "one"}, now=DAY)
    store.close()
    path = tmp_path / DAY_FILE
    torn = b'{"url": "http://a/2", "text": "cut sho'
    with path.open("ab") as fh:  # a writer killed inside its write()
        fh.write(torn)

    with caplog.at_level(logging.WARNING, logger="newscrawl.storage"):
        store.write({"url": "http://a/3", "text": "three"}, now=DAY)
    records = [json.loads(line) for line in lines_of(path)]
    assert [r["url"] for r in records] == ["http://a/1", "http://a/3"]
    assert (tmp_path / (DAY_FILE + ".torn")).read_bytes() == torn + b"\n"
    warning = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert f"{path}:2:" in warning and DAY_FILE + ".torn" in warning
    # a second torn tail goes to the same .torn file, after the first
    with path.open("ab") as fh:
        fh.write(b'{"url": "http://a/4"')
    store.write({"url": "http://a/5", "text": "five"}, now=DAY)
    assert [json.loads(line)["url"] for line in lines_of(path)] == [
        "http://a/1", "http://a/3", "http://a/5"]
    assert (tmp_path / (DAY_FILE + ".torn")).read_bytes().splitlines() == [
        torn, b'{"url": "http://a/4"']
    assert store.contains("http://a/5", ["2024-10-04"])
    assert not store.contains("http://a/2", ["2024-10-04"])


def test_contains_trusts_only_complete_lines_that_parse(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / DAY_FILE
    good = json.dumps({"url": "http://a/1", "text": "ok"}).encode()
    # a torn record glued to the next one (what an append without the check left behind)
    glued = b'{"url": "http://a/2", "text": "cu' + json.dumps(
        {"url": "http://a/3", "text": "next"}).encode()
    path.write_bytes(good + b"\n" + glued + b"\n")
    store = ArticleStore(tmp_path)
    with caplog.at_level(logging.WARNING, logger="newscrawl.storage"):
        assert store.contains("http://a/1", ["2024-10-04"])
        assert not store.contains("http://a/2", ["2024-10-04"])
        assert not store.contains("http://a/3", ["2024-10-04"])
    assert f"{path}:2: not a JSON object" in caplog.text
    # appended since: read on the next call
    store.write({"url": "http://a/4", "text": "x"}, now=DAY)
    assert store.contains("http://a/4", ["2024-10-04"])


def test_readers_skip_a_bad_line_and_name_its_file_and_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    older, newer = tmp_path / "2024-10-03.jsonl", tmp_path / DAY_FILE
    older.write_text('{"url": "http://a/1", "title": "one"}\n[1, 2]\n'
                     '{"url": "http://a/2", "title": "two"}\n', encoding="utf-8")
    newer.write_bytes(b'{"url": "http://a/3", "title": "three"}\n'
                      b'{"url": "http://a/4", "title": "fo\xff\n'  # not UTF-8
                      b'{"url": "http://a/5", "title": "cut')
    with caplog.at_level(logging.WARNING, logger="newscrawl.storage"):
        urls = [a["url"] for a in iter_articles(tmp_path)]
    assert urls == ["http://a/1", "http://a/2", "http://a/3"]
    assert f"{older}:2: not a JSON object" in caplog.text
    assert f"{newer}:2: not a JSON object" in caplog.text
    assert f"{newer}:3: incomplete last line" in caplog.text

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="newscrawl.storage"):
        found = find_articles(tmp_path, ["http://a/1", "http://a/4", "http://a/5"])
    assert {u: r["title"] for u, r in found.items()} == {"http://a/1": "one"}
    assert f"{newer}:2: not a JSON object" in caplog.text
    assert f"{newer}:3: incomplete last line" in caplog.text
    assert [n for n, _ in read_records(older, warn=False)] == [1, 3]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_a_failed_write_is_undone_and_raised_as_store_write_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    store = ArticleStore(tmp_path)
    store.write({"url": "http://a/1", "text": "one"}, now=DAY)
    path = tmp_path / DAY_FILE
    before = path.read_bytes()
    real_write = os.write

    def write_half_then_fail(fd: int, data: bytes) -> int:  # a disk that fills mid-record
        if fd != store._fd:
            return real_write(fd, data)
        if len(data) > 10:
            return real_write(fd, data[: len(data) // 2])
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "write", write_half_then_fail)
    with pytest.raises(StoreWriteError) as info:
        store.write({"url": "http://a/2", "text": "two" * 50}, now=DAY)
    monkeypatch.undo()
    assert isinstance(info.value, OSError)
    assert info.value.errno == code and info.value.path == path
    assert str(path) in str(info.value)
    assert path.read_bytes() == before  # the half record is gone
    assert not store.contains("http://a/2", ["2024-10-04"])
    store.write({"url": "http://a/2", "text": "two"}, now=DAY)  # space again
    assert [json.loads(line)["url"] for line in lines_of(path)] == ["http://a/1", "http://a/2"]
    assert not (tmp_path / (DAY_FILE + ".torn")).exists()


def test_a_store_that_cannot_be_created_raises_store_write_error(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory", encoding="utf-8")
    with pytest.raises(StoreWriteError) as info:
        ArticleStore(blocked).write({"url": "http://a/1"}, now=DAY)
    assert info.value.path == blocked / DAY_FILE


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB tmpfs (needs root and a kernel that lets us mount)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs to fill ({exc}): the ENOSPC test with a patched "
                    "write covers the same code")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill ({done.stderr.strip()}): the ENOSPC test "
                    "with a patched write covers the same code")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30)


def test_a_full_filesystem_leaves_only_complete_records(tiny_fs: Path) -> None:
    store = ArticleStore(tiny_fs / "articles")
    text = "新闻正文" * 300  # ~3.6 KB a record: the 64 KiB fill up after a dozen or so
    stored: list[str] = []
    with pytest.raises(StoreWriteError) as info:
        for i in range(1000):
            store.write({"url": f"http://a/{i}", "text": text}, now=DAY)
            stored.append(f"http://a/{i}")
    assert info.value.errno == errno.ENOSPC
    assert 3 < len(stored) < 1000
    path = tiny_fs / "articles" / DAY_FILE
    assert [json.loads(line)["url"] for line in lines_of(path)] == stored
    # space comes back (the operator moves older records away): the next record is complete
    # and on its own line
    os.truncate(path, sum(len(line) + 1 for line in lines_of(path)[:2]))
    store.write({"url": "http://a/again", "text": text}, now=DAY)
    assert [json.loads(line)["url"] for line in lines_of(path)] == [*stored[:2], "http://a/again"]
    assert not (path.parent / (DAY_FILE + ".torn")).exists()

    # read-only: EROFS, and the file is left as it was
    before = path.read_bytes()
    store.close()
    remount = subprocess.run(["mount", "-o", "remount,ro", str(tiny_fs)], capture_output=True,
                             text=True, timeout=30)
    if remount.returncode != 0:
        pytest.skip(f"cannot remount read-only: {remount.stderr.strip()}")
    with pytest.raises(StoreWriteError) as ro:
        store.write({"url": "http://a/ro", "text": "x"}, now=DAY)
    assert ro.value.errno == errno.EROFS
    assert path.read_bytes() == before


def _append_many(directory: str, worker: int, n: int) -> None:
    store = ArticleStore(directory)
    text = "正文" * 20000  # 120 KB records: a write another writer could see half done
    for i in range(n):
        store.write({"url": f"http://w{worker}/{i}", "text": text}, now=DAY)
    store.close()


def test_writers_at_once_never_take_a_record_in_progress_for_a_torn_one(tmp_path: Path) -> None:
    # Each append checks the file's last byte first; the exclusive lock keeps another writer's
    # record from being half written at that moment (it would be set aside as torn).
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(tmp_path), w, 40)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert not (tmp_path / (DAY_FILE + ".torn")).exists()
    urls = [json.loads(line)["url"] for line in lines_of(tmp_path / DAY_FILE)]
    assert sorted(urls) == sorted(f"http://w{w}/{i}" for w in range(4) for i in range(40))
