"""Retry Redis calls with backoff while the server is briefly away.

``call_with_retry(fn, *args, retry_seconds=60)`` calls ``fn`` and, on a connection-level error
(connection refused/reset, timeout, ``LOADING`` after a restart, read-only replica during a
failover), sleeps with exponential backoff (0.1 s doubling to 5 s) and tries again until
``retry_seconds`` have passed; then it raises :class:`RedisUnavailable`. Other errors (wrong
type, script errors, ...) are raised at once: retrying cannot fix them.

Reusable by every component that writes to Redis (scheduler, dupefilter, pipelines). The call
blocks the calling thread (in Scrapy: the reactor) while it waits, which is deliberate: without
Redis no request can be scheduled, acknowledged or stored, so the crawl pauses instead of
recording work it cannot persist.

Calls must be idempotent or safe to repeat: when a connection breaks after the server executed a
command but before the reply arrived, the command runs again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_RETRY_SECONDS = 60.0

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    redis.ConnectionError,  # includes BusyLoadingError (LOADING after a restart)
    redis.TimeoutError,
    redis.ReadOnlyError,
    ConnectionError,
    TimeoutError,
)


class RedisUnavailable(RuntimeError):
    """Redis stayed unreachable for longer than the retry limit."""

    def __init__(self, what: str, waited: float, last_error: BaseException | None) -> None:
        self.what = what
        self.waited = waited
        self.last_error = last_error
        super().__init__(
            f"Redis unavailable for {waited:.0f} s during {what}: {describe(last_error)}"
        )


def describe(exc: BaseException | None) -> str:
    return f"{type(exc).__name__}: {exc}" if exc is not None else "no error"


def is_transient(exc: BaseException) -> bool:
    """True for errors that may go away when the server comes back (a refused password won't)."""
    return isinstance(exc, TRANSIENT_ERRORS) and not isinstance(exc, redis.AuthenticationError)


class Outage:
    """When the current Redis outage began, shared by the calls that meet it.

    Without it, each call waited out its own window: after the crawl had given up on Redis, every
    item still in the pipeline retried for the full ``retry_seconds`` in turn (16 requests in
    flight and the 60 s default: 10-16 minutes before the crawl stopped). With it, the window
    runs from the outage's first failure, so later calls give up as soon as it has passed.
    A successful call ends the outage; a failure more than ``gap`` seconds after the last one
    seen (nothing was tried in between, e.g. a new crawl in the same process) starts a new one.
    """

    def __init__(self, gap: float = 30.0) -> None:
        self.gap = gap
        self.started: float | None = None
        self.last_failure = 0.0
        self.last_error: BaseException | None = None
        self._lock = threading.Lock()

    def failed(self, call_started: float, now: float, error: BaseException) -> float:
        """Record a failure of a call started at ``call_started``; the outage's start."""
        with self._lock:
            if self.started is None or call_started - self.last_failure > self.gap:
                self.started = call_started
            self.last_failure = now
            self.last_error = error
            return self.started

    def given_up(self, now: float, retry_seconds: float, probe_after: float) -> float | None:
        """How long the outage has lasted, if a call should fail without trying: the window has
        passed (a call already gave up) and a call failed less than ``probe_after`` seconds ago.
        (A redis-py call on a dead server takes seconds to fail by itself; once the window has
        passed, a call every ``probe_after`` seconds is enough to see the server come back.)"""
        with self._lock:
            if self.started is None or now - self.last_failure >= probe_after:
                return None
            waited = now - self.started
            return waited if waited >= retry_seconds else None

    def succeeded(self) -> None:
        self.started = None


def outage_for(client: Any) -> Outage:
    """The :class:`Outage` of a Redis client's server, shared by every client on the same
    connection pool (in the crawl: the scheduler, dupefilter, run marker and pipelines)."""
    holder = getattr(client, "connection_pool", client)
    outage: Outage | None = getattr(holder, "_newscrawl_outage", None)
    if outage is None:
        outage = Outage()
        try:
            holder._newscrawl_outage = outage
        except AttributeError:  # pragma: no cover - an object without a __dict__
            pass
    return outage


def call_with_retry(
    fn: Callable[..., T],
    *args: Any,
    retry_seconds: float = DEFAULT_RETRY_SECONDS,
    what: str | None = None,
    initial_delay: float = 0.1,
    max_delay: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    outage: Outage | None = None,
    **kwargs: Any,
) -> T:
    """``fn(*args, **kwargs)``, retried with backoff on transient Redis errors.

    Raises :class:`RedisUnavailable` once ``retry_seconds`` have passed since the outage began:
    the first failure of this call, or earlier when other calls already met the same outage
    (``outage``: pass ``outage_for(client)`` to share it with the other calls on that client's
    server; by default the outage is this call's own). ``retry_seconds <= 0``: no retry at all.
    """
    if outage is None:
        outage = Outage()
    label: str = what or str(getattr(fn, "__name__", "redis call"))
    started: float | None = None
    delay = initial_delay
    attempt = 0
    while True:
        call_started = clock()
        gone = outage.given_up(call_started, retry_seconds, max_delay)
        if gone is not None:
            raise RedisUnavailable(label, gone, outage.last_error)
        try:
            result = fn(*args, **kwargs)
        except TRANSIENT_ERRORS as exc:
            if not is_transient(exc):
                # Wrong password or user: waiting does not help; fail now, same exit path.
                logger.error("Redis refused the credentials (%s): %s", label, describe(exc))
                raise RedisUnavailable(label, 0.0, exc) from exc
            now = clock()
            outage_started = outage.failed(call_started, now, exc)
            if started is None:
                # the outage began before this call's first failure: when it started, or when
                # another call first met it
                started = min(call_started, outage_started)
            waited = now - started
            if waited >= retry_seconds:
                logger.error(
                    "Redis still unavailable after %.1f s (%s): giving up: %s", waited, label,
                    describe(exc),
                )
                raise RedisUnavailable(label, waited, exc) from exc
            attempt += 1
            if attempt == 1:
                logger.warning(
                    "Redis unavailable (%s): %s; retrying for up to %.0f s", label, describe(exc),
                    retry_seconds,
                )
            else:
                logger.debug("Redis retry %d (%s): %s", attempt, label, describe(exc))
            sleep(min(delay, max(0.0, retry_seconds - waited)))
            delay = min(delay * 2, max_delay)
            continue
        outage.succeeded()
        if attempt:
            logger.warning("Redis is back (%s) after %d retries", label, attempt)
        return result
