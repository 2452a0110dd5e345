"""robots.txt holds for the FIRST requests to a host, even when they are all in flight at once.

Scrapy 2.19's own middleware let 8 of 10 simultaneous first requests to a disallowed path through
(every waiter after the first got None from the shared Deferred, i.e. "allowed")."""

from __future__ import annotations

from pathlib import Path

from crawlrun import run_crawl
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
    result = run_crawl(tmp_path, sites, "CONCURRENT_REQUESTS_PER_DOMAIN=16",
                       "AUTOTHROTTLE_ENABLED=False")
    assert result.returncode == 0, result.log[-3000:]
    hits = a.hit_counts()
    assert hits.get("/robots.txt") == 1
    assert hits.get("/about.html") == 1  # the crawl did run
    assert {p: hits.get(p, 0) for p in disallowed} == dict.fromkeys(disallowed, 0)
    assert result.stats.get("robotstxt/forbidden") == len(disallowed)
    assert result.stats.get("newscrawl/download/robots_forbidden") == len(disallowed)
