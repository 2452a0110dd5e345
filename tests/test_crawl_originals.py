"""Originals over reprints: a first crawl of a portal that lists newest first, where reprints
appear days after their originals (so a walk meets each reprint before the article it copies),
keeps the originals and names them as such. Real ``scrapy crawl portal`` runs against a mock
portal on loopback, at the crawl's usual concurrency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from crawlrun import IN_PROCESS, CrawlResult, run_crawl, stored_urls
from mockportal import DailyPortal, MockPortal, html_page, list_html

from newscrawl.cli import main

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS_PER_DOMAIN=8", IN_PROCESS)


def ok(result: CrawlResult) -> CrawlResult:
    assert result.returncode == 0, result.log[-4000:]
    assert "Spider closed (finished)" in result.log
    return result


def clusters(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    capsys.readouterr()
    assert main(["clusters", "--json", "--data-dir", str(data_dir)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def publish_with_reprints(daily: DailyPortal) -> tuple[list[str], list[str]]:
    """Days 1-4: 8 articles a day; day 6: 4 new ones and reprints of 4 articles of days 1-2,
    listed first (at least 26 articles between an original and a reprint: more than the crawl
    fetches at once). Returns (originals, reprints), in the same order."""
    for _ in range(4):
        daily.publish(8)  # days 1-4: 32 articles on four list pages
    originals = [daily.paths[i] for i in (1, 4, 6, 9)]
    daily.publish(0)  # day 5: nothing
    reprints = daily.publish(4, reprints=originals)[4:]  # day 6: 4 new, then the 4 reprints
    assert daily.pages_holding(reprints) == {1}
    assert daily.pages_holding(originals) == {4, 5}
    return originals, reprints


def test_a_first_crawl_stores_the_originals_of_later_reprints(
    tmp_path: Path, portal: MockPortal, capsys: pytest.CaptureFixture[str]
) -> None:
    daily = DailyPortal(portal, per_page=8, home=5)
    originals, reprints = publish_with_reprints(daily)
    sites = tmp_path / "sites.toml"
    sites.write_text(daily.sites_toml(), encoding="utf-8")

    result = ok(run_crawl(tmp_path, sites, *SETTINGS))

    url = portal.url
    stored = stored_urls(tmp_path)
    assert result.stats["newscrawl/dedup/near_duplicate"] == len(reprints)
    assert {url(p) for p in originals} <= set(stored)
    assert not {url(p) for p in reprints} & set(stored)
    assert len(stored) == len(daily.paths) - len(reprints)
    rows = clusters(tmp_path / "data", capsys)
    named = {c["original_url"]: [d["url"] for d in c["duplicates"]]  # type: ignore[attr-defined]
             for c in rows}
    assert named == {url(o): [url(r)] for o, r in zip(originals, reprints, strict=True)}
    # the records say so: each original published days before its reprint
    for row in rows:
        (dup,) = row["duplicates"]  # type: ignore[misc]
        assert str(row["original_published"]) < str(dup["published"])
        assert str(dup["published"]).startswith(DailyPortal.published_on(6))


def test_links_held_by_a_walk_whose_next_page_fails_are_fetched(
    tmp_path: Path, portal: MockPortal
) -> None:
    daily = DailyPortal(portal, per_page=8, home=5)
    daily.publish(40)  # five list pages
    portal.fail("/list/3.html", None, status=404)
    sites = tmp_path / "sites.toml"
    sites.write_text(daily.sites_toml(), encoding="utf-8")
    result = ok(run_crawl(tmp_path, sites, *SETTINGS))
    # pages 1 and 2 were read; what they listed is fetched when page 3 fails, not at idle
    assert set(stored_urls(tmp_path)) == {portal.url(p) for p in daily.newest_first[:16]}
    # held by the home page (its 5), page 1 (8, the home page's 5 among them) and page 2 (8)
    assert result.stats["newscrawl/lists/articles_held"] == 5 + 8 + 8
    assert "newscrawl/lists/released_at_idle" not in result.stats


def test_links_held_by_a_walk_whose_next_page_another_walk_scheduled_are_fetched(
    tmp_path: Path, portal: MockPortal
) -> None:
    daily = DailyPortal(portal, per_page=8, home=5)
    daily.publish(16)
    # a second start page of the site: three articles of its own, and the same list page 1
    extra = daily.publish(3)
    daily.paths[:] = [p for p in daily.paths if p not in extra]
    daily._rebuild()
    portal.set("/more.html", html_page(list_html("更多", extra + ["/list/1.html"])))
    sites = tmp_path / "sites.toml"
    sites.write_text(daily.sites_toml().replace(
        f'start_urls = ["{portal.base}/"]',
        f'start_urls = ["{portal.base}/", "{portal.base}/more.html"]'), encoding="utf-8")
    result = ok(run_crawl(tmp_path, sites, *SETTINGS))
    # /list/1.html was admitted to both walks but fetched once: one of the two walks ended
    # without its last page, and what it held was requested when the crawl went idle
    assert portal.hit_counts()["/list/1.html"] == 1
    assert result.stats["newscrawl/lists/articles_released"] >= 19
    assert set(stored_urls(tmp_path)) == {portal.url(p) for p in daily.paths + extra}
