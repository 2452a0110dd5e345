"""A Scrapy project's own components meeting a real Redis refusal (test_crawl_wrong_type.py).

Each pushes to the run marker, a string, with the crawl's Redis client on the third article: Redis
answers WRONGTYPE, as it would to a project component writing to a key of another type. Loaded
into a crawl with ``-s`` (the crawl's PYTHONPATH holds tests/).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Request, Response

from newscrawl import keys
from newscrawl.context import CrawlContext
from newscrawl.meta import KIND, RequestKind
from newscrawl.middlewares.faults import guarded

#: the article page (in fetch order) on which each component meets the refusal
NTH = 3


class Refuser:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.seen = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        return cls(crawler)

    def maybe_refused(self, kind: object) -> None:
        if kind != RequestKind.ARTICLE:
            return
        self.seen += 1
        if self.seen == NTH:
            context = CrawlContext.of(self.crawler)
            key = context.keys()(keys.CRAWL_RUN)
            context.retry.call(context.redis.lpush, key, "x", what="a project component")


class RefusingDownloaderMiddleware(Refuser):
    """Meets the refusal in ``process_request`` (the download chain)."""

    def process_request(self, request: Request) -> None:
        self.maybe_refused(request.meta.get(KIND))


class RefusingSpiderMiddleware(Refuser):
    """Meets the refusal in ``process_spider_output``, further from the spider than newscrawl's
    middleware: Scrapy logs a spider error and sends ``spider_error``."""

    def process_spider_output(self, response: Response, result: Iterable[Any]
                              ) -> Iterable[Any]:
        self.maybe_refused(response.meta.get(KIND))
        yield from result

    async def process_spider_output_async(self, response: Response,
                                          result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        self.maybe_refused(response.meta.get(KIND))
        async for item in result:
            yield item


class RefusingExtension(Refuser):
    """Meets the refusal in an ``item_scraped`` handler wrapped with ``guarded``."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        ext = cls(crawler)
        crawler.signals.connect(guarded(crawler, ext.item_scraped), signal=signals.item_scraped,
                                weak=False)
        return ext

    def item_scraped(self, item: Any, response: Response) -> None:
        self.maybe_refused(RequestKind.ARTICLE)
