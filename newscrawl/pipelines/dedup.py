"""Near-duplicate pipeline: fingerprint, check-and-add in the Redis index, drop reprints.

The fingerprint is added to the index (atomically, one Lua call) BEFORE the storage pipeline sees
the item, so an article is stored only once its fingerprint is in the index. A near-duplicate
(Hamming distance <= ``NEWSCRAWL_MAX_DISTANCE``) is dropped with :class:`NearDuplicate` and recorded
in the duplicate log (url, original url, distance, both fingerprints, time, site, title).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import DropItem, NotConfigured

from newscrawl.crawler_redis import RedisConfig, redis_for_crawler

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

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DedupConfig:
        retention = settings.get("NEWSCRAWL_FINGERPRINT_RETENTION_DAYS")
        return cls(
            enabled=settings.getbool("NEWSCRAWL_DEDUP_ENABLED", True),
            max_distance=settings.getint("NEWSCRAWL_MAX_DISTANCE", 3),
            idf_file=settings.get("NEWSCRAWL_IDF_FILE") or None,
            retention_days=int(retention) if retention not in (None, "") else None,
            prefix=RedisConfig.from_settings(settings).prefix,
        )


def hex64(value: int) -> str:
    return f"{value:016x}"


class NearDuplicatePipeline:
    def __init__(self, crawler: Crawler, config: DedupConfig) -> None:
        from newscrawl.index import DuplicateLog, SimhashIndex
        from newscrawl.simhash import get_fingerprinter

        self.config = config
        self.stats: StatsCollector | None = crawler.stats
        self.fingerprinter = get_fingerprinter(idf_file=config.idf_file)
        client = redis_for_crawler(crawler)
        self.index = SimhashIndex(
            client,
            prefix=config.prefix,
            max_distance=config.max_distance,
            version=self.fingerprinter.version,
            retention_days=config.retention_days,
        )
        self.log = DuplicateLog(client, prefix=config.prefix)
        logger.info(
            "Near-duplicate check on: Hamming distance <= %d, fingerprint version %s",
            config.max_distance,
            self.fingerprinter.version,
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDuplicatePipeline:
        config = DedupConfig.from_settings(crawler.settings)
        if not config.enabled:
            raise NotConfigured("NEWSCRAWL_DEDUP_ENABLED is off")
        return cls(crawler, config)

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(STATS + key)

    def process_item(self, item: Any) -> Any:
        url = item["url"]
        text = item.get("text") or ""
        fp = self.fingerprinter.fingerprint(text)
        if fp is None:
            self._inc("no_text")
            item["simhash"] = None
            logger.debug("No fingerprint for %s: stored without near-duplicate check", url)
            return item
        item["simhash"] = hex64(fp)
        self._inc("checked")
        match = self.index.check_and_add(fp, url)
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
        recorded = self.log.record(
            url,
            match.doc_id,
            match.distance,
            fp,
            match.fingerprint,
            seen_at=time.time(),
            site=item.get("site"),
            title=item.get("title"),
        )
        if not recorded:
            self._inc("near_duplicate_already_recorded")
        raise NearDuplicate(
            f"near-duplicate of {match.doc_id} (distance {match.distance})",
            url=url,
            original_url=match.doc_id,
            distance=match.distance,
        )
