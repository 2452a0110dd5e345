"""Scrapy's log formatter with a dropped or failed item on one line (its URL and the reason), and
an item failed by a system fault at DEBUG (the CRITICAL line names the fault).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.logformatter import LogFormatter as ScrapyLogFormatter

from newscrawl.faults import system_fault

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.logformatter import LogFormatterResult
    from twisted.python.failure import Failure


class LogFormatter(ScrapyLogFormatter):
    def __init__(self, url_field: str = "url") -> None:
        self.url_field = url_field

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LogFormatter:
        return cls(crawler.settings.get("NEWSCRAWL_URL_FIELD") or "url")

    def dropped(self, item: Any, exception: BaseException, response: Response | Failure | None,
                spider: Spider) -> LogFormatterResult:
        result = super().dropped(item, exception, response, spider)
        url = ItemAdapter(item).get(self.url_field) if ItemAdapter.is_item(item) else None
        result["msg"] = "Dropped %(url)s: %(exception)s"
        result["args"] = {"url": url or "an item", "exception": exception}
        return result

    def item_error(self, item: Any, exception: BaseException,
                   response: Response | Failure | None, spider: Spider) -> LogFormatterResult:
        result = super().item_error(item, exception, response, spider)
        url = ItemAdapter(item).get(self.url_field) if ItemAdapter.is_item(item) else None
        result["msg"] = "Error processing %(url)s: %(exception)s"
        result["args"] = {"url": url or "an item", "exception": exception}
        if system_fault(exception) is not None:
            result["level"] = logging.DEBUG
        return result
