"""Article pages of the ``portal`` spider: decoded, extracted and yielded as
:class:`~newscrawl.items.ArticleItem`, or counted as not usable (not HTML, cut short, no body,
a "page not found" served as 200, mojibake).
Design: docs/design/extraction.md.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from scrapy.http import Request, Response, TextResponse

from newscrawl.context import CrawlContext
from newscrawl.extract.not_found import not_found_phrase
from newscrawl.extract.page import cut_short
from newscrawl.formats import as_text, today
from newscrawl.items import ArticleItem
from newscrawl.meta import PAGE_FAILED, RequestKind
from newscrawl.spiders.portal.base import PortalBase
from newscrawl.workers import PageJob, WorkerPool

logger = logging.getLogger(__package__ or __name__)  # one logger for all parts of the spider

_HTML_TYPES = (b"text/html", b"application/xhtml+xml", b"text/plain", b"application/xml",
               b"text/xml")


class ArticlePages(PortalBase):
    """The article page callback."""

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
            self.site_stats.inc(site.name, "not_html")
            logger.info("Not an HTML page, skipped: %s (%s)", response.url,
                        content_type.decode("latin-1") or "no Content-Type")
            return
        if cut_short(response.body):
            self._inc("newscrawl/extract/truncated")
            if not self._last_attempt(response):
                logger.warning("Page cut short: %s ends before its </body> (%d bytes, the last"
                               " %r): not stored, tried again by a later run", response.url,
                               len(response.body), response.body.rstrip()[-24:])
                self._page_failed(response, site.name, "page cut short")
                return
            # served so on every attempt: how the page is, not a transfer cut off
            self._inc("newscrawl/extract/truncated_read")
            logger.warning("Page cut short: %s ends before its </body> (%d bytes, the last %r)"
                           " on its last attempt (NEWSCRAWL_MAX_ATTEMPTS): read as served",
                           response.url, len(response.body), response.body.rstrip()[-24:])
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
        except Exception as exc:
            self._inc("newscrawl/extract/error")
            logger.exception("Extraction failed for %s", response.url)
            self._page_failed(response, site.name, "extraction error")
            if self.crawler is not None:  # an extraction that raises page after page: a fault
                CrawlContext.of(self.crawler).report_page_error(exc, response.request)
            return
        if article is None or not (article.text or "").strip():
            self._inc("newscrawl/extract/no_body")
            logger.info("No article body on %s: not stored (tried again by a later run)",
                        response.url)
            self._page_failed(response, site.name, "no article body")
            return
        phrase = not_found_phrase(article.title, article.text)
        if phrase is not None:  # a soft 404: the article removed, or not published yet
            self._inc("newscrawl/extract/not_found")
            if not self._last_attempt(response):
                logger.info("Page not found on %s (answered %d, says %r): not stored (tried"
                            " again by a later run)", response.url, response.status, phrase)
                self._page_failed(response, site.name, "page not found")
                return
            # served so on every attempt: stored rather than lost, in case it is an article
            self._inc("newscrawl/extract/not_found_read")
            logger.warning("Page not found on %s (answered %d, says %r) on its last attempt"
                           " (NEWSCRAWL_MAX_ATTEMPTS): stored as served, in case it is a short"
                           " article about a missing page", response.url, response.status, phrase)
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
        if self.crawler is not None:
            context = CrawlContext.of(self.crawler)
            if context.config.dedup.enabled:  # taken by the near-duplicate pipeline
                context.response_sizes[url] = len(response.body)
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

    def _last_attempt(self, response: Response) -> bool:
        """Whether this fetch of an article is its last attempt: with it, its failed attempts on
        record (counted once a day, ack.lua) reach NEWSCRAWL_MAX_ATTEMPTS."""
        if self.crawler is None:
            return False
        df = self.walks.df
        # the request as queued: a redirect's target is queued (and acknowledged) as its own
        request = response.request if response.request is not None else Request(response.url)
        record = df.retry.call(df.server.hget, df.failures_key, df.fingerprint8(request),
                               what="failed attempts")
        attempts, _, day = as_text(record or b"0:").partition(":")
        try:
            count = int(attempts) + (0 if day and int(day) == today() else 1)
        except ValueError:
            return False
        return count >= CrawlContext.of(self.crawler).config.scheduling.max_attempts

    def _page_failed(self, response: Response, site_name: str, reason: str) -> None:
        """An article page fetched but not usable: counted, and a failed attempt for the
        scheduler (fetched again by a later run, up to NEWSCRAWL_MAX_ATTEMPTS)."""
        response.meta[PAGE_FAILED] = reason
        self.site_stats.failed(site_name, RequestKind.ARTICLE, "extraction")
