"""The state of list-page walks that several workers share: which articles are done, and how
many list pages each walk may still fetch in this run.

A *walk* is everything reached from one start page through list pages (``follow_url``) in one
run. The spider decides from a page's article links whether to follow its list links (see
``newscrawl/spiders/portal.py``); this module answers its two Redis questions, one round trip
each per page:

* :meth:`ListWalks.done` -- which of a page's article requests are in the dupefilter's done
  records (an article queued or in flight but not yet processed is *not* done: it counts as new,
  so a walk errs towards one more list page rather than a missed article).
* :meth:`ListWalks.reserve` -- atomically (Lua) admit list pages into the walk's set
  ``{prefix}:{spider}:walk:{run}:{walk}`` while it holds fewer than ``max_list_pages``. A page
  already admitted is admitted again (0) without using the budget, so a list page re-parsed after
  its worker was killed (its lease expired and it was requeued) re-yields the same links and the
  walk goes on exactly as before.

And it holds the article links a walk finds until the walk has read its list pages, so that they
are fetched oldest first (a portal lists newest first: a reprint published days after its
original is met first, and the near-duplicate check keeps whichever copy it sees first):

* :meth:`ListWalks.hold` -- add a page's article links to the walk's sorted set
  ``{prefix}:{spider}:held:{run}:{walk}``, scored by list position (older: higher).
* :meth:`ListWalks.release` -- the same, then take every held link out, oldest first (one
  transaction): called by the page that ends its branch of the walk.
* :meth:`ListWalks.release_all` -- every walk's held links of a run (the walks holding any are in
  the set ``{prefix}:{spider}:held:{run}``), for a crawl that went idle with some still held (a
  branch whose next list page was already scheduled by another walk).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from newscrawl.redis.keys import (
    CRAWL_INFLIGHT,
    CRAWL_PAGE_RELEASED,
    CRAWL_QUEUE,
    CRAWL_WALK,
    CRAWL_WALK_HELD,
    CRAWL_WALKS_HOLDING,
)
from newscrawl.scheduling.dupefilter import RedisDupeFilter
from newscrawl.scheduling.lua import load
from newscrawl.sitestats import MIN_RUN_STATS_TTL

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: reserve() results per list page
ADMITTED = 1
ALREADY_ADMITTED = 0
OVER_CAP = -1

_RESERVE = load("reserve.lua", constants=globals())

#: held article links are scored ``page * PAGE_SPAN + place`` (page: the list page's depth)
PAGE_SPAN = 10000


def position(depth: int, place: int) -> int:
    """The hold score of the ``place``-th article link of a list page at ``depth``: larger is
    further down the listing, so older on a newest-first portal."""
    return depth * PAGE_SPAN + min(place, PAGE_SPAN - 1)


def depth_of(score: float) -> int:
    """The depth of the list page an article link was held from."""
    return int(score) // PAGE_SPAN


_URL_DATE = re.compile(r"(?<!\d)(20\d\d)[/_-]?(\d\d)[/_-]?(\d\d)(?!\d)")


def url_day(url: str) -> int | None:
    """The date an article URL carries (``/2026/11/16/``, ``/20261116/``, ``/2026-11-16/``,
    ``/2026/1116/``) as YYYYMMDD, else None."""
    for match in _URL_DATE.finditer(url):
        year, month, day = (int(g) for g in match.groups())
        if 1 <= month <= 12 and 1 <= day <= 31:
            return year * 10000 + month * 100 + day
    return None


def oldest_first(held: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """Held links (oldest first by list position) in the order to request them: by the date in
    their URLs when every one has a date (a portal that lists oldest first, or a bar that mixes
    days), the list position breaking ties; else by list position alone."""
    days = [url_day(url) for _, url, _ in held]
    if not held or any(day is None for day in days):
        return held
    order = sorted(range(len(held)), key=lambda i: (days[i], i))
    return [held[i] for i in order]


class ListWalks:
    """Shared walk state in Redis (see the module docstring)."""

    def __init__(self, dupefilter: RedisDupeFilter, *, ttl: int) -> None:
        self.df = dupefilter
        self.ttl = max(int(ttl), MIN_RUN_STATS_TTL)
        self._reserve = dupefilter.server.register_script(_RESERVE)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ListWalks:
        from newscrawl.context import CrawlContext

        ttl = CrawlContext.of(crawler).config.scheduling.run_ttl
        return cls(RedisDupeFilter.from_crawler(crawler), ttl=ttl)

    def walk_id(self, start_request: Request) -> str:
        """The id of the walk below a start page: its fingerprint (hex)."""
        return self.df.fingerprint8(start_request).hex()

    def walk_key(self, run_id: str, walk: str) -> str:
        return self.df.keys(CRAWL_WALK, run=run_id, walk=walk)

    def done(self, requests: list[Request]) -> list[bool]:
        """Whether each article request is done (one round trip)."""
        return self.df.done_many(requests)

    def reserve(self, run_id: str, walk: str, requests: list[Request], cap: int) -> list[int]:
        """ADMITTED / ALREADY_ADMITTED / OVER_CAP for each list request, in order."""
        if not requests:
            return []
        fps = [self.df.fingerprint8(r) for r in requests]
        result = self.df.retry.call(self._reserve, keys=[self.walk_key(run_id, walk)],
                                    args=[cap, self.ttl, *fps], what="list walk")
        return [int(x) for x in result]

    # --- article links held until the walk has read its list pages -----------------------------

    def held_key(self, run_id: str, walk: str) -> str:
        return self.df.keys(CRAWL_WALK_HELD, run=run_id, walk=walk)

    def holding_key(self, run_id: str) -> str:
        return self.df.keys(CRAWL_WALKS_HOLDING, run=run_id)

    def _add(self, pipe: Any, run_id: str, walk: str, site: str,
             links: Sequence[tuple[str, int]]) -> None:
        if links:
            key = self.held_key(run_id, walk)
            # GT: a link listed twice (home page and list page 1) keeps its older place
            pipe.zadd(key, {f"{site}\n{url}": score for url, score in links}, gt=True)
            pipe.expire(key, self.ttl)
            pipe.sadd(self.holding_key(run_id), walk)
            pipe.expire(self.holding_key(run_id), self.ttl)

    def hold(self, run_id: str, walk: str, site: str, links: Sequence[tuple[str, int]]) -> None:
        """Hold ``links`` ((url, :func:`position`) pairs) until the walk is released."""
        if not links:
            return

        def add() -> None:
            pipe = self.df.server.pipeline(transaction=True)
            self._add(pipe, run_id, walk, site, links)
            pipe.execute()

        self.df.retry.call(add, what="hold article links")

    def release(self, run_id: str, walk: str, site: str,
                links: Sequence[tuple[str, int]] = (), *,
                page: str | None = None) -> list[tuple[str, str, int]]:
        """Hold ``links``, then take every link the walk holds: (site, url, score), oldest first
        (:func:`oldest_first`).

        With ``page`` (the id of the list page releasing them, :meth:`walk_id`), the links are
        kept in ``{prefix}:{spider}:released:{run}:{page}`` for the run, and a second release by
        the same page (parsed again because its worker died before it was done, maybe before the
        requests reached the queue) returns them again: the scheduler drops those already
        queued or done."""
        key = self.held_key(run_id, walk)
        released = self.df.keys(CRAWL_PAGE_RELEASED, run=run_id, page=page) if page else None

        def take() -> list[tuple[bytes, float]]:
            pipe = self.df.server.pipeline(transaction=True)
            self._add(pipe, run_id, walk, site, links)
            if released is not None:
                pipe.zunionstore(released, [key, released], aggregate="MAX")
                pipe.expire(released, self.ttl)
            pipe.zrevrange(released or key, 0, -1, withscores=True)
            pipe.delete(key)
            pipe.srem(self.holding_key(run_id), walk)
            return list(pipe.execute()[-3])

        return oldest_first(_decode(self.df.retry.call(take, what="release article links")))

    def quiet(self) -> bool:
        """Whether nothing is queued or in flight on any worker (no walk can be going on)."""
        def count() -> tuple[int, int]:
            pipe = self.df.server.pipeline(transaction=False)
            pipe.zcard(self.df.keys(CRAWL_QUEUE))
            pipe.zcard(self.df.keys(CRAWL_INFLIGHT))
            queued, inflight = pipe.execute()
            return int(queued), int(inflight)

        return self.df.retry.call(count, what="queue length") == (0, 0)

    def release_all(self, run_id: str) -> list[tuple[str, str, int]]:
        """Take the held links of every walk of the run, oldest first within each walk."""
        walks = self.df.retry.call(self.df.server.smembers, self.holding_key(run_id),
                                   what="find held article links")
        out: list[tuple[str, str, int]] = []
        for walk in sorted(w.decode() if isinstance(w, bytes) else str(w) for w in walks):
            out += self.release(run_id, walk, "")
        return out


def _decode(rows: list[tuple[bytes, float]]) -> list[tuple[str, str, int]]:
    out = []
    for member, score in rows:
        text = member.decode("utf-8", "replace") if isinstance(member, bytes) else str(member)
        site, _, url = text.partition("\n")
        if url:
            out.append((site, url, int(score)))
    return out
