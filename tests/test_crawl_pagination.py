"""Pagination that stops at what it knows, and a crawl that says what it did: real ``scrapy crawl
portal`` runs against a mock portal on loopback that publishes every simulated day.

The portal lists 8 articles a page and publishes 30 a day: more than three list pages hold, so a
fixed list depth of 3 loses articles every day; the walk must read exactly the list pages that
hold new articles, plus ``stop_after_known`` (1).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from crawlrun import IN_PROCESS, CrawlResult, run_crawl, stored_urls
from mockportal import DailyPortal, MockPortal
from redisserver import free_port

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS_PER_DOMAIN=8", IN_PROCESS)
PER_DAY = 30


def ok(result: CrawlResult) -> CrawlResult:
    assert result.returncode == 0, result.log[-4000:]
    assert "Spider closed (finished)" in result.log
    return result


def write_sites(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sites.toml"
    path.write_text(text, encoding="utf-8")
    return path


def site_figures(result: CrawlResult, site: str = "daily") -> dict[str, int]:
    prefix = f"newscrawl/sites/{site}/"
    return {k.removeprefix(prefix): v for k, v in result.stats.items() if k.startswith(prefix)}


def warnings(result: CrawlResult) -> list[str]:
    return [line for line in result.log.splitlines() if " WARNING: " in line]


def test_daily_runs_fetch_every_article_once_and_read_only_the_new_list_pages(
    tmp_path: Path, daily: DailyPortal
) -> None:
    sites = write_sites(tmp_path, daily.sites_toml())
    # day 1: a backlog of 45 articles on 6 list pages, all read
    daily.publish(45)
    r1 = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert daily.list_hits() == {n: 1 for n in range(1, 7)}
    fig = site_figures(r1)
    assert (fig["pages/start"], fig["pages/list"], fig["stored"]) == (1, 6, 45)
    assert fig["links/new"] == 45
    for day in range(2, 5):
        before = daily.list_hits()
        new = daily.publish(PER_DAY)
        result = ok(run_crawl(tmp_path, sites, *SETTINGS))
        after = daily.list_hits()
        read = {n for n, hits in after.items() if hits != before.get(n, 0)}
        holding = daily.pages_holding(new)
        assert holding == {1, 2, 3, 4}  # 30 new at 8 a page
        # the pages holding new articles, plus one (stop_after_known = 1), each once
        assert read == holding | {max(holding) + 1}, (day, read)
        assert all(after[n] - before.get(n, 0) == 1 for n in read)
        fig = site_figures(result)
        assert fig["pages/list"] == len(read)
        assert fig["links/new"] == fig["stored"] == fig["pages/article"] == PER_DAY, fig
        assert not warnings(result), warnings(result)
        assert (f"Site daily: pages fetched start 1, list {len(read)}, sitemap 0, feed 0,"
                f" article {PER_DAY}; ") in result.log
    # every article fetched once and stored once, over all days
    hits = daily.portal.hit_counts()
    assert {p: hits.get(p, 0) for p in daily.paths} == {p: 1 for p in daily.paths}
    stored = stored_urls(tmp_path)
    assert stored == {daily.portal.url(p): 1 for p in daily.paths}


@dataclass
class OneRun:
    """One crawl of several sites, each a daily portal of its own with one setting to check."""

    result: CrawlResult
    dailies: dict[str, DailyPortal]
    stored: Counter[str]

    def stored_of(self, site: str) -> Counter[str]:
        base = self.dailies[site].portal.base + "/"
        return Counter({url: n for url, n in self.stored.items() if url.startswith(base)})


#: site name -> (articles published, bar, sites-file keys, path answering 404)
SITES: dict[str, tuple[int, str, dict[str, Any], str | None]] = {
    "capped": (45, "prevnext", {"max_list_pages": 2}, None),
    "shallow": (45, "prevnext", {"max_list_depth": 2}, None),
    "nomatch": (20, "prevnext", {"article_url": "/article/\\d+\\.html$"}, None),
    "greedy": (45, "prevnext", {"article_url": "\\.html$"}, None),
    "startmatch": (10, "prevnext", {"article_url": "/"}, None),
    "failing": (40, "numbered", {}, "/list/2.html"),
}


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OneRun]:
    """The checks below share one crawl: each site is a portal of its own, so none sees another's
    pages, and the checks read their own site's figures, warnings and articles."""
    tmp_path = tmp_path_factory.mktemp("pagination")
    portals: list[MockPortal] = []
    try:
        dailies: dict[str, DailyPortal] = {}
        for name, (count, bar, _, failing) in SITES.items():
            portals.append(MockPortal("127.0.0.1").start())
            dailies[name] = DailyPortal(portals[-1], per_page=8, home=5, prefix=name, bar=bar)
            dailies[name].publish(count)
            if failing is not None:
                portals[-1].fail(failing, None, status=404)
        sites = write_sites(tmp_path, "\n".join(
            dailies[name].sites_toml(name=name, **keys)
            for name, (_, _, keys, _) in SITES.items()))
        result = ok(run_crawl(tmp_path, sites, *SETTINGS))
        yield OneRun(result, dailies, stored_urls(tmp_path))
    finally:
        for portal in portals:
            portal.stop()


