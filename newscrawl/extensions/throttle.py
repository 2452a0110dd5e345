"""AutoThrottle for the whole cluster: one delay per host for all workers of a crawl.

Scrapy's AutoThrottle moves each worker's downloader-slot delay from that worker's own
latencies, so N workers keep N times ``AUTOTHROTTLE_TARGET_CONCURRENCY`` requests at a host.
This extension replaces it (the add-on switches Scrapy's off, docs/addon.md) and, while
newscrawl's scheduler grants requests their turn for the whole cluster
(``NEWSCRAWL_POLITE_WINDOW > 0``), moves one delay per host in Redis instead: every response
moves the host's shared delay exactly as Scrapy 2.19's ``AutoThrottle._adjust_delay`` moves a
slot's (``lua/throttle.lua``: one atomic call), and the grant (``lua/pop.lua``) keeps the host's
turns at least that far apart, for every worker together. The workers' downloaders then add no
delay of their own (the scheduler sets it to 0). docs/design/scheduling.md has the details.

Without the grant (or without newscrawl's scheduler) it is Scrapy's AutoThrottle, unchanged.
Same settings: ``AUTOTHROTTLE_ENABLED``, ``_TARGET_CONCURRENCY``, ``_START_DELAY``,
``_MAX_DELAY``, ``_DEBUG``; the request meta ``autothrottle_dont_adjust_delay``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy.extensions.throttle import AutoThrottle as ScrapyAutoThrottle

from newscrawl.scheduling.queue import Throttle

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: How long a host's shared delay outlives its last response, beyond twice AUTOTHROTTLE_MAX_DELAY
#: (then the host starts again from AUTOTHROTTLE_START_DELAY, as a Scrapy worker does once it
#: dropped the downloader slot of a host idle for 60 s).
THROTTLE_IDLE_SECONDS = 60.0

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

    def share(self, adapt: AdaptDelay) -> Throttle:
        """Called by newscrawl's scheduler when it opens with its grant on: from now on each
        response moves the host's shared delay through ``adapt`` instead of this worker's
        downloader slot. Returns the figures the grant and ``adapt`` work with."""
        self._adapt = adapt
        settings = self.crawler.settings
        max_delay = settings.getfloat("AUTOTHROTTLE_MAX_DELAY")
        return Throttle(
            target_concurrency=self.target_concurrency,
            start_ms=settings.getfloat("AUTOTHROTTLE_START_DELAY") * 1000,
            max_ms=max_delay * 1000,
            ttl_ms=int((THROTTLE_IDLE_SECONDS + 2 * max_delay) * 1000),
        )

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
