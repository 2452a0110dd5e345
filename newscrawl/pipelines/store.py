"""Storage pipeline: unique articles as daily JSON Lines files (:mod:`newscrawl.storage`); an
article already in today's or yesterday's file is not written again. docs/operations.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured

from newscrawl.context import CrawlContext
from newscrawl.storage import ArticleStore

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


class AlreadyStored(DropItem):
    """The article was indexed and stored by a run that stopped before recording it as done
    (its own fingerprint is in the index and its record in the store), or its record is in the
    store of the last two days: not stored again."""

    def __init__(self, message: str) -> None:
        # an expected outcome (every article again after `newscrawl reset`): INFO, not one
        # WARNING per article
        super().__init__(message, log_level="INFO")


class StorePipeline:
    def __init__(self, crawler: Crawler, context: CrawlContext) -> None:
        self.config = config = context.config.store
        self.stats: StatsCollector | None = crawler.stats
        self.site_stats = context.site_stats
        self.store = ArticleStore(config.directory, fsync=config.fsync,
                                  url_field=config.url_field)
        logger.info("Storing articles as daily JSON Lines under %s", config.directory)

    @staticmethod
    def article_store(crawler: Crawler) -> ArticleStore | None:
        """Where this crawler's articles are stored (None when storage is off), for the
        near-duplicate pipeline to ask whether an article is already stored."""
        config = CrawlContext.of(crawler).config.store
        if not config.enabled:
            return None
        return ArticleStore(config.directory, url_field=config.url_field)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        context = CrawlContext.of(crawler)
        if not context.config.store.enabled:
            raise NotConfigured("NEWSCRAWL_STORE is off")
        pipe = cls(crawler, context)
        from scrapy import signals

        crawler.signals.connect(pipe.close, signal=signals.spider_closed)
        return pipe

    def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        url_field = self.config.url_field
        url = adapter.get(url_field)
        if not isinstance(url, str) or not url:
            if self.stats is not None:
                self.stats.inc_value("newscrawl/store/no_url")
            raise DropItem(f"not stored: the item has no {url_field!r} field with a URL")
        record: dict[str, Any] = {url_field: url}
        record.update((name, adapter.get(name)) for name in adapter.field_names()
                      if name != url_field)
        if self.store.stored_recently(url):
            if self.stats is not None:
                self.stats.inc_value("newscrawl/store/already_stored")
            if record.get("site"):
                self.site_stats.inc(str(record["site"]), "already_stored")
            # one INFO line: Scrapy's "Dropped URL: <this message>"
            raise AlreadyStored(f"{url} is already in the article store: not stored again")
        self.store.write(record)
        if self.stats is not None:
            self.stats.inc_value("newscrawl/store/stored")
        if record.get("site"):
            self.site_stats.inc(str(record["site"]), "stored")
        return item

    def close(self) -> None:
        self.store.close()
