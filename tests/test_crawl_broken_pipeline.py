"""Pages whose processing raises (an item pipeline, a callback, extraction) are failed attempts,
fetched again by a later run; page after page of them, with no item through all the pipelines
between, is a fault of the crawl's own code: the run stops with exit code 6
(NEWSCRAWL_MAX_ERRORS_IN_A_ROW) instead of spending every article's attempts and exiting 0. Real
crawls of the mock portals, a project's own raising components from tests/brokencomponents.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from crawlrun import IN_PROCESS, REPO, pass_a_day, run_crawl
from mockportal import Layout, sites_toml

from newscrawl.storage import iter_articles

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "DOWNLOAD_MAXSIZE=200000",
            "CONCURRENT_REQUESTS_PER_DOMAIN=8", IN_PROCESS)
ENV = {"PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}"}


def component(setting: str, name: str, order: int) -> str:
    return f'{setting}={{"brokencomponents.{name}": {order}}}'


def stored_urls(tmp_path: Path) -> list[str]:
    return [str(a["url"]) for a in iter_articles(tmp_path / "data" / "articles")]


def two_portals(tmp_path: Path, portals: Layout) -> tuple[Path, set[str]]:
    """The sites file of the two mock portals, and their distinct articles' URLs."""
    sites = tmp_path / "sites.toml"
    sites.write_text(sites_toml(portals.a, portals.b, max_list_depth=2), encoding="utf-8")
    return sites, {p.url(path) for p, path in portals.unique}


def failed_by(stats: dict[str, int], cause: str) -> int:
    return sum(v for k, v in stats.items()
               if k.startswith("newscrawl/sites/") and k.endswith(f"/failed_by/{cause}"))


def assert_fixed_run_stores_each_once(tmp_path: Path, sites: Path, unique: set[str]) -> None:
    """The fault gone, the next run stores every distinct article, none twice."""
    fixed = run_crawl(tmp_path, sites, *SETTINGS)
    assert fixed.returncode == 0, fixed.log[-3000:]
    urls = stored_urls(tmp_path)
    assert len(urls) == len(set(urls)), "an article was stored twice"
    assert unique <= set(urls)


@pytest.mark.parametrize("limit", [None, 1000], ids=["at-the-limit", "at-the-end-of-the-run"])
def test_a_pipeline_failing_every_item_stops_the_crawl_and_nothing_is_lost(
        tmp_path: Path, portals: Layout, limit: int | None) -> None:
    # None: the default limit (10), reached during the run; 1000: never reached (a daily run's
    # few new articles), so the run is stopped at its end, no item having gone through
    sites, unique = two_portals(tmp_path, portals)
    assert len(unique) > 10
    settings = SETTINGS if limit is None else (*SETTINGS, f"NEWSCRAWL_MAX_ERRORS_IN_A_ROW={limit}")

    # the database stays down for more days than NEWSCRAWL_MAX_ATTEMPTS (3), one run a day
    for day in range(4):
        if day:
            pass_a_day(tmp_path)
        r1 = run_crawl(tmp_path, sites, *settings,
                       component("ITEM_PIPELINES", "BrokenPipeline", 100), env=ENV)
        assert r1.returncode == 6, r1.log[-3000:]
        criticals = [line for line in r1.log.splitlines() if " CRITICAL: " in line]
        assert len(criticals) == 1, criticals
        if limit is None:
            assert "10 pages in a row failed" in criticals[0], criticals
        else:
            failed = failed_by(r1.stats, "pipeline")
            assert failed > 10, r1.stats
            assert f"the run ended with {failed} pages failed in an item pipeline" \
                in criticals[0], criticals
        assert "RuntimeError: the warehouse is down" in criticals[0], criticals
        last = r1.log.strip().splitlines()[-1]
        assert " ERROR: The crawl failed: " in last and last.endswith("(exit code 6)"), last
        assert r1.stats["newscrawl/scheduler/system_fault/pipeline"] == 1
        # the streak's pages are not charged an attempt: they are put back, as everything else
        # in flight, and no article is given up however many runs meet the fault
        assert r1.stats.get("newscrawl/scheduler/item_failed", 0) == 0, r1.stats
        gave_up = [line for line in r1.log.splitlines() if "Giving up on" in line
                   and any(f"{u} " in line for u in unique)]  # the portals' 404s are given up
        assert not gave_up, gave_up
        assert stored_urls(tmp_path) == []

    assert_fixed_run_stores_each_once(tmp_path, sites, unique)


def test_items_failing_between_stored_ones_are_counted_and_the_crawl_goes_on(
        tmp_path: Path, portals: Layout) -> None:
    sites, unique = two_portals(tmp_path, portals)

    r1 = run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_MAX_ERRORS_IN_A_ROW=2",
                   component("ITEM_PIPELINES", "FlakyPipeline", 900), env=ENV)
    assert r1.returncode == 0, r1.log[-3000:]
    failed = r1.stats["newscrawl/scheduler/item_failed"]
    assert failed >= 3, r1.stats  # more than the limit in all, never two in a row
    assert " CRITICAL: " not in r1.log
    assert failed_by(r1.stats, "pipeline") == failed
    stored_before = len(stored_urls(tmp_path))

    # the failed ones were stored before the export failed: fetched again, found in the store by
    # their own fingerprint, and not stored twice
    assert_fixed_run_stores_each_once(tmp_path, sites, unique)
    assert len(stored_urls(tmp_path)) == stored_before


def test_a_page_whose_callback_raised_is_not_done(tmp_path: Path, portals: Layout) -> None:
    # Scrapy logs a spider error and the engine is done with the page: without newscrawl
    # counting it as a failed attempt, the article would be recorded as done, never stored.
    sites, unique = two_portals(tmp_path, portals)

    r1 = run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_MAX_ERRORS_IN_A_ROW=0",
                   component("SPIDER_MIDDLEWARES", "BrokenSpiderMiddleware", 10), env=ENV)
    assert r1.returncode == 0, r1.log[-3000:]
    assert "Spider error processing" in r1.log
    assert stored_urls(tmp_path) == []
    assert failed_by(r1.stats, "callback") >= len(unique), r1.stats

    assert_fixed_run_stores_each_once(tmp_path, sites, unique)


def test_an_extraction_raising_on_every_page_stops_the_crawl(
        tmp_path: Path, portals: Layout) -> None:
    # a broken extraction library: each page is a failed attempt ("Extraction failed for ..."),
    # and the tenth in a row (the default limit) stops the crawl
    sites, unique = two_portals(tmp_path, portals)
    assert len(unique) > 10

    r1 = run_crawl(tmp_path, sites, *SETTINGS,
                   component("EXTENSIONS", "BrokenExtractionLibrary", 0), env=ENV)
    assert r1.returncode == 6, r1.log[-3000:]
    criticals = [line for line in r1.log.splitlines() if " CRITICAL: " in line]
    assert len(criticals) == 1 and "10 pages in a row failed" in criticals[0], criticals
    assert "bare_extraction() got an unexpected keyword argument" in criticals[0], criticals
    assert r1.stats["newscrawl/extract/error"] >= 10
    assert stored_urls(tmp_path) == []

    assert_fixed_run_stores_each_once(tmp_path, sites, unique)
