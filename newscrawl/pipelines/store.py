"""Storage pipeline: unique articles as daily JSON Lines files (see :mod:`newscrawl.storage`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from newscrawl.crawler_redis import RedisConfig
from newscrawl.items import ARTICLE_FIELDS
from newscrawl.sitestats import SiteStats
from newscrawl.storage import ArticleStore

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoreConfig:
    enabled: bool
    directory: Path
    fsync: bool

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> StoreConfig:
        directory = settings.get("NEWSCRAWL_STORE_DIR") or (
            RedisConfig.from_settings(settings).data_dir / "articles"
        )
        return cls(
            enabled=settings.getbool("NEWSCRAWL_STORE", True),
            directory=Path(directory).expanduser(),
            fsync=settings.getbool("NEWSCRAWL_STORE_FSYNC", False),
        )


class StorePipeline:
    def __init__(self, crawler: Crawler, config: StoreConfig) -> None:
        self.config = config
        self.stats: StatsCollector | None = crawler.stats
        self.site_stats = SiteStats.of(crawler)
        self.store = ArticleStore(config.directory, fsync=config.fsync)
        logger.info("Storing articles as daily JSON Lines under %s", config.directory)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        config = StoreConfig.from_settings(crawler.settings)
        if not config.enabled:
            raise NotConfigured("NEWSCRAWL_STORE is off")
        pipe = cls(crawler, config)
        from scrapy import signals

        crawler.signals.connect(pipe.close, signal=signals.spider_closed)
        return pipe

    def process_item(self, item: Any) -> Any:
        record = {key: item.get(key) for key in ARTICLE_FIELDS}
        self.store.write(record)
        if self.stats is not None:
            self.stats.inc_value("newscrawl/store/stored")
        if record.get("site"):
            self.site_stats.inc(str(record["site"]), "stored")
        return item

    def close(self) -> None:
        self.store.close()
