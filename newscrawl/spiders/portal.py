"""The ``portal`` spider: crawls the portals of a sites file incrementally.

Start pages (depth 0) and list pages (``follow_url``, depth + 1, up to ``max_list_depth``) are
visited on every run; article pages (``article_url``) once ever (the scheduling dupefilter decides
from the request meta ``newscrawl_kind``). Article pages are decoded (bytes over declarations),
extracted and yielded as :class:`~newscrawl.items.ArticleItem`; every other outcome (no body,
non-HTML, HTTP errors, robots.txt, redirect loops, oversize pages, network errors) is logged and
counted in the stats under ``newscrawl/...``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urldefrag

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request, Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError

from newscrawl.items import ArticleItem
from newscrawl.sites import Site, SitesError, default_sites_path, load_sites

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

KIND = "newscrawl_kind"
SITE = "newscrawl_site"
DEPTH = "newscrawl_depth"

LIST_PRIORITY = 10
ARTICLE_PRIORITY = 0

_HTML_TYPES = (b"text/html", b"application/xhtml+xml", b"text/plain", b"application/xml",
               b"text/xml")


@dataclass(frozen=True)
class SpiderConfig:
    sites_path: Path

    @classmethod
    def from_settings(cls, settings: BaseSettings, sites_arg: str | None) -> SpiderConfig:
        path = sites_arg or settings.get("NEWSCRAWL_SITES") or None
        return cls(sites_path=Path(path) if path else default_sites_path())


def failure_reason(failure: Failure) -> str:
    """A short, stats-friendly name for why a request failed."""
    exc = failure.value
    if isinstance(exc, HttpError):
        return f"http_{exc.response.status}"
    if isinstance(exc, IgnoreRequest):
        message = str(exc)
        if "robots.txt" in message:
            return "robots_forbidden"
        if "redirect" in message:
            return "redirect_loop"
        return "ignored"
    name = type(exc).__name__
    if name == "DownloadCancelledError" or "maxsize" in str(exc).lower():
        return "too_large"
    if "timeout" in name.lower():
        return "timeout"
    if "dns" in name.lower():
        return "dns"
    if "refused" in name.lower():
        return "connection_refused"
    return name.lower()


class PortalSpider(scrapy.Spider):
    name = "portal"

    def __init__(self, *args: Any, sites: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sites_arg = sites
        self.sites: dict[str, Site] = {}

    @classmethod
    def check_config(cls, settings: BaseSettings, spider_args: dict[str, Any]) -> None:
        """Read the sites file before the crawl starts (:class:`SitesError`, a ``ValueError``,
        on any problem); ``scrapy crawl`` then exits 1 with that message alone."""
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
        spider._load_extract()
        logger.info(
            "Crawling %d site(s) from %s: %s",
            len(sites), config.sites_path, ", ".join(spider.sites),
        )
        return spider

    def _load_extract(self) -> None:
        from newscrawl.extract import decode_html, extract_article

        self._decode_html = decode_html
        self._extract_article = extract_article

    # --- requests --------------------------------------------------------------------------

    def _inc(self, key: str, count: int = 1) -> None:
        if self.crawler is not None and self.crawler.stats is not None:
            self.crawler.stats.inc_value(key, count)

    def _request(self, url: str, site: Site, kind: str, depth: int) -> Request:
        callback = self.parse_article if kind == "article" else self.parse_page
        return Request(
            url,
            callback=callback,
            errback=self.on_error,
            priority=ARTICLE_PRIORITY if kind == "article" else LIST_PRIORITY,
            meta={KIND: kind, SITE: site.name, DEPTH: depth},
        )

    async def start(self) -> AsyncIterator[Any]:
        for site in self.sites.values():
            for url in site.start_urls:
                self._inc("newscrawl/requests/start")
                yield self._request(url, site, "start", 0)

    def _site_of(self, response: Response) -> Site | None:
        name = response.meta.get(SITE)
        site = self.sites.get(name) if isinstance(name, str) else None
        if site is None:
            # A request queued by an earlier run for a site no longer in the sites file.
            self._inc("newscrawl/requests/unknown_site")
            logger.warning("Skipping %s: site %r is not in the sites file", response.url, name)
        return site

    def parse_page(self, response: Response) -> Iterator[Request]:
        """A start or list page: follow list links (bounded depth) and article links."""
        site = self._site_of(response)
        if site is None:
            return
        kind = response.meta.get(KIND, "start")
        self._inc(f"newscrawl/pages/{kind}")
        if not isinstance(response, TextResponse):
            self._inc("newscrawl/pages/not_html")
            logger.warning("List page %s is not HTML (%s)", response.url,
                           response.headers.get(b"Content-Type"))
            return
        depth = int(response.meta.get(DEPTH, 0))
        seen: set[str] = set()
        for href in response.css("a::attr(href)").getall():
            href = href.strip()
            if not href or href.startswith(("javascript:", "mailto:", "#")):
                continue
            try:
                url = urldefrag(response.urljoin(href))[0]
                if url in seen or not url.startswith(("http://", "https://")):
                    continue
                seen.add(url)
                if not site.allows(url):
                    continue
                if site.is_article(url):
                    request = self._request(url, site, "article", depth + 1)
                    self._inc("newscrawl/links/article")
                elif site.is_list(url):
                    if depth + 1 > site.max_list_depth:
                        self._inc("newscrawl/links/list_too_deep")
                        continue
                    request = self._request(url, site, "list", depth + 1)
                    self._inc("newscrawl/links/list")
                else:
                    continue
            except ValueError as exc:
                # e.g. "http://[::1/x" (invalid IPv6) or a port out of range: one bad link must
                # not end the page's generator and lose every link after it
                self._inc("newscrawl/links/invalid")
                logger.warning("Skipping an invalid link on %s: %r (%s)", response.url, href, exc)
                continue
            yield request

    def parse_article(self, response: Response) -> Iterator[ArticleItem]:
        site = self._site_of(response)
        if site is None:
            return
        self._inc("newscrawl/pages/article")
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
        try:
            html, _encoding = self._decode_html(
                response.body, header_encoding=header_encoding, forced_encoding=site.encoding
            )
            article = self._extract_article(html, response.url, selectors=site.selectors or None)
        except Exception:
            self._inc("newscrawl/extract/error")
            logger.exception("Extraction failed for %s", response.url)
            return
        if article is None or not (article.text or "").strip():
            self._inc("newscrawl/extract/no_body")
            logger.info("No article body on %s: not stored", response.url)
            return
        self._inc("newscrawl/extract/article")
        yield ArticleItem(
            url=response.url,
            title=article.title,
            text=article.text,
            published=article.published,
            author=article.author,
            site=site.name,
            simhash=None,
        )

    def on_error(self, failure: Failure) -> None:
        """Errback of every request: log and count; the crawl goes on."""
        request = getattr(failure, "request", None)
        url = request.url if request is not None else "?"
        kind = request.meta.get(KIND, "?") if request is not None else "?"
        reason = failure_reason(failure)
        if reason == "robots_forbidden":
            self._inc("newscrawl/download/robots_forbidden")
            logger.debug("Forbidden by robots.txt: %s", url)
            return
        self._inc("newscrawl/download/failed")
        self._inc(f"newscrawl/download/failed/{reason}")
        logger.warning("Download of %s page %s failed: %s (%s)", kind, url, reason,
                       failure.getErrorMessage())
