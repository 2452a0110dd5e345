"""``scrapy crawl`` that also fails (non-zero exit) when the crawl itself failed.

Scrapy's own ``crawl`` exits 1 only when the crawler could not start; a spider closed because
Redis went away for good would exit 0. This command keeps the crawler and exits with the code
the crawl asked for (:class:`newscrawl.exitcodes.ExitCode`), and logs the cause of a failed crawl
once more as its last line (``The crawl failed: <cause> (exit code N)``), after Scrapy's own
closing lines: the one line that matters is not left among the warnings above them.

A spider class may define ``check_config(settings, spider_args)``, raising ``ValueError`` with a
message for the user (a bad sites file): the command calls it before the crawl starts and
exits 1 with that one message. Raised from the spider's ``from_crawler`` instead, the same error
surfaces a second time as asyncio's "Task exception was never retrieved" and its traceback.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError

from newscrawl.exitcodes import ExitCode, exit_code, exit_reason

if TYPE_CHECKING:
    import argparse

logger = logging.getLogger(__name__)


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) < 1:
            raise UsageError
        if len(args) > 1:
            raise UsageError("running 'scrapy crawl' with more than one spider is not supported")
        assert self.crawler_process
        crawler = self._create_crawler(args[0])
        check = getattr(crawler.spidercls, "check_config", None)
        if check is not None:
            try:
                check(crawler.settings, dict(opts.spargs))
            except ValueError as exc:
                logger.error("Cannot start the crawl: %s", exc)
                self.exitcode = ExitCode.ERROR
                return
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = ExitCode.ERROR
        code = exit_code(crawler)
        if code:
            self.exitcode = code
            # the cause again, after Scrapy's closing lines and the stats dump: the last line of
            # a failed crawl says why it failed, whatever was logged before it
            logger.error("The crawl failed: %s (exit code %d)", exit_reason(crawler), code)
