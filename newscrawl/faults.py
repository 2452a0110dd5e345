"""Site faults and system faults: which errors stop a crawl (docs/operations.md#faults).

A site's fault is counted, retried on a later run and the crawl goes on; a system fault stops
the run at once with one CRITICAL line and its exit code. :func:`system_fault` tells them apart
by the error's type: newscrawl's :class:`~newscrawl.errors.SystemFaultError` carries its cause,
advice and exit code; Redis refusals and store ``OSError``s of other code are classified here.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from newscrawl.connection._retry import redis_refusal, refusal_text
from newscrawl.errors import ExitCode, SystemFaultError, sentence
from newscrawl.formats import as_text, plural
from newscrawl.storage import STORE_ADVICE, store_fault_cause

#: errno values of a store that cannot be written: the disk, not the article, is at fault
STORAGE_ERRNOS = frozenset({
    errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EFBIG,
    errno.ENOTDIR, errno.EISDIR, errno.EMFILE, errno.ENFILE,
})


class RunRefused(SystemFaultError, RuntimeError):
    """A live run crawls another sites file: this worker does not join it."""

    kind = "run"

    def __init__(self, run_id: str, workers: list[dict[str, object]]) -> None:
        self.run_id = run_id
        self.workers = workers
        who = ", ".join(f"{w.get('host')}:{w.get('pid')}" for w in workers) or "unknown"
        cause = f"crawl run {run_id} is live with another sites file (its workers: {who})"
        advice = ("wait for it to finish, or stop its workers (SIGTERM/Ctrl-C): the next crawl"
                  " then takes the run over with this sites file")
        super().__init__(cause, advice, message=f"{cause}; {advice}")


class RedisEvicts(SystemFaultError, RuntimeError):
    """Redis deletes keys at its maxmemory (a maxmemory-policy other than noeviction): the
    crawl's records would go without a word, so the crawl does not start."""

    kind = "redis"
    exit_code = ExitCode.REDIS_UNAVAILABLE

    def __init__(self, policy: str, maxmemory: int) -> None:
        self.policy = policy
        self.maxmemory = maxmemory
        super().__init__(
            f"Redis's maxmemory-policy is {policy} with a maxmemory of {maxmemory} bytes: at that"
            " limit it deletes keys to make room, so the crawl would lose queued requests, done"
            " records and near-duplicate index entries without a word (articles not fetched,"
            " pages fetched again, near-duplicates stored)",
            "Set maxmemory-policy noeviction on this Redis (CONFIG SET maxmemory-policy"
            " noeviction, and in its redis.conf), or remove its maxmemory, or give the crawl a"
            " Redis of its own; at a full Redis with noeviction every write is refused and the"
            " crawl stops at once with exit code 3")


def evicting(client: Any) -> tuple[str, int] | None:
    """(policy, maxmemory) when ``client``'s server deletes keys at its maxmemory; None when it
    does not, or does not say (an ACL without INFO)."""
    import redis

    try:
        return eviction(client.info("memory"))
    except redis.ResponseError:
        return None


def eviction(memory: Mapping[str, Any]) -> tuple[str, int] | None:
    """(policy, maxmemory) when a server whose ``INFO memory`` is ``memory`` deletes keys at
    its maxmemory (a limit, and a policy other than noeviction); else None."""
    limit = int(memory.get("maxmemory", 0) or 0)
    policy = as_text(memory.get("maxmemory_policy") or "")
    return (policy, limit) if limit and policy and policy != "noeviction" else None


class PagesFailing(SystemFaultError, RuntimeError):
    """Page after page failed in an item pipeline, a callback or extraction (an exception, not
    a page without a body), no item through all the pipelines between them: a fault of the
    crawl's code or of what its pipelines write to, not of the sites."""

    kind = "pipeline"
    exit_code = ExitCode.PIPELINE_FAILED

    def __init__(self, count: int, last: str, *, run_ended: bool = False) -> None:
        self.count = count
        pages = plural(count, "page")
        if run_ended:  # fewer than NEWSCRAWL_MAX_ERRORS_IN_A_ROW, and nothing else processed
            cause = (f"the run ended with {pages} failed in an item pipeline, a callback or"
                     f" extraction and no item through all the pipelines (the last: {last})")
        else:
            cause = (f"{pages} in a row failed in an item pipeline, a callback or extraction,"
                     f" with no item through all the pipelines between them (the last:"
                     f" {last})")
        advice = ("the log has each page's traceback; fix the fault (newscrawl's code or its"
                  " libraries, a pipeline of ITEM_PIPELINES or what it writes to) and run again:"
                  " the failed pages are fetched again by the next run, the rest stay queued"
                  " (NEWSCRAWL_MAX_ERRORS_IN_A_ROW)")
        super().__init__(cause, advice)


@dataclass(frozen=True)
class SystemFault:
    """What stopped the run: a short name, the error, what the operator does, the exit code."""

    kind: str  # "storage", "redis", "index", "run"
    error: str
    advice: str
    exit_code: ExitCode

    def line(self) -> str:
        return f"{self.error}. {sentence(self.advice)}"


def system_fault(exc: BaseException) -> SystemFault | None:
    """The system fault ``exc`` is, or None for an error that is the site's or the article's
    (counted and retried on a later run)."""
    if isinstance(exc, SystemFaultError):
        return SystemFault(exc.kind, exc.cause, exc.advice, exc.exit_code)
    advice = redis_refusal(exc)
    if advice is not None:
        return SystemFault("redis", f"Redis refused a command: {refusal_text(exc)}", advice,
                           ExitCode.REDIS_UNAVAILABLE)
    if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
        return SystemFault("storage", store_fault_cause(exc), STORE_ADVICE,
                           ExitCode.STORAGE_FAILED)
    return None
