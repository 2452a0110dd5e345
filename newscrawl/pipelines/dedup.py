"""Near-duplicate pipeline: fingerprint, check-and-add in the Redis index, drop reprints.

The fingerprint is added to the index (atomically, one Lua call) BEFORE the storage pipeline sees
the item, so an article is stored only once its fingerprint is in the index. A near-duplicate
(Hamming distance <= ``NEWSCRAWL_MAX_DISTANCE``) is dropped with :class:`NearDuplicate` and recorded
in the duplicate log (url, original url, distance, both fingerprints, time, site, title).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import DropItem, NotConfigured

from newscrawl.crawler_redis import RedisConfig, redis_for_crawler
from newscrawl.scheduling.retry import call_with_retry

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

STATS = "newscrawl/dedup/"


class NearDuplicate(DropItem):
    """The item's text is a near-duplicate of an article already in the index."""

    def __init__(self, message: str, *, url: str, original_url: str, distance: int) -> None:
        super().__init__(message)
        self.url = url
        self.original_url = original_url
        self.distance = distance


@dataclass(frozen=True)
class DedupConfig:
    enabled: bool
    max_distance: int
    idf_file: str | None
    retention_days: int | None
    prefix: str
    workers: int
    redis_retry_seconds: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DedupConfig:
        retention = settings.get("NEWSCRAWL_FINGERPRINT_RETENTION_DAYS")
        return cls(
            enabled=settings.getbool("NEWSCRAWL_DEDUP_ENABLED", True),
            max_distance=settings.getint("NEWSCRAWL_MAX_DISTANCE", 3),
            idf_file=settings.get("NEWSCRAWL_IDF_FILE") or None,
            # 0 / None / "" / "None" (from -s): no retention (fingerprints compared forever)
            retention_days=(
                None if str(retention).strip().lower() in ("", "none") else int(retention) or None
            ),
            prefix=RedisConfig.from_settings(settings).prefix,
            workers=max(0, settings.getint("NEWSCRAWL_FINGERPRINT_WORKERS", 1)),
            redis_retry_seconds=settings.getfloat("NEWSCRAWL_REDIS_RETRY_SECONDS", 60.0),
        )


def hex64(value: int) -> str:
    return f"{value:016x}"


def _worker_fingerprint(text: str, idf_file: str | None) -> int | None:
    """Runs in a fingerprint worker process (the fingerprinter is cached per process)."""
    from newscrawl.simhash import get_fingerprinter

    return get_fingerprinter(idf_file=idf_file).fingerprint(text)


def _worker_version(idf_file: str | None) -> str:
    from newscrawl.simhash import get_fingerprinter

    return get_fingerprinter(idf_file=idf_file).version


class Fingerprints:
    """``fingerprint(text)`` in a worker process (a spare core) or, with 0 workers, in-process.

    Extraction keeps the crawl process busy; segmenting and weighting the text in another process
    takes the fingerprint off the crawl's critical path. If the worker dies, fingerprints are
    computed in-process from then on (logged).
    """

    def __init__(self, idf_file: str | None, workers: int) -> None:
        self.idf_file = idf_file
        self._pool: Executor | None = None
        if workers > 0:
            self._pool = ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("spawn")
            )
            self.version = self._pool.submit(_worker_version, idf_file).result()
        else:
            self.version = _worker_version(idf_file)

    async def fingerprint(self, text: str) -> int | None:
        if self._pool is not None:
            try:
                future = self._pool.submit(_worker_fingerprint, text, self.idf_file)
                return await asyncio.wrap_future(future)
            except (BrokenProcessPool, RuntimeError) as exc:
                logger.error("Fingerprint worker failed (%s): fingerprinting in-process", exc)
                self.close()
        return _worker_fingerprint(text, self.idf_file)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


class NearDuplicatePipeline:
    def __init__(self, crawler: Crawler, config: DedupConfig) -> None:
        from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

        from newscrawl.index import DuplicateLog, SimhashIndex

        self.config = config
        self.stats: StatsCollector | None = crawler.stats
        # Worker processes need asyncio to await their futures; otherwise fingerprint in-process.
        asyncio_ok = is_reactor_installed() and is_asyncio_reactor_installed()
        workers = config.workers if asyncio_ok else 0
        self.fingerprints = Fingerprints(config.idf_file, workers)
        client = redis_for_crawler(crawler)
        self.index = SimhashIndex(
            client,
            prefix=config.prefix,
            max_distance=config.max_distance,
            version=self.fingerprints.version,
            retention_days=config.retention_days,
        )
        self.log = DuplicateLog(client, prefix=config.prefix)
        logger.info(
            "Near-duplicate check on: Hamming distance <= %d, fingerprint version %s, %s",
            config.max_distance,
            self.fingerprints.version,
            f"{workers} fingerprint worker process(es)" if workers else "fingerprints in-process",
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDuplicatePipeline:
        config = DedupConfig.from_settings(crawler.settings)
        if not config.enabled:
            raise NotConfigured("NEWSCRAWL_DEDUP_ENABLED is off")
        pipe = cls(crawler, config)
        from scrapy import signals

        crawler.signals.connect(pipe.fingerprints.close, signal=signals.spider_closed)
        return pipe

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(STATS + key)

    async def process_item(self, item: Any) -> Any:
        url = item["url"]
        text = item.get("text") or ""
        fp = await self.fingerprints.fingerprint(text)
        if fp is None:
            self._inc("no_text")
            item["simhash"] = None
            logger.debug("No fingerprint for %s: stored without near-duplicate check", url)
            return item
        item["simhash"] = hex64(fp)
        self._inc("checked")
        # Retried while Redis is briefly away; safe to repeat (a retried add finds its own URL).
        match = call_with_retry(self.index.check_and_add, fp, url,
                                retry_seconds=self.config.redis_retry_seconds,
                                what="near-duplicate check")
        if match is None:
            self._inc("unique")
            return item
        if match.doc_id == url:
            # Our own earlier fingerprint: the article was indexed by a run that stopped before
            # storing/acknowledging it (crash, kill). Store it now rather than lose it.
            self._inc("reprocessed")
            logger.info("%s is already in the index (re-processed after an interruption)", url)
            return item
        self._inc("near_duplicate")
        recorded = call_with_retry(
            self.log.record,
            url,
            match.doc_id,
            match.distance,
            fp,
            match.fingerprint,
            seen_at=time.time(),
            site=item.get("site"),
            title=item.get("title"),
            retry_seconds=self.config.redis_retry_seconds,
            what="duplicate log",
        )
        if not recorded:
            self._inc("near_duplicate_already_recorded")
        raise NearDuplicate(
            f"near-duplicate of {match.doc_id} (distance {match.distance})",
            url=url,
            original_url=match.doc_id,
            distance=match.distance,
        )
