"""Per-host politeness for the whole cluster: each request's host slot (concurrency and delay),
AutoThrottle's delay per host shared by the workers, and the wake-up for a host's next turn.

The grant itself is Lua (``lua/pop.lua``, ``lua/throttle.lua``); this module feeds it.
See docs/design/scheduling.md ("Politeness for the whole cluster").
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy.utils.asyncio import call_later
from scrapy.utils.httpobj import urlparse_cached

from newscrawl import _scrapy_compat as compat
from newscrawl.extensions.throttle import AutoThrottle
from newscrawl.meta import SITE
from newscrawl.scheduling.queue import HostSlot, LeasedPriorityQueue, Throttle
from newscrawl.scheduling.stopping import FaultStop, guarded, returns

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import CallLaterResult

    from newscrawl.redis.keys import CrawlKeys

logger = logging.getLogger(__name__)

#: How long a host's shared delay outlives its last response, beyond twice AUTOTHROTTLE_MAX_DELAY
#: (then the host starts again from AUTOTHROTTLE_START_DELAY, as a Scrapy worker does once it
#: dropped the downloader slot of a host idle for 60 s).
THROTTLE_IDLE_SECONDS = 60.0
# How often an idle worker looks at the shared queue (Scrapy's own heartbeat is 5 s).
POLL_SECONDS = 0.5
# The least wait of a wake for a host's turn after a pop that found nothing (then doubled).
WAKE_MIN_SECONDS = 0.025


def host_name(request: Request) -> str:
    """The host slot name of ``request``, as Scrapy's downloader names its slots (meta
    ``download_slot``, else the host name); "" for none."""
    return str(request.meta.get("download_slot") or urlparse_cached(request).hostname or "")


def shared_throttle(extension: AutoThrottle) -> Throttle:
    """The figures the grant and the shared delay work with, from the extension's settings."""
    settings = extension.crawler.settings
    max_delay = settings.getfloat("AUTOTHROTTLE_MAX_DELAY")
    return Throttle(
        target_concurrency=extension.target_concurrency,
        start_ms=settings.getfloat("AUTOTHROTTLE_START_DELAY") * 1000,
        max_ms=max_delay * 1000,
        ttl_ms=int((THROTTLE_IDLE_SECONDS + 2 * max_delay) * 1000),
    )


class Politeness:
    """The host slots, the shared AutoThrottle delay and the wake for a host's turn of one
    worker (see the module docstring). ``window`` is NEWSCRAWL_POLITE_WINDOW (0: off)."""

    def __init__(self, crawler: Crawler, spider: Spider, keys: CrawlKeys, faults: FaultStop,
                 window: int) -> None:
        self.crawler = crawler
        self.spider = spider
        self.keys = keys
        self.faults = faults
        self.window = window
        settings = crawler.settings
        self.concurrency = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        self.delay = settings.getfloat("DOWNLOAD_DELAY")
        #: AutoThrottle's delay per host shared by the cluster (None: not shared)
        self.throttle: Throttle | None = None
        self.queue: LeasedPriorityQueue | None = None
        # the call that asks the queue again when a host held back by its delay is free
        self._wake: CallLaterResult | None = None
        self._wake_at = 0.0
        self._wake_floor = 0.0  # the least wait before the next wake (see wake_for_turn)
        if window > 0:
            # newscrawl's AutoThrottle moves one delay per host for the whole cluster, kept by
            # the grant (throttle.lua, pop.lua)
            extension = self._autothrottle()
            if extension is not None:
                extension.share(self.adapt_delay)
                self.throttle = shared_throttle(extension)

    @property
    def on(self) -> bool:
        return self.window > 0

    def queue_options(self) -> dict[str, Any]:
        """The queue's politeness arguments."""
        return {
            "host_slot": self.host_slot if self.on else None,
            "polite_window": self.window,
            "randomize_delay": self.crawler.settings.getbool("RANDOMIZE_DOWNLOAD_DELAY", True),
            "throttle": self.throttle,
        }

    def open(self, queue: LeasedPriorityQueue) -> None:
        self.queue = queue
        if self.on and (self.throttle is not None
                        or not self.crawler.settings.getbool("AUTOTHROTTLE_ENABLED")):
            # DOWNLOAD_DELAY, and AutoThrottle's delay when shared, are kept by the grant, for
            # every worker together (pop.lua); a worker's own downloader delaying again would
            # only slow it down. (Scrapy's own AutoThrottle, if a project keeps it, delays
            # per worker on top.)
            compat.no_local_delay(self.crawler.engine)

    def close(self) -> None:
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None

    def _autothrottle(self) -> AutoThrottle | None:
        """newscrawl's AutoThrottle extension of this crawler, if it is on."""
        try:
            return self.crawler.get_extension(AutoThrottle)
        except RuntimeError:  # a crawler without extensions (built by hand)
            return None

    def host_slot(self, request: Request) -> HostSlot | None:
        """The host slot of ``request`` for the cluster-wide grant (pop.lua): keyed like
        Scrapy's downloader slots (meta ``download_slot``, else the host name), with the
        site's ``concurrency``/``delay`` or CONCURRENT_REQUESTS_PER_DOMAIN/DOWNLOAD_DELAY."""
        host = host_name(request)
        if not host:
            return None
        concurrency, delay = self.concurrency, self.delay
        sites = getattr(self.spider, "sites", None)
        site = sites.get(request.meta.get(SITE)) if isinstance(sites, dict) else None
        if site is not None:
            concurrency = site.concurrency if site.concurrency is not None else concurrency
            delay = site.delay if site.delay is not None else delay
        return HostSlot(self.keys.slots(host), concurrency, int(delay * 1000))

    @guarded(returns(None))
    def adapt_delay(self, request: Request, latency: float, ok: bool
                    ) -> tuple[str, float, float] | None:
        """Move the shared AutoThrottle delay of ``request``'s host after its response took
        ``latency`` seconds (``ok``: status 200); returns (host, old, new delay in seconds), or
        None (not shared, no host, stopping on a fault). One Redis call (throttle.lua); Redis
        away stops the crawl as any scheduler call does."""
        if self.queue is None or self.throttle is None:
            return None
        slot = self.host_slot(request)
        if slot is None:
            return None
        old, new = self.queue.adapt_delay(slot, latency, ok)
        return host_name(request), old, new

    def granted(self) -> None:
        """A request was granted: the next empty pop waits the least again."""
        self._wake_floor = 0.0

    def wake_for_turn(self, ms: int | None) -> None:
        """Ask the queue again in ``ms`` (a host held back by its delay is free then: pop.lua)
        rather than at the next tick, so a host is asked as soon as its delay allows.

        Every pop that finds nothing doubles the least wait (from WAKE_MIN_SECONDS up to the
        tick): workers that outnumber what the hosts allow all wake for the same free turn, and
        only one gets it; the others back off to the tick instead of each scanning the queue's
        window once per turn of every host. A granted request resets it."""
        if ms is None:
            return
        wait = max(ms / 1000, self._wake_floor)
        self._wake_floor = min(POLL_SECONDS, max(WAKE_MIN_SECONDS, self._wake_floor * 2))
        if wait >= POLL_SECONDS:
            return  # the tick asks then
        at = time.monotonic() + wait
        if self._wake is not None:
            if self._wake_at <= at:
                return  # an earlier wake is set
            self._wake.cancel()
        self._wake_at = at
        self._wake = call_later(wait, self._on_wake)

    def _on_wake(self) -> None:
        self._wake = None
        if not self.faults.stopped:
            compat.wake_engine(self.crawler.engine)
