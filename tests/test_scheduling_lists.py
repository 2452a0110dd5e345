"""Shared list-walk state and per-site run figures, on a real (embedded) Redis."""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.utils.request import RequestFingerprinter

from newscrawl import sitestats
from newscrawl.redis import RetryPolicy
from newscrawl.redis.keys import Keys
from newscrawl.scheduling.dupefilter import RedisDupeFilter
from newscrawl.scheduling.lists import (
    ADMITTED,
    ALREADY_ADMITTED,
    OVER_CAP,
    ListWalks,
    depth_of,
    oldest_first,
    position,
    url_day,
)
from newscrawl.sitestats import SiteStats, run_outcome, site_stat


def walks(r: Any) -> ListWalks:
    df = RedisDupeFilter(r, keys=Keys("t", "portal"), retry=RetryPolicy(1),
                         fingerprinter=RequestFingerprinter(), retention_days=365, run_ttl=900)
    return ListWalks(df, ttl=60)


def test_reserve_admits_up_to_the_cap_and_again_for_free(r: Any) -> None:
    w = walks(r)
    pages = [Request(f"http://x/list/{n}.html") for n in range(1, 6)]
    assert w.reserve("run1", "walk", pages[:2], cap=3) == [ADMITTED, ADMITTED]
    # a re-parse (killed worker, second worker) admits the same pages without using the budget
    assert w.reserve("run1", "walk", pages[:2], cap=3) == [ALREADY_ADMITTED, ALREADY_ADMITTED]
    assert w.reserve("run1", "walk", pages[1:], cap=3) == [
        ALREADY_ADMITTED, ADMITTED, OVER_CAP, OVER_CAP]
    # another run, another start page: their own budgets
    assert w.reserve("run2", "walk", pages[:1], cap=3) == [ADMITTED]
    assert w.reserve("run1", "other", pages[:1], cap=3) == [ADMITTED]
    assert r.ttl(w.walk_key("run1", "walk")) > 0


def test_held_links_come_back_oldest_first_once(r: Any) -> None:
    w = walks(r)
    home = [("http://x/a/9.html", position(0, 0)), ("http://x/a/8.html", position(0, 1))]
    page1 = [("http://x/a/9.html", position(1, 0)), ("http://x/a/8.html", position(1, 1)),
             ("http://x/a/7.html", position(1, 2))]
    w.hold("run1", "walk", "s", home)
    w.hold("run1", "walk", "s", page1)
    w.hold("run1", "other", "s", [("http://x/b/1.html", position(1, 0))])
    assert r.ttl(w.held_key("run1", "walk")) > 0
    # the page ending the walk adds its own (older) links; a link seen twice keeps its older place
    held = w.release("run1", "walk", "s", [("http://x/a/6.html", position(2, 0))])
    assert [url for _, url, _ in held] == [f"http://x/a/{n}.html" for n in (6, 7, 8, 9)]
    assert [depth_of(score) for _, _, score in held] == [2, 1, 1, 1]
    assert {site for site, _, _ in held} == {"s"}
    assert w.release("run1", "walk", "s") == []  # taken once
    assert r.smembers(w.holding_key("run1")) == {b"other"}
    assert [url for _, url, _ in w.release_all("run1")] == ["http://x/b/1.html"]
    assert w.release_all("run1") == []
    assert not r.exists(w.holding_key("run1"))


def test_a_page_parsed_again_releases_its_links_again(r: Any) -> None:
    # the worker that released them may have died before they reached the queue
    w = walks(r)
    w.hold("run1", "walk", "s", [("http://x/a/9.html", position(1, 0))])
    first = w.release("run1", "walk", "s", [("http://x/a/8.html", position(2, 0))], page="p2")
    assert [url for _, url, _ in first] == ["http://x/a/8.html", "http://x/a/9.html"]
    assert w.release("run1", "walk", "s", [("http://x/a/8.html", position(2, 0))],
                     page="p2") == first
    assert w.release("run1", "walk", "s", page="p3") == []  # another page: nothing held
    assert w.release_all("run1") == []


