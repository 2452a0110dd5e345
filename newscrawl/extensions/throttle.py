"""AutoThrottle for the whole cluster: one delay per host for all workers of a crawl.

Scrapy's AutoThrottle, unchanged until newscrawl's scheduler shares it (:meth:`AutoThrottle.share`,
when its grant is on): each response then moves the host's delay in Redis for every worker
instead of this worker's downloader slot. See docs/design/scheduling.md ("AutoThrottle for the
whole cluster").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy.extensions.throttle import AutoThrottle as ScrapyAutoThrottle

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: Moves the shared delay of a request's host after its response: (request, latency in seconds,
#: status was 200) -> (host, old delay, new delay) in seconds, or None when nothing was moved.
AdaptDelay = Callable[["Request", float, bool], "tuple[str, float, float] | None"]


class AutoThrottle(ScrapyAutoThrottle):
    """Scrapy's AutoThrottle, its delay per host shared by the cluster while newscrawl's
    scheduler grants the turns (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)  # NotConfigured when off, as Scrapy's
        self._adapt: AdaptDelay | None = None

    @property
    def shared(self) -> bool:
        """Whether the delay is the cluster's (:meth:`share` was called)."""
        return self._adapt is not None

    def share(self, adapt: AdaptDelay) -> None:
        """Called by newscrawl's scheduler when it opens with its grant on
        (:mod:`newscrawl.scheduling.politeness`): from now on each response moves the host's
        shared delay through ``adapt`` instead of this worker's downloader slot."""
        self._adapt = adapt

    def _spider_opened(self, spider: Spider) -> None:
        if not self.shared:
            super()._spider_opened(spider)
            return
        # the grant starts each host at AUTOTHROTTLE_START_DELAY; the downloader waits no more
        self.mindelay = self._min_delay()
        self.maxdelay = self._max_delay()

    def _response_downloaded(self, response: Response, request: Request, spider: Spider
                             ) -> None:
        if self._adapt is None:
            super()._response_downloaded(response, request, spider)
            return
        latency = request.meta.get("download_latency")
        if latency is None or request.meta.get("autothrottle_dont_adjust_delay", False) is True:
            return
        moved = self._adapt(request, float(latency), response.status == 200)
        if moved is None or not self.debug:
            return
        host, old, new = moved
        logger.info(
            "slot: %s (shared) | delay:%5d ms (%+d) | latency:%5d ms | size:%6d bytes",
            host, new * 1000, (new - old) * 1000, latency * 1000, len(response.body),
            extra={"spider": spider},
        )
