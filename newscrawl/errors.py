"""newscrawl's own errors and the exit codes they end in.

Every error newscrawl raises for a user to read derives from :class:`NewscrawlError`: what
happened (``cause``), what to do (``advice``) and the exit code. A :class:`SystemFaultError`
stops the crawl at once (docs/operations.md#faults); a :class:`ConfigError` is a mistake in
what newscrawl was given. Imports nothing: every module may raise these.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class ExitCode(IntEnum):
    """Exit codes of ``scrapy crawl`` and of the ``newscrawl`` command
    (docs/operations.md#exit-codes, docs/cli.md#exit-codes)."""

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
    #: ``scrapy crawl``: NEWSCRAWL_MAX_ERRORS_IN_A_ROW pages in a row failed in an item pipeline,
    #: a callback or extraction, none through all the pipelines between them: the crawl's own fault
    PIPELINE_FAILED = 6
    #: ``newscrawl``: interrupted (Ctrl-C)
    INTERRUPTED = 130


def sentence(text: str) -> str:
    """``text`` with its first letter upper case, to follow a full stop."""
    return text[:1].upper() + text[1:]


class NewscrawlError(Exception):
    """An error of newscrawl's: ``cause`` (what happened), ``advice`` (what to do, may be
    empty) and :attr:`exit_code`. ``str()`` is the message users read: ``message`` when given,
    else the cause and the advice as two sentences."""

    #: the process's exit code when this error ends it
    exit_code: ClassVar[ExitCode] = ExitCode.ERROR

    def __init__(self, cause: str, advice: str = "", *, message: str | None = None) -> None:
        if message is None:
            message = f"{cause}. {sentence(advice)}" if advice else cause
        super().__init__(message)
        self.cause = cause
        self.advice = advice


class ConfigError(NewscrawlError, ValueError):
    """A mistake in what newscrawl was given (a sites file, a URL pattern, an IDF table, a
    setting, a pairs file): the message names it."""


class SystemFaultError(NewscrawlError):
    """A fault of the crawl's own machinery (Redis, the article store, the index, the run):
    the crawl stops at once with one CRITICAL line, ``<cause>. <advice>``, and
    :attr:`exit_code`. :attr:`kind` names it in the stats (``system_fault/<kind>``)."""

    #: ``"redis"``, ``"storage"``, ``"index"``, ``"run"`` or ``"pipeline"``
    kind: ClassVar[str] = "run"
