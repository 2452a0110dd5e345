"""The run's waiting article links on a real (embedded) Redis: order, the discovery check, the
bound, the lock, a taken-over run's links; and the dates known before fetching."""

from __future__ import annotations

import json
import time
from datetime import date
from typing import Any

import pytest
from scrapy.utils.request import RequestFingerprinter

from newscrawl.connection import RetryPolicy
from newscrawl.keys import CRAWL_INFLIGHT, CRAWL_QUEUE, CRAWL_WAITING_SINCE, Keys
from newscrawl.scheduling.dupefilter import RedisDupeFilter
from newscrawl.scheduling.lists import position
from newscrawl.scheduling.waiting import (
    UNDATED,
    ArticleWait,
    Waiting,
    date_score,
    list_order,
    row_date,
    url_date,
)


def wait(r: Any, seconds: float = 300) -> ArticleWait:
    df = RedisDupeFilter(r, keys=Keys("t", "portal"), retry=RetryPolicy(1),
                         fingerprinter=RequestFingerprinter(), retention_days=365, run_ttl=900)
    return ArticleWait(df, ttl=600, wait_seconds=seconds)


def link(site: str, url: str, rank: int, place: int = 0, when: Any = None) -> Waiting:
    known = when if when is not None else url_date(url)
    return Waiting(site, url, 1, date_score(known), rank, list_order(position(1, place)))


def test_links_come_out_by_date_then_rank_then_oldest_listed_first(r: Any) -> None:
    w = wait(r)
    w.hold("run1", [
        # the reprinting site, ranked first, lists its reprints newest first
        link("re", "http://re/a/20261119/2.html", 1, place=0),
        link("re", "http://re/a/20261118/1.html", 1, place=1),
        link("re", "http://re/own/9.html", 1, place=2),  # no date
        # the source site, same days, ranked second
        link("src", "http://src/2026-11-18/doc-1.shtml", 2, place=0),
        link("src", "http://src/2026-11-17/doc-0.shtml", 2, place=1),
        link("src", "http://src/about/x.html", 2, place=3),  # no date
        link("src", "http://src/about/y.html", 2, place=4),  # no date, further down: older
    ])
    release = w.take("run1")
    assert release is not None
    assert [x.url for x in release.links] == [
        "http://src/2026-11-17/doc-0.shtml",
        "http://re/a/20261118/1.html",  # same day: rank 1 before rank 2
        "http://src/2026-11-18/doc-1.shtml",
        "http://re/a/20261119/2.html",
        "http://re/own/9.html",  # undated after every dated link, by rank, oldest first
        "http://src/about/y.html",
        "http://src/about/x.html",
    ]
    assert release.links[-1].score == UNDATED
    assert w.take("run1") is None  # locked while it is queued
    w.done("run1", release)
    assert w.take("run1") is None  # nothing left
    assert r.zcard(w.key("run1")) == 0


def test_a_link_known_by_its_day_takes_the_time_another_sighting_gives(r: Any) -> None:
    """A list row prints the day, the site's sitemap the time (16:40): the link goes at 16:40,
    after another site's article of 09:07, not at the start of its day."""
    w = wait(r)
    url = "http://m/news/20261126/1003.html"
    w.hold("run1", [link("m", url, 1, place=0)])  # the list row: the day alone
    w.hold("run1", [
        link("m", url, 1, place=3, when=row_date("2026-11-26 16:40")),  # the sitemap's time
        link("s", "http://s/1001.html", 2, when=row_date("2026-11-26 09:07")),
        link("s", "http://s/1000.html", 2, when=row_date("2026-11-25 22:00")),
        link("m", "http://m/news/20261126/1004.html", 1),  # the day alone, no other sighting
    ])
    release = w.take("run1")
    assert release is not None
    assert [x.url for x in release.links] == [
        "http://s/1000.html", "http://m/news/20261126/1004.html", "http://s/1001.html", url, url]
    assert all(x.score != date_score(url_date(url)) for x in release.links if x.url == url)
    w.done("run1", release)
    assert r.zcard(w.key("run1")) == 0


def test_a_time_of_day_orders_links_of_one_day(r: Any) -> None:
    w = wait(r)
    day = date(2026, 11, 18)
    w.hold("run1", [
        link("re", "http://re/1", 1, when=row_date("2026-11-18 14:05", day)),
        link("src", "http://src/1", 2, when=row_date("[11-18 09:30]", day)),
    ])
    release = w.take("run1")
    assert release is not None
    assert [x.url for x in release.links] == ["http://src/1", "http://re/1"]


