"""Retry Redis calls with backoff while the server is briefly away (:class:`RetryPolicy`); an error
reply no retry fixes raises :class:`RedisRefused` at once. Calls must be safe to repeat.
docs/design/scheduling.md ("Reusing the Redis retry policy").
"""

from __future__ import annotations

import contextlib
import logging
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, TypeVar

import redis

from newscrawl._signals import name as signal_name
from newscrawl.errors import ExitCode, SystemFaultError

logger = logging.getLogger(__name__)

T = TypeVar("T")

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    redis.ConnectionError,  # includes BusyLoadingError (LOADING after a restart)
    redis.TimeoutError,
    redis.ReadOnlyError,
    ConnectionError,
    TimeoutError,
)


#: Redis error replies that no retry fixes: the server refuses to write (out of memory, its
#: persistence failing, a read-only server) or a key holds another type than ours
_REDIS_REFUSALS: dict[str, str] = {
    "OOM": "Redis is at its maxmemory: raise maxmemory, or free memory (`newscrawl prune --days"
           " N --duplicates-days M` deletes old fingerprints and near-duplicate records, on a"
           " full Redis too), and run again",
    "MISCONF": "Redis cannot persist its data (disk full or not writable where it saves its"
               " RDB/AOF): free space there and run again",
    "READONLY": "Redis is a read-only replica: point REDIS_URL at the primary",
    "WRONGTYPE": "a newscrawl key holds a value of another type (another program writing under"
                 " NEWSCRAWL_REDIS_PREFIX?): use another prefix or delete the key",
    "NOPERM": "the Redis user lacks a permission newscrawl needs (docs/operations.md)",
}
_REFUSAL_WORD = re.compile(r"(?:^|: -|: )(" + "|".join(_REDIS_REFUSALS) + r")\b")


def redis_refusal(exc: BaseException) -> str | None:
    """The advice for a Redis error reply no retry fixes (OOM, MISCONF, WRONGTYPE...), else
    None. Connection errors are not refusals: they are retried
    (newscrawl.connection.RetryPolicy)."""
    if not isinstance(exc, redis.ResponseError):
        return None
    # redis-py turns some replies into classes of their own, without the reply's first word
    for cls, word in ((redis.ReadOnlyError, "READONLY"),
                      (redis.exceptions.OutOfMemoryError, "OOM"),
                      (redis.exceptions.NoPermissionError, "NOPERM")):
        if isinstance(exc, cls):
            return _REDIS_REFUSALS[word]
    # the reply's first word; in a script's error it follows "@user_script:<line>: -"
    match = _REFUSAL_WORD.search(str(exc))
    return _REDIS_REFUSALS[match.group(1)] if match else None


def refusal_text(exc: BaseException) -> str:
    """The refusal in a Redis error, without the script's location ("@user_script:43: -")."""
    text = str(exc)
    match = _REFUSAL_WORD.search(text)
    return (text[match.start(1):] if match else text).rstrip(". ")



class RedisUnavailable(SystemFaultError, RuntimeError):
    """Redis stayed unreachable for longer than the retry limit."""

    kind = "redis"
    exit_code = ExitCode.REDIS_UNAVAILABLE

    def __init__(self, what: str, waited: float, last_error: BaseException | None,
                 cut_short: str | None = None) -> None:
        self.what = what
        self.waited = waited
        self.last_error = last_error
        message = f"Redis unavailable for {waited:.0f} s during {what}: {describe(last_error)}"
        if cut_short is not None:
            message += f"; the wait for it was cut short by {cut_short}"
        super().__init__(message, "The queue and the in-flight requests stay in Redis and are"
                         " resumed by the next run", message=message)


