"""A project's own components that raise on article pages (test_crawl_broken_pipeline.py): the
kind of fault of the crawl's own code that NEWSCRAWL_MAX_ERRORS_IN_A_ROW stops. Loaded into a
crawl with ``-s`` (the crawl's PYTHONPATH holds tests/)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from scrapy.http import Response

from newscrawl.meta import KIND, RequestKind


class BrokenPipeline:
    """An item pipeline before newscrawl's (order < 300) that raises on every item: a validation
    step with a bug, or a database it writes to that is down."""

    def process_item(self, item: Any) -> Any:
        raise RuntimeError("the warehouse is down")


class FlakyPipeline:
    """A pipeline after newscrawl's store (order > 800: an export of stored articles) that
    raises on every other item it is given: as it is the last, the items finish in the order it
    gets them, so the failures are never two in a row."""

    def __init__(self) -> None:
        self.seen = 0

    def process_item(self, item: Any) -> Any:
        self.seen += 1
        if self.seen % 2:
            raise ValueError(f"item {self.seen} has a field of the wrong type")
        return item


class BrokenSpiderMiddleware:
    """Raises in ``process_spider_output`` of every article page, further from the spider than
    newscrawl's middlewares: Scrapy logs a spider error and sends ``spider_error``; the page's
    item is never produced."""

    def _check(self, response: Response) -> None:
        if response.meta.get(KIND) == RequestKind.ARTICLE:
            raise KeyError("selector")

    def process_spider_output(self, response: Response, result: Iterable[Any]
                              ) -> Iterable[Any]:
        self._check(response)
        yield from result

    async def process_spider_output_async(self, response: Response,
                                          result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        self._check(response)
        async for item in result:
            yield item


class BrokenExtractionLibrary:
    """An extension that breaks the extraction library in the crawl process (run the crawl with
    its extraction there, NEWSCRAWL_FINGERPRINT_WORKERS=0), as an incompatible version of it
    would: every article page's extraction raises."""

    def __init__(self) -> None:
        import trafilatura

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise TypeError("bare_extraction() got an unexpected keyword argument")

        trafilatura.bare_extraction = broken

    @classmethod
    def from_crawler(cls, crawler: Any) -> BrokenExtractionLibrary:
        return cls()