def test_links_wait_while_discovery_pages_are_queued_or_in_flight(r: Any) -> None:
    w = wait(r)
    w.hold("run1", [link("a", "http://a/1.html", 1)])
    queue, inflight = w.df.keys(CRAWL_QUEUE), w.df.keys(CRAWL_INFLIGHT)
    r.zadd(queue, {b"list page": -10 * 2**32 + 5})  # a list page (priority 10) queued
    assert w.discovering() == 1
    assert w.take("run1") is None
    r.delete(queue)
    r.zadd(queue, {b"article": 7})  # an article queued: not discovery
    r.zadd(inflight, {json.dumps({"k": "sitemap"}): 1, json.dumps({"k": "article"}): 1})
    assert w.discovering() == 1
    assert w.take("run1") is None
    r.delete(inflight)
    release = w.take("run1")
    assert release is not None and not release.bound
    assert [x.url for x in release.links] == ["http://a/1.html"]


def test_the_bound_releases_links_while_discovery_goes_on(r: Any) -> None:
    w = wait(r, seconds=5)
    w.hold("run1", [link("a", "http://a/1.html", 1)])
    r.zadd(w.df.keys(CRAWL_QUEUE), {b"list page": -10 * 2**32 + 5})
    assert w.take("run1") is None
    r.set(w.df.keys(CRAWL_WAITING_SINCE, run="run1"), int(time.time()) - 6)
    release = w.take("run1")
    assert release is not None and release.bound


def test_abandoned_links_stay_and_a_taken_over_run_adopts_them(r: Any) -> None:
    w = wait(r)
    w.hold("old", [link("a", "http://a/2026-11-18/1.html", 1)])
    release = w.take("old")
    assert release is not None
    w.abandon("old", release)  # the crawl stopped before they were queued
    assert w.adopt("new", "old") == 1
    again = w.take("new")
    assert again is not None and [x.url for x in again.links] == ["http://a/2026-11-18/1.html"]
    assert r.exists(w.key("old")) == 0


@pytest.mark.parametrize(("url", "day"), [
    ("http://x/c/2024-03-15/d.html", "2024-03-15"),
    ("http://x/c/2024/0315/d.html", "2024-03-15"),
    ("http://x/c/20240315/d.html", "2024-03-15"),
    ("http://x/c/2024/03-15/d.html", "2024-03-15"),
    ("http://x/c/202403/15/d.html", "2024-03-15"),
    ("http://x/c/2024/03/15/d.html", "2024-03-15"),
    ("http://x/c/t_20240315_123.html", "2024-03-15"),
    ("http://x/c/2024/02/30/d.html", None),  # no such day
    ("http://x/c/2024/13/01/d.html", None),
    ("http://x/a/2024031512345.html", None),  # an id, not a date
    ("http://x/a/5.html", None),
])
def test_url_dates(url: str, day: str | None) -> None:
    found = url_date(url)
    assert (found.day.isoformat() if found else None) == day


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-11-18 10:20", "2026-11-18T10:20:00"),
    ("发布时间：2026年11月18日", "2026-11-18"),
    ("[11-18]", "2026-11-18"),
    ("11月18日 10:20", "2026-11-18T10:20:00"),
    ("12-30", "2025-12-30"),  # in the future this year: last year's
    ("2026-11-29", "2026-11-29"),  # two days ahead: a clock a little behind the site's
    ("2026-12-02", None),  # a full date ahead is no date, not last year's 12-02
    ("发布时间：2027-01-05 08:00", None),
    ("评论 12", None),
    ("", None),
])
def test_row_dates(text: str, expected: str | None) -> None:
    found = row_date(text, today=date(2026, 11, 27))
    assert (found.iso() if found else None) == expected


