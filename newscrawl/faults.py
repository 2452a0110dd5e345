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
import re
from dataclasses import dataclass

import redis

from newscrawl.exitcodes import ExitCode

#: errno values of a store that cannot be written: the disk, not the article, is at fault
STORAGE_ERRNOS = frozenset({
    errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EFBIG,
    errno.ENOTDIR, errno.EISDIR, errno.EMFILE, errno.ENFILE,
})

#: Redis error replies that no retry fixes: the server refuses to write (out of memory, its
#: persistence failing, a read-only server) or a key holds another type than ours
_REDIS_REFUSALS: dict[str, str] = {
    "OOM": "Redis is at its maxmemory: raise maxmemory (or free memory) and run again",
    "MISCONF": "Redis cannot persist its data (disk full or not writable where it saves its"
               " RDB/AOF): free space there and run again",
    "READONLY": "Redis is a read-only replica: point REDIS_URL at the primary",
    "WRONGTYPE": "a newscrawl key holds a value of another type (another program writing under"
                 " NEWSCRAWL_REDIS_PREFIX?): use another prefix or delete the key",
    "NOPERM": "the Redis user lacks a permission newscrawl needs (docs/operations.md)",
}
_REFUSAL_WORD = re.compile(r"(?:^|: -|: )(" + "|".join(_REDIS_REFUSALS) + r")\b")


@dataclass(frozen=True)
class SystemFault:
    """What stopped the run: a short name, the error, what the operator does, the exit code."""

    kind: str  # "storage", "redis", "index"
    error: str
    advice: str
    exit_code: ExitCode

    def line(self) -> str:
        return f"{self.error}. {self.advice}"


def redis_refusal(exc: BaseException) -> str | None:
    """The advice for a Redis error reply no retry fixes (OOM, MISCONF, WRONGTYPE...), else
    None. Connection errors are not refusals: they are retried (newscrawl.redis.RetryPolicy)."""
    if not isinstance(exc, redis.ResponseError):
        return None
    if isinstance(exc, redis.ReadOnlyError):
        return _REDIS_REFUSALS["READONLY"]
    # the reply's first word; in a script's error it follows "@user_script:<line>: -"
    match = _REFUSAL_WORD.search(str(exc))
    return _REDIS_REFUSALS[match.group(1)] if match else None


def _reply(exc: BaseException) -> str:
    """The refusal in a Redis error, without the script's location ("@user_script:43: -")."""
    text = str(exc)
    match = _REFUSAL_WORD.search(text)
    return (text[match.start(1):] if match else text).rstrip(". ")


def system_fault(exc: BaseException) -> SystemFault | None:
    """The system fault ``exc`` is, or None for an error that is the site's or the article's
    (counted and retried on a later run)."""
    from newscrawl.index import IncompatibleIndexError
    from newscrawl.redis import RedisUnavailable
    from newscrawl.redis._retry import RedisRefused
    from newscrawl.scheduling.run import RunRefused

    if isinstance(exc, RedisRefused):
        return SystemFault("redis", f"Redis refused {exc.what}: {_reply(exc.reply)}",
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
        return SystemFault("redis", f"Redis refused a command: {_reply(exc)}", advice,
                           ExitCode.REDIS_UNAVAILABLE)
    if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
        where = f" ({exc.filename})" if exc.filename else ""
        return SystemFault(
            "storage", f"cannot write the article store{where}: {exc.strerror or exc}",
            "Free space or fix the permissions of NEWSCRAWL_STORE_DIR and run again; the articles"
            " not stored are fetched again", ExitCode.STORAGE_FAILED)
    return None
