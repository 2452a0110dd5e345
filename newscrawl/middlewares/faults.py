"""A system fault raised in a callback, a middleware, an extension or a signal handler stops the
crawl as in the scheduler and the pipelines (docs/operations.md#faults): one reaction,
:meth:`CrawlContext.report_fault`, instead of Scrapy's "Spider error" and a crawl that goes on.
A fault is recognised by its type (:func:`newscrawl.faults.system_fault`), never by its message.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from pydispatch.robustapply import robustApply
from scrapy import signals

from newscrawl.context import CrawlContext
from newscrawl.faults import system_fault

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


def report_fault(crawler: Crawler | None, exc: BaseException) -> bool:
    """Stop ``crawler``'s crawl if ``exc`` is a system fault; whether it was one."""
    if crawler is None or system_fault(exc) is None:
        return False
    return CrawlContext.of(crawler).report_fault(exc)


def redis_fault(exc: BaseException) -> bool:
    """Whether ``exc`` is a Redis fault (refused or unreachable), the only system fault the
    download chain can raise: an ``OSError`` there (a ``file://`` URL) is the site's."""
    fault = system_fault(exc)
    return fault is not None and fault.kind == "redis"


def guarded(crawler: Crawler, handler: F) -> F:
    """``handler`` (a signal handler, an extension's callback) reporting a system fault it
    raises (:func:`report_fault`) instead of raising it; other exceptions are raised as they are
    (Scrapy's signal dispatch logs them)."""

    @functools.wraps(handler)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            # only the arguments ``handler`` takes, as Scrapy's signal dispatch passes them
            return robustApply(handler, *args, **kwargs)
        except Exception as exc:
            if report_fault(crawler, exc):
                return None
            raise

    return wrapper  # type: ignore[return-value]


class SystemFaultSpiderMiddleware:
    """Stops the crawl on a system fault raised by a callback (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        crawler.signals.connect(self.spider_error, signal=signals.spider_error)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SystemFaultSpiderMiddleware:
        return cls(crawler)

    def process_spider_exception(self, response: Response, exception: Exception
                                 ) -> Iterable[Any] | None:
        """A system fault: reported, and no output (the page is not acknowledged, so it is
        fetched again by the next run); anything else goes on to Scrapy ("Spider error")."""
        if not report_fault(self.crawler, exception):
            return None
        self._inc("spider")
        logger.debug("System fault in the callback of %s: %r", response, exception)
        return []

    def spider_error(self, failure: Failure, response: Response | Failure, spider: Spider
                     ) -> None:
        """An exception no spider middleware handled (an errback's, or raised by a spider
        middleware further from the spider): Scrapy has logged it as a spider error."""
        if report_fault(self.crawler, failure.value):
            self._inc("spider_error")

    def _inc(self, where: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"newscrawl/faults/{where}")


class SystemFaultDownloaderMiddleware:
    """Stops the crawl on a Redis fault raised in the download chain (a downloader middleware
    talking to Redis). Other errors of a download -- an ``OSError`` of a ``file://`` URL
    included -- are the site's fault, counted and retried by the spider's errback."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SystemFaultDownloaderMiddleware:
        return cls(crawler)

    def process_exception(self, request: Request, exception: Exception) -> None:
        if redis_fault(exception) and report_fault(self.crawler, exception):
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value("newscrawl/faults/downloader")
