"""newscrawl's AutoThrottle extension (newscrawl/extensions/throttle.py) outside the cluster-wide
grant: the add-on puts it in place of Scrapy's, and without the grant it moves each worker's
own downloader slots exactly as Scrapy's does. Its shared delay is tested on Redis in
tests/test_scheduling_polite.py and in a crawl of three workers in tests/test_cluster_workers.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from scrapy import Request, Spider
from scrapy.core.downloader import Slot
from scrapy.extensions.throttle import AutoThrottle as ScrapyAutoThrottle
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from newscrawl.extensions.throttle import AutoThrottle

SETTINGS = {"AUTOTHROTTLE_ENABLED": True, "AUTOTHROTTLE_START_DELAY": 0.5,
            "AUTOTHROTTLE_MAX_DELAY": 4.0, "AUTOTHROTTLE_TARGET_CONCURRENCY": 2.0,
            "DOWNLOAD_DELAY": 0.1}


def test_the_addon_puts_it_in_place_of_scrapys() -> None:
    crawler = get_crawler(settings_dict={**SETTINGS, "ADDONS": {"newscrawl.addon.Newscrawl": 0}})
    throttles = [type(ext) for ext in crawler.extensions.middlewares
                 if isinstance(ext, ScrapyAutoThrottle)]
    assert throttles == [AutoThrottle]


def test_without_the_grant_it_moves_the_workers_own_slots_as_scrapys_does() -> None:
    spider = Spider("unit")
    extensions: list[Any] = []
    for cls in (AutoThrottle, ScrapyAutoThrottle):
        crawler = get_crawler(settings_dict=SETTINGS)
        # the downloader's part that AutoThrottle reads and moves: its start delay and slots
        crawler.engine = SimpleNamespace(  # type: ignore[assignment]
            downloader=SimpleNamespace(_delay=0.0, slots={"h.test": Slot(1, 0.5, 0.0)}))
        extension = cls(crawler)
        extension._spider_opened(spider)
        assert crawler.engine.downloader._delay == 0.5
        extensions.append(extension)
    steps = [(0.4, 200)] * 4 + [(0.05, 404), (10.0, 200), (0.1, 200)]
    delays: list[list[float]] = [[], []]
    for latency, status in steps:
        for i, extension in enumerate(extensions):
            request = Request("http://h.test/a", meta={"download_slot": "h.test",
                                                       "download_latency": latency})
            extension._response_downloaded(
                Response(request.url, status=status, request=request), request, spider)
            delays[i].append(extension.crawler.engine.downloader.slots["h.test"].delay)
    assert delays[0] == delays[1]
    assert delays[0][3] < 0.5 and delays[0][5] == 4.0  # it moved: down, then to the maximum


def test_redis_refusing_the_move_stops_the_crawl_as_any_scheduler_call(r: Any) -> None:
    from newscrawl.exitcodes import ExitCode, exit_code
    from newscrawl.redis import RetryPolicy
    from newscrawl.redis.keys import CrawlKeys
    from newscrawl.scheduling import queue as q
    from newscrawl.scheduling.politeness import Politeness, shared_throttle
    from newscrawl.scheduling.stopping import FaultStop

    crawler = get_crawler(settings_dict=SETTINGS)
    crawler.engine = SimpleNamespace(spider=None)  # type: ignore[assignment]  # no crawl to close
    spider = Spider("unit")
    keys = CrawlKeys("t", "unit")
    politeness = Politeness(crawler, spider, keys, FaultStop(crawler, 1), window=200)
    extension = AutoThrottle(crawler)
    # what the scheduler's open does with its grant on (here without an engine to open)
    extension.share(politeness.adapt_delay)
    politeness.throttle = shared_throttle(extension)
    politeness.open(q.LeasedPriorityQueue.from_keys(
        r, spider, keys, "w", lease_seconds=60, retry=RetryPolicy(1), deadletter_max=10,
        **politeness.queue_options()))
    request = Request("http://h.test/a", meta={"download_latency": 0.4})
    response = Response(request.url, status=200, request=request)
    extension._response_downloaded(response, request, spider)
    assert 0 < float(r.get("t:unit:slots:h.test:throttle")) < 500  # moved from the start delay
    r.delete("t:unit:slots:h.test:throttle")
    r.hset("t:unit:slots:h.test:throttle", "not", "a delay")  # WRONGTYPE: no retry fixes it
    extension._response_downloaded(response, request, spider)
    assert exit_code(crawler) == ExitCode.REDIS_UNAVAILABLE
    assert crawler.stats.get_value("newscrawl/scheduler/system_fault/redis") == 1
