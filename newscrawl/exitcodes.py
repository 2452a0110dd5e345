"""Exit codes of ``scrapy crawl`` (newscrawl's command, ``COMMANDS_MODULE = "newscrawl.commands"``)
and of the ``newscrawl`` command, and the one a crawl asked for: docs/operations.md#exit-codes,
docs/cli.md#exit-codes. The codes are defined with the errors that end in them
(:mod:`newscrawl.errors`); a crawl's code is kept in its :class:`CrawlContext`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from newscrawl.context import CrawlContext
from newscrawl.errors import ExitCode

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["MEANING", "ExitCode", "exit_code", "exit_reason", "set_exit_code"]

#: what each failing exit code of ``scrapy crawl`` means, when no more precise cause was given
MEANING = {
    ExitCode.ERROR: "the crawl could not start",
    ExitCode.REDIS_UNAVAILABLE: "Redis stayed unreachable or refused to write",
    ExitCode.NO_SOURCES:
        "no start, list, sitemap or feed page of any site could be fetched and read",
    ExitCode.STORAGE_FAILED: "the article store could not be written",
    ExitCode.PIPELINE_FAILED: "every page's processing failed (NEWSCRAWL_MAX_ERRORS_IN_A_ROW)",
}


def set_exit_code(crawler: Crawler, code: ExitCode, why: str | None = None) -> None:
    """Ask ``scrapy crawl`` (newscrawl's command) to exit with ``code``; the first one set wins.
    ``why``: the cause in one line, which the command logs again as the crawl's last line."""
    context = CrawlContext.of(crawler)
    if code and not context.exit_code:
        context.exit_code = ExitCode(code)
        context.exit_why = why


def exit_reason(crawler: Crawler) -> str:
    """The cause of the crawl's exit code in one line (the one given to :func:`set_exit_code`,
    else what the code means); empty for exit code 0."""
    context = CrawlContext.of(crawler)
    code = context.exit_code
    if not code:
        return ""
    return context.exit_why or MEANING.get(code, f"exit code {int(code)}")


def exit_code(crawler: Crawler) -> int:
    """The exit code requested for ``crawler`` (0 if none). For scripts using CrawlerProcess."""
    return int(CrawlContext.of(crawler).exit_code)
