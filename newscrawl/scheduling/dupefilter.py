"""Which requests to schedule: articles once ever (done and pending records), start, list,
sitemap and feed pages once per run. The de-duplication runs atomically with the push
(``lua/push.lua``); this class builds its specs and prunes the done records.
See docs/design/scheduling.md ("How a request flows").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.dupefilters import BaseDupeFilter

from newscrawl.context import CrawlContext
from newscrawl.formats import plural, today
from newscrawl.keys import (
    CRAWL_FAILURES,
    CRAWL_LISTSEEN,
    CRAWL_PENDING,
    CRAWL_RETRY,
    CRAWL_SEEN,
    CRAWL_SEEN_PRUNED,
    Keys,
)
from newscrawl.meta import RUN_KINDS
from newscrawl.scheduling.queue import (
    MODE_FORCE,
    MODE_FORCE_PENDING,
    MODE_ONCE,
    MODE_RUN,
    DedupeSpec,
)

if TYPE_CHECKING:
    import redis
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from newscrawl.connection import RetryPolicy

logger = logging.getLogger(__name__)

SHARDS = 1 << 16


def fingerprint8(fingerprinter: Any, request: Request) -> bytes:
    """The 8 bytes of ``request``'s fingerprint that key its crawl state."""
    return bytes(fingerprinter.fingerprint(request))[:8]


def seen_target(keys: Keys, fp: bytes) -> tuple[str, bytes]:
    """(shard key, member) of the done record of fingerprint ``fp`` (``newscrawl push`` reads
    it outside a crawl)."""
    return keys(CRAWL_SEEN, shard=fp[:2].hex()), fp[2:]


