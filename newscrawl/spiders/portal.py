"""The ``portal`` spider: crawls the portals of a sites file incrementally.

Start pages (depth 0) are read on every run. Their list pages (``follow_url``) are walked while
they keep showing article links that are not done yet: a walk stops below ``stop_after_known``
consecutive list pages with nothing new and never admits more than ``max_list_pages`` list pages
per start page and run (shared by the workers in Redis; ``max_list_depth`` bounds the nesting too).
A URL matching both ``follow_url`` and ``article_url`` is a list page; a start URL is never an
article. Of a numbered pagination bar only the next page is followed
(:mod:`newscrawl.scheduling.pagebar`). The article links a walk finds are held until the walk has
read its list pages, then requested oldest first (:mod:`newscrawl.scheduling.lists`), so an
original is met before the reprints published after it. Article pages (``article_url``) are fetched
once ever (the scheduling dupefilter decides from the request meta ``newscrawl_kind``). Article
pages are decoded (bytes over declarations), extracted and yielded as
:class:`~newscrawl.items.ArticleItem`; every other outcome (no body, non-HTML, HTTP errors,
robots.txt, redirect loops, oversize pages, network errors) is logged and counted in the stats
under ``newscrawl/...``, and per site under ``newscrawl/sites/<name>/...``
(:mod:`newscrawl.sitestats`). At the end: one summary line per site, warnings for sites that
yielded nothing, and exit code 4 when no source page of any site could be fetched.

Sitemaps (``sitemap_urls``, also through robots.txt) and feeds (``feed_urls``) are read on every
run too (request kinds ``sitemap`` and ``feed``); the article URLs they list become article
requests (:mod:`newscrawl.sources` reads the documents, in a worker thread one at a time, so the
reactor goes on while a large one is parsed; the site's rules and done records are applied to
the entries first, then at most ``NEWSCRAWL_SITEMAP_MAX_ENTRIES`` URLs per document and
``NEWSCRAWL_SITEMAP_MAX_RUN_ENTRIES`` per site and run are taken, the newest, and what a cap
leaves out is logged and left for the next run; nothing more is parsed or queued once the crawl
is stopping). Every article URL is canonicalized
(:mod:`newscrawl.urls`) before it is requested, so one article is fetched and stored once.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urldefrag, urlsplit

import scrapy
from scrapy.exceptions import (
    CannotResolveHostError,
    DontCloseSpider,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
    UnsupportedURLSchemeError,
)
from scrapy.http import Request, Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import DeferredLock
from twisted.internet.error import ConnectError, ConnectionLost, DNSLookupError, TCPTimedOutError
from twisted.internet.error import ConnectionRefusedError as TxConnectionRefusedError
from twisted.internet.error import TimeoutError as TxTimeoutError
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread
from twisted.web._newclient import ResponseFailed

from newscrawl.context import CrawlContext, check_settings
from newscrawl.exitcodes import ExitCode, exit_code, set_exit_code
from newscrawl.extract.dates import ParsedDate, parse_date
from newscrawl.items import ArticleItem
from newscrawl.meta import (
    DEPTH,
    KIND,
    KNOWN,
    LISTED_DATE,
    ORDER,
    ORDER_DAY,
    PAGE_AFTER,
    PAGE_FAILED,
    PAGE_NUMBER,
    ROBOTS,
    ROOT,
    SITE,
    SITEMAP_DEPTH,
    WALK,
    WALK_START,
    RequestKind,
)
from newscrawl.middlewares.faults import redis_fault, report_fault
from newscrawl.middlewares.redirects import RedirectLoop
from newscrawl.middlewares.robots import RobotsForbidden
from newscrawl.redis import RedisUnavailable
from newscrawl.scheduling import pagebar
from newscrawl.scheduling.lists import ADMITTED, OVER_CAP, ListWalks, position
from newscrawl.scheduling.pagebar import ListLink
from newscrawl.scheduling.run import REASON_REDIS_UNAVAILABLE, current_run
from newscrawl.scheduling.waiting import (
    BATCH,
    ArticleWait,
    CheckOrder,
    PushedUrls,
    Waiting,
    date_score,
    day_only,
    list_order,
    row_date,
    url_date,
)
from newscrawl.sites import Site, SitesError, default_sites_path, load_sites, quote_regex
from newscrawl.sitestats import SiteStats, run_outcome
from newscrawl.sources import (
    Entry,
    Select,
    SourceDocument,
    SourceError,
    SourcesConfig,
    newest_children,
    parse_feed,
    parse_sitemap,
    robots_sitemaps,
)
from newscrawl.workers import PageJob, WorkerPool

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

SOURCE_KINDS = (RequestKind.SITEMAP, RequestKind.FEED)
_PLURAL: dict[str, str] = {RequestKind.SITEMAP: "sitemaps", RequestKind.FEED: "feeds"}

#: Article requests queued from a sitemap or feed between two returns to the reactor.
SOURCE_REQUESTS_PER_TURN = 20

LIST_PRIORITY = 10
ARTICLE_PRIORITY = 0
#: seconds between two looks at whether the run's waiting article links can be queued
RELEASE_SECONDS = 0.5

_HTML_TYPES = (b"text/html", b"application/xhtml+xml", b"text/plain", b"application/xml",
               b"text/xml")


@dataclass(frozen=True)
class SpiderConfig:
    sites_path: Path

    @classmethod
    def from_settings(cls, settings: BaseSettings, sites_arg: str | None) -> SpiderConfig:
        path = sites_arg or settings.get("NEWSCRAWL_SITES") or None
        return cls(sites_path=Path(path) if path else default_sites_path())


#: Download failure reasons by exception class, first match wins (Scrapy 2.19 wraps Twisted's
#: errors in its own; both are listed for other download handlers). Documented in
#: docs/design/architecture.md (``newscrawl/download/failed/<reason>``).
_FAILURE_REASONS: tuple[tuple[tuple[type[BaseException], ...], str], ...] = (
    ((RobotsForbidden,), "robots_forbidden"),
    ((RedirectLoop,), "redirect_loop"),
    ((DownloadCancelledError,), "too_large"),  # what DOWNLOAD_MAXSIZE raises
    ((DownloadTimeoutError, TxTimeoutError, TCPTimedOutError), "timeout"),
    ((CannotResolveHostError, DNSLookupError), "dns"),
    ((DownloadConnectionRefusedError, TxConnectionRefusedError), "connection_refused"),
    ((ResponseDataLossError,), "data_loss"),
    ((DownloadFailedError, ResponseFailed, ConnectionLost), "connection_lost"),
    ((ConnectError,), "connect_error"),
    ((UnsupportedURLSchemeError,), "unsupported_scheme"),
    ((IgnoreRequest,), "ignored"),
)


def failure_reason(failure: Failure) -> str:
    """A short, stats-friendly name for why a request failed."""
    exc = failure.value
    if isinstance(exc, HttpError):
        return f"http_{exc.response.status}"
    for classes, reason in _FAILURE_REASONS:
        if isinstance(exc, classes):
            return reason
    return "other"


#: elements that hold one entry of a listing (the link and what is printed beside it)
_ROW_TAGS = frozenset({"li", "tr", "dd", "dt"})
#: a parent element whose text is at most this long is the link's row when no _ROW_TAGS is near
_ROW_TEXT_MAX = 200


def _beside(anchor: Any) -> ParsedDate | None:
    """The date printed beside a link in its list row (its ``<li>``, table row, ``<dd>``, or a
    short parent element), the link's own text left out."""
    own = anchor.text_content() if hasattr(anchor, "text_content") else ""
    row = None
    node = anchor.getparent()
    for _ in range(3):
        if node is None or not isinstance(node.tag, str):
            break
        if node.tag in _ROW_TAGS:
            row = node
            break
        node = node.getparent()
    if row is None:
        parent = anchor.getparent()
        if parent is None or not isinstance(parent.tag, str) or parent.tag in ("body", "html"):
            return None
        row = parent
    text = row.text_content()
    if len(text) > 4 * _ROW_TEXT_MAX or (row is anchor.getparent() and row.tag not in _ROW_TAGS
                                         and len(text) > _ROW_TEXT_MAX):
        return None
    if own:
        text = text.replace(own, " ", 1)
    return row_date(text)


