"""What the parts of the ``portal`` spider share: its state, building its requests, counting,
the site of a response, and holding the article links a page or source lists until the run's
discovery is done (the run's list walks and waiting links, in Redis).
Design: docs/design/pagination.md.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.http import Request, Response
from twisted.internet.defer import DeferredLock

from newscrawl.context import CrawlContext
from newscrawl.extract.dates import ParsedDate
from newscrawl.items import ArticleItem
from newscrawl.meta import (
    DEPTH,
    KIND,
    KNOWN,
    PAGE_AFTER,
    PAGE_NUMBER,
    SITE,
    WALK,
    WALK_START,
    RequestKind,
)
from newscrawl.scheduling.lists import ListWalks
from newscrawl.scheduling.run import current_run
from newscrawl.scheduling.waiting import (
    ArticleWait,
    CheckOrder,
    PushedUrls,
    Waiting,
    date_score,
    list_order,
    url_date,
)
from newscrawl.sites import Site, quote_regex
from newscrawl.sitestats import SiteStats
from newscrawl.sources import SourcesConfig

if TYPE_CHECKING:
    from twisted.python.failure import Failure

logger = logging.getLogger(__package__ or __name__)  # one logger for all parts of the spider

LIST_PRIORITY = 10
ARTICLE_PRIORITY = 0


def article_pattern(site: Site) -> str:
    """article_url as written in the sites file (``%r`` would double its backslashes)."""
    return quote_regex(site.article_url.pattern) if site.article_url is not None else "''"


class PortalBase(scrapy.Spider):
    """The state and helpers of :class:`~newscrawl.spiders.portal.PortalSpider` its parts
    (list pages, article pages, sources, queueing, outcomes) share."""

    def __init__(self, *args: Any, sites: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sites_arg = sites
        self.sites: dict[str, Site] = {}
        self.sources_config = SourcesConfig()
        self._warned_ambiguous: set[str] = set()
        self._warned_next: set[str] = set()
        self._follow_changed: dict[str, bool] = {}  # site -> follow_url changed since last run
        self.site_stats = SiteStats(None)
        self._walks: ListWalks | None = None
        self._wait: ArticleWait | None = None
        self._starting = True  # start() has not yielded its last request yet
        self._release_loop: Any = None
        self._warned_wait_bound = False
        self._parse_lock = DeferredLock()  # one sitemap or feed parsed at a time (memory)
        self._source_budget: dict[str, int] = {}  # site -> article URLs still to take this run
        self._warned_run_cap: set[str] = set()

    if TYPE_CHECKING:  # the callbacks, defined by the parts PortalSpider is made of
        def parse_page(self, response: Response) -> Iterator[Request]: ...

        def parse_article(self, response: Response) -> AsyncIterator[ArticleItem]: ...

        def on_error(self, failure: Failure) -> list[Request]: ...

    @property
    def walks(self) -> ListWalks:
        """Shared list-walk state (built on first use: it needs the crawl's Redis)."""
        if self._walks is None:
            assert self.crawler is not None
            self._walks = ListWalks.from_crawler(self.crawler)
        return self._walks

    @property
    def wait(self) -> ArticleWait:
        """The run's waiting article links (built on first use: it needs the crawl's Redis)."""
        if self._wait is None:
            assert self.crawler is not None
            config = CrawlContext.of(self.crawler).config.scheduling
            self._wait = ArticleWait(self.walks.df, ttl=self.walks.ttl,
                                     wait_seconds=config.article_wait)
        return self._wait

    @cached_property
    def order(self) -> CheckOrder:
        """Order numbers of the run's article links (see :class:`CheckOrder`; built on first
        use, its scripts registered once)."""
        return CheckOrder(self.walks.df.server, self.walks.df.keys, self.walks.df.retry,
                          ttl=self.walks.ttl)

    @cached_property
    def pushed(self) -> PushedUrls:
        """URLs pushed through Redis (built on first use, not at every look)."""
        return PushedUrls(self.walks.df.server, self.walks.df.keys, self.walks.df.retry)

    def _inc(self, key: str, count: int = 1) -> None:
        if self.crawler is not None and self.crawler.stats is not None:
            self.crawler.stats.inc_value(key, count)

    def _run_id(self) -> str | None:
        """The id of the run this worker takes part in (None: not on newscrawl's scheduler)."""
        return None if self.crawler is None else current_run(self.crawler)

    def _stopping(self) -> bool:
        """Whether the crawl is being stopped (SIGTERM, Ctrl-C, a fatal error)."""
        engine = self.crawler.engine if self.crawler is not None else None
        return engine is not None and not engine.running

    def _request(self, url: str, site: Site, kind: RequestKind, depth: int, *,
                 walk: str | None = None, known: int = 0, start_url: str | None = None,
                 number: int | None = None, after: tuple[str, int] | None = None) -> Request:
        callback = self.parse_article if kind == RequestKind.ARTICLE else self.parse_page
        meta: dict[str, Any] = {KIND: kind, SITE: site.name, DEPTH: depth}
        if kind in (RequestKind.START, RequestKind.LIST):
            meta[WALK_START] = start_url or url
        if kind == RequestKind.LIST:
            meta[WALK] = walk
            meta[KNOWN] = known
            if number is not None:
                meta[PAGE_NUMBER] = number
            if after is not None:
                meta[PAGE_AFTER] = list(after)
        return Request(
            url,
            callback=callback,
            errback=self.on_error,
            priority=ARTICLE_PRIORITY if kind == RequestKind.ARTICLE else LIST_PRIORITY,
            meta=meta,
        )

    def _site_of(self, response: Response) -> Site | None:
        name = response.meta.get(SITE)
        site = self.sites.get(name) if isinstance(name, str) else None
        if site is None:
            # A request queued by an earlier run for a site no longer in the sites file.
            self._inc("newscrawl/requests/unknown_site")
            logger.warning("Skipping %s: site %r is not in the sites file", response.url, name)
        return site

    def _articles(self, site: Site, articles: list[Request], done: list[bool],
                  found: list[tuple[ParsedDate | None, int]]) -> list[Request]:
        """A page's article requests: the done ones go to the scheduler at once (it counts and
        drops them); the others wait in Redis (:class:`ArticleWait`) until the run's discovery
        is done, each with the date known before fetching (``found``: the date printed beside
        the link or given by its sitemap or feed, else the date in its URL) and its list
        position, then are queued oldest first across every site of the run."""
        run_id = self._run_id()
        if run_id is None:  # not on newscrawl's scheduler: no shared wait
            return articles
        waiting = []
        for request, is_done, (when, where) in zip(articles, done, found, strict=True):
            if is_done:
                continue
            known = when if when is not None else url_date(request.url)
            waiting.append(Waiting(site.name, request.url, int(request.meta.get(DEPTH, 1)),
                                   date_score(known), site.rank, list_order(where)))
        self.wait.hold(run_id, waiting)
        self._inc("newscrawl/lists/articles_held", len(waiting))
        return [request for request, is_done in zip(articles, done, strict=True) if is_done]