class RedisRefused(RedisUnavailable):
    """Redis answered with an error no retry fixes: out of memory, its persistence failing,
    a key of another type; ``advice`` says what to do about each."""

    def __init__(self, what: str, reply: BaseException, advice: str) -> None:
        self.reply = reply
        super().__init__(what, 0.0, reply)
        # refused, not unreachable: no time was waited
        self.args = (f"Redis refused a command during {what}: {describe(reply)}",)
        self.cause = f"Redis refused {what}: {refusal_text(reply)}"
        self.advice = advice


def describe(exc: BaseException | None) -> str:
    return f"{type(exc).__name__}: {exc}" if exc is not None else "no error"


def is_transient(exc: BaseException) -> bool:
    """True for errors that may go away when the server comes back (a refused password won't)."""
    return isinstance(exc, TRANSIENT_ERRORS) and not isinstance(exc, redis.AuthenticationError)


class RetryPolicy:
    """Calls Redis, retrying with backoff while the server is briefly away; one per crawl.

    It owns the state of the current outage, shared by every call through it (the scheduler,
    dupefilter, run marker, list walks and pipelines of a crawl): the window of ``retry_seconds``
    runs from the outage's first failure, so once one call has given up the others give up at
    once instead of each waiting the whole window again (16 requests in flight and the 60 s
    default would otherwise take 10-16 minutes to stop the crawl). A successful call ends the
    outage; a failure more than ``gap`` seconds after the last one seen (nothing was tried in
    between, e.g. a new crawl in the same process) starts a new one. ``retry_seconds <= 0``: no
    retry at all.

    While it waits in the main thread, SIGTERM and SIGINT (Ctrl-C) end the wait: the handler in
    place (Scrapy's graceful stop) still runs, and the outage is given up at once, by this call
    and by every call after it until one succeeds, instead of when the window has passed.
    ``stopping`` (the crawl is being stopped) ends it alike, in any thread, and so does
    ``gone``: why the server will not come back (an embedded server that has exited), or None.
    """

    def __init__(
        self,
        retry_seconds: float,
        *,
        initial_delay: float = 0.1,
        max_delay: float = 5.0,
        gap: float = 30.0,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        stopping: Callable[[], bool] | None = None,
        gone: Callable[[], str | None] | None = None,
    ) -> None:
        self.retry_seconds = retry_seconds
        self.initial_delay = initial_delay
        self.max_delay = max_delay
        self.gap = gap
        self.sleep = sleep if sleep is not None else self._pause
        self.stopping = stopping
        self.gone = gone
        self.clock = clock
        self.started: float | None = None  # when the current outage began
        self.last_failure = 0.0
        self.last_error: BaseException | None = None
        self.stopped_by: int | None = None  # the signal that ended the current outage's wait
        self._lock = threading.Lock()

    def _cut_short(self) -> str | None:
        """Why the current outage's wait is over before its window: a signal, ``stopping``, or
        the server ``gone``."""
        if self.stopped_by is not None:
            return signal_name(self.stopped_by)
        if self.stopping is not None and self.stopping():
            return "the crawl stopping"
        return self.gone() if self.gone is not None else None

    def _pause(self, seconds: float) -> None:
        """Sleep ``seconds``, in short steps, ending early once a signal has stopped the wait."""
        end = time.monotonic() + seconds
        while self._cut_short() is None:
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.1))

    @contextlib.contextmanager
    def _signals_watched(self) -> Iterator[None]:
        """SIGTERM and SIGINT recorded in ``stopped_by`` (then passed to the handler in place)
        while a call retries in the main thread; elsewhere, or with no Python handler in place,
        nothing changes."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous: dict[int, Any] = {}

        def record(signum: int, frame: FrameType | None) -> None:
            self.stopped_by = signum
            handler = previous.get(signum)
            if callable(handler):
                handler(signum, frame)

        for sig in (signal.SIGTERM, signal.SIGINT):
            handler = signal.getsignal(sig)
            if callable(handler):
                previous[sig] = handler
                signal.signal(sig, record)
        try:
            yield
        finally:
            for signum, kept in previous.items():
                # a handler that replaced ours meanwhile (Scrapy's second-signal one) stays
                if signal.getsignal(signum) is record:
                    signal.signal(signum, kept)

    def _failed(self, call_started: float, now: float, error: BaseException) -> float:
        """Record a failure of a call started at ``call_started``; the outage's start."""
        with self._lock:
            if self.started is None or call_started - self.last_failure > self.gap:
                self.started = call_started
            self.last_failure = now
            self.last_error = error
            return self.started

    def _given_up(self, now: float) -> float | None:
        """How long the outage has lasted, if a call should fail without trying: the window has
        passed (a call already gave up) and a call failed less than ``max_delay`` seconds ago.
        (A redis-py call on a dead server takes seconds to fail by itself; once the window has
        passed, a call every ``max_delay`` seconds is enough to see the server come back.)"""
        with self._lock:
            if self.started is None or now - self.last_failure >= self.max_delay:
                return None
            waited = now - self.started
            stopped = self._cut_short() is not None
            return waited if waited >= self.retry_seconds or stopped else None

    def call(self, fn: Callable[..., T], *args: Any, what: str | None = None, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``, retried with backoff on transient Redis errors; raises
        :class:`RedisUnavailable` once ``retry_seconds`` have passed since the outage began (or
        a signal stopped the wait)."""
        label: str = what or str(getattr(fn, "__name__", "redis call"))
        with contextlib.ExitStack() as watching:
            return self._call(fn, args, kwargs, label, watching)

    def _call(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any],
              label: str, watching: contextlib.ExitStack) -> T:
        started: float | None = None
        delay = self.initial_delay
        attempt = 0
        while True:
            call_started = self.clock()
            gone = self._given_up(call_started)
            if gone is not None:
                raise RedisUnavailable(label, gone, self.last_error, self._cut_short())
            try:
                result = fn(*args, **kwargs)
            except TRANSIENT_ERRORS as exc:
                if not is_transient(exc):
                    # Wrong password or user: waiting does not help; fail now, same exit path.
                    logger.error("Redis refused the credentials (%s): %s", label, describe(exc))
                    raise RedisUnavailable(label, 0.0, exc) from exc
                now = self.clock()
                outage_started = self._failed(call_started, now, exc)
                if started is None:
                    # the outage began before this call's first failure: when it started, or
                    # when another call first met it
                    started = min(call_started, outage_started)
                waited = now - started
                cut_short = self._cut_short()
                if cut_short is not None:
                    raise RedisUnavailable(label, waited, exc, cut_short) from exc
                if waited >= self.retry_seconds:
                    logger.error(
                        "Redis still unavailable after %.1f s (%s): giving up: %s", waited, label,
                        describe(exc),
                    )
                    raise RedisUnavailable(label, waited, exc) from exc
                attempt += 1
                if attempt == 1:
                    watching.enter_context(self._signals_watched())
                    logger.warning(
                        "Redis unavailable (%s): %s; retrying for up to %.0f s", label,
                        describe(exc), self.retry_seconds,
                    )
                else:
                    logger.debug("Redis retry %d (%s): %s", attempt, label, describe(exc))
                self.sleep(min(delay, max(0.0, self.retry_seconds - waited)))
                cut_short = self._cut_short()
                if cut_short is not None:
                    logger.warning("Giving up the wait for Redis (%s): cut short by %s", label,
                                   cut_short)
                    raise RedisUnavailable(label, self.clock() - started, exc,
                                           cut_short) from exc
                delay = min(delay * 2, self.max_delay)
                continue
            except redis.ResponseError as exc:
                # OOM, MISCONF, WRONGTYPE...: retrying cannot fix them; the crawl stops
                advice = redis_refusal(exc)
                if advice is None:
                    raise
                raise RedisRefused(label, exc, advice) from exc
            self.started = None  # the outage, if any, is over
            self.stopped_by = None
            if attempt:
                logger.warning("Redis is back (%s) after %d retries", label, attempt)
            return result
