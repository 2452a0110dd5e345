"""DuplicateLog: each dropped url recorded once, newest first, clear errors (fast, fakeredis);
its prune on the embedded Redis (a Lua script)."""

from __future__ import annotations

import fakeredis
import pytest
import redis

from newscrawl.index import DuplicateLog, DuplicateRecord
from newscrawl.index.duplicates import PRUNE_BATCH


@pytest.fixture
def log() -> DuplicateLog:
    return DuplicateLog(fakeredis.FakeRedis(), prefix="t")


def test_each_url_recorded_once_newest_first(log: DuplicateLog) -> None:
    assert log.record("https://b/1", "https://a/1", 2, 2**64 - 1, 2**64 - 4, seen_at=100.0)
    assert log.record("https://b/2", "https://a/1", 1, 5, 4, seen_at=300.0, site="s", title="T")
    assert log.record("https://b/3", "https://a/2", 0, 7, 7, seen_at=200.0)
    assert not log.record("https://b/1", "https://other", 3, 1, 2, seen_at=400.0)
    assert log.count() == 3
    records = log.list()
    assert [r.url for r in records] == ["https://b/2", "https://b/3", "https://b/1"]
    assert records[2] == DuplicateRecord(
        "https://b/1", "https://a/1", 2, 2**64 - 1, 2**64 - 4, 100.0, {}
    )
    assert records[0].extra == {"site": "s", "title": "T"}
    assert [r.url for r in log.list(limit=2)] == ["https://b/2", "https://b/3"]
    assert log.list(limit=0) == []
    got = log.get("https://b/1")
    assert got is not None and got.original_url == "https://a/1"


def test_json_dict_shape(log: DuplicateLog) -> None:
    log.record("https://b/1", "https://a/1", 2, 2**63, 1, seen_at=0.0, site="x")
    d = log.list()[0].to_json_dict()
    assert d == {
        "url": "https://b/1",
        "original_url": "https://a/1",
        "distance": 2,
        "simhash": "8000000000000000",
        "original_simhash": "0000000000000001",
        "seen_at": "1970-01-01T00:00:00+00:00",
        "site": "x",
    }


def test_bad_input_is_a_clear_error(log: DuplicateLog) -> None:
    with pytest.raises(ValueError, match="JSON"):
        log.record("https://b/1", "https://a/1", 1, 1, 2, when=object())
    with pytest.raises(ValueError, match="64-bit"):
        log.record("https://b/1", "https://a/1", 1, -1, 2)
    with pytest.raises(ValueError, match="non-empty"):
        log.record("", "https://a/1", 1, 1, 2)
    assert log.count() == 0


def test_unreadable_record_is_skipped_not_fatal(log: DuplicateLog) -> None:
    log.record("https://b/1", "https://a/1", 1, 1, 2, seen_at=1.0)
    log.client.hset(log.hash_key, "https://b/bad", "{broken")
    log.client.zadd(log.log_key, {"https://b/bad": 5.0})
    assert [r.url for r in log.list()] == ["https://b/1"]


def test_prune_deletes_old_records_in_batches_and_keeps_the_rest(r: redis.Redis) -> None:
    """On a real Redis (the prune is a Lua script): more old records than one batch."""
    log = DuplicateLog(r, prefix="t")
    day = 86400.0
    now = 1_000 * day
    old = PRUNE_BATCH * 2 + 3
    for i in range(old):
        log.record(f"https://b/old/{i}", "https://a/1", 1, i, 0, seen_at=now - 31 * day - i)
    for i in range(7):
        log.record(f"https://b/new/{i}", "https://a/1", 1, i, 0, seen_at=now - 29 * day + i)
    assert log.prune(30, now=now) == old
    assert log.count() == 7
    assert r.zcard(log.log_key) == 7
    assert sorted(rec.url for rec in log.list()) == sorted(f"https://b/new/{i}" for i in range(7))
    assert log.prune(30, now=now) == 0
    assert log.prune(1, now=now + 60 * day) == 7
    assert log.count() == 0 and r.zcard(log.log_key) == 0
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="days must be an integer >= 1"):
            log.prune(bad)  # type: ignore[arg-type]