def test_dates_in_urls_order_the_held_links_when_every_link_has_one() -> None:
    assert [url_day(u) for u in ("http://x/news/20261116/1.html", "http://x/c/2024-03-15/d.html",
                                 "http://x/n1/2024/0315/c1.html", "http://x/gn/2024/03-15/9.html",
                                 "http://x/a/12.html", "http://x/a/20261399.html")] == [
        20261116, 20240315, 20240315, 20240315, None, None]
    # a portal listing oldest first: the last page holds the newest days
    held = [("s", "http://x/20261120/2002.html", 20001),
            ("s", "http://x/20261119/1007.html", 20000),
            ("s", "http://x/20261116/1001.html", 1), ("s", "http://x/20261116/1002.html", 2)]
    assert [url for _, url, _ in oldest_first(held)] == [
        "http://x/20261116/1001.html", "http://x/20261116/1002.html",
        "http://x/20261119/1007.html", "http://x/20261120/2002.html"]
    # one link without a date: list positions alone
    undated = [*held, ("s", "http://x/a/5.html", 3)]
    assert oldest_first(undated) == undated


def test_quiet_means_nothing_queued_or_in_flight(r: Any) -> None:
    w = walks(r)
    assert w.quiet()
    r.zadd(w.df.keys("{prefix}:{spider}:inflight"), {b"entry": 1})
    assert not w.quiet()


def test_done_is_one_batch_over_the_seen_shards(r: Any) -> None:
    w = walks(r)
    reqs = [Request(f"http://x/a/{n}.html") for n in range(5)]
    for req in reqs[1:3]:
        key, member = w.df.seen_target(w.df.fingerprint8(req))
        r.zadd(key, {member: 1})
    assert w.done(reqs) == [False, True, True, False, False]
    assert w.done([]) == []


class _Stats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count

    def get_stats(self) -> dict[str, int]:
        return dict(self.values)

    def get_value(self, key: str) -> int | None:
        return self.values.get(key)


class _Crawler:
    def __init__(self) -> None:
        self.stats = _Stats()


def test_site_stats_count_per_worker_and_per_run(r: Any) -> None:
    assert site_stat("a", "pages", "list") == "newscrawl/sites/a/pages/list"
    one, two = _Crawler(), _Crawler()
    stats_one, stats_two = SiteStats(one), SiteStats(two)  # type: ignore[arg-type]
    for site_stats in (stats_one, stats_two):
        site_stats.start_run(r, "t:portal:runstats:run1", ttl=10)
    stats_one.inc_many("a", {"pages/start": 1, "links/seen": 8})
    stats_two.inc("a", "pages", "article", count=3)
    stats_two.inc("b", "failed/start")
    assert one.stats.values == {"newscrawl/sites/a/pages/start": 1,
                                "newscrawl/sites/a/links/seen": 8}
    figures, of_run = stats_two.run_figures()
    assert of_run
    assert figures == {"a": {"pages/start": 1, "links/seen": 8, "pages/article": 3},
                       "b": {"failed/start": 1}}
    assert r.ttl("t:portal:runstats:run1") >= 86000  # kept a day for operators
    outcome = run_outcome(["a", "b"], figures)
    assert not outcome.no_sources
    a, b = outcome.summaries
    assert a.line().startswith("Site a: pages fetched start 1, list 0, sitemap 0, feed 0,"
                               " article 3; article links seen 8, new 0; stored 0")
    assert (b.sources_fetched, b.sources_failed) == (0, 1)
    assert run_outcome(["b"], figures).no_sources


def test_site_stats_send_their_increments_once_a_second(r: Any, monkeypatch: Any) -> None:
    clock = [1000.0]
    monkeypatch.setattr(sitestats.time, "monotonic", lambda: clock[0])
    crawler = _Crawler()
    stats = SiteStats(crawler)  # type: ignore[arg-type]
    stats.start_run(r, "t:portal:runstats:run2", ttl=10)
    for _ in range(5):
        stats.inc("a", "pages", "article")
    assert r.hgetall("t:portal:runstats:run2") == {}  # added up in the worker
    clock[0] += sitestats.FLUSH_SECONDS
    stats.inc("a", "stored")
    figures, other = sitestats.split_run_hash(r.hgetall("t:portal:runstats:run2"))
    assert figures == {"a": {"pages/article": 5, "stored": 1}}
    # and the pages in this 10 s's rate bucket (`newscrawl status`'s rate over the last minute)
    assert [v for name, v in other.items() if name.startswith("rate:a:")] == ["5"]
    assert crawler.stats.values["newscrawl/sites/a/pages/article"] == 5  # the worker's at once
    stats.inc("a", "pages", "list")  # a source page is sent at once (the run's exit decision)
    assert r.hget("t:portal:runstats:run2", "a/pages/list") == b"1"