def test_an_article_waits_only_for_other_sites_earlier_ones(r: Any) -> None:
    from newscrawl.scheduling.waiting import GO, NOT_ORDERED, WAIT, CheckOrder

    w = wait(r)
    order = CheckOrder(r, w.df.keys, w.df.retry, ttl=60)
    first = order.reserve("run1", 3)
    assert order.reserve("run1", 2) == first + 3  # numbers are never given twice
    order.pending("run1", "src", "http://src/1", first)
    order.pending("run1", "re", "http://re/1", first + 1)
    order.pending("run1", "re", "http://re/2", first + 2)
    assert order.turn("run1", "re", "http://re/9") == NOT_ORDERED
    assert order.turn("run1", "src", "http://src/1") == GO
    assert order.turn("run1", "re", "http://re/2") == WAIT  # src/1 is earlier, another site
    order.finished("run1", "src", ["http://src/1"])
    assert order.turn("run1", "re", "http://re/2") == GO  # re/1 is earlier but of its site
    many = order.reserve("run1", 300)
    for n in range(300):  # more same-site entries than one Lua page before another site's
        order.pending("run1", "re", f"http://re/x{n}", many + n)
    order.pending("run1", "src", "http://src/late", many + 300)
    order.pending("run1", "re", "http://re/last", many + 301)
    assert order.turn("run1", "re", "http://re/last") == WAIT
    order.finished("run1", "src", ["http://src/late"])
    assert order.turn("run1", "re", "http://re/last") == GO


def test_adopted_links_go_in_their_old_order_and_leave_out_those_already_met(r: Any) -> None:
    from newscrawl.scheduling.waiting import GO, NOT_ORDERED, WAIT, CheckOrder

    w = wait(r)
    order = CheckOrder(r, w.df.keys, w.df.retry, ttl=60)
    # a worker that joined the run met one inherited article before the adoption: checked with
    # no place in the order, then finished
    assert order.turn("run2", "a", "http://a/met") == NOT_ORDERED
    order.finished("run2", "a", ["http://a/met"])
    adopted = order.adopt("run2", [
        (("run1", 7), "re", "http://re/copy", None, None),
        (("run1", 3), "src", "http://src/original", None, None),
        (("run1", 5), "a", "http://a/met", None, None),
    ])
    assert adopted == 3
    mine = order.reserve("run2", 1)  # the run's own links come after the adopted ones
    order.pending("run2", "b", "http://b/new", mine)
    assert order.turn("run2", "re", "http://re/copy") == WAIT  # its original comes first
    assert order.turn("run2", "src", "http://src/original") == GO
    order.finished("run2", "src", ["http://src/original"])
    # the article met before the adoption is not waited for (it would never come again)
    assert order.turn("run2", "re", "http://re/copy") == GO
    order.finished("run2", "re", ["http://re/copy"])
    assert order.turn("run2", "b", "http://b/new") == GO


def test_the_runs_order_and_waiting_keys_live_a_day_after_their_last_use(r: Any) -> None:
    """Whoever writes them (the spider, the scheduler, the pipeline, the adoption, each given
    NEWSCRAWL_RUN_TTL): a run whose articles wait longer than that keeps its order."""
    from newscrawl.scheduling.waiting import CheckOrder

    w = wait(r)
    order = CheckOrder(r, w.df.keys, w.df.retry, ttl=900)
    order.turn("run2", "a", "http://a/met")
    order.finished("run2", "a", ["http://a/met"])
    order.adopt("run2", [(("run1", 3), "src", "http://src/original", None, None),
                         (("run1", 5), "a", "http://a/met", None, None)])
    first = order.reserve("run2", 2)
    order.pending("run2", "b", "http://b/new", first)
    order.pending("run2", "c", "http://c/new", first + 1, 740000)
    order.turn("run2", "c", "http://c/new")
    w.hold("run2", [link("b", "http://b/2026-11-18/later.html", 1)])
    keys = sorted(k.decode() for k in r.scan_iter("t:portal:*run2*"))
    assert {"t:portal:order:run2", "t:portal:unchecked:run2", "t:portal:unchecked:run2:done",
            "t:portal:unchecked:run2:days", "t:portal:waiting:run2"} <= set(keys)
    assert {key: r.ttl(key) for key in keys} == {key: pytest.approx(86400, abs=5) for key in keys}


