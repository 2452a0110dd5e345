"""The list-page walks the workers of a run share: which of a page's articles are done, and how
many list pages a walk may still fetch (``max_list_pages``, reserved atomically in Lua).
See docs/design/pagination.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from newscrawl.context import CrawlContext
from newscrawl.formats import as_text
from newscrawl.keys import CRAWL_SITES_FOLLOW_URL, CRAWL_WALK
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

    def follow_url_before(self, site: str) -> str | None:
        """The ``follow_url`` pattern ``site`` had in the last finished run that fetched its
        start pages ("" for none; None: no such run recorded)."""
        key = self.df.keys(CRAWL_SITES_FOLLOW_URL)
        value = self.df.retry.call(self.df.server.hget, key, site, what="list walk")
        return None if value is None else as_text(value)

    def record_follow_urls(self, patterns: dict[str, str]) -> None:
        """Record each site's ``follow_url`` pattern ("" for none) at the end of a finished
        run."""
        if patterns:
            self.df.retry.call(self.df.server.hset, self.df.keys(CRAWL_SITES_FOLLOW_URL),
                               mapping=patterns, what="list walk")

    def reserve(self, run_id: str, walk: str, requests: list[Request], cap: int) -> list[int]:
        """ADMITTED / ALREADY_ADMITTED / OVER_CAP for each list request, in order."""
        if not requests:
            return []
        fps = [self.df.fingerprint8(r) for r in requests]
        result = self.df.retry.call(self._reserve, keys=[self.walk_key(run_id, walk)],
                                    args=[cap, self.ttl, *fps], what="list walk")
        return [int(x) for x in result]