def test_max_list_pages_caps_a_walk_with_a_warning(one_run: OneRun) -> None:
    daily, result = one_run.dailies["capped"], one_run.result
    assert daily.list_hits() == {1: 1, 2: 1, 3: 0, 4: 0, 5: 0, 6: 0}
    assert result.stats["newscrawl/lists/cap_reached"] == 1
    assert site_figures(result, "capped")["lists/cap_reached"] == 1
    (warning,) = [w for w in warnings(result) if "max_list_pages" in w]
    assert "Site capped: max_list_pages (2) reached" in warning
    assert daily.portal.url("/list/2.html") in warning
    # what the two pages and the home page listed was fetched
    assert site_figures(result, "capped")["stored"] == 16


def test_max_list_depth_still_bounds_the_nesting(one_run: OneRun) -> None:
    assert one_run.dailies["shallow"].list_hits() == {1: 1, 2: 1, 3: 0, 4: 0, 5: 0, 6: 0}


def test_an_article_url_that_matches_nothing_is_warned_about(one_run: OneRun) -> None:
    result = one_run.result
    assert site_figures(result, "nomatch").get("links/seen", 0) == 0
    (warning,) = [w for w in warnings(result) if "yielded no article link" in w]
    assert "Site nomatch:" in warning and "/article/" in warning
    assert "does article_url '/article/\\d+\\.html$' match" in warning  # as written in the file


def test_article_url_matching_list_pages_is_warned_and_list_pages_still_followed(
    one_run: OneRun
) -> None:
    daily = one_run.dailies["greedy"]
    assert daily.list_hits() == {n: 1 for n in range(1, 7)}
    (warning,) = [w for w in warnings(one_run.result)
                  if "also matches article_url" in w and "Site greedy:" in w]
    assert "Site greedy: list page" in warning and "follow_url wins" in warning
    assert one_run.stored_of("greedy") == {daily.portal.url(p): 1 for p in daily.paths}


def test_a_start_url_matching_article_url_is_warned_at_start(one_run: OneRun) -> None:
    result = one_run.result
    assert any("Site startmatch:" in w and "start URL" in w and "also matches article_url" in w
               for w in warnings(result))
    assert site_figures(result, "startmatch")["pages/start"] == 1


def test_a_numbered_bar_goes_on_past_a_page_that_fails(one_run: OneRun) -> None:
    daily = one_run.dailies["failing"]
    assert daily.list_hits() == {n: 1 for n in range(1, 6)}
    assert one_run.result.stats["newscrawl/lists/skipped_failed_page"] == 1
    on_page_2 = set(daily.newest_first[8:16])
    assert set(one_run.stored_of("failing")) == {daily.portal.url(p) for p in daily.paths
                                                  if p not in on_page_2}


def test_a_follow_url_that_reads_no_list_page_is_warned_about_and_shown_by_status(
    tmp_path: Path, daily: DailyPortal, capsys: pytest.CaptureFixture[str]
) -> None:
    """The portal moved its list pages (a redesign): follow_url matches no link, and no list
    page is read, so the older articles of a busy day are not. Every run says so until
    follow_url is mended (a quiet day too: the articles missed earlier are still missed), in
    its log, `newscrawl status` and `newscrawl report`. Not on a site's first crawl."""
    from newscrawl.cli import main

    daily.publish(20)
    sites = write_sites(tmp_path, daily.sites_toml("moved", follow_url="/page/\\d+\\.html$"))
    first = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert site_figures(first, "moved").get("pages/list", 0) == 0
    assert not [w for w in warnings(first) if "follow_url" in w]
    daily.publish(8)  # the home page's 5 are new, 3 more on the list page it cannot reach
    result = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert site_figures(result, "moved")["links/new"] == 5
    (warning,) = [w for w in warnings(result) if "Site moved:" in w]
    assert ("follow_url '/page/\\d+\\.html$' matched no link of its start page(s), so no list"
            " page was read (article links 5, new 5): articles further down its list are not"
            " fetched. Does follow_url match its next-page links?") in warning
    data = tmp_path / "data"
    capsys.readouterr()
    assert main(["--data-dir", str(data), "status", "--json"]) == 0
    last = json.loads(capsys.readouterr().out)["last_run"]
    assert list(last["warnings"]) == ["moved"] and last["warnings"]["moved"][0] in warning
    assert main(["--data-dir", str(data), "status"]) == 0
    assert "  WARNING moved: follow_url '/page/\\d+\\.html$' matched no link" in \
        capsys.readouterr().out
    report = tmp_path / "report.html"
    assert main(["--data-dir", str(data), "report", "-o", str(report)]) == 0
    page = report.read_text(encoding="utf-8")
    assert "Warnings of the last run:" in page and "<b>moved</b>: follow_url" in page
    # another run the same day, nothing new: still warned
    again = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert [w for w in warnings(again) if "Site moved:" in w and "(article links 5, new 0)" in w]
    # follow_url mended: the list pages are read, the 3 missed articles fetched, no warning
    sites.write_text(daily.sites_toml("moved"), encoding="utf-8")
    mended = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert not [w for w in warnings(mended) if "follow_url" in w]
    assert set(stored_urls(tmp_path)) == {daily.portal.url(p) for p in daily.paths}
    # and on a quiet day after it neither: a start page's list links are followed every run
    quiet = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert site_figures(quiet, "moved")["pages/list"] >= 1
    assert not [w for w in warnings(quiet) if "follow_url" in w]