def test_on_a_day_only_date_a_reprint_waits_for_the_other_sites_articles_of_that_day(
        r: Any) -> None:
    from newscrawl.scheduling.waiting import GO, WAIT, CheckOrder, day_only

    w = wait(r)
    order = CheckOrder(r, w.df.keys, w.df.retry, ttl=60)
    day = day_only(date_score(url_date("http://re/a/20261118/1.html")))
    assert day is not None and day_only(UNDATED) is None
    assert day_only(date_score(row_date("2026-11-18 10:20"))) is None  # a time is known
    first = order.reserve("run1", 3)
    # the reprinting site is ranked first: its reprint has the lower number
    order.pending("run1", "re", "http://re/1", first, day)
    order.pending("run1", "src", "http://src/1", first + 1, day)
    order.pending("run1", "src", "http://src/2", first + 2, day + 1)
    # the reprint names a source: it waits for src's article of its day, not yet arrived
    assert order.turn("run1", "re", "http://re/1", names_source=True) == WAIT
    # the original (names none) does not wait for a deferring reprint of its day
    assert order.turn("run1", "src", "http://src/1") == GO
    assert order.turn("run1", "re", "http://re/1", names_source=True) == WAIT  # still unchecked
    order.finished("run1", "src", ["http://src/1"])
    assert order.turn("run1", "re", "http://re/1", names_source=True) == GO
    # a later day's article of src waits for the reprint, which is earlier
    assert order.turn("run1", "src", "http://src/2") == WAIT
    order.finished("run1", "re", ["http://re/1"])
    assert order.turn("run1", "src", "http://src/2") == GO
    order.finished("run1", "src", ["http://src/2"])
    assert not [k for k in r.keys("t:portal:unchecked:*")]


