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


def set_exit_code(crawler: Crawler, code: ExitCode) -> None:
    """Ask ``scrapy crawl`` (newscrawl's command) to exit with ``code``; the first one set wins."""
    if code and not getattr(crawler, _ATTR, 0):
        setattr(crawler, _ATTR, code)


def exit_code(crawler: Crawler) -> int:
    """The exit code requested for ``crawler`` (0 if none). For scripts using CrawlerProcess."""
    return int(getattr(crawler, _ATTR, 0) or 0)