class RedisDupeFilter(BaseDupeFilter):
    """De-duplication state of one spider in Redis (see the module docstring)."""

    def __init__(
        self,
        server: redis.Redis,
        *,
        keys: Keys,
        retry: RetryPolicy,
        fingerprinter: Any,
        retention_days: int,
        run_ttl: int,
        stats: StatsCollector | None = None,
        debug: bool = False,
    ) -> None:
        self.server = server
        self.keys = keys
        self.retry = retry
        self.fingerprinter = fingerprinter
        self.stats = stats
        self.retention_days = retention_days
        self.run_ttl = run_ttl
        self.debug = debug
        self._logged_once = False
        self.pending_key = keys(CRAWL_PENDING)
        self.failures_key = keys(CRAWL_FAILURES)
        self.retry_key = keys(CRAWL_RETRY)
        self.pruned_key = keys(CRAWL_SEEN_PRUNED)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisDupeFilter:
        context = CrawlContext.of(crawler)
        config = context.config.scheduling
        return cls(
            context.redis,
            keys=context.keys(),
            retry=context.retry,
            fingerprinter=crawler.request_fingerprinter,
            retention_days=config.url_retention_days,
            run_ttl=config.run_ttl,
            stats=crawler.stats,
            debug=crawler.settings.getbool("DUPEFILTER_DEBUG"),
        )

    # --- fingerprints and keys ----------------------------------------------------------------

    def fingerprint8(self, request: Request) -> bytes:
        return fingerprint8(self.fingerprinter, request)

    def seen_target(self, fp: bytes) -> tuple[str, bytes]:
        """(shard key, member) of the done record of fingerprint ``fp``."""
        return seen_target(self.keys, fp)

    def shard_keys(self) -> list[str]:
        return [
            self.keys(CRAWL_SEEN, shard=f"{i:04x}") for i in range(SHARDS)
        ]

    def listseen_key(self, run_id: str) -> str:
        return self.keys(CRAWL_LISTSEEN, run=run_id)

    def spec(self, request: Request, kind: str, fp: bytes, run_id: str) -> DedupeSpec:
        seen_key, member = self.seen_target(fp)
        if kind in RUN_KINDS:
            mode = MODE_FORCE if request.dont_filter else MODE_RUN
        else:
            mode = MODE_FORCE_PENDING if request.dont_filter else MODE_ONCE
        return DedupeSpec(
            mode=mode,
            fp=fp,
            seen_key=seen_key,
            seen_member=member,
            listseen_key=self.listseen_key(run_id),
            day=today(),
            listseen_ttl=self.run_ttl,
        )

    # --- BaseDupeFilter interface -------------------------------------------------------------

    def request_seen(self, request: Request) -> bool:
        """True if ``request`` (an article) was processed or is queued. Read-only: the scheduler
        records pending/done atomically with push and ack."""
        fp = self.fingerprint8(request)
        seen_key, member = self.seen_target(fp)

        def check() -> bool:
            pipe = self.server.pipeline(transaction=False)
            pipe.zscore(seen_key, member)
            pipe.hexists(self.pending_key, fp)
            score, pending = pipe.execute()
            return score is not None or bool(pending)

        return bool(self.retry.call(check, what="seen check"))

    def done_many(self, requests: list[Request]) -> list[bool]:
        """Whether each request is in the done records: one Redis round trip for all."""
        if not requests:
            return []
        targets = [self.seen_target(self.fingerprint8(r)) for r in requests]

        def check() -> list[bool]:
            pipe = self.server.pipeline(transaction=False)
            for key, member in targets:
                pipe.zscore(key, member)
            return [score is not None for score in pipe.execute()]

        return self.retry.call(check, what="done check")

    def forget(self, request: Request) -> bool:
        """Delete the done record of ``request`` (and its failure count), so the scheduler takes
        it as new: ``newscrawl push --again``. Returns whether it was done."""
        fp = self.fingerprint8(request)
        seen_key, member = self.seen_target(fp)

        def forget() -> bool:
            pipe = self.server.pipeline(transaction=True)
            pipe.zrem(seen_key, member)
            pipe.hdel(self.failures_key, fp)
            return bool(pipe.execute()[0])

        return bool(self.retry.call(forget, what="forget a done URL"))

    def is_done(self, request: Request) -> bool:
        seen_key, member = self.seen_target(self.fingerprint8(request))
        score = self.retry.call(self.server.zscore, seen_key, member, what="done check")
        return score is not None

    def log(self, request: Request, spider: Spider | None = None) -> None:
        if self.stats is not None:
            self.stats.inc_value("dupefilter/filtered")
        if self.debug:
            logger.debug("Filtered duplicate request: %s", request)
        elif not self._logged_once:
            logger.debug(
                "Filtered duplicate request %s - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)", request
            )
            self._logged_once = True

    def close(self, reason: str = "") -> None:
        """State persists between runs (SCHEDULER_PERSIST); nothing to do."""

    def clear(self) -> None:
        """Delete every record of this spider (done, pending, failures, listseen)."""
        pattern_listseen = self.listseen_key("*")

        def wipe() -> None:
            names = [self.pending_key, self.failures_key, self.retry_key, self.pruned_key]
            names += list(self.server.scan_iter(match=pattern_listseen, count=1000))
            shard_keys = self.shard_keys()
            for i in range(0, len(shard_keys), 4096):
                self.server.delete(*shard_keys[i : i + 4096])
            self.server.delete(*names)

        self.retry.call(wipe, what="clear dupefilter")

    # --- retention ----------------------------------------------------------------------------

    def prune(self, *, force: bool = False, batch: int = 2048) -> int:
        """Drop done records older than the retention (at most once a day unless ``force``).

        Returns the number of records removed (done + failure records)."""
        if self.retention_days <= 0:
            return 0
        day = today()
        last = self.retry.call(self.server.getset, self.pruned_key, day, what="prune marker")
        if not force and (last is None or int(last) >= day):
            return 0  # pruned today already, or a new crawl (nothing old to prune)
        cutoff = day - self.retention_days  # keep records with day >= cutoff
        removed = 0
        shard_keys = self.shard_keys()
        for i in range(0, len(shard_keys), batch):
            chunk = shard_keys[i : i + batch]

            def prune_chunk(chunk: list[str] = chunk) -> list[int]:
                pipe = self.server.pipeline(transaction=False)
                for key in chunk:
                    pipe.zremrangebyscore(key, "-inf", f"({cutoff}")
                return list(pipe.execute())

            removed += sum(self.retry.call(prune_chunk, what="prune done records"))
        removed += self._prune_failures(cutoff)
        logger.info("Pruned %s older than %s", plural(removed, "URL record"),
                    plural(self.retention_days, "day"))
        return removed

    def _prune_failures(self, cutoff: int) -> int:
        def prune() -> int:
            stale = []
            for field, value in self.server.hscan_iter(self.failures_key, count=1000):
                try:
                    day = int(bytes(value).split(b":")[1])
                except (IndexError, ValueError):
                    day = 0
                if day < cutoff:
                    stale.append(field)
            if stale:
                self.server.hdel(self.failures_key, *stale)
                self.server.hdel(self.retry_key, *stale)
            return len(stale)

        return int(self.retry.call(prune, what="prune failure records"))
