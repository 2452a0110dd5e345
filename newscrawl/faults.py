"""Site faults and system faults: which errors stop a crawl.

A **site's fault** (an HTTP 503, a timeout, a page without an article body) is counted, retried
on a later run and the crawl goes on (exit 0). A **system fault** -- a fault of the crawl's own
machinery -- stops the run at once: going on would fail every article the same way and record
work the crawl cannot persist. :func:`system_fault` tells them apart; the scheduler stops the
crawl on the first one (one CRITICAL line with :attr:`SystemFault.advice`, the exit code of
:attr:`SystemFault.exit_code`). What was not stored stays queued or failed, so the next run
fetches it (docs/operations.md, "Faults").

Imports neither Scrapy nor the scheduler: the pipelines, the scheduler and the command share it.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from newscrawl.exitcodes import ExitCode
from newscrawl.redis._retry import RedisRefused, RedisUnavailable, redis_refusal, refusal_text

#: errno values of a store that cannot be written: the disk, not the article, is at fault
STORAGE_ERRNOS = frozenset({
    errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EFBIG,
    errno.ENOTDIR, errno.EISDIR, errno.EMFILE, errno.ENFILE,
})


class RunRefused(RuntimeError):
    """A live run crawls another sites file: this worker does not join it."""

    def __init__(self, run_id: str, workers: list[dict[str, object]]) -> None:
        self.run_id = run_id
        self.workers = workers
        who = ", ".join(f"{w.get('host')}:{w.get('pid')}" for w in workers) or "unknown"
        super().__init__(
            f"crawl run {run_id} is live with another sites file (its workers: {who}); wait for"
            " it to finish, or stop its workers (SIGTERM/Ctrl-C): the next crawl then takes the"
            " run over with this sites file")


@dataclass(frozen=True)
class SystemFault:
    """What stopped the run: a short name, the error, what the operator does, the exit code."""

    kind: str  # "storage", "redis", "index"
    error: str
    advice: str
    exit_code: ExitCode

    def line(self) -> str:
        return f"{self.error}. {self.advice}"


def system_fault(exc: BaseException) -> SystemFault | None:
    """The system fault ``exc`` is, or None for an error that is the site's or the article's
    (counted and retried on a later run)."""
    from newscrawl.index import IncompatibleIndexError
    from newscrawl.storage import StoreWriteError

    if isinstance(exc, RedisRefused):
        return SystemFault("redis", f"Redis refused {exc.what}: {refusal_text(exc.reply)}",
                           exc.advice, ExitCode.REDIS_UNAVAILABLE)
    if isinstance(exc, RedisUnavailable):
        return SystemFault("redis", str(exc), "The queue and the in-flight requests stay in"
                           " Redis and are resumed by the next run", ExitCode.REDIS_UNAVAILABLE)
    if isinstance(exc, RunRefused):
        msg = str(exc)
        return SystemFault("run", msg.split("; ")[0], msg.split("; ", 1)[-1], ExitCode.ERROR)
    if isinstance(exc, IncompatibleIndexError):
        return SystemFault("index", str(exc).split(". ")[0],
                           str(exc).split(". ", 1)[-1], ExitCode.ERROR)
    advice = redis_refusal(exc)
    if advice is not None:
        return SystemFault("redis", f"Redis refused a command: {refusal_text(exc)}", advice,
                           ExitCode.REDIS_UNAVAILABLE)
    if isinstance(exc, StoreWriteError) or isinstance(exc, OSError) \
            and exc.errno in STORAGE_ERRNOS:
        where = f" ({exc.filename})" if exc.filename else ""
        return SystemFault(
            "storage", f"cannot write the article store{where}: {exc.strerror or exc}",
            "Free space or fix the permissions of NEWSCRAWL_STORE_DIR and run again; the articles"
            " not stored are fetched again", ExitCode.STORAGE_FAILED)
    return None
