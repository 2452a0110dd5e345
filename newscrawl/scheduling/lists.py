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

The article links a walk finds wait for the end of the run's discovery
(:mod:`newscrawl.scheduling.waiting`); :func:`position` is their place in the listing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from newscrawl.context import CrawlContext
from newscrawl.redis.keys import CRAWL_WALK
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

#: an article link's place in a walk is ``depth * PAGE_SPAN + place on the page``
PAGE_SPAN = 10000


def position(depth: int, place: int) -> int:
    """The place of the ``place``-th article link of a list page at ``depth`` in its walk:
    larger is further down the listing, so older on a newest-first portal."""
    return depth * PAGE_SPAN + min(place, PAGE_SPAN - 1)


class ListWalks:
    """Shared walk state in Redis (see the module docstring)."""

    def __init__(self, dupefilter: RedisDupeFilter, *, ttl: int) -> None:
        self.df = dupefilter
        self.ttl = max(int(ttl), MIN_RUN_STATS_TTL)
        self._reserve = dupefilter.server.register_script(_RESERVE)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ListWalks:
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
