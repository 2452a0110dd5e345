"""Exit codes of ``scrapy crawl`` (newscrawl's command, ``COMMANDS_MODULE = "newscrawl.commands"``)
and of the ``newscrawl`` command: docs/operations.md#exit-codes, docs/cli.md#exit-codes."""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

_ATTR = "_newscrawl_exit_code"


class ExitCode(IntEnum):
    OK = 0
    #: ``scrapy crawl``: the crawler could not start; ``newscrawl``: an error
    ERROR = 1
    #: ``newscrawl``: a usage error
    USAGE = 2
    #: ``scrapy crawl``: Redis stayed unreachable past NEWSCRAWL_REDIS_RETRY_SECONDS, or refused
    #: to write (out of memory, its persistence failing, a key of another type)
    REDIS_UNAVAILABLE = 3
    #: ``scrapy crawl``: the run finished without fetching one start, list, sitemap or feed page
    #: of any site (network down, every start URL dead): a dead daily crawl is noticed
    NO_SOURCES = 4
    #: ``scrapy crawl``: the article store could not be written (disk full, not writable)
    STORAGE_FAILED = 5
    #: ``newscrawl``: interrupted (Ctrl-C)
    INTERRUPTED = 130


_WHY_ATTR = "_newscrawl_exit_why"

#: what each failing exit code of ``scrapy crawl`` means, when no more precise cause was given
MEANING = {
    ExitCode.ERROR: "the crawl could not start",
    ExitCode.REDIS_UNAVAILABLE: "Redis stayed unreachable or refused to write",
    ExitCode.NO_SOURCES: "no start, list, sitemap or feed page of any site could be fetched",
    ExitCode.STORAGE_FAILED: "the article store could not be written",
}


def set_exit_code(crawler: Crawler, code: ExitCode, why: str | None = None) -> None:
    """Ask ``scrapy crawl`` (newscrawl's command) to exit with ``code``; the first one set wins.
    ``why``: the cause in one line, which the command logs again as the crawl's last line."""
    if code and not getattr(crawler, _ATTR, 0):
        setattr(crawler, _ATTR, code)
        setattr(crawler, _WHY_ATTR, why)


def exit_reason(crawler: Crawler) -> str:
    """The cause of the crawl's exit code in one line (the one given to :func:`set_exit_code`,
    else what the code means); empty for exit code 0."""
    code = exit_code(crawler)
    if not code:
        return ""
    why = getattr(crawler, _WHY_ATTR, None)
    return str(why) if why else MEANING.get(ExitCode(code), f"exit code {code}")


def exit_code(crawler: Crawler) -> int:
    """The exit code requested for ``crawler`` (0 if none). For scripts using CrawlerProcess."""
    return int(getattr(crawler, _ATTR, 0) or 0)
