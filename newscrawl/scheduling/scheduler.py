"""The Scrapy scheduler on newscrawl's leased Redis queue: enqueue (de-dup and push), pop and
lease, and the acknowledgement once the engine is done with a request.

The run's life is :mod:`~newscrawl.scheduling.run`, per-host politeness
:mod:`~newscrawl.scheduling.politeness`, stopping on a fault :mod:`~newscrawl.scheduling.stopping`.
See docs/design/scheduling.md ("How a request flows").
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import CloseSpider, IgnoreRequest
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.misc import build_from_crawler, load_object

from newscrawl import _scrapy_compat as compat
from newscrawl.connection import RedisUnavailable
from newscrawl.context import CrawlContext, SchedulingConfig
from newscrawl.errors import SystemFaultError
from newscrawl.faults import RedisEvicts, RunRefused, evicting, system_fault
from newscrawl.formats import plural, today
from newscrawl.keys import CrawlKeys
from newscrawl.meta import (
    LEASE,
    ORDER,
    ORDER_DAY,
    ORDER_TIMED_DAY,
    PAGE_FAILED,
    ROOT,
    RUN_KINDS,
    SITE,
    RequestKind,
    request_kind,
)
from newscrawl.middlewares.redirects import RedirectFailure
from newscrawl.scheduling import queue as q
from newscrawl.scheduling.dupefilter import RedisDupeFilter
from newscrawl.scheduling.politeness import POLL_SECONDS, Politeness
from newscrawl.scheduling.run import REASON_SYSTEM_FAULT, RunLife, RunMarker, sites_fingerprint
from newscrawl.scheduling.serializer import WRAPPED_ATTR, SerializationError
from newscrawl.scheduling.stopping import STATS, ErrorStreak, FaultStop, guarded, returns
from newscrawl.scheduling.waiting import CheckOrder

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)


@dataclass
class Lease:
    entry: q.Entry
    responded: bool = False
    failure: Failure | None = None
    item_failure: Failure | None = None
    failed_in: str = ""  # "pipeline" or "callback", with item_failure
    in_streak: bool = False  # counted in ErrorStreak: acknowledged once the streak is decided
    replaced: bool = False
    started: float = field(default_factory=time.monotonic)


def _tracking_errback(
    original: Callable[..., Any] | None, on_failure: Callable[[Failure], None]
) -> Callable[..., Any]:
    def errback(failure: Failure) -> Any:
        on_failure(failure)
        if original is None:
            return failure  # Scrapy re-raises it and logs the download error, as without us
        return original(failure)

    setattr(errback, WRAPPED_ATTR, original)
    return errback


def _failure_reason(lease: Lease) -> str:
    """Why a request failed, for the retry record and the give-up warning ("" if it did not)."""
    failure = lease.item_failure or lease.failure
    if failure is None:
        return str(lease.entry.request.meta.get(PAGE_FAILED) or "")
    exc = failure.value
    if isinstance(exc, HttpError):
        return f"HTTP {exc.response.status}"
    where = f"{lease.failed_in}: " if lease.item_failure is not None else ""
    return f"{where}{type(exc).__name__}: {exc}"[:300]


class Scheduler(BaseScheduler):
    """Scrapy scheduler on a leased Redis queue (see the module docstring)."""

    def __init__(self, crawler: Crawler, dupefilter: RedisDupeFilter) -> None:
        self.crawler = crawler
        self.context = CrawlContext.of(crawler)
        self.config: SchedulingConfig = self.context.config.scheduling
        self.server = dupefilter.server
        self.df = dupefilter
        self.keys = CrawlKeys.of(dupefilter.keys)
        self.stats = crawler.stats
        self.spider: Spider | None = None
        self.queue: q.LeasedPriorityQueue | None = None
        self.run: RunMarker | None = None
        self.life: RunLife | None = None
        self.politeness: Politeness | None = None
        self._leases: dict[str, Lease] = {}
        #: stops the crawl on the first system fault (newscrawl.faults); from then on nothing
        #: more is scheduled or acknowledged
        self.faults = FaultStop(crawler, self.config.redis_retry_seconds)
        self.errors = ErrorStreak(self.config.max_errors_in_a_row)
        #: pages of the open error streak, acknowledged (a failed attempt each) when an item is
        #: through every pipeline after them, or at the end of a run that had such items; left in
        #: flight, not charged, when the streak stops the crawl
        self._held: list[Lease] = []
        self._last_reap = time.monotonic()
        self._loop: Any = None
        self._pull_soon = False  # a pull for requests is set for the loop's next turn
        self._unhook_engine: Callable[[], None] | None = None
        self.queue_cls: type[q.LeasedPriorityQueue] = q.LeasedPriorityQueue
        #: the run's article order, carried into the near-duplicate check
        self.order: CheckOrder | None = None
        self.site_stats = self.context.site_stats
        self.context.stop_on_fault = self.faults.stop
        self.context.fault_stopped = lambda: self.faults.stopped
        self.context.page_error = self._page_error

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Scheduler:
        compat.check_scrapy_version()
        df_cls = load_object(crawler.settings["DUPEFILTER_CLASS"])
        if not issubclass(df_cls, RedisDupeFilter):
            raise ValueError(
                f"DUPEFILTER_CLASS must be a RedisDupeFilter for {cls.__module__}.Scheduler,"
                f" got {df_cls!r}"
            )
        queue_cls = load_object(crawler.settings.get("SCHEDULER_QUEUE_CLASS")
                                or q.LeasedPriorityQueue)
        if not issubclass(queue_cls, q.LeasedPriorityQueue):
            raise ValueError(
                f"SCHEDULER_QUEUE_CLASS must be a LeasedPriorityQueue for {cls.__module__}"
                f".Scheduler, got {queue_cls!r}"
            )
        dupefilter = build_from_crawler(df_cls, crawler)
        scheduler = cls(crawler, dupefilter)
        scheduler.queue_cls = queue_cls
        return scheduler

    def _inc(self, name: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(STATS + name, count)

    # --- open / close ---------------------------------------------------------------------------

    def open(self, spider: Spider) -> None:
        try:
            self._open(spider)
        except (RedisUnavailable, RunRefused, RedisEvicts) as exc:
            # Not raised: Scrapy would leave the scraper unopened and log tracebacks at close.
            # Closing is asked for once every component is open (CloseSpider from spider_opened).
            self.faults.stop(exc, close=False)
            self.crawler.signals.connect(self._close_at_open, signal=signals.spider_opened)

    def _close_at_open(self) -> None:
        raise CloseSpider(self.faults.close_reason)

    def _open(self, spider: Spider) -> None:
        self.spider = spider
        sites = getattr(spider, "sites", None)
        self.run = RunMarker(
            self.server, self.keys, ttl=self.config.run_ttl, retry=self.df.retry,
            heartbeat_seconds=self.config.heartbeat_seconds,
            sites=sites_fingerprint({name: repr(site) for name, site in sites.items()})
            if isinstance(sites, dict) else "",
        )
        self.life = RunLife(self.crawler, self.run, self.config, self.site_stats, self._inc)
        self.order = CheckOrder(self.server, self.df.keys, self.df.retry, ttl=self.config.run_ttl)
        self.politeness = Politeness(self.crawler, spider, self.keys, self.faults,
                                     self.config.polite_window)
        self.queue = self.queue_cls.from_keys(
            self.server, spider, self.keys, self.run.worker_id,
            lease_seconds=self.config.lease_seconds,
            retry=self.df.retry,
            deadletter_max=self.config.deadletter_max,
            on_dead_letter=lambda raw, error: self._inc("dead_letter"),
            on_meta_dropped=self._meta_dropped,
            **self.politeness.queue_options(),
        )
        self.politeness.open(self.queue)
        # a Redis that evicts at its maxmemory would drop the queue and the records silently
        found = self.df.retry.call(evicting, self.server, what="Redis memory policy")
        if found is not None:
            raise RedisEvicts(*found)
        self.life.start(self.df, self.queue, sites)
        self.keys = self.keys.for_run(self.run.run_id)
        if self.life.inherited_order:
            # an earlier run's article links keep their order at the near-duplicate check
            adopted = self.order.adopt(self.run.run_id, self.life.inherited_order)
            logger.info("%d article links queued by an earlier run keep their order at the"
                        " near-duplicate check, ahead of this run's", adopted)
        self._reap()
        queued = len(self.queue)
        retried = self.life.failures_queued
        if queued > retried:  # else only the failures of earlier runs, logged as such (run.py)
            logger.info("Resuming crawl (%d requests queued%s)", queued,
                        f", {retried} of them failures of earlier runs" if retried else "")
        assert self.crawler.engine is not None
        self._unhook_engine = compat.on_request_done(self.crawler.engine, self._complete)
        self.crawler.signals.connect(self._on_idle, signal=signals.spider_idle)
        self.crawler.signals.connect(self._on_opened, signal=signals.spider_opened)
        self.crawler.signals.connect(self._on_response, signal=signals.response_received)
        self.crawler.signals.connect(self._on_item_error, signal=signals.item_error)
        self.crawler.signals.connect(self._on_spider_error, signal=signals.spider_error)
        self.crawler.signals.connect(self._on_item_done, signal=signals.item_scraped)
        self._loop = create_looping_call(self._tick)
        self._loop.start(POLL_SECONDS, now=False)

    def _on_opened(self) -> None:
        # Everything built to open the crawl (modules, settings, the components) lives as long
        # as the crawl: kept out of the collector's full passes, which run every few seconds and
        # stop the event loop, and with it the pull for requests, for as long as they take.
        gc.collect()
        gc.freeze()

    def close(self, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self.politeness is not None:
            self.politeness.close()
        if self._unhook_engine is not None:
            self._unhook_engine()
        self._settle_held(reason)
        if self.faults.stopped or reason == REASON_SYSTEM_FAULT:
            self._close_after_fault()
            return
        try:
            self._requeue_leftovers()
            if reason == "shutdown" and self.queue is not None:  # SIGTERM/SIGINT (Ctrl-C)
                logger.info("Stopped before the end of the run: %d requests stay queued in Redis;"
                            " the next crawl resumes them", len(self.queue))
            if self.life is not None:
                self.life.end()
            if not self.config.persist:
                self.flush()
        except RedisUnavailable as exc:
            self.faults.stop(exc, close=False)
            self._close_after_fault()

    def _close_after_fault(self) -> None:
        """After a system fault: give the requests in flight back to the queue and end the
        run this worker started (:meth:`RunLife.end_after_fault`). Best effort: with Redis gone,
        or refusing writes, the leases stay in the in-flight set and are requeued when they
        expire."""
        if not self.faults.redis_gone:
            try:
                self._requeue_leftovers()
            except RedisUnavailable as exc:
                logger.debug("Cannot requeue after the fault: %s", exc)
            try:
                if self.life is not None:
                    self.life.end_after_fault()
            except RedisUnavailable as exc:
                logger.debug("Cannot end the run after the fault: %s", exc)
        if self._leases:
            logger.error(
                "%d requests were in flight when the crawl stopped; they stay in flight in"
                " Redis until the next crawl (or another live worker of this run) puts them"
                " back in the queue, at the latest when their lease expires", len(self._leases),
            )

    def _requeue_leftovers(self) -> None:
        assert self.queue is not None
        for lease in list(self._leases.values()):
            if self.queue.requeue(lease.entry.raw):
                self._inc("requeued_at_close")
        self._leases.clear()
        if self.run is not None:
            self.run.leave()  # a worker gone is not waited for

    def flush(self) -> None:
        assert self.queue is not None
        self.queue.clear()
        self.df.clear()

    # --- scheduling -----------------------------------------------------------------------------

    def _meta_dropped(self, request: Request, dropped: list[str]) -> None:
        self._inc("meta_dropped", len(dropped))
        logger.debug("Meta keys %s of %s are not JSON-serializable; not queued with it",
                     dropped, request)

    @guarded(returns(False))
    def has_pending_requests(self) -> bool:
        return self.queue is not None and len(self.queue) > 0

    def __len__(self) -> int:
        if self.faults.stopped or self.queue is None:
            return 0
        return len(self.queue)

    def _not_scheduled(self, request: Request) -> bool:
        # stopping on a fault: the page that linked this one is not acknowledged, so it is
        # fetched again by the next run and links it again
        self._inc("lost_on_redis_failure" if self.faults.redis_gone
                  else "not_scheduled_after_fault")
        logger.debug("Stopping: not scheduling %s", request)
        return False

    @guarded(_not_scheduled)
    def enqueue_request(self, request: Request) -> bool:
        assert self.queue is not None and self.run is not None
        kind = request_kind(request)
        if (kind == RequestKind.START or request.meta.get(ROOT)) and not self.run.claimed:
            self._inc("start_skipped")
            return False
        fp = self.df.fingerprint8(request)
        origins: list[bytes] = []
        parent = self._leases.get(request.meta.get(LEASE, ""))
        if parent is not None and not parent.responded and parent.failure is None:
            # A redirect or retry of a request in flight: it replaces its parent, whose URL is
            # marked done together with it.
            parent.replaced = True
            origins = [o for o in (parent.entry.fp, *parent.entry.origins) if o != fp]
        spec = self.df.spec(request, kind, fp, self.run.run_id)
        try:
            payload = self.queue.encode(request, kind=kind, fp=fp,
                                        pending=spec.mode in (q.MODE_ONCE, q.MODE_FORCE_PENDING),
                                        origins=origins)
        except SerializationError as exc:
            self._inc("unserializable")
            logger.error("Cannot queue %s: %s", request, exc)
            return False
        result = self._push(payload, request.priority, spec, origins)
        if result is None:
            self._inc("lost_on_redis_failure")
            return False
        if result == q.PUSHED:
            self._inc("enqueued")
            site = request.meta.get(SITE)
            number = request.meta.get(ORDER)
            if isinstance(number, int) and isinstance(site, str):
                day = request.meta.get(ORDER_DAY)
                timed_day = request.meta.get(ORDER_TIMED_DAY)
                self._order_pending(site, request.url, number,
                                    day if isinstance(day, int) else None,
                                    timed_day if isinstance(timed_day, int) else None)
            # "new": an article URL first queued in this run, not a retry or a redirect's hop
            if kind == RequestKind.ARTICLE and isinstance(site, str) \
                    and spec.mode == q.MODE_ONCE and not origins:
                self.site_stats.inc(site, "links", "new")
            if self.stats is not None:
                self.stats.inc_value("scheduler/enqueued/redis")
            return True
        self._inc({q.FILTERED_DONE: "filtered/done", q.FILTERED_PENDING: "filtered/pending",
                   q.FILTERED_RUN: "filtered/run",
                   q.FILTERED_FAILED_THIS_RUN: "filtered/failed_this_run"}.get(
                       result, "filtered/other"))
        self.df.log(request, self.spider)
        return False

    @guarded(returns(None))
    def _push(self, payload: bytes, priority: int, spec: q.DedupeSpec, origins: list[bytes]
              ) -> int | None:
        """Push an entry (None: Redis failed, the crawl stops)."""
        assert self.queue is not None
        result = self.queue.push_entry(payload, priority, spec)
        if origins and (result == q.FILTERED_DONE or (
                spec.mode == q.MODE_ONCE
                and result in (q.FILTERED_PENDING, q.FILTERED_FAILED_THIS_RUN))):
            # a redirect to an article done, or queued or failed in this run (then in the
            # crawl's hands by its own record): the URL linked is done with it, else the next
            # run fetches it again
            self.queue.mark_done([self.df.seen_target(o) for o in origins], today())
        return result

    @guarded(returns(None))
    def _order_pending(self, site: str, url: str, number: int, day: int | None,
                       timed_day: int | None) -> None:
        if self.order is not None and self.run is not None:
            self.order.pending(self.run.run_id, site, url, number, day, timed_day=timed_day)

    @guarded(returns(None))
    def _order_finished(self, site: str, url: str) -> None:
        if self.order is not None and self.run is not None:
            self.order.finished(self.run.run_id, site, [url])

    @guarded(returns(None))
    def next_request(self) -> Request | None:
        if self.queue is None:
            return None
        entry = self.queue.pop()
        assert self.politeness is not None and self.life is not None
        if entry is None:
            self.politeness.wake_for_turn(self.queue.next_turn_ms)
            return None
        request = entry.request
        request.meta[LEASE] = entry.id
        lease = Lease(entry)
        self._leases[entry.id] = lease

        def on_failure(failure: Failure, lease: Lease = lease) -> None:
            lease.failure = failure

        request.errback = _tracking_errback(request.errback, on_failure)
        self._inc("dequeued")
        if self.stats is not None:
            self.stats.inc_value("scheduler/dequeued/redis")
        self.politeness.granted()
        self.life.busy()
        return request

    # --- completion -----------------------------------------------------------------------------

    def _on_response(self, response: Any, request: Request, spider: Spider) -> None:
        lease = self._leases.get(request.meta.get(LEASE, ""))
        if lease is not None:
            lease.responded = True
            if self.queue is not None:
                self.queue.downloaded(lease.entry)  # its host slot is free for the next grant
            if not self._pull_soon:  # refill the downloader before this response is parsed
                self._pull_soon = True
                compat.call_soon(self._pull)

    def _pull(self) -> None:
        self._pull_soon = False
        if not self.faults.stopped:
            compat.pull_requests(self.crawler.engine)

    def _on_item_error(self, item: Any, response: Any, spider: Spider, failure: Failure) -> None:
        # A pipeline failed on this page's item (Redis away, disk full, a bug): the page is not
        # done; it counts as a failed attempt and is tried again on a later run.
        self._processing_failed(response, failure, "pipeline")

    def _on_spider_error(self, failure: Failure, response: Any, spider: Spider) -> None:
        # A callback raised (a system fault is stopped by SystemFaultSpiderMiddleware): the page
        # is not done either, or its article would be marked done and never stored.
        self._processing_failed(response, failure, "callback")

    def _processing_failed(self, response: Any, failure: Failure, where: str) -> None:
        request = getattr(response, "request", None)
        if request is None:
            return
        lease = self._leases.get(request.meta.get(LEASE, ""))
        if lease is not None and lease.item_failure is None:
            lease.item_failure, lease.failed_in = failure, where
        fault = system_fault(failure.value)
        site = request.meta.get(SITE)
        if isinstance(site, str):
            self.site_stats.failed(site, request_kind(request),
                                   "storage" if fault is not None and fault.kind == "storage"
                                   else where)
        if fault is None:
            self._page_error(failure.value, request)
        else:
            self.faults.stop(failure.value)

    def _page_error(self, exc: BaseException, request: Request) -> None:
        """One more page whose processing raised: the crawl stops on too many in a row."""
        lease = self._leases.get(request.meta.get(LEASE, ""))
        if lease is not None and self.errors.limit:
            lease.in_streak = True
        streak = self.errors.failed(exc, request.url)
        if streak is not None:
            self.faults.stop(streak)

    def _on_item_done(self) -> None:
        # an item through every pipeline: the pages of the streak before it failed on their own
        self.errors.item_done()
        self._release_held()

    @guarded(returns(None))
    def _release_held(self) -> None:
        held, self._held = self._held, []
        for lease in held:
            self._ack(lease)

    def _settle_held(self, reason: str) -> None:
        """At close, the open streak's pages: failed attempts when items went through in this
        crawl; when none did, the crawl's own fault (exit code 6) and, as after a stop
        (SIGTERM, another reason), put back uncharged with the rest in flight."""
        if not self._held or self.faults.stopped or reason != "finished":
            return
        if self.errors.failed_throughout():
            self.faults.stop(self.errors.fault(run_ended=True), close=False)
        else:
            self._release_held()

    def _outcome(self, lease: Lease) -> tuple[str, str]:
        """(ack outcome, stats name) of a request the engine is done with."""
        run_kind = lease.entry.kind in RUN_KINDS
        failed = q.OUTCOME_SOURCE_FAILED if run_kind else q.OUTCOME_FAILED
        if lease.item_failure is not None:
            return failed, "item_failed"
        failure = lease.failure
        if failure is not None:
            # a redirect loop or away from the site is the site's fault, as an error status:
            # tried again by later runs
            if failure.check(HttpError, RedirectFailure) or not failure.check(IgnoreRequest):
                return failed, "failed"
            return (q.OUTCOME_SOURCE_DONE if run_kind else q.OUTCOME_DONE), "ignored"
        if lease.replaced:
            return q.OUTCOME_RELEASE, "replaced"
        if lease.entry.request.meta.get(PAGE_FAILED):
            return failed, "page_failed"
        if lease.responded:
            return (q.OUTCOME_SOURCE_DONE if run_kind else q.OUTCOME_DONE), "processed"
        return q.OUTCOME_RELEASE, "no_outcome"

    @guarded(returns(None))
    def _complete(self, request: Request) -> None:
        """Acknowledge a request the engine is done with; a lease not acknowledged (stopping on
        a fault) stays in flight in Redis."""
        lease = self._leases.get(request.meta.get(LEASE, ""))
        if lease is None or self.queue is None:
            return
        number, site = request.meta.get(ORDER), request.meta.get(SITE)
        if isinstance(number, int) and isinstance(site, str):
            self._order_finished(site, request.url)
        if lease.in_streak and self.errors.count:
            self._held.append(lease)  # acknowledged once the streak is decided
            return
        self._ack(lease)

    def _ack(self, lease: Lease) -> None:
        assert self.queue is not None
        request = lease.entry.request
        outcome, name = self._outcome(lease)
        seen = []
        if outcome in (q.OUTCOME_DONE, q.OUTCOME_FAILED):
            seen = [self.df.seen_target(fp) for fp in (lease.entry.fp, *lease.entry.origins)]
        reason = _failure_reason(lease)
        result = self.queue.ack(
            lease.entry, outcome, seen, today(), self.config.max_attempts,
            failed_key=self.keys.listseen if self.run else None,
            failed_ttl=self.config.run_ttl, reason=reason,
        )
        del self._leases[lease.entry.id]
        self._inc(name)
        if result == q.ACK_LOST:
            self._inc("lease_lost")
            logger.warning(
                "Lease of %s was lost before it was processed: it was put back in the queue for"
                " another worker, which may fetch it again (this worker's lease, %g s, or its"
                " heartbeat, %g s, ran out: requests that take this long, or a worker stalled;"
                " raise NEWSCRAWL_LEASE_SECONDS or NEWSCRAWL_HEARTBEAT_SECONDS)", request.url,
                self.config.lease_seconds, self.config.heartbeat_seconds,
            )
        elif result == q.ACK_GAVE_UP:
            self._inc("gave_up")
            site = request.meta.get(SITE)
            if isinstance(site, str):
                self.site_stats.inc(site, "gave_up")
            # the URL as linked, which later runs would have fetched (a redirect's hop failed)
            chain = request.meta.get("redirect_urls")
            url = f"{chain[0]} (redirected to {request.url})" \
                if chain and isinstance(chain[0], str) and chain[0] != request.url \
                else request.url
            if lease.entry.kind in RUN_KINDS:
                # a source page is not lost: the runs that reach it fetch it again
                logger.warning("Giving up on %s after failed attempts on %s (last: %s): no"
                               " longer queued again by itself; as a %s page it is still fetched"
                               " by every run that reaches it", url,
                               plural(self.config.max_attempts, "day"), reason,
                               lease.entry.kind)
            else:
                logger.warning("Giving up on %s after failed attempts on %s (last: %s): marked"
                               " done, not fetched again; `newscrawl push --again URL` fetches"
                               " it once more", url,
                               plural(self.config.max_attempts, "day"), reason)
        elif name == "no_outcome":
            logger.warning("No response nor error recorded for %s; released", request.url)

    # --- periodic tick and idle handling -------------------------------------------------------

    @guarded(returns(None))
    def _tick(self) -> None:
        if self.queue is None or self.life is None:
            return
        # Wake the engine so a worker with free slots takes requests others have queued.
        compat.wake_engine(self.crawler.engine)
        if self.life.beat_if_due():
            self._check_index()
        now = time.monotonic()
        if now - self._last_reap < self.config.reap_interval:
            return
        self._last_reap = now
        raws = [lease.entry.raw for lease in self._leases.values()]
        renewed = self.queue.renew(raws)
        if renewed < len(raws):
            logger.warning("%d leases of this worker had already expired", len(raws) - renewed)
        self._reap()

    def _check_index(self) -> None:
        """With each heartbeat: the index the pipeline watches still there, so a Redis that
        lost its data stops the crawl (exit 3) also while no article reaches the check (a
        list walk): it would end as a run that fetched nothing."""
        check = self.context.check_index_mark
        if check is None:
            return
        try:
            self.df.retry.call(check, what="index mark")
        except RedisUnavailable:
            raise  # the tick's own fault handling (guarded)
        except SystemFaultError as exc:  # the index gone
            self.faults.stop(exc)

    def _reap(self) -> None:
        assert self.queue is not None
        reaped = self.queue.reap()
        if reaped:
            self._inc("requeued_expired", reaped)
            logger.info("Requeued %s whose worker died (lease expired)", plural(reaped, "request"))

    def _on_idle(self, spider: Spider) -> None:
        self._idle()  # a signal handler: pydispatch passes the arguments its signature names

    @guarded(returns(None))
    def _idle(self) -> None:
        if self.queue is None or self.life is None:
            return
        if self.site_stats is not None:
            # this worker's figures are in the run's hash before any worker can end the run
            # (it ends after idle_exit_seconds with nothing in flight anywhere)
            self.site_stats.flush()
        held = len(self._held)  # done with, in flight until the streak is decided
        self.life.idle(len(self._leases) > held or len(self.queue) > 0
                       or self.queue.inflight_count() > held)
