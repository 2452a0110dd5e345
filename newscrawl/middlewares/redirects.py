"""Redirects the crawl does not follow, raised so that the spider's errback counts them as
failed attempts (``newscrawl/download/failed/<reason>``) instead of the dupefilter ending them
silently or the target being stored as an article:

- :class:`RedirectLoop` (``redirect_loop``): a 3xx pointing back into its own chain
  (``/a -> /b -> /a``);
- :class:`RedirectedAway` (``redirected_away``): an article page redirecting (a 3xx, or a
  ``<meta http-equiv="refresh">`` Scrapy's MetaRefreshMiddleware would follow) to a URL its site
  would not take as an article: outside ``allowed_domains``, or not matching ``article_url``
  (a login page, the home page, a "page not found" page). Tried again by later runs, like an
  error status, so a site that moved its articles has ``NEWSCRAWL_MAX_ATTEMPTS`` days to have
  its ``article_url`` mended before they are given up on.

An article page's 3xx to one of its site's articles is followed to that article's canonical URL
(tracking parameters removed, as for links), so the article is done under the URL its links
name and not fetched again when a page links it directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.utils.response import get_meta_refresh
from w3lib.url import safe_url_string

from newscrawl.meta import SITE, RequestKind, request_kind

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

    from newscrawl.sites import Site

_REDIRECTS = (301, 302, 303, 307, 308)


class RedirectFailure(IgnoreRequest):
    """A redirect not followed: a failed attempt of the page, tried again by later runs."""


class RedirectLoop(RedirectFailure):
    """A 3xx pointing back into its own redirect chain (reason ``redirect_loop``)."""


class RedirectedAway(RedirectFailure):
    """An article page redirecting to what its site does not take as an article (reason
    ``redirected_away``)."""


def article_target(site: Site, target: str, how: str) -> str:
    """The canonical URL of ``target``, where an article page of ``site`` redirects (``how``:
    "redirected to", "refreshes to"), when it is one of the site's articles; else
    :class:`RedirectedAway` saying why not."""
    if not site.allows(target):
        why = (f"outside the site's allowed_domains ({', '.join(site.allowed_domains)}; if it is"
               f" the article, add its host to allowed_domains)")
    else:
        try:
            canonical = site.article_link(target, listed=True)
        except ValueError:
            canonical, why = None, "not a URL the crawl can read"
        else:
            why = ("which the site's article_url does not match (if it is the article, widen"
                   " article_url)")
        if canonical is not None:
            return canonical
    raise RedirectedAway(f"{how} {target}, {why}: not fetched, not stored")


def _relocated(response: Response, url: str, **kwargs: Any) -> Response:
    """``response`` redirecting to ``url`` (``kwargs``: other attributes to replace)."""
    headers = response.headers.copy()
    headers[b"Location"] = safe_url_string(url).encode("ascii")
    return response.replace(headers=headers, **kwargs)


class RedirectLoopMiddleware:
    """Sits just closer to the downloader than Scrapy's RedirectMiddleware (600)."""

    def __init__(self, crawler: Crawler | None = None) -> None:
        self.crawler = crawler
        settings = crawler.settings if crawler is not None else None
        # what Scrapy's MetaRefreshMiddleware follows (its settings)
        self.meta_refresh = bool(settings is None or settings.getbool("METAREFRESH_ENABLED"))
        self.ignore_tags = settings.getlist("METAREFRESH_IGNORE_TAGS") if settings else []
        self.max_delay = settings.getint("METAREFRESH_MAXDELAY") if settings else 100

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectLoopMiddleware:
        return cls(crawler)

    def _site(self, request: Request) -> Site | None:
        spider: Any = getattr(self.crawler, "spider", None)
        sites = getattr(spider, "sites", None)
        name = request.meta.get(SITE)
        return sites.get(name) if isinstance(sites, dict) and isinstance(name, str) else None

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if response.status not in _REDIRECTS:
            return self._meta_refresh(request, response)
        location = response.headers.get(b"Location")
        if not location:
            return response
        target = safe_url_string(urljoin(request.url, location.decode("latin-1")))
        chain = [*request.meta.get("redirect_urls", []), request.url]
        if target in chain:
            raise RedirectLoop(f"redirect loop: {' -> '.join([*chain, target])}")
        site = self._site(request) if request_kind(request) == RequestKind.ARTICLE else None
        if site is None:
            return response
        canonical = article_target(site, target, "redirected to")
        if canonical != target and canonical not in chain:
            # (a server that sends its canonical URL back to the tracked one keeps its way)
            return _relocated(response, canonical)
        return response

    def _meta_refresh(self, request: Request, response: Response) -> Response:
        """An article page with a meta refresh Scrapy's MetaRefreshMiddleware would follow, read
        as the 3xx it stands for: one to the page itself (a page that reloads) is not followed
        (the dupefilter would drop the repeat and the article with it), a loop is a
        :class:`RedirectLoop`, one away from the site's articles :class:`RedirectedAway`, and
        one to an article is a 302 to that article's canonical URL (for Scrapy's
        RedirectMiddleware, next in line)."""
        if not self.meta_refresh or not isinstance(response, HtmlResponse) \
                or request.meta.get("dont_redirect") \
                or request_kind(request) != RequestKind.ARTICLE:
            return response
        site = self._site(request)
        interval, url = get_meta_refresh(response, ignore_tags=self.ignore_tags)
        if site is None or not url or float(interval or 0) >= self.max_delay:
            return response
        target = safe_url_string(url)
        chain = [*request.meta.get("redirect_urls", []), request.url]
        canonical = target if target in chain else article_target(site, target, "refreshes to")
        if canonical == request.url:
            request.meta["dont_redirect"] = True  # read as it is (this response only)
            return response
        if canonical in chain:
            raise RedirectLoop(f"redirect loop: {' -> '.join([*chain, target])} (meta refresh)")
        return _relocated(response, canonical, status=302)