def test_a_follow_url_that_misses_the_start_pages_next_page_link_is_warned_about_at_once(
    tmp_path: Path, portal: MockPortal
) -> None:
    """A typo in follow_url on a new site: its home page's "下一页" and numbered bar lead to
    /list/N.html, follow_url matches none of them. The first crawl already says so, naming the
    link, although a new site's home page without a next page gives no warning on it."""
    daily = DailyPortal(portal, per_page=8, home=5, bar="numbered")
    daily.publish(20)
    sites = write_sites(tmp_path, daily.sites_toml("typo", follow_url="/lists/\\d+\\.html$"))
    first = ok(run_crawl(tmp_path, sites, *SETTINGS))
    fig = site_figures(first, "typo")
    assert fig.get("pages/list", 0) == 0 and fig["links/next_unmatched"] == 1
    (at_once,) = [w for w in warnings(first) if "a list page by the look of it" in w]
    # (the bar's "2" comes before its "下一页")
    assert (f"Site typo: start page {portal.url('/')} links to {portal.url('/list/2.html')}"
            " ('2'), a list page by the look of it, but follow_url '/lists/\\d+\\.html$' does"
            " not match it: no list page below this start page is read.") in at_once, at_once
    (end,) = [w for w in warnings(first) if "matched no link of its start page(s)" in w]
    assert "(article links 5, new 5)" in end and "the crawl's log names the link" in end
    # mended: the walk reads the list pages and fetches the 15 articles the first crawl missed
    sites.write_text(daily.sites_toml("typo"), encoding="utf-8")
    mended = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert not [w for w in warnings(mended) if "follow_url" in w]
    assert set(stored_urls(tmp_path)) == {daily.portal.url(p) for p in daily.paths}


def test_a_mended_follow_url_walks_past_known_list_pages_once(
    tmp_path: Path, portal: MockPortal
) -> None:
    """The first list page repeats the home page, so after a run that read the home page
    alone, a walk stopping at known pages would end there: the run after follow_url is mended
    goes on past known list pages and fetches the rest; the run after it stops as usual."""
    daily = DailyPortal(portal, per_page=8, home=8, bar="numbered")
    daily.publish(30)
    sites = write_sites(tmp_path, daily.sites_toml("typo", follow_url="/lists/\\d+\\.html$"))
    first = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert site_figures(first, "typo")["stored"] == 8
    sites.write_text(daily.sites_toml("typo"), encoding="utf-8")
    before = daily.list_hits()
    mended = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert site_figures(mended, "typo")["lists/follow_url_changed"] == 1
    assert ("Site typo: follow_url changed since the last finished run ('/lists/\\d+\\.html$',"
            " now '/list/\\d+\\.html$'): its walks go on past list pages of known articles"
            " this run, down to max_list_pages (100)") in mended.log
    assert set(stored_urls(tmp_path)) == {daily.portal.url(p) for p in daily.paths}
    assert {n: daily.list_hits()[n] - before[n] for n in before} == {1: 1, 2: 1, 3: 1, 4: 1}
    # the next run: follow_url as last time, the walk stops below the first known list page
    before = daily.list_hits()
    usual = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert "lists/follow_url_changed" not in site_figures(usual, "typo")
    assert {n: daily.list_hits()[n] - before[n] for n in before} == {1: 1, 2: 0, 3: 0, 4: 0}
    assert len(stored_urls(tmp_path)) == 30


