"""robots.txt holds for the FIRST requests to a host, even when they are all in flight at once.

Scrapy 2.19's own middleware let 8 of 10 simultaneous first requests to a disallowed path through
(every waiter after the first got None from the shared Deferred, i.e. "allowed")."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from crawlrun import IN_PROCESS, run_crawl
from mockportal import Layout


def test_concurrent_first_requests_obey_robots(tmp_path: Path, portals: Layout) -> None:
    a = portals.a
    disallowed = [path for _, path in portals.disallowed]
    start_urls = ", ".join(f'"{a.url(p)}"' for p in disallowed + ["/about.html"])
    sites = tmp_path / "sites.toml"
    sites.write_text(
        "[[sites]]\n"
        'name = "robots"\n'
        f"start_urls = [{start_urls}]\n"
        "article_url = '/nothing-matches$'\n",
        encoding="utf-8",
    )
    result = run_crawl(tmp_path, sites, "CONCURRENT_REQUESTS_PER_DOMAIN=16", IN_PROCESS,
                       "AUTOTHROTTLE_ENABLED=False")
    assert result.returncode == 0, result.log[-3000:]
    hits = a.hit_counts()
    assert hits.get("/robots.txt") == 1
    assert hits.get("/about.html") == 1  # the crawl did run
    assert {p: hits.get(p, 0) for p in disallowed} == dict.fromkeys(disallowed, 0)
    assert result.stats.get("robotstxt/forbidden") == len(disallowed)
    assert result.stats.get("newscrawl/download/robots_forbidden") == len(disallowed)


# --- robots.txt shared by the workers of a run (the run's robots hash in Redis) ----------------


def shared_middleware(redis_url: str, run: str) -> Any:
    from scrapy.utils.test import get_crawler

    from newscrawl.middlewares.robots import RobotsTxtMiddleware
    from newscrawl.scheduling.run import set_current_run
    from newscrawl.spiders.portal import PortalSpider

    crawler = get_crawler(PortalSpider, {"REDIS_URL": redis_url, "ROBOTSTXT_OBEY": True,
                                         "DOWNLOAD_TIMEOUT": 10})
    set_current_run(crawler, run)
    return RobotsTxtMiddleware(crawler)


def test_the_first_worker_fetches_robots_txt_and_the_others_read_its_copy(
    tmp_path: Path,
) -> None:
    from redisserver import RedisServer
    from scrapy import Request
    from scrapy.http import TextResponse

    with RedisServer(tmp_path / "redis", persist=False) as srv:
        first, second = shared_middleware(srv.url, "r1"), shared_middleware(srv.url, "r1")
        key = first._shared_key()
        assert key == second._shared_key() and key.endswith(":robots:r1")
        req = Request("http://a.test/robots.txt")
        # the first asks first: it fetches (None) and says so in the run's hash
        assert asyncio.run(first._fetched_by_another(key, "a.test", req)) is None
        body = b"User-agent: *\nDisallow: /private/\n"
        first._share(key, "a.test", TextResponse(
            "http://a.test/robots.txt", status=200, body=body,
            headers={"Content-Type": "text/plain"}, request=req))
        copy = asyncio.run(second._fetched_by_another(key, "a.test", req))
        assert isinstance(copy, TextResponse)
        assert (copy.status, copy.body, copy.url) == (200, body, "http://a.test/robots.txt")
        # a fetch that failed gives the host back: the next worker fetches it itself
        assert asyncio.run(first._fetched_by_another(key, "b.test", req)) is None
        first._share(key, "b.test", None)
        assert asyncio.run(second._fetched_by_another(key, "b.test", req)) is None
        # ... and so does a fetcher that went quiet past its deadline
        srv.client().hset(key, "c.test", json.dumps({"fetching": time.time() - 1}))
        assert asyncio.run(second._fetched_by_another(key, "c.test", req)) is None
        # another run does not read this run's copies
        other = shared_middleware(srv.url, "r2")
        assert asyncio.run(other._fetched_by_another(other._shared_key(), "a.test", req)) is None
