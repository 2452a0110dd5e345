"""Shared list-walk state and per-site run figures, on a real (embedded) Redis."""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.utils.request import RequestFingerprinter

from newscrawl import sitestats
from newscrawl.connection import RetryPolicy
from newscrawl.keys import Keys
from newscrawl.scheduling.dupefilter import RedisDupeFilter
from newscrawl.scheduling.lists import (
    ADMITTED,
    ALREADY_ADMITTED,
    OVER_CAP,
    ListWalks,
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