def test_articles_an_earlier_run_left_queued_do_not_read_as_new_links(
    tmp_path: Path, daily: DailyPortal
) -> None:
    """A run killed with its articles queued; the next day's start page shows them beside two
    new ones. They count as new in the run that finishes them (links/inherited), but were not
    found new on its pages: the follow_url warning says new 2."""
    from crawlrun import start_crawl, wait_for

    sites = write_sites(tmp_path, daily.sites_toml("moved", follow_url="/page/\\d+\\.html$"))
    daily.publish(5)
    ok(run_crawl(tmp_path, sites, *SETTINGS))  # the site's first crawl
    new = daily.publish(3)
    daily.portal.delay(new, 30)
    killed = start_crawl(tmp_path, sites, *SETTINGS, log_path=tmp_path / "killed.log")
    try:
        wait_for(lambda: daily.portal.hit_counts().get(new[0], 0) >= 1, timeout=60,
                 what="the first new article requested")
    finally:
        killed.kill()
    daily.portal.delay(new, 0)
    daily.publish(2)  # the start page: 2 new, the 3 left queued
    result = ok(run_crawl(tmp_path, sites, *SETTINGS))
    fig = site_figures(result, "moved")
    assert fig["links/seen"] == 5 and fig["links/inherited"] == 3, fig
    assert fig["links/new"] == 5, fig
    assert [w for w in warnings(result) if "(article links 5, new 2)" in w]
    assert set(stored_urls(tmp_path)) == {daily.portal.url(p) for p in daily.paths}


def dead_site(name: str) -> str:
    port = free_port()  # bound and released: nothing listens there
    return (f'[[sites]]\nname = "{name}"\nstart_urls = ["http://127.0.0.1:{port}/"]\n'
            "article_url = '/a/\\d+\\.html$'\n")


def test_a_dead_start_page_exits_4_and_names_the_site(
        tmp_path: Path, daily: DailyPortal, capsys: pytest.CaptureFixture[str]) -> None:
    from newscrawl.cli import main

    sites = write_sites(tmp_path, dead_site("dead"))
    result = run_crawl(tmp_path, sites, *SETTINGS)
    assert result.returncode == 4, result.log[-4000:]
    assert "exit code 4" in result.log
    # status says what the code means beside Scrapy's close reason
    capsys.readouterr()
    assert main(["--data-dir", str(tmp_path / "data"), "status"]) == 0
    assert ", exit code 4 (no start, list, sitemap or feed page of any site could be fetched" \
        " and read; closed: finished)" in capsys.readouterr().out
    # the last line, after Scrapy's closing lines, is the failure and its exit code
    assert result.log.strip().splitlines()[-1].endswith(
        " ERROR: The crawl failed: No start, list, sitemap or feed page of any site could be"
        " fetched and read in this run (exit code 4)"), result.log[-2000:]
    assert any("Site dead: none of its start/list/sitemap/feed pages could be fetched and read"
               " (1 failed;" in w for w in warnings(result))
    assert "Site dead: pages fetched start 0, list 0" in result.log
    assert site_figures(result, "dead")["failed/start"] == 1
    # retries bounded (connection refused answers at once): the crawl's own clock, so that a
    # loaded host's slow interpreter start does not count
    assert result.stats["elapsed_time_seconds"] < 30, result.stats["elapsed_time_seconds"]
    # one live site is enough for a run to count: exit 0, the dead one still warned about
    daily.publish(5)
    sites = write_sites(tmp_path, dead_site("dead") + "\n" + daily.sites_toml())
    result = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert any("Site dead: none of its" in w for w in warnings(result))
    assert site_figures(result)["stored"] == 5


def test_a_numbered_bar_is_read_in_order_until_a_page_shows_nothing_new(tmp_path: Path) -> None:
    portal = MockPortal("127.0.0.1").start()
    try:
        daily = DailyPortal(portal, per_page=8, home=5, bar="numbered")
        sites = write_sites(tmp_path, daily.sites_toml())
        daily.publish(40)  # five list pages, all linked from the home page's bar "1 2 3 4 5"
        first = ok(run_crawl(tmp_path, sites, *SETTINGS))
        assert daily.list_hits() == {n: 1 for n in range(1, 6)}
        assert site_figures(first)["stored"] == 40
        before = daily.list_hits()
        new = daily.publish(3)
        assert daily.pages_holding(new) == {1}
        second = ok(run_crawl(tmp_path, sites, *SETTINGS))
        read = {n for n, hits in daily.list_hits().items() if hits != before.get(n, 0)}
        # page 1 showed the new articles, page 2 nothing new: the walk ends there
        assert read == {1, 2}, read
        fig = site_figures(second)
        assert (fig["pages/list"], fig["stored"], fig["pages/article"]) == (2, 3, 3), fig
        assert stored_urls(tmp_path) == {portal.url(p): 1 for p in daily.paths}
    finally:
        portal.stop()
