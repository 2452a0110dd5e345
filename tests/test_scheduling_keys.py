"""CrawlKeys names exactly the keys of the templates in newscrawl/redis/keys.py (docs/redis-keys.md
is a contract)."""

from __future__ import annotations

import pytest

from newscrawl.redis import keys as k
from newscrawl.redis.keys import CrawlKeys, Keys


def test_each_name_is_its_template() -> None:
    old = Keys("p", "s")
    new = CrawlKeys.of(old).for_run("r1")
    assert new == CrawlKeys("p", "s", "r1")
    assert [new.queue, new.seq, new.inflight, new.inflight_owners, new.pending, new.failures,
            new.retry, new.deadletter, new.run_marker, new.workers] == [
        old(k.CRAWL_QUEUE), old(k.CRAWL_SEQ), old(k.CRAWL_INFLIGHT), old(k.CRAWL_INFLIGHT_OWNERS),
        old(k.CRAWL_PENDING), old(k.CRAWL_FAILURES), old(k.CRAWL_RETRY), old(k.CRAWL_DEADLETTER),
        old(k.CRAWL_RUN), old(k.CRAWL_WORKERS)]
    assert new.queue == "p:s:requests" and new.run_marker == "p:s:run"
    assert new.worker("w1") == old(k.CRAWL_WORKER, worker="w1") == "p:s:worker:w1"
    assert new.slots("a.test") == old(k.CRAWL_SLOTS, host="a.test")
    assert new.listseen == old(k.CRAWL_LISTSEEN, run="r1")
    assert new.runstats == old(k.CRAWL_RUNSTATS, run="r1") == "p:s:runstats:r1"


def test_the_runs_keys_need_the_run() -> None:
    with pytest.raises(ValueError, match="run id"):
        _ = CrawlKeys("p", "s").runstats
