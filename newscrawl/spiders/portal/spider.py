"""The ``portal`` spider: crawls the portals of a sites file incrementally. Its settings and
arguments, its start requests and the wiring of its parts (list pages, article pages, sources,
queueing, outcomes). Design: docs/design/architecture.md.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.http import Request

from newscrawl._datadirs import check_new_data_dir, other_data_dirs, record_data_dir
from newscrawl.connection import RedisConfig
from newscrawl.context import CrawlContext, check_settings
from newscrawl.meta import RequestKind
from newscrawl.middlewares.faults import redis_fault, report_fault
from newscrawl.sites import SitesError, default_sites_path, load_sites
from newscrawl.sources import SourcesConfig
from newscrawl.spiders.portal.articles import ArticlePages
from newscrawl.spiders.portal.base import article_pattern
from newscrawl.spiders.portal.outcomes import Outcomes, quiet_scrapy_size_warnings
from newscrawl.spiders.portal.queueing import Queueing
from newscrawl.spiders.portal.sources import SourcePages
from newscrawl.spiders.portal.walks import ListPages

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

logger = logging.getLogger(__package__ or __name__)  # one logger for all parts of the spider


@dataclass(frozen=True)
class SpiderConfig:
    sites_path: Path

    @classmethod
    def from_settings(cls, settings: BaseSettings, sites_arg: str | None) -> SpiderConfig:
        path = sites_arg or settings.get("NEWSCRAWL_SITES") or None
        return cls(sites_path=Path(path) if path else default_sites_path())


class PortalSpider(ListPages, SourcePages, ArticlePages, Queueing, Outcomes):
    """Crawls the portals of a sites file incrementally. Start pages, sitemaps and feeds are
    read every run; list pages while their walk keeps showing article links not done yet
    (:mod:`.walks`); article pages once ever (:mod:`.articles`), held until the run's discovery
    is done, then queued oldest first (:mod:`.queueing`). Every other outcome is counted under
    ``newscrawl/...`` and per site, and summed up at the end (:mod:`.outcomes`)."""

    name = "portal"
    #: The spider arguments (``-a NAME=VALUE``) it takes; names starting with "_" belong to a
    #: job scheduler (scrapyd's ``_job``) and are let through.
    ARGUMENTS = {"sites": "FILE"}

    @classmethod
    def check_config(cls, settings: BaseSettings, spider_args: dict[str, Any]) -> None:
        """Check the spider arguments and newscrawl's settings, and read the sites file before
        the crawl starts (a ``ValueError`` on any problem); ``scrapy crawl`` then exits 1 with
        that message alone."""
        unknown = sorted(a for a in spider_args if a not in cls.ARGUMENTS and a[:1] != "_")
        if unknown:
            known = ", ".join(f"-a {a}={v}" for a, v in cls.ARGUMENTS.items())
            raise ValueError(f"unknown spider argument -a {unknown[0]}=... (the portal spider"
                             f" takes {known})")
        check_settings(settings)
        sites_path = SpiderConfig.from_settings(settings, spider_args.get("sites")).sites_path
        load_sites(sites_path)
        redis = RedisConfig.from_settings(settings)
        if redis.url is None:  # the embedded Redis: not a second crawl of these sites by mistake
            check_new_data_dir(sites_path, redis.data_dir)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> PortalSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        config = SpiderConfig.from_settings(crawler.settings, spider.sites_arg)
        try:
            sites = load_sites(config.sites_path)
        except SitesError as exc:
            logger.error("Cannot start the crawl: %s", exc)
            raise
        spider.sites = {site.name: site for site in sites}
        # not CrawlContext's config: read now, before the add-on has set its defaults, it would
        # keep the settings as they are at this point for the whole crawl
        redis = RedisConfig.from_settings(crawler.settings)
        if redis.url is None and not getattr(spider, "_demo", None):  # (`newscrawl demo`'s)
            others = other_data_dirs(config.sites_path, redis.data_dir)
            if others:
                logger.warning(
                    "The crawl of %s kept its data in %s until now; this run keeps it in %s,"
                    " whose articles its articles are checked against and stored with (is this"
                    " the data directory meant? NEWSCRAWL_DATA_DIR, or the directory it runs in)",
                    config.sites_path, ", ".join(map(str, others)), redis.data_dir.resolve())
            record_data_dir(config.sites_path, redis.data_dir)
        quiet_scrapy_size_warnings()  # the spider's own WARNING for the page says it
        spider.sources_config = SourcesConfig.from_settings(crawler.settings)
        spider.site_stats = CrawlContext.of(crawler).site_stats
        crawler.signals.connect(spider._on_idle, signal=signals.spider_idle)
        crawler.signals.connect(spider._start_release_loop, signal=signals.spider_opened)
        crawler.signals.connect(spider._stop_release_loop, signal=signals.spider_closed)
        logger.info(
            "Crawling %d site(s) from %s: %s",
            len(sites), config.sites_path, ", ".join(spider.sites),
        )
        for site in sites:
            for url in site.start_urls:
                if site.is_article(url):
                    logger.warning(
                        "Site %s: start URL %s also matches article_url %s; it is read as a"
                        " start page (start and list pages win). Make article_url stricter.",
                        site.name, url, article_pattern(site),
                    )
        return spider

    async def start(self) -> AsyncIterator[Any]:
        self._starting = True
        try:
            for site in self.sites.values():
                for url in site.start_urls:
                    self._inc("newscrawl/requests/start")
                    yield self._request(url, site, RequestKind.START, 0)
            for site in self.sites.values():
                for request in self._source_roots(site):
                    yield request
        finally:
            self._starting = False

    def on_error(self, failure: Failure) -> list[Request]:
        """Errback of every request: log and count; the crawl goes on. A failed page of a
        numbered bar lets its walk go on at the page after it."""
        if redis_fault(failure.value) and report_fault(self.crawler, failure.value):
            return []  # a downloader middleware's Redis fault: the crawl stops, the page is kept
        after = self._after_failed(failure)
        self._log_error(failure)
        return after
