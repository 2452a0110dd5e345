"""The daily prune of expired fingerprints and old near-duplicate records, run by one worker of
the cluster a day in a thread; an error is logged and counted, never fails the crawl.
docs/design/index.md ("Daily prune").
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from newscrawl.context import CrawlContext
from newscrawl.exitcodes import ExitCode, exit_code
from newscrawl.formats import plural
from newscrawl.keys import SIMHASH_PRUNED

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from twisted.internet.defer import Deferred
    from twisted.python.failure import Failure

    from newscrawl.index import DuplicateLog, SimhashIndex

logger = logging.getLogger(__name__)

STATS = "newscrawl/index/"
#: The claim outlives its day (keys are per day; two days covers clock skew between workers).
CLAIM_SECONDS = 2 * 86400


@dataclass(frozen=True)
class Pruned:
    """What one day's prune deleted: fingerprints (None: no fingerprint retention) and
    near-duplicate records (None: kept forever)."""

    fingerprints: int | None
    duplicates: int | None


class IndexPruneExtension:
    """Claims and runs the day's prune of the near-duplicate index (see the module doc)."""

    def __init__(
        self,
        crawler: Crawler,
        context: CrawlContext,
        retention_days: int | None,
        duplicate_retention_days: int | None = None,
    ) -> None:
        self.crawler = crawler
        self.context = context
        self.retention_days = retention_days
        self.duplicate_retention_days = duplicate_retention_days
        self.stats: StatsCollector | None = crawler.stats
        self._index: SimhashIndex | None = None
        self._running: Deferred[Any] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IndexPruneExtension:
        context = CrawlContext.of(crawler)
        dedup = context.config.dedup  # the pipeline's settings
        if not dedup.enabled:
            raise NotConfigured("NEWSCRAWL_DEDUP_ENABLED is off")
        if dedup.retention_days is None and dedup.duplicate_retention_days is None:
            raise NotConfigured(
                "NEWSCRAWL_FINGERPRINT_RETENTION_DAYS and NEWSCRAWL_DUPLICATE_RETENTION_DAYS are"
                " off: nothing expires"
            )
        ext = cls(crawler, context, dedup.retention_days, dedup.duplicate_retention_days)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    @property
    def index(self) -> SimhashIndex:
        """The index on the crawl's Redis client, built as the near-duplicate pipeline does."""
        if self._index is None:
            from newscrawl.index import SimhashIndex

            self._index = SimhashIndex(
                self.context.redis,
                prefix=self.context.prefix,
                max_distance=self.context.config.dedup.max_distance,
                retention_days=self.retention_days,
            )
        return self._index

    @property
    def duplicates(self) -> DuplicateLog:
        """The near-duplicate records, on the index's client."""
        from newscrawl.index import DuplicateLog

        return DuplicateLog(self.index.client, prefix=self.context.prefix)

    def claim_key(self, day: int) -> str:
        return SIMHASH_PRUNED.format(prefix=self.context.prefix, day=day)

    # --- the work (blocking: runs in a thread) ---------------------------------------------
    def prune_today(self) -> Pruned | None:
        """Claim today's prune and run it: what it deleted, or None if claimed already.

        Raises on Redis errors (after releasing the claim, best effort).
        """
        index = self.index
        key = self.claim_key(index.today())
        if not index.client.set(key, repr(time.time()), nx=True, ex=CLAIM_SECONDS):
            return None
        try:
            fingerprints = None if self.retention_days is None else index.prune()
            duplicates = None
            if self.duplicate_retention_days is not None:
                duplicates = self.duplicates.prune(self.duplicate_retention_days)
            return Pruned(fingerprints, duplicates)
        except BaseException:
            try:
                index.client.delete(key)  # let the next run try again
            except Exception as exc:  # Redis away: the claim expires by itself
                logger.warning("Could not release the index prune claim %s: %s", key, exc)
            raise

    # --- reporting (reactor thread) ----------------------------------------------------------
    def _done(self, pruned: Pruned | None) -> None:
        if pruned is None:
            logger.debug("Near-duplicate index already pruned today")
            return
        if pruned.fingerprints is not None:
            logger.info(
                "Pruned %s (older than %s) from the near-duplicate index",
                plural(pruned.fingerprints, "expired fingerprint"),
                plural(self.retention_days, "day"),
            )
            if self.stats is not None:
                self.stats.set_value(STATS + "pruned", pruned.fingerprints)
        if pruned.duplicates is not None:
            logger.info(
                "Pruned %s of dropped near-duplicates (older than %s)",
                plural(pruned.duplicates, "record"),
                plural(self.duplicate_retention_days, "day"),
            )
            if self.stats is not None:
                self.stats.set_value(STATS + "duplicates_pruned", pruned.duplicates)

    def _failed(self, exc: BaseException) -> None:
        if self.context.report_fault(exc):
            return  # Redis refusing a command stops the crawl: one CRITICAL line
        logger.error(
            "The daily prune of expired fingerprints and near-duplicate records failed (the"
            " crawl goes on; the next run tries again): %s: %s",
            type(exc).__name__,
            exc,
            exc_info=exc,
        )
        if self.stats is not None:
            self.stats.inc_value(STATS + "prune_error")

    def run(self) -> None:
        """Claim and prune in the calling thread, then report (what spider_opened does)."""
        try:
            pruned = self.prune_today()
        except Exception as exc:
            self._failed(exc)
        else:
            self._done(pruned)

    # --- signals -----------------------------------------------------------------------------
    def spider_opened(self) -> None:
        from twisted.internet.threads import deferToThread

        if exit_code(self.crawler) == ExitCode.REDIS_UNAVAILABLE:
            return  # the scheduler could not reach Redis: the crawl is closing already
        try:
            self.index  # noqa: B018 - the client is resolved here, on the reactor thread
        except Exception as exc:
            self._failed(exc)
            return
        d: Deferred[Any] = deferToThread(self.prune_today)
        d.addCallbacks(self._done, self._errback)
        d.addBoth(self._finished)
        self._running = d

    def _errback(self, failure: Failure) -> None:
        self._failed(failure.value)

    def _finished(self, result: object) -> None:
        self._running = None

    async def spider_closed(self) -> None:
        """A prune still running is waited for (the embedded Redis stops after the crawl); then
        the index is closed. A coroutine: Scrapy waits for it (a returned Deferred is
        deprecated)."""
        running = self._running
        if running is not None and not running.called:
            from scrapy.utils.defer import maybe_deferred_to_future

            logger.info("Waiting for the near-duplicate index prune to finish")
            await maybe_deferred_to_future(running)  # its errback counted any failure
        self._close_index(None)

    def _close_index(self, result: object) -> object:
        if self._index is not None:
            self._index.close()
        return result