def test_on_a_day_only_date_two_articles_naming_a_source_go_by_rank(
        r: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An original that names its own paper as its source (``来源：某某日报`` on 某某网) and a
    same-day reprint naming one: neither defers to the other, the lower number (the source's
    better rank) goes first, whichever page reached the check first."""
    from newscrawl.scheduling import waiting
    from newscrawl.scheduling.waiting import GO, WAIT, CheckOrder, day_only

    monkeypatch.setattr(waiting, "TURN_REUSE_SECONDS", 0)  # each turn asks Redis

    w = wait(r)
    order = CheckOrder(r, w.df.keys, w.df.retry, ttl=60)
    day = day_only(date_score(url_date("http://src/a/20261118/1.html")))
    first = order.reserve("run1", 2)
    order.pending("run1", "src", "http://src/1", first, day)  # the source, ranked first
    order.pending("run1", "re", "http://re/1", first + 1, day)
    # the original arrives first: it waits for the other site's article of its day to arrive
    assert order.turn("run1", "src", "http://src/1", names_source=True) == WAIT
    # the reprint arrives: it waits for the original, which has the lower number
    assert order.turn("run1", "re", "http://re/1", names_source=True) == WAIT
    assert order.turn("run1", "src", "http://src/1", names_source=True) == GO
    order.finished("run1", "src", ["http://src/1"])
    assert order.turn("run1", "re", "http://re/1", names_source=True) == GO
    order.finished("run1", "re", ["http://re/1"])
    # the reprinting site ranked first: by rank too, the source's advice in the docs
    first = order.reserve("run2", 2)
    order.pending("run2", "re", "http://re/2", first, day)
    order.pending("run2", "src", "http://src/2", first + 1, day)
    assert order.turn("run2", "src", "http://src/2", names_source=True) == WAIT
    assert order.turn("run2", "re", "http://re/2", names_source=True) == GO
    order.finished("run2", "re", ["http://re/2"])
    order.finished("run2", "src", ["http://src/2"])
    assert not [k for k in r.keys("t:portal:unchecked:*")]


def asking_order(r: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """A CheckOrder whose every turn asks Redis, and the day ordinal of 2026-11-18."""
    from newscrawl.scheduling import waiting
    from newscrawl.scheduling.waiting import CheckOrder, day_only

    monkeypatch.setattr(waiting, "TURN_REUSE_SECONDS", 0)
    w = wait(r)
    day = day_only(date_score(url_date("http://a/20261118/1.html")))
    assert day is not None
    return CheckOrder(r, w.df.keys, w.df.retry, ttl=60), day


def test_a_reprint_known_by_its_day_waits_for_a_timed_original_of_that_day(
        r: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A day counts from 00:00, so a reprint whose URL gives only its day has a lower number
    than its original listed at 10:20 that day: it waits for the original all the same, and
    the original does not wait for it."""
    from newscrawl.scheduling import waiting
    from newscrawl.scheduling.waiting import GO, WAIT, CheckOrder, day_only

    monkeypatch.setattr(waiting, "TURN_REUSE_SECONDS", 0)
    w = wait(r)
    order = CheckOrder(r, w.df.keys, w.df.retry, ttl=60)
    day = day_only(date_score(url_date("http://re/a/20261118/1.html")))
    assert day is not None
    timed = int(date_score(row_date("2026-11-18 10:20")) // 86400)
    assert timed == day
    for run, original_first in (("run1", False), ("run2", True)):
        first = order.reserve(run, 3)
        order.pending(run, "re", "http://re/1", first, day)
        order.pending(run, "src", "http://src/1", first + 1, timed_day=timed)
        order.pending(run, "src", "http://src/2", first + 2, timed_day=timed + 1)  # next day
        if original_first:  # the reprint has not arrived: it may be an original naming none
            assert order.turn(run, "src", "http://src/1") == WAIT
        assert order.turn(run, "re", "http://re/1", names_source=True) == WAIT
        assert order.turn(run, "src", "http://src/1") == GO
        assert order.turn(run, "re", "http://re/1", names_source=True) == WAIT
        order.finished(run, "src", ["http://src/1"])
        # the next day's timed article is no original of it; by number it waits for the reprint
        assert order.turn(run, "re", "http://re/1", names_source=True) == GO
        assert order.turn(run, "src", "http://src/2") == WAIT
        order.finished(run, "re", ["http://re/1"])
        assert order.turn(run, "src", "http://src/2") == GO
        order.finished(run, "src", ["http://src/2"])
    assert not [k for k in r.keys("t:portal:unchecked:*")]


def test_no_wait_cycle_between_a_day_only_reprint_and_timed_articles_of_its_day(
        r: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reprint known by its day (a), a timed reprint at 09:00 (b), a timed original at 10:00
    (c): a waits for c, c by number for b; b, naming a source too, does not wait for a (that
    would close a cycle, broken only by NEWSCRAWL_CHECK_ORDER_WAIT)."""
    from newscrawl.scheduling.waiting import GO, WAIT

    order, day = asking_order(r, monkeypatch)
    first = order.reserve("run1", 3)
    order.pending("run1", "a", "http://a/1", first, day)
    order.pending("run1", "b", "http://b/1", first + 1, timed_day=day)
    order.pending("run1", "c", "http://c/1", first + 2, timed_day=day)
    assert order.turn("run1", "a", "http://a/1", names_source=True) == WAIT
    assert order.turn("run1", "c", "http://c/1") == WAIT  # b is earlier
    assert order.turn("run1", "b", "http://b/1", names_source=True) == GO
    order.finished("run1", "b", ["http://b/1"])
    assert order.turn("run1", "a", "http://a/1", names_source=True) == WAIT
    assert order.turn("run1", "c", "http://c/1") == GO
    order.finished("run1", "c", ["http://c/1"])
    assert order.turn("run1", "a", "http://a/1", names_source=True) == GO
    order.finished("run1", "a", ["http://a/1"])
    assert not [k for k in r.keys("t:portal:unchecked:*")]


@pytest.mark.parametrize("later", ["next day", "no date"])
def test_a_late_release_closes_no_wait_cycle(
        r: Any, monkeypatch: pytest.MonkeyPatch, later: str) -> None:
    """A reprint known by its day (a) and another site's article of the next day, or of no date
    (c), are queued; discovery ran past NEWSCRAWL_ARTICLE_WAIT, and a late release queues the
    original of the reprint's day (b) with a higher number. a waits for b (its day), c for a
    (a lower number); b does not wait for c, whose number is lower but whose date is later."""
    from newscrawl.scheduling.waiting import GO, WAIT

    order, day = asking_order(r, monkeypatch)
    first = order.reserve("run1", 2)
    order.pending("run1", "a", "http://a/1", first, day)
    if later == "next day":
        order.pending("run1", "c", "http://c/1", first + 1, timed_day=day + 1)
    else:
        order.pending("run1", "c", "http://c/1", first + 1)
    late = order.reserve("run1", 1)
    order.pending("run1", "b", "http://b/1", late, timed_day=day)
    assert order.turn("run1", "a", "http://a/1", names_source=True) == WAIT
    assert order.turn("run1", "c", "http://c/1") == WAIT
    assert order.turn("run1", "b", "http://b/1") == GO
    order.finished("run1", "b", ["http://b/1"])
    assert order.turn("run1", "a", "http://a/1", names_source=True) == GO
    order.finished("run1", "a", ["http://a/1"])
    assert order.turn("run1", "c", "http://c/1") == GO
    order.finished("run1", "c", ["http://c/1"])
    assert not [k for k in r.keys("t:portal:unchecked:*")]


def test_a_reprint_does_not_wait_for_a_checked_article_left_in_its_day_set(r: Any) -> None:
    """A worker of an older version checked an article without taking it out of the day set:
    the reprint does not wait for it."""
    from newscrawl.scheduling.waiting import GO, CheckOrder, day_only

    w = wait(r)
    order = CheckOrder(r, w.df.keys, w.df.retry, ttl=60)
    day = day_only(date_score(url_date("http://a/20261118/1.html")))
    assert day is not None
    first = order.reserve("run1", 1)
    order.pending("run1", "a", "http://a/1", first, day)
    r.zadd(f"t:portal:unchecked:run1:day:{day}", {"b\nhttp://b/1": first + 1})
    assert order.turn("run1", "a", "http://a/1", names_source=True) == GO


def test_a_wait_is_reused_until_what_it_waits_for_is_checked_here_or_it_is_stale(
        r: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from newscrawl.scheduling import waiting
    from newscrawl.scheduling.waiting import GO, WAIT, CheckOrder

    w = wait(r)
    here = CheckOrder(r, w.df.keys, w.df.retry, ttl=60)
    other = CheckOrder(r, w.df.keys, w.df.retry, ttl=60)  # another worker's
    first = here.reserve("run1", 4)
    here.pending("run1", "src", "http://src/1", first)
    here.pending("run1", "src", "http://src/2", first + 1)
    here.pending("run1", "re", "http://re/1", first + 2)
    monkeypatch.setattr(waiting, "TURN_REUSE_SECONDS", 3600.0)
    assert here.turn_why("run1", "re", "http://re/1") == (WAIT, "src http://src/1")
    other.finished("run1", "src", ["http://src/1"])
    # checked by another worker: this one answers from its last look until that is stale
    assert here.turn_why("run1", "re", "http://re/1") == (WAIT, "src http://src/1")
    monkeypatch.setattr(waiting, "TURN_REUSE_SECONDS", 0.0)
    assert here.turn_why("run1", "re", "http://re/1") == (WAIT, "src http://src/2")
    monkeypatch.setattr(waiting, "TURN_REUSE_SECONDS", 3600.0)
    assert here.turn("run1", "re", "http://re/1") == WAIT
    here.finished("run1", "src", ["http://src/2"])  # checked here: seen at once
    assert here.turn("run1", "re", "http://re/1") == GO
    here.finished("run1", "re", ["http://re/1"])
    assert not here._waits and not here._blocking


def test_a_check_many_wait_for_is_passed_on_not_asked_by_each(
        r: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from newscrawl.scheduling import waiting
    from newscrawl.scheduling.waiting import NOT_ORDERED, WAIT, CheckOrder

    w = wait(r)
    here = CheckOrder(r, w.df.keys, w.df.retry, ttl=60)
    first = here.reserve("run1", 5)
    for n, (site, url) in enumerate([("src", "http://src/1"), ("a", "http://a/1"),
                                     ("a", "http://a/2"), ("b", "http://b/1"),
                                     ("c", "http://c/1")]):
        here.pending("run1", site, url, first + n)
    monkeypatch.setattr(waiting, "TURN_REUSE_SECONDS", 3600.0)
    for site, url in [("c", "http://c/1"), ("a", "http://a/2"), ("b", "http://b/1"),
                      ("a", "http://a/1")]:
        assert here.turn_why("run1", site, url) == (WAIT, "src http://src/1")
    here.finished("run1", "src", ["http://src/1"])
    # from here on Redis would answer NOT_ORDERED: a WAIT seen now was not asked for
    r.delete(here._key("run1"))
    # the first site in line asks again; the later sites wait for its first article
    assert here.turn("run1", "b", "http://b/1") == WAIT
    assert here.turn_why("run1", "c", "http://c/1") == (WAIT, "a http://a/1")
    assert here.turn("run1", "a", "http://a/2") == NOT_ORDERED
    assert here.turn("run1", "a", "http://a/1") == NOT_ORDERED
    here.finished("run1", "a", ["http://a/1"])
    # a/1 checked: the first in line of those that waited for it asks again, the next waits
    assert here.turn_why("run1", "c", "http://c/1") == (WAIT, "b http://b/1")
    assert here.turn("run1", "b", "http://b/1") == NOT_ORDERED
    here.finished("run1", "b", ["http://b/1"])
    assert here.turn("run1", "c", "http://c/1") == NOT_ORDERED
