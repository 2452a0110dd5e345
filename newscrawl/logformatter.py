"""Scrapy's log formatter, with a dropped item logged on one line (its URL and the reason).

Scrapy logs a dropped item with the whole item (an article's full text) on the following lines;
a near-duplicate dropped at INFO (newscrawl.pipelines.dedup) would fill the log with texts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.logformatter import LogFormatter as ScrapyLogFormatter

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.http import Response
    from scrapy.logformatter import LogFormatterResult
    from twisted.python.failure import Failure


class LogFormatter(ScrapyLogFormatter):
    def dropped(self, item: Any, exception: BaseException, response: Response | Failure | None,
                spider: Spider) -> LogFormatterResult:
        result = super().dropped(item, exception, response, spider)
        url = item.get("url") if hasattr(item, "get") else None
        result["msg"] = "Dropped %(url)s: %(exception)s"
        result["args"] = {"url": url or "an item", "exception": exception}
        return result