def _listed_date(request: Request) -> ParsedDate | None:
    """The date a sitemap or feed gave an article request (meta ``newscrawl_listed_date``)."""
    value = request.meta.get(LISTED_DATE)
    return parse_date(value) if isinstance(value, str) else None


def _pattern(site: Site) -> str:
    """article_url as written in the sites file (``%r`` would double its backslashes)."""
    return quote_regex(site.article_url.pattern) if site.article_url is not None else "''"


class PortalSpider(scrapy.Spider):
    name = "portal"
    #: The spider arguments (``-a NAME=VALUE``) it takes; names starting with "_" belong to a
    #: job scheduler (scrapyd's ``_job``) and are let through.
    ARGUMENTS = {"sites": "FILE"}

    def __init__(self, *args: Any, sites: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sites_arg = sites
        self.sites: dict[str, Site] = {}
        self.sources_config = SourcesConfig()
        self._warned_ambiguous: set[str] = set()
        self.site_stats = SiteStats(None)
        self._walks: ListWalks | None = None
        self._wait: ArticleWait | None = None
        self._starting = True  # start() has not yielded its last request yet
        self._release_loop: Any = None
        self._warned_wait_bound = False
        self._parse_lock = DeferredLock()  # one sitemap or feed parsed at a time (memory)
        self._source_budget: dict[str, int] = {}  # site -> article URLs still to take this run
        self._warned_run_cap: set[str] = set()

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
        load_sites(SpiderConfig.from_settings(settings, spider_args.get("sites")).sites_path)

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
        spider.sources_config = SourcesConfig.from_settings(crawler.settings)
        spider.site_stats = CrawlContext.of(crawler).site_stats
        from scrapy import signals

        crawler.signals.connect(spider._on_idle, signal=signals.spider_idle)
        crawler.signals.connect(spider._start_release_loop, signal=signals.spider_opened)
        crawler.signals.connect(spider._stop_release_loop, signal=signals.spider_closed)
        spider._load_extract()
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
                        site.name, url, _pattern(site),
                    )
        return spider

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

    def _load_extract(self) -> None:
        from newscrawl.extract import decode_html_detailed, extract_article, has_mojibake

        self._decode_html = decode_html_detailed
        self._extract_article = extract_article
        self._has_mojibake = has_mojibake

    # --- requests --------------------------------------------------------------------------

    def _inc(self, key: str, count: int = 1) -> None:
        if self.crawler is not None and self.crawler.stats is not None:
            self.crawler.stats.inc_value(key, count)

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

    def _site_of(self, response: Response) -> Site | None:
        name = response.meta.get(SITE)
        site = self.sites.get(name) if isinstance(name, str) else None
        if site is None:
            # A request queued by an earlier run for a site no longer in the sites file.
            self._inc("newscrawl/requests/unknown_site")
            logger.warning("Skipping %s: site %r is not in the sites file", response.url, name)
        return site

    def parse_page(self, response: Response) -> Iterator[Request]:
        """A start or list page: its list links while the walk goes on (see
        :meth:`_follow_lists`), and its article links: those not done yet wait for the end of
        the run's discovery (see :meth:`_articles`)."""
        site = self._site_of(response)
        if site is None:
            return
        kind = response.meta.get(KIND, RequestKind.START)
        self._inc(f"newscrawl/pages/{kind}")
        self.site_stats.inc(site.name, "pages", kind)
        if not isinstance(response, TextResponse):
            self._inc("newscrawl/pages/not_html")
            logger.warning("List page %s is not HTML (%s)", response.url,
                           response.headers.get(b"Content-Type"))
            return
        depth = int(response.meta.get(DEPTH, 0))
        article_urls, list_links, row_dates = self._page_links(response, site)
        articles = [self._request(url, site, RequestKind.ARTICLE, depth + 1)
                    for url in article_urls]
        self._inc("newscrawl/links/article", len(articles))
        self.site_stats.inc(site.name, "links", "seen", count=len(articles))
        done = self.walks.done(articles) if articles else []
        lists, _ = self._follow_lists(response, site, kind, depth, bool(articles),
                                      done.count(False), list_links)
        yield from self._articles(site, articles, done, [
            (row_dates.get(request.url), position(depth, place))
            for place, request in enumerate(articles)])
        yield from lists

    def _articles(self, site: Site, articles: list[Request], done: list[bool],
                  found: list[tuple[ParsedDate | None, int]]) -> list[Request]:
        """A page's article requests: the done ones go to the scheduler at once (it counts and
        drops them); the others wait in Redis (:class:`ArticleWait`) until the run's discovery
        is done, each with the date known before fetching (``found``: the date printed beside
        the link or given by its sitemap or feed, else the date in its URL) and its list
        position, then are queued oldest first across every site of the run."""
        run_id = current_run(self.crawler) if self.crawler is not None else None
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

    # --- queueing the waiting article links --------------------------------------------------

    def _start_release_loop(self) -> None:
        from scrapy.utils.asyncio import create_looping_call

        self._release_loop = create_looping_call(self._release_tick)
        self._release_loop.start(RELEASE_SECONDS, now=False)

    def _stop_release_loop(self) -> None:
        if self._release_loop is not None and self._release_loop.running:
            self._release_loop.stop()

    def _release_tick(self) -> None:
        try:
            self._take_pushed()
            self._release()
        except Exception as exc:
            if self.crawler is None or not CrawlContext.of(self.crawler).report_fault(exc):
                logger.exception("Cannot queue the run's waiting article links")

    def _release(self) -> int:
        """Queue the run's waiting article links, oldest first, once its discovery is done (any
        worker may; one at a time). Returns how many were queued."""
        run_id = current_run(self.crawler) if self.crawler is not None else None
        engine = self.crawler.engine if self.crawler is not None else None
        if run_id is None or engine is None or self._starting or self._stopping():
            return 0
        queued = 0
        while True:
            release = self.wait.take(run_id)
            if release is None:
                break
            # order numbers carry the order into the near-duplicate check, where an article
            # waits for other sites' earlier ones: with one site there are none
            ordered = len(self.sites) > 1 and bool(release.links)
            first = self.order.reserve(run_id, len(release.links)) if ordered else 0
            for number, link in enumerate(release.links, first):
                site = self.sites.get(link.site)
                if site is None:
                    self._inc("newscrawl/requests/unknown_site")
                    continue
                request = self._request(link.url, site, RequestKind.ARTICLE, link.depth)
                if ordered:
                    request.meta[ORDER] = number
                    day = day_only(link.score)
                    if day is not None:
                        request.meta[ORDER_DAY] = day
                engine.crawl(request)
            if self._stopping():
                self.wait.abandon(run_id, release)  # queued again by the next run
                break
            self.wait.done(run_id, release)
            queued += len(release.links)
            if release.bound and not self._warned_wait_bound:
                self._warned_wait_bound = True
                self._inc("newscrawl/lists/wait_bound_reached")
                logger.warning(
                    "Discovery of run %s still going after %d s (NEWSCRAWL_ARTICLE_WAIT):"
                    " queueing the article links found so far; links found later are queued"
                    " as they come, in order among themselves", run_id,
                    self.wait.wait_seconds)
            if len(release.members) < BATCH:
                break
        if queued:
            self._inc("newscrawl/lists/articles_released", queued)
            logger.info("Queued %d article links of run %s, oldest first", queued, run_id)
        return queued

    # --- URLs pushed through Redis ------------------------------------------------------------

    @cached_property
    def pushed(self) -> PushedUrls:
        """URLs pushed through Redis (built on first use, not at every look)."""
        return PushedUrls(self.walks.df.server, self.walks.df.keys, self.walks.df.retry)

    def _take_pushed(self) -> int:
        """Schedule the URLs pushed to ``{prefix}:{spider}:start_urls`` (any worker of the run;
        one at a time): each as an article or list page of the site that takes it. Returns how
        many were taken."""
        run_id = current_run(self.crawler) if self.crawler is not None else None
        engine = self.crawler.engine if self.crawler is not None else None
        if run_id is None or engine is None or self._stopping():
            return 0
        pushed = self.pushed.take()
        if pushed is None:
            return 0
        for url, name in pushed.entries:
            for request in self._pushed_requests(url, name):
                engine.crawl(request)
        if pushed.unreadable:
            self._inc("newscrawl/pushed/refused", pushed.unreadable)
            logger.warning("%d entries pushed to the crawl's start_urls are neither a URL nor"
                           ' JSON {"url": ..., "site": ...}: skipped', pushed.unreadable)
        self.pushed.done(pushed)
        if pushed.entries:
            self._inc("newscrawl/pushed/taken", len(pushed.entries))
            logger.info("Took %d URLs pushed through Redis", len(pushed.entries))
        return len(pushed.entries)

    def _pushed_requests(self, url: str, name: str | None) -> list[Request]:
        """The requests for one pushed URL: a list page (a walk of its own) or an article
        (waiting with the run's others); none, with one WARNING, for a URL no site takes."""
        if name is not None and name not in self.sites:
            return self._refuse_pushed(url, f"site {name!r} is not in the sites file")
        candidates = [self.sites[name]] if name is not None else list(self.sites.values())
        url = urldefrag(url)[0]
        for site in candidates:
            try:
                if not url.startswith(("http://", "https://")) or not site.allows(url):
                    continue
                if url in site.start_urls or site.is_list(url):
                    self._inc("newscrawl/links/list")
                    return [self._request(url, site, RequestKind.LIST, 1,
                                          walk=self.walks.walk_id(Request(url)), known=0,
                                          start_url=url)]
                article = site.article_link(url)
            except ValueError:
                return self._refuse_pushed(url, "not a valid URL")
            if article is not None:
                request = self._request(article, site, RequestKind.ARTICLE, 1)
                self._inc("newscrawl/links/article")
                self.site_stats.inc(site.name, "links", "seen")
                return self._articles(site, [request], self.walks.done([request]), [(None, 0)])
            if name is not None:
                return self._refuse_pushed(url, f"neither article_url nor follow_url of site"
                                                f" {name} matches it")
        return self._refuse_pushed(url, "no site of the sites file takes it (allowed_domains,"
                                        " article_url, follow_url)")

    def _refuse_pushed(self, url: str, why: str) -> list[Request]:
        self._inc("newscrawl/pushed/refused")
        logger.warning("Pushed URL %s not crawled: %s", url, why)
        return []

    def _on_idle(self) -> None:
        """A crawl with nothing queued or in flight anywhere takes the URLs pushed meanwhile
        and queues the links still waiting."""
        try:
            released = self._take_pushed() + self._release()
        except Exception as exc:
            if self.crawler is None or not CrawlContext.of(self.crawler).report_fault(exc):
                logger.exception("Cannot queue the run's waiting article links")
            return
        if released:
            raise DontCloseSpider
        run_id = current_run(self.crawler) if self.crawler is not None else None
        try:
            waiting = run_id is not None and not self._stopping() and self.wait.waiting(run_id)
        except RedisUnavailable as exc:
            report_fault(self.crawler, exc)
            return
        if waiting:
            # links still wait (another worker is queueing them, or discovery goes on): work
            # for this worker too, so it does not leave the run
            raise DontCloseSpider

    def _page_links(self, response: TextResponse, site: Site
                    ) -> tuple[list[str], list[ListLink], dict[str, ParsedDate]]:
        """(article URLs, list links, dates printed beside article links) linked from a page,
        each once, in page order.

        A URL that matches both ``follow_url`` and ``article_url`` is a list page (warned about
        once per site); links to the site's start URLs are skipped (read every run anyway). A list
        link keeps its anchor text and ``rel`` (:mod:`newscrawl.scheduling.pagebar`)."""
        seen: set[str] = set()
        article_urls: list[str] = []
        list_links: list[ListLink] = []
        dates: dict[str, ParsedDate] = {}
        for anchor in response.xpath("//a[@href]"):
            href = (anchor.attrib.get("href") or "").strip()
            if not href or href.startswith(("javascript:", "mailto:", "#")):
                continue
            try:
                url = urldefrag(response.urljoin(href))[0]
                if url in seen or not url.startswith(("http://", "https://")):
                    continue
                seen.add(url)
                urlsplit(url).port  # noqa: B018 - raises ValueError for a port out of range
                if not site.allows(url) or url in site.start_urls:
                    continue
                is_list = site.is_list(url)
                article = site.article_link(url)
                if article is not None:
                    if not is_list:
                        if article != url and article in seen:
                            continue
                        seen.add(article)
                        article_urls.append(article)
                        when = _beside(anchor.root)
                        if when is not None:
                            dates[article] = when
                        continue
                    self._warn_ambiguous(site, url)
                if is_list:
                    text = " ".join(anchor.xpath(".//text()").getall())
                    list_links.append(ListLink(url, text, anchor.attrib.get("rel") or ""))
            except ValueError as exc:
                # e.g. "http://[::1/x" (invalid IPv6) or a port out of range: one bad link must
                # not end the page's generator and lose every link after it
                self._inc("newscrawl/links/invalid")
                logger.warning("Skipping an invalid link on %s: %r (%s)", response.url, href, exc)
        return article_urls, list_links, dates

    @staticmethod
    def _head_next(response: Response, site: Site) -> list[str]:
        """The list pages a page's ``<link rel="next">`` names."""
        out = []
        for href in response.xpath("//head/link[@rel='next']/@href").getall():
            try:
                url = urldefrag(response.urljoin(href.strip()))[0]
                if site.allows(url) and site.is_list(url):
                    out.append(url)
            except ValueError:
                continue
        return out

    def _warn_ambiguous(self, site: Site, url: str) -> None:
        self._inc("newscrawl/links/ambiguous")
        self.site_stats.inc(site.name, "links", "ambiguous")
        if site.name not in self._warned_ambiguous:
            self._warned_ambiguous.add(site.name)
            logger.warning(
                "Site %s: list page %s also matches article_url %s; it is followed as a list"
                " page (follow_url wins). Make article_url stricter.",
                site.name, url, _pattern(site),
            )

    def _follow_lists(self, response: Response, site: Site, kind: str, depth: int,
                      has_articles: bool, new: int, list_links: list[ListLink]
                      ) -> tuple[list[Request], bool]:
        """A page's list links, while its walk goes on, and whether the walk goes on below this
        page (it admitted a list page not admitted before).

        ``known`` counts the consecutive list pages (this one included) whose article links were
        all done already; a list page without any article link leaves it as it was, and a start
        page starts a walk at 0. The walk stops below a page once ``known`` reaches
        ``stop_after_known``; it never admits more than ``max_list_pages`` list pages per start
        page and run (Redis, shared by the workers; see newscrawl/scheduling/lists.py). Of a
        numbered pagination bar only the next page is followed (newscrawl/scheduling/pagebar.py):
        the one after it is asked for once that page showed something new."""
        start_url = str(response.meta.get(WALK_START) or response.url)
        if kind == RequestKind.START:
            known = 0
            walk = self.walks.walk_id(Request(start_url))
        else:
            parent_known = int(response.meta.get(KNOWN, 0) or 0)
            known = 0 if new else (parent_known + 1 if has_articles else parent_known)
            walk = str(response.meta.get(WALK) or site.name)
        number = response.meta.get(PAGE_NUMBER)
        page_plan = pagebar.plan(
            list_links, response.url, number if isinstance(number, int) else None,
            next_urls=self._head_next(response, site))
        if page_plan.withheld:
            self._inc("newscrawl/lists/sequence_withheld", page_plan.withheld)
        list_urls = page_plan.follow
        if not list_urls:
            return [], False
        if known >= site.stop_after_known:
            self._inc("newscrawl/lists/stopped_at_known")
            logger.debug("Site %s: nothing new on %d list page(s) up to %s; not following its"
                         " %d list links", site.name, known, response.url, len(list_urls))
            return [], False
        if site.too_deep(depth + 1):
            self._inc("newscrawl/links/list_too_deep", len(list_urls))
            return [], False
        requests = [self._request(url, site, RequestKind.LIST, depth + 1, walk=walk, known=known,
                                  start_url=start_url, number=page_plan.numbers.get(url),
                                  after=page_plan.after.get(url))
                    for url in list_urls]
        run_id = current_run(self.crawler) if self.crawler is not None else None
        results = (self.walks.reserve(run_id, walk, requests, site.max_list_pages) if run_id
                   else [ADMITTED] * len(requests))
        over = 0
        out = []
        for request, result in zip(requests, results, strict=True):
            if result == OVER_CAP:
                over += 1
                continue
            self._inc("newscrawl/links/list")
            out.append(request)
        if over:
            self._inc("newscrawl/lists/over_cap", over)
            if new:
                self._inc("newscrawl/lists/cap_reached")
                self.site_stats.inc(site.name, "lists", "cap_reached")
                logger.warning(
                    "Site %s: max_list_pages (%d) reached below %s while %s still had %d new"
                    " article(s); %d list link(s) not followed: older articles may be missed."
                    " Raise max_list_pages or crawl more often.",
                    site.name, site.max_list_pages, start_url, response.url, new,
                    over,
                )
        return out, ADMITTED in results

    async def parse_article(self, response: Response) -> AsyncIterator[ArticleItem]:
        site = self._site_of(response)
        if site is None:
            return
        self._inc("newscrawl/pages/article")
        self.site_stats.inc(site.name, "pages", RequestKind.ARTICLE)
        content_type = (response.headers.get(b"Content-Type") or b"").split(b";")[0].strip()
        if (
            not isinstance(response, TextResponse)
            or (content_type and content_type.lower() not in _HTML_TYPES)
            or response.body[:5] == b"%PDF-"
        ):
            self._inc("newscrawl/extract/not_html")
            logger.info("Not an HTML page, skipped: %s (%s)", response.url,
                        content_type.decode("latin-1") or "no Content-Type")
            return
        header = response.headers.get(b"Content-Type")
        header_encoding = None
        if header and b"charset=" in header.lower():
            header_encoding = (
                header.lower().split(b"charset=", 1)[1].split(b";")[0].strip(b" \"'")
                .decode("latin-1")
            ) or None
        job = PageJob(response.body, response.url, header_encoding, site.encoding,
                      dict(site.selectors) or None)
        try:  # in a worker process (NEWSCRAWL_FINGERPRINT_WORKERS), the same function
            page = await WorkerPool.of(self.crawler).extract(job)
            article = page.article
        except Exception:
            self._inc("newscrawl/extract/error")
            logger.exception("Extraction failed for %s", response.url)
            self._page_failed(response, site.name, "extraction error")
            return
        if article is None or not (article.text or "").strip():
            self._inc("newscrawl/extract/no_body")
            logger.info("No article body on %s: not stored (tried again by a later run)",
                        response.url)
            self._page_failed(response, site.name, "no article body")
            return
        if page.mojibake:
            self._inc("newscrawl/extract/mojibake")
            if page.source == "fallback":
                logger.warning("No encoding reads %s (declared %s): its text would be mojibake, "
                               "not stored", response.url, page.declared or "nothing")
                return
            logger.warning("Mojibake in the text of %s (it is in the page as served, %s): stored",
                           response.url, page.encoding)
        self._inc("newscrawl/extract/article")
        try:
            url = site.url_rules.canonical(response.url)  # a redirect target may carry tracking
        except ValueError:
            url = response.url
        yield ArticleItem(
            url=url,
            title=article.title,
            text=article.text,
            published=article.published,
            author=article.author,
            site=site.name,
            simhash=None,
            canonical_url=page.canonical_url,
            source=article.source,
        )

    def on_error(self, failure: Failure) -> list[Request]:
        """Errback of every request: log and count; the crawl goes on. A failed page of a
        numbered bar lets its walk go on at the page after it."""
        if redis_fault(failure.value) and report_fault(self.crawler, failure.value):
            return []  # a downloader middleware's Redis fault: the crawl stops, the page is kept
        after = self._after_failed(failure)
        self._log_error(failure)
        return after

    def _after_failed(self, failure: Failure) -> list[Request]:
        request = getattr(failure, "request", None)
        site = request.meta.get(SITE) if request is not None else None
        if request is None or not isinstance(site, str):
            return []
        try:
            return self._page_after(request, self.sites.get(site))
        except RedisUnavailable as exc:
            report_fault(self.crawler, exc)  # stops the crawl (exit code 3)
            return []

    def _page_after(self, failed: Request, site: Site | None) -> list[Request]:
        """The page after a failed page of a numbered bar, admitted to its walk: the walk goes
        on there (a sequence does not end at one broken page)."""
        after = failed.meta.get(PAGE_AFTER)
        run_id = current_run(self.crawler) if self.crawler is not None else None
        if site is None or run_id is None or failed.meta.get(KIND) != RequestKind.LIST or \
                not isinstance(after, list) or len(after) != 2:
            return []
        url, number = after
        walk = str(failed.meta.get(WALK) or site.name)
        try:
            request = self._request(
                str(url), site, RequestKind.LIST, int(failed.meta.get(DEPTH, 1)), walk=walk,
                known=int(failed.meta.get(KNOWN, 0) or 0),
                start_url=str(failed.meta.get(WALK_START) or ""),
                number=int(number) if isinstance(number, int) else None)
        except (TypeError, ValueError):
            return []
        if self.walks.reserve(run_id, walk, [request], site.max_list_pages) != [ADMITTED]:
            return []
        self._inc("newscrawl/lists/skipped_failed_page")
        self._inc("newscrawl/links/list")
        logger.info("Site %s: list page %s failed; its walk goes on at %s, the page after it",
                    site.name, failed.url, request.url)
        return [request]

    def _log_error(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        url = request.url if request is not None else "?"
        kind = request.meta.get(KIND, "?") if request is not None else "?"
        site = request.meta.get(SITE) if request is not None else None
        reason = failure_reason(failure)
        if kind in SOURCE_KINDS and request is not None:
            self._source_failed(site, kind, reason, downloaded=False)
        if reason == "robots_forbidden":
            self._inc("newscrawl/download/robots_forbidden")
            logger.debug("Forbidden by robots.txt: %s", url)
            return
        self._inc("newscrawl/download/failed")
        self._inc(f"newscrawl/download/failed/{reason}")
        if isinstance(site, str) and site in self.sites:
            self.site_stats.failed(site, kind, "download")
        detail = failure.getErrorMessage()
        if reason == "other":
            detail = f"{failure.type.__name__}: {detail}" if failure.type else detail
        logger.warning("Download of %s page %s failed: %s (%s)", kind, url, reason, detail)

    # --- end of the run ----------------------------------------------------------------------

    def closed(self, reason: str) -> None:
        """One INFO line per site with the run's figures, a WARNING per site that yielded no
        article link or could not be fetched at all, and exit code 4 when no source page of any
        site could be fetched (see newscrawl/sitestats.py)."""
        if not self.sites:
            return
        if reason == REASON_REDIS_UNAVAILABLE and self.crawler is not None \
                and current_run(self.crawler) is None:
            return  # Redis was unreachable at start: nothing was crawled, nothing to sum up
        figures, of_run = self.site_stats.run_figures(
            redis_ok=reason != REASON_REDIS_UNAVAILABLE)
        outcome = run_outcome(self.sites, figures)
        run_id = current_run(self.crawler) if self.crawler is not None else None
        logger.info("Summary of %s (%s):", f"run {run_id}" if run_id else "this crawl",
                    "the run's figures so far, all workers" if of_run
                    else "this worker's figures")
        for summary in outcome.summaries:
            logger.info("%s", summary.line())
        for summary in outcome.summaries:
            if not summary.sources_fetched:
                logger.warning(
                    "Site %s: none of its start/list/sitemap/feed pages could be fetched"
                    " (%d failed)", summary.name, summary.sources_failed,
                )
            elif not summary.get("links/seen"):
                logger.warning(
                    "Site %s: its %d start/list/sitemap/feed page(s) yielded no article link:"
                    " does article_url %s match its article URLs?",
                    summary.name, summary.sources_fetched,
                    _pattern(self.sites[summary.name]),
                )
        joined = bool(self.crawler is not None and self.crawler.stats is not None
                      and self.crawler.stats.get_value("newscrawl/scheduler/run_joined"))
        if outcome.no_sources and not of_run and joined:
            # an extra worker without the run's figures cannot tell: the start pages were not its
            logger.warning("Cannot read the run's figures: not deciding whether the run fetched"
                           " any page (exit code 0)")
        elif outcome.no_sources and reason == "finished" and self.crawler is not None:
            why = "No start, list, sitemap or feed page of any site could be fetched in this run"
            logger.error("%s: exit code %d", why, ExitCode.NO_SOURCES)
            set_exit_code(self.crawler, ExitCode.NO_SOURCES, why)
        if reason != REASON_REDIS_UNAVAILABLE and self.crawler is not None:
            # for `newscrawl status` and `newscrawl report`: how the run ended
            self.site_stats.end_run(exit_code=exit_code(self.crawler), reason=reason,
                                    sites=self.sites)

    # --- sitemaps and feeds ------------------------------------------------------------------

    def _source_request(self, url: str, site: Site, kind: RequestKind, *, sitemap_depth: int = 0,
                        robots: bool = False, root: bool = False) -> Request:
        meta: dict[str, Any] = {KIND: kind, SITE: site.name, DEPTH: 0,
                                SITEMAP_DEPTH: sitemap_depth}
        if robots:
            meta[ROBOTS] = True
            meta["dont_obey_robotstxt"] = True  # reading robots.txt is always allowed
        if root:
            meta[ROOT] = True
        return Request(
            url,
            callback=self.parse_sitemap if kind == RequestKind.SITEMAP else self.parse_feed,
            errback=self.on_error,
            priority=LIST_PRIORITY,
            meta=meta,
        )

    def _source_roots(self, site: Site) -> Iterator[Request]:
        """The configured sitemaps and feeds of ``site`` (read on every run, like start pages)."""
        for url in site.sitemap_robots:
            self._inc("newscrawl/requests/sitemap")
            yield self._source_request(url, site, RequestKind.SITEMAP, robots=True, root=True)
        for url in site.sitemap_urls:
            self._inc("newscrawl/requests/sitemap")
            yield self._source_request(url, site, RequestKind.SITEMAP, root=True)
        for url in site.feed_urls:
            self._inc("newscrawl/requests/feed")
            yield self._source_request(url, site, RequestKind.FEED, root=True)

    def _source_failed(self, site_name: Any, kind: str, reason: str, *,
                       downloaded: bool = True) -> None:
        """Count an unusable sitemap or feed (``downloaded``: the download itself worked; a
        failed download is counted per site by :meth:`on_error`)."""
        self._inc(f"newscrawl/{_PLURAL[kind]}/{reason}")
        if downloaded and isinstance(site_name, str) and site_name in self.sites:
            self.site_stats.failed(site_name, kind, "extraction")

    def _page_failed(self, response: Response, site_name: str, reason: str) -> None:
        """An article page fetched but not usable: counted, and a failed attempt for the
        scheduler (fetched again by a later run, up to NEWSCRAWL_MAX_ATTEMPTS)."""
        response.meta[PAGE_FAILED] = reason
        self.site_stats.failed(site_name, RequestKind.ARTICLE, "extraction")

    def _unusable(self, site: Site, kind: str, response: Response, exc: SourceError) -> None:
        self._source_failed(site.name, kind, exc.reason)
        logger.warning("Site %s: %s %s cannot be read (%s): %s", site.name, kind, response.url,
                       exc.reason, exc)

    def _read(self, site: Site, kind: str, response: Response, doc: SourceDocument) -> None:
        self._inc(f"newscrawl/pages/{kind}")
        self.site_stats.inc(site.name, "pages", kind)
        if doc.error is not None:
            self._inc(f"newscrawl/{_PLURAL[kind]}/recovered")
            # INFO: read all the same, and nothing the user can fix (portals' feeds often carry
            # a bare "&"); a daily WARNING for it would be noise
            logger.info("Site %s: %s %s has XML errors; read %d entries anyway (%s)",
                           site.name, kind, response.url, len(doc.urls) + len(doc.children),
                           doc.error)

    @staticmethod
    def _content_type(response: Response) -> str:
        return (response.headers.get(b"Content-Type") or b"").decode("latin-1")

    async def parse_sitemap(self, response: Response) -> AsyncIterator[Request]:
        """A robots.txt (its ``Sitemap:`` lines), a sitemap index (its newest child sitemaps, to
        ``NEWSCRAWL_SITEMAP_MAX_DEPTH``) or a urlset (its article URLs)."""
        site = self._site_of(response)
        if site is None:
            return
        if response.meta.get(ROBOTS):
            for request in self._robots(response, site):
                yield request
            return
        doc = await self._parse_source(site, RequestKind.SITEMAP, response, parse_sitemap)
        if doc is None:
            return
        if doc.kind == "sitemapindex":
            for request in self._children(response, site, doc):
                yield request
        else:
            async for request in self._queue_listed(site, RequestKind.SITEMAP, doc.entries):
                yield request

    def _stopping(self) -> bool:
        """Whether the crawl is being stopped (SIGTERM, Ctrl-C, a fatal error)."""
        engine = self.crawler.engine if self.crawler is not None else None
        return engine is not None and not engine.running

    async def _parse_source(self, site: Site, kind: RequestKind, response: Response,
                            parse: Callable[..., SourceDocument]) -> SourceDocument | None:
        """``parse`` (parse_sitemap or parse_feed) of the response, in a worker thread while
        no other source is parsed; the site's rules and done records applied to its entries
        before the caps (:meth:`_selector`); what a cap still cuts counted and logged at WARNING.
        None when unusable."""
        config = self.sources_config
        select = self._selector(site)
        await maybe_deferred_to_future(self._parse_lock.acquire())
        try:
            budget = self._source_budget.setdefault(site.name, config.max_run_entries)
            limit = min(config.max_entries, budget)
            doc = await maybe_deferred_to_future(deferToThread(
                parse, response.body, response.url, max_bytes=config.max_bytes,
                content_type=self._content_type(response), max_entries=limit,
                should_stop=self._stopping, select=select))
            self._source_budget[site.name] = budget - len(doc.urls)
        except SourceError as exc:
            if exc.reason == "stopped":
                self._inc(f"newscrawl/{_PLURAL[kind]}/stopped")
                logger.info("Site %s: stopped reading %s %s: the crawl is stopping",
                            site.name, kind, response.url)
            else:
                self._unusable(site, kind, response, exc)
            return None
        finally:
            self._parse_lock.release()
        self._read(site, kind, response, doc)
        plural = _PLURAL[kind]
        for reason, count in doc.rejected.items():
            self._inc(f"newscrawl/{plural}/{reason}", count)
        self._inc("newscrawl/links/article", doc.wanted)
        self.site_stats.inc(site.name, "links", "seen", count=doc.wanted)
        if doc.capped:
            by_run = limit < config.max_entries
            self._inc(f"newscrawl/{plural}/{'run_capped' if by_run else 'entries_capped'}",
                      doc.capped)
            self.site_stats.inc(site.name, "links", "capped", count=doc.capped)
            if not by_run:
                logger.warning(
                    "Site %s: %s %s lists %d article URLs not fetched yet; taking the %d newest,"
                    " %d are left for the next run (NEWSCRAWL_SITEMAP_MAX_ENTRIES)", site.name,
                    kind, response.url, doc.wanted, len(doc.urls), doc.capped)
            elif site.name not in self._warned_run_cap:
                self._warned_run_cap.add(site.name)
                logger.warning(
                    "Site %s: %d article URLs taken from its sitemaps and feeds in this run; %d"
                    " more not fetched yet are left for the next run (the summary counts them"
                    " all; NEWSCRAWL_SITEMAP_MAX_RUN_ENTRIES)", site.name,
                    config.max_run_entries, doc.capped)
        return doc

    def _selector(self, site: Site) -> Select:
        """The site's rules for the entries of its sitemaps and feeds, applied before the caps
        (in the parser's worker thread): within ``allowed_domains``, matching ``article_url``
        (canonical form), not done yet (one done-records round trip per batch). Each entry is
        kept canonical, or gets the reason it is left out (``offsite``, ``invalid``,
        ``not_article``, ``done``)."""
        walks = self.walks  # built here, on the reactor thread

        def select(batch: list[Entry]) -> list[Entry | str]:
            verdicts: list[Entry | str] = []
            candidates: list[tuple[int, Request]] = []
            for url, when in batch:
                try:
                    if not site.allows(url):
                        verdicts.append("offsite")
                        continue
                    article = site.article_link(url, listed=True)
                    if article is None:
                        verdicts.append("not_article")
                        continue
                    request = self._request(article, site, RequestKind.ARTICLE, 1)
                except ValueError:
                    verdicts.append("invalid")
                    continue
                candidates.append((len(verdicts), request))
                verdicts.append((article, when))
            done = walks.done([request for _, request in candidates]) if candidates else []
            for (index, _), is_done in zip(candidates, done, strict=True):
                if is_done:
                    verdicts[index] = "done"
            return verdicts

        return select

    async def _queue_listed(self, site: Site, kind: RequestKind, entries: list[Entry]
                            ) -> AsyncIterator[Request]:
        """:meth:`_listed`, :data:`SOURCE_REQUESTS_PER_TURN` at a time, back to the reactor
        between them, and no more once the crawl is stopping: they wait for the end of the
        run's discovery with the date the document gives them (:meth:`_articles`; the done ones
        were left out when the document was read)."""
        batch: list[tuple[int, Request]] = []
        listed = list(self._listed(site, kind, entries))
        for number, request in enumerate(listed, 1):
            batch.append((len(listed) - number, request))
            if len(batch) < SOURCE_REQUESTS_PER_TURN and number < len(listed):
                continue
            if self._stopping():
                self._inc(f"newscrawl/{_PLURAL[kind]}/stopped")
                return
            requests = [r for _, r in batch]
            done = [False] * len(requests)  # the done ones were left out already
            found = [(_listed_date(r), where) for where, r in batch]
            batch = []
            for request in self._articles(site, requests, done, found):
                yield request
            from twisted.internet import reactor  # the crawl's, installed by then

            await maybe_deferred_to_future(deferLater(reactor, 0, lambda: None))

    def _robots(self, response: Response, site: Site) -> Iterator[Request]:
        self._inc("newscrawl/sitemaps/robots_txt")
        urls = robots_sitemaps(response.body, response.url)
        if not urls:
            self._source_failed(site.name, RequestKind.SITEMAP, "robots_none")
            logger.warning("Site %s: %s lists no Sitemap: line", site.name, response.url)
            return
        for url in urls:
            if url in site.sitemap_urls:
                continue  # also configured: requested already
            if not self._allowed(site, url):
                self._inc("newscrawl/sitemaps/offsite")
                logger.warning("Site %s: %s lists the sitemap %s outside allowed_domains; not"
                               " read (add its host to allowed_domains to read it)", site.name,
                               response.url, url)
                continue
            self._inc("newscrawl/requests/sitemap")
            yield self._source_request(url, site, RequestKind.SITEMAP)

    @staticmethod
    def _allowed(site: Site, url: str) -> bool:
        try:
            return site.allows(url)
        except ValueError:
            return False

    def _children(self, response: Response, site: Site, doc: SourceDocument) -> Iterator[Request]:
        depth = int(response.meta.get(SITEMAP_DEPTH, 0))
        config = self.sources_config
        if depth >= config.max_depth:
            self._inc("newscrawl/sitemaps/index_too_deep")
            logger.warning("Site %s: sitemap index %s is nested %d deep; its %d sitemaps are not"
                           " read (NEWSCRAWL_SITEMAP_MAX_DEPTH = %d)", site.name, response.url,
                           depth, len(doc.children), config.max_depth)
            return
        urls, left_out = newest_children(doc.children, config.max_children)
        if left_out:
            self._inc("newscrawl/sitemaps/children_capped", left_out)
            logger.info("Site %s: sitemap index %s lists %d sitemaps; reading the %d newest"
                        " (NEWSCRAWL_SITEMAP_MAX_CHILDREN)", site.name, response.url,
                        len(doc.children), len(urls))
        for url in urls:
            if not self._allowed(site, url):
                self._inc("newscrawl/sitemaps/offsite")
                continue
            self._inc("newscrawl/requests/sitemap")
            yield self._source_request(url, site, RequestKind.SITEMAP, sitemap_depth=depth + 1)

    async def parse_feed(self, response: Response) -> AsyncIterator[Request]:
        """An RSS or Atom feed: the article URLs of its entries."""
        site = self._site_of(response)
        if site is None:
            return
        doc = await self._parse_source(site, RequestKind.FEED, response, parse_feed)
        if doc is None:
            return
        async for request in self._queue_listed(site, RequestKind.FEED, doc.entries):
            yield request

    def _listed(self, site: Site, kind: str, entries: list[Entry]) -> Iterator[Request]:
        """Article requests for the entries a sitemap or feed lists, as :meth:`_selector` kept
        them (canonical, each once); the date the source gives each is in the request's meta
        :data:`~newscrawl.meta.LISTED_DATE`."""
        plural = _PLURAL[kind]
        for url, when in entries:
            try:
                request = self._request(url, site, RequestKind.ARTICLE, 1)
            except ValueError:
                self._inc(f"newscrawl/{plural}/invalid")
                continue
            if when is not None:
                request.meta[LISTED_DATE] = when.isoformat()
            yield request
