"""Stopping the crawl on a system fault: the one place that reacts to it.

:class:`FaultStop` logs the fault, sets the exit code and closes the spider; :func:`guarded`
makes a scheduling entry point hand a Redis failure to it instead of raising.
See docs/design/scheduling.md ("The modules").
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from scrapy.utils.defer import deferred_from_coro

from newscrawl.connection import RedisRefused, RedisUnavailable
from newscrawl.exitcodes import set_exit_code
from newscrawl.faults import PagesFailing, SystemFault, system_fault

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

STATS = "newscrawl/scheduler/"
#: Close reason of the spider when Redis stayed unreachable (exit code 3).
REASON_REDIS_UNAVAILABLE = "redis_unavailable"
#: Close reason of the spider when a fault of the crawl's own machinery stopped it
#: (newscrawl.faults: a full disk, Redis refusing writes, an index of another version).
REASON_SYSTEM_FAULT = "system_fault"


class FaultStop:
    """The first system fault of the crawl, and what stopping on it does (see
    :meth:`stop`)."""

    def __init__(self, crawler: Crawler, redis_retry_seconds: float) -> None:
        self.crawler = crawler
        self.redis_retry_seconds = redis_retry_seconds
        #: the fault that stopped the crawl; once set, nothing more is scheduled or acknowledged
        self.fault: SystemFault | None = None
        #: the fault is Redis being unreachable: leave Redis alone
        self.redis_gone = False
        self.close_reason = REASON_REDIS_UNAVAILABLE

    @property
    def stopped(self) -> bool:
        return self.fault is not None

    def _inc(self, name: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(STATS + name)

    def stop(self, exc: BaseException, *, close: bool = True) -> bool:
        """Stop the crawl if ``exc`` is a system fault (:mod:`newscrawl.faults`): one CRITICAL
        line naming the cause and what to do, the fault's exit code, nothing acknowledged from
        now on. Returns whether it was one (the first fault wins; later ones return True)."""
        fault = system_fault(exc)
        if fault is None:
            return False
        if self.fault is not None:
            return True
        self.fault = fault
        unreachable = isinstance(exc, RedisUnavailable) and not isinstance(exc, RedisRefused)
        set_exit_code(self.crawler, fault.exit_code, str(exc) if unreachable else fault.line())
        if unreachable:
            assert isinstance(exc, RedisUnavailable)
            self.redis_gone = True
            self._inc("redis_unavailable")
            logger.critical(
                "Redis is unreachable (%s, retried for %.0f s, NEWSCRAWL_REDIS_RETRY_SECONDS=%s);"
                " stopping the crawl (exit code %d). Queued and in-flight requests stay in Redis"
                " and are resumed by the next run.",
                exc, exc.waited, self.redis_retry_seconds, fault.exit_code,
            )
        else:
            self.close_reason = REASON_SYSTEM_FAULT
            self._inc(f"system_fault/{fault.kind}")
            logger.critical("Stopping the crawl (exit code %d): %s", fault.exit_code,
                            fault.line())
        engine = self.crawler.engine
        if close and engine is not None and engine.spider is not None:
            deferred_from_coro(engine.close_spider_async(reason=self.close_reason))
        return True


class ErrorStreak:
    """Pages in a row whose processing raised (an item pipeline's, a callback's or extraction's
    exception that is no system fault by its type). ``limit`` of them with no item through all
    the pipelines between is the crawl's own fault, a :class:`~newscrawl.faults.PagesFailing`;
    so is a run that ends with no item through at all and such pages failed (0: neither). An
    item dropped as a near-duplicate proves nothing of the pipelines after the drop."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.passed = False  # an item went through every pipeline in this crawl
        self.last = ""  # the streak's last error and page

    def item_done(self) -> None:
        """An item went through every pipeline: processing works."""
        self.count = 0
        self.passed = True

    def failed(self, exc: BaseException, url: str) -> PagesFailing | None:
        """One more page failed with ``exc``: the fault when that makes ``limit`` in a row."""
        self.count += 1
        text = str(exc).splitlines()[0][:300] if str(exc) else ""
        where = "" if url in text else f" on {url}"
        self.last = f"{type(exc).__name__}{': ' + text if text else ''}{where}"
        if not self.limit or self.count < self.limit:
            return None
        return self.fault()

    def fault(self, *, run_ended: bool = False) -> PagesFailing:
        """The fault of the streak so far (``run_ended``: found at the end of the run)."""
        return PagesFailing(self.count, self.last, run_ended=run_ended)

    def failed_throughout(self) -> bool:
        """Whether every page processed so far failed (at least one): at the end of a run, the
        crawl's own fault however short of ``limit`` (a day's few new articles)."""
        return bool(self.limit) and self.count > 0 and not self.passed


class HasFaultStop(Protocol):
    faults: FaultStop


S = TypeVar("S", bound=HasFaultStop)
P = ParamSpec("P")
R = TypeVar("R")


def guarded(fallback: Callable[..., R]) -> Callable[
        [Callable[Concatenate[S, P], R]], Callable[Concatenate[S, P], R]]:
    """Decorate a method of an object with a ``faults`` :class:`FaultStop`: once stopped, or
    when the method meets Redis unavailable (or refusing), the crawl stops (the fault is
    logged once) and the method returns ``fallback(self, *args)`` instead. Not for a signal
    handler itself: pydispatch passes a handler the arguments its signature names."""

    def decorate(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
        @functools.wraps(method)
        def wrapper(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
            if self.faults.stopped:
                return fallback(self, *args)
            try:
                return method(self, *args, **kwargs)
            except RedisUnavailable as exc:
                self.faults.stop(exc)
                return fallback(self, *args)

        return wrapper

    return decorate


def returns(value: Any) -> Callable[..., Any]:
    """A :func:`guarded` fallback that returns ``value``."""
    return lambda *_: value
