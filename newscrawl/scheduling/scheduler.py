"""Reliable Redis scheduler: leased queue, ack on completion, run marker, idle exit.

Life of a request (see docs/design/scheduling.md):

1. ``enqueue_request`` -- de-dup and push atomically (Lua). Articles: skipped when done or
   pending. Start pages (and configured sitemaps/feeds): only by the worker that claimed the run
   marker. Start/list/sitemap/feed pages: once per run.
2. ``next_request`` -- pop + lease atomically (Lua); the entry stays in the in-flight set.
3. Completion -- when Scrapy's engine is done with the request (downloaded, callback or errback
   run, every item it produced through the pipelines, or replaced by a redirect/retry request that
   is already queued) the entry is acknowledged: removed from the in-flight set and, for an
   article, marked done (processed), or counted as a failed attempt (errback), or given up on after
   ``NEWSCRAWL_MAX_ATTEMPTS``.
4. A periodic tick renews this worker's leases, puts expired leases (dead workers) back in the
   queue and refreshes the run marker.

The completion point is the engine's ``_remove_request`` (:mod:`newscrawl._scrapy_compat`): it
runs after ``Scraper.enqueue_scrape`` has finished, i.e. after the callback/errback output and
every item were processed (``Scraper._scrape`` -> ``handle_spider_output_async`` awaits
``start_itemproc_async``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import CloseSpider, DontCloseSpider, IgnoreRequest
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler, load_object

from newscrawl import _scrapy_compat as compat
from newscrawl.context import CrawlContext, SchedulingConfig
from newscrawl.exitcodes import set_exit_code
from newscrawl.faults import RunRefused, SystemFault, system_fault
from newscrawl.formats import today
from newscrawl.meta import (
    LEASE,
    ORDER,
    ORDER_DAY,
    PAGE_FAILED,
    ROOT,
    RUN_KINDS,
    SITE,
    RequestKind,
    request_kind,
)
from newscrawl.redis import RedisRefused, RedisUnavailable, keys
from newscrawl.scheduling import queue as q
from newscrawl.scheduling.dupefilter import RedisDupeFilter
from newscrawl.scheduling.run import (
    REASON_REDIS_UNAVAILABLE,
    REASON_SYSTEM_FAULT,
    RunMarker,
    set_current_run,
    sites_fingerprint,
)
from newscrawl.scheduling.serializer import WRAPPED_ATTR, SerializationError
from newscrawl.scheduling.waiting import ArticleWait, CheckOrder

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import CallLaterResult
    from twisted.python.failure import Failure

    from newscrawl.extensions.throttle import AutoThrottle

logger = logging.getLogger(__name__)

# How often an idle worker looks at the shared queue (Scrapy's own heartbeat is 5 s).
POLL_SECONDS = 0.5
# The least wait of a wake for a host's turn after a pop that found nothing (then doubled).
WAKE_MIN_SECONDS = 0.025
STATS = "newscrawl/scheduler/"


@dataclass
class Lease:
    entry: q.Entry
    responded: bool = False
    failure: Failure | None = None
    item_failure: Failure | None = None
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
    where = "pipeline: " if lease.item_failure is not None else ""
    return f"{where}{type(exc).__name__}: {exc}"[:300]


class Scheduler(BaseScheduler):
    """Scrapy scheduler on a leased Redis queue (see the module docstring)."""

    def __init__(self, crawler: Crawler, dupefilter: RedisDupeFilter) -> None:
        self.crawler = crawler
        self.context = CrawlContext.of(crawler)
        self.config: SchedulingConfig = self.context.config.scheduling
        self.server = dupefilter.server
        self.df = dupefilter
        self.stats = crawler.stats
        self.spider: Spider | None = None
        self.queue: q.LeasedPriorityQueue | None = None
        self.run: RunMarker | None = None
        self._leases: dict[str, Lease] = {}
        # the system fault that stopped the crawl (newscrawl.faults); once set, nothing more is
        # scheduled or acknowledged
        self._fatal: SystemFault | None = None
        self._redis_gone = False  # the fault is Redis being unreachable: leave Redis alone
        self._close_reason = REASON_REDIS_UNAVAILABLE
        self._idle_since: float | None = None
        self._last_reap = time.monotonic()
        self._last_beat = time.monotonic()
        self._finished = False
        self._loop: Any = None
        # the call that asks the queue again when a host held back by its delay is free
        self._wake: CallLaterResult | None = None
        self._wake_at = 0.0
        self._wake_floor = 0.0  # the least wait before the next wake (see _wake_for_turn)
        self._pull_soon = False  # a pull for requests is set for the loop's next turn
        self._unhook_engine: Callable[[], None] | None = None
        self.queue_cls: type[q.LeasedPriorityQueue] = q.LeasedPriorityQueue
        #: AutoThrottle's delay per host shared by the cluster (None: not shared)
        self.throttle: q.Throttle | None = None
        #: the run's article order, carried into the near-duplicate check
        self.order: CheckOrder | None = None
        self.site_stats = self.context.site_stats
        self.context.stop_on_fault = self.stop_on_fault

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

    # --- stats ----------------------------------------------------------------------------------

    def _inc(self, name: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(STATS + name, count)

    # --- open / close ---------------------------------------------------------------------------

    def open(self, spider: Spider) -> None:
        try:
            self._open(spider)
        except (RedisUnavailable, RunRefused) as exc:
            # Not raised: Scrapy would leave the scraper unopened and log tracebacks at close.
            # Closing is asked for once every component is open (CloseSpider from spider_opened).
            self.stop_on_fault(exc, close=False)
            self.crawler.signals.connect(self._close_at_open, signal=signals.spider_opened)

    def _close_at_open(self) -> None:
        raise CloseSpider(self._close_reason)

    def _open(self, spider: Spider) -> None:
        self.spider = spider
        sites = getattr(spider, "sites", None)
        self.run = RunMarker(
            self.server,
            self.df.keys(keys.CRAWL_RUN),
            queue_key=self.df.keys(keys.CRAWL_QUEUE),
            inflight_key=self.df.keys(keys.CRAWL_INFLIGHT),
            pending_key=self.df.pending_key,
            ttl=self.config.run_ttl,
            retry=self.df.retry,
            seq_key=self.df.keys(keys.CRAWL_SEQ),
            registry_key=self.df.keys(keys.CRAWL_WORKERS),
            worker_prefix=self.df.keys(keys.CRAWL_WORKER, worker=""),
            owners_key=self.df.keys(keys.CRAWL_INFLIGHT_OWNERS),
            heartbeat_seconds=self.config.heartbeat_seconds,
            sites=sites_fingerprint({name: repr(site) for name, site in sites.items()})
            if isinstance(sites, dict) else "",
        )
        self.order = CheckOrder(self.server, self.df.keys, self.df.retry, ttl=self.config.run_ttl)
        if self.config.polite_window > 0:
            # newscrawl's AutoThrottle moves one delay per host for the whole cluster, kept by
            # the grant (throttle.lua, pop.lua)
            autothrottle = self._autothrottle()
            if autothrottle is not None:
                self.throttle = autothrottle.share(self.adapt_delay)
        self.queue = self.queue_cls(
            self.server,
            spider,
            self.df.keys(keys.CRAWL_QUEUE),
            inflight_key=self.df.keys(keys.CRAWL_INFLIGHT),
            seq_key=self.df.keys(keys.CRAWL_SEQ),
            deadletter_key=self.df.keys(keys.CRAWL_DEADLETTER),
            pending_key=self.df.pending_key,
            failures_key=self.df.failures_key,
            retry_key=self.df.retry_key,
            lease_seconds=self.config.lease_seconds,
            owners_key=self.run.owners_key,
            worker_id=self.run.worker_id,
            retry=self.df.retry,
            deadletter_max=self.config.deadletter_max,
            on_dead_letter=lambda raw, error: self._inc("dead_letter"),
            on_meta_dropped=self._meta_dropped,
            host_slot=self._host_slot if self.config.polite_window > 0 else None,
            polite_window=self.config.polite_window,
            randomize_delay=self.crawler.settings.getbool("RANDOMIZE_DOWNLOAD_DELAY", True),
            throttle=self.throttle,
        )
        if self.config.polite_window > 0 and (
                self.throttle is not None
                or not self.crawler.settings.getbool("AUTOTHROTTLE_ENABLED")):
            # DOWNLOAD_DELAY, and AutoThrottle's delay when shared, are kept by the grant, for
            # every worker together (pop.lua); a worker's own downloader delaying again would
            # only slow it down. (Scrapy's own AutoThrottle, if a project keeps it, delays
            # per worker on top.)
            compat.no_local_delay(self.crawler.engine)
        # Redis must be reachable to start (retried up to NEWSCRAWL_REDIS_RETRY_SECONDS).
        claimed = self.run.claim()
        inherited: dict[str, int] = {}
        if self.run.rescued:
            self._inc("requeued_dead_worker", self.run.rescued)
        if claimed and self.run.took_over:
            self._inc("run_took_over")
            adopted = ArticleWait(self.df, ttl=self.config.run_ttl,
                                  wait_seconds=self.config.article_wait).adopt(
                self.run.run_id, str(self.run.took_over))
            if adopted:
                logger.info("%d article links of run %s were still waiting: they wait in run %s",
                            adopted, self.run.took_over, self.run.run_id)
            logger.info(
                "Took over crawl run %s: none of its workers is alive (%d requests they held"
                " put back in the queue); started run %s (this worker schedules the start pages)",
                self.run.took_over, self.run.rescued, self.run.run_id)
        if claimed:
            self._inc("run_started")
            if not self.run.took_over:
                logger.info("Started crawl run %s (this worker schedules the start pages)",
                            self.run.run_id)
            if isinstance(sites, dict) and self.run.previous_sites \
                    and self.run.previous_sites != self.run.sites:
                self._drop_removed_sites(sites)
            # articles an earlier run queued and left: "new" for this run, which finishes them
            inherited = self.queue.first_queued_articles()
            self.df.prune()
            set_current_run(self.crawler, self.run.run_id)
            self._queue_failed()
        else:
            self._inc("run_joined")
            logger.info("Joined crawl run %s as an extra worker (start pages skipped)",
                        self.run.run_id)
        set_current_run(self.crawler, self.run.run_id)
        self.site_stats.start_run(self.server, self.df.keys(keys.CRAWL_RUNSTATS,
                                                            run=self.run.run_id),
                                  self.config.run_ttl,
                                  took_over=self.run.took_over if claimed else "",
                                  worker=self.run.worker_id)
        if claimed and inherited:
            for site, n in inherited.items():
                self.site_stats.inc(site, "links", "new", count=n)
            logger.info("%d article requests queued by an earlier run count as new in this run",
                        sum(inherited.values()))
        reaped = self.queue.reap()
        if reaped:
            self._inc("requeued_expired", reaped)
            logger.info("Requeued %d requests whose worker died (lease expired)", reaped)
        queued = len(self.queue)
        if queued:
            logger.info("Resuming crawl (%d requests queued)", queued)
        assert self.crawler.engine is not None
        self._unhook_engine = compat.on_request_done(self.crawler.engine, self._complete)
        self.crawler.signals.connect(self._on_idle, signal=signals.spider_idle)
        self.crawler.signals.connect(self._on_response, signal=signals.response_received)
        self.crawler.signals.connect(self._on_item_error, signal=signals.item_error)
        from scrapy.utils.asyncio import create_looping_call

        self._loop = create_looping_call(self._tick)
        self._loop.start(POLL_SECONDS, now=False)

    def _autothrottle(self) -> AutoThrottle | None:
        """newscrawl's AutoThrottle extension of this crawler, if it is on."""
        from newscrawl.extensions.throttle import AutoThrottle  # it imports the queue

        try:
            return self.crawler.get_extension(AutoThrottle)
        except RuntimeError:  # a crawler without extensions (built by hand)
            return None

    @staticmethod
    def _host(request: Request) -> str:
        """The host slot name of ``request``, as Scrapy's downloader names its slots (meta
        ``download_slot``, else the host name); "" for none."""
        return str(request.meta.get("download_slot") or urlparse_cached(request).hostname or "")

    def adapt_delay(self, request: Request, latency: float, ok: bool
                    ) -> tuple[str, float, float] | None:
        """Move the shared AutoThrottle delay of ``request``'s host after its response took
        ``latency`` seconds (``ok``: status 200); returns (host, old, new delay in seconds), or
        None (not shared, no host, stopping on a fault). One Redis call (throttle.lua); Redis
        away stops the crawl as any scheduler call does."""
        if self._fatal is not None or self.queue is None or self.throttle is None:
            return None
        slot = self._host_slot(request)
        if slot is None:
            return None
        try:
            old, new = self.queue.adapt_delay(slot, latency, ok)
        except RedisUnavailable as exc:
            self.stop_on_fault(exc)
            return None
        return self._host(request), old, new

    def _host_slot(self, request: Request) -> q.HostSlot | None:
        """The host slot of ``request`` for the cluster-wide grant (pop.lua): keyed like
        Scrapy's downloader slots (meta ``download_slot``, else the host name), with the
        site's ``concurrency``/``delay`` or CONCURRENT_REQUESTS_PER_DOMAIN/DOWNLOAD_DELAY."""
        host = self._host(request)
        if not host:
            return None
        settings = self.crawler.settings
        concurrency = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        delay = settings.getfloat("DOWNLOAD_DELAY")
        sites = getattr(self.spider, "sites", None)
        site = sites.get(request.meta.get(SITE)) if isinstance(sites, dict) else None
        if site is not None:
            concurrency = site.concurrency if site.concurrency is not None else concurrency
            delay = site.delay if site.delay is not None else delay
        return q.HostSlot(self.df.keys(keys.CRAWL_SLOTS, host=host), concurrency,
                          int(delay * 1000))

    def _drop_removed_sites(self, sites: dict[str, Any]) -> None:
        """The queue of a run crawled with another sites file: requests for sites no longer in
        this file are dropped (counted, one INFO line naming the sites)."""
        assert self.queue is not None
        dropped = self.queue.drop_sites(lambda site: site in sites)
        if dropped:
            self._inc("dropped_removed_site", sum(dropped.values()))
            logger.info("Dropped %d queued requests of sites not in this sites file: %s",
                        sum(dropped.values()),
                        ", ".join(f"{site} ({n})" for site, n in sorted(dropped.items())))

    def _queue_failed(self) -> None:
        """Queue again what failed in earlier runs (the retry hash), wherever it sits: a page
        below the list pages a walk reads again is not linked again by them. Articles keep their
        de-duplication (done or already queued: skipped); a source page is queued once per
        run like any other."""
        assert self.queue is not None and self.run is not None and self.spider is not None
        sites = getattr(self.spider, "sites", None)
        queued = skipped = 0
        for fp, record in self.queue.retry_records():
            raw = record.get("entry")
            try:
                entry = self.queue.decode(raw.encode("utf-8") if isinstance(raw, str) else b"")
            except (SerializationError, ValueError, TypeError, KeyError) as exc:
                logger.warning("Dropping an unreadable failed-request record (%s)", exc)
                self.queue.forget_retry(fp)
                continue
            request = entry.request
            site = request.meta.get(SITE)
            if sites is not None and isinstance(site, str) and site not in sites:
                skipped += 1  # its site is not in this sites file: kept for a crawl that has it
                continue
            kind = request_kind(request)
            spec = self.df.spec(request, kind, entry.fp, self.run.run_id)
            payload = self.queue.encode(
                request, kind=kind, fp=entry.fp,
                pending=spec.mode in (q.MODE_ONCE, q.MODE_FORCE_PENDING), origins=entry.origins)
            result = self.queue.push_entry(payload, request.priority, spec)
            if result == q.PUSHED:
                queued += 1
            elif result == q.FILTERED_DONE:
                self.queue.forget_retry(fp)  # done since (e.g. by a redirect of another link)
        if queued:
            self._inc("retried_failures", queued)
            logger.info("Queued %d requests that failed in earlier runs (tried up to"
                        " NEWSCRAWL_MAX_ATTEMPTS=%d times)", queued, self.config.max_attempts)
        if skipped:
            logger.info("Kept %d failed requests of sites not in this sites file for later",
                        skipped)

    def close(self, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        if self._unhook_engine is not None:
            self._unhook_engine()
        if self._fatal is not None or reason == REASON_SYSTEM_FAULT:
            self._close_after_fault()
            return
        try:
            self._requeue_leftovers()
            if self.run is not None and self._finished:
                if self.run.release():
                    logger.info("Crawl run %s finished", self.run.run_id)
            if not self.config.persist:
                self.flush()
        except RedisUnavailable as exc:
            self.stop_on_fault(exc, close=False)
            self._close_after_fault()

    def _close_after_fault(self) -> None:
        """After a system fault: give the requests in flight back to the queue and end the
        run this worker started, so the next crawl starts a run of its own (with the start
        pages) instead of joining a stopped one. Best effort: with Redis gone, or refusing
        writes, the leases stay in the in-flight set and are requeued when they expire."""
        if not self._redis_gone:
            try:
                self._requeue_leftovers()
            except RedisUnavailable as exc:
                logger.debug("Cannot requeue after the fault: %s", exc)
            try:
                if self.run is not None and self.run.release():
                    logger.info("Crawl run %s stopped; the next crawl starts a new run",
                                self.run.run_id)
            except RedisUnavailable as exc:
                logger.debug("Cannot end the run after the fault: %s", exc)
        if self._leases:
            logger.error(
                "%d requests were in flight when the crawl stopped; they stay in the in-flight"
                " set and are requeued when their lease expires", len(self._leases),
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

    # --- Redis failure --------------------------------------------------------------------------

    def stop_on_fault(self, exc: BaseException, *, close: bool = True) -> bool:
        """Stop the crawl if ``exc`` is a system fault (:mod:`newscrawl.faults`): one CRITICAL
        line naming the cause and what to do, the fault's exit code, nothing acknowledged from
        now on. Returns whether it was one (the first fault wins; later ones return True)."""
        fault = system_fault(exc)
        if fault is None:
            return False
        if self._fatal is not None:
            return True
        self._fatal = fault
        unreachable = isinstance(exc, RedisUnavailable) and not isinstance(exc, RedisRefused)
        set_exit_code(self.crawler, fault.exit_code,
                      str(exc) if unreachable else fault.line())
        if isinstance(exc, RedisUnavailable) and not isinstance(exc, RedisRefused):
            self._redis_gone = True
            self._inc("redis_unavailable")
            logger.critical(
                "Redis is unreachable (%s, retried for %.0f s, NEWSCRAWL_REDIS_RETRY_SECONDS=%s);"
                " stopping the crawl (exit code %d). Queued and in-flight requests stay in Redis"
                " and are resumed by the next run.",
                exc, exc.waited, self.config.redis_retry_seconds, fault.exit_code,
            )
        else:
            self._close_reason = REASON_SYSTEM_FAULT
            self._inc(f"system_fault/{fault.kind}")
            logger.critical("Stopping the crawl (exit code %d): %s", fault.exit_code,
                            fault.line())
        engine = self.crawler.engine
        if close and engine is not None and engine.spider is not None:
            deferred_from_coro(engine.close_spider_async(reason=self._close_reason))
        return True

    # --- scheduling -----------------------------------------------------------------------------

    def _meta_dropped(self, request: Request, dropped: list[str]) -> None:
        self._inc("meta_dropped", len(dropped))
        logger.debug("Meta keys %s of %s are not JSON-serializable; not queued with it",
                     dropped, request)

    def has_pending_requests(self) -> bool:
        if self._fatal is not None or self.queue is None:
            return False
        try:
            return len(self.queue) > 0
        except RedisUnavailable as exc:
            self.stop_on_fault(exc)
            return False

    def __len__(self) -> int:
        if self._fatal is not None or self.queue is None:
            return 0
        return len(self.queue)

    def enqueue_request(self, request: Request) -> bool:
        assert self.queue is not None and self.run is not None
        if self._fatal is not None:
            # stopping on a fault: the page that linked this one is not acknowledged, so it is
            # fetched again by the next run and links it again
            self._inc("lost_on_redis_failure" if self._redis_gone else "not_scheduled_after_fault")
            logger.debug("Stopping: not scheduling %s", request)
            return False
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
        try:
            result = self.queue.push_entry(payload, request.priority, spec)
            if result == q.FILTERED_DONE and origins:
                self.queue.mark_done([self.df.seen_target(o) for o in origins], today())
        except RedisUnavailable as exc:
            self.stop_on_fault(exc)
            self._inc("lost_on_redis_failure")
            return False
        if result == q.PUSHED:
            self._inc("enqueued")
            site = request.meta.get(SITE)
            number = request.meta.get(ORDER)
            if isinstance(number, int) and isinstance(site, str) and self.order is not None:
                try:
                    day = request.meta.get(ORDER_DAY)
                    self.order.pending(self.run.run_id, site, request.url, number,
                                       day if isinstance(day, int) else None)
                except RedisUnavailable as exc:
                    self.stop_on_fault(exc)
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

    def next_request(self) -> Request | None:
        if self._fatal is not None or self.queue is None:
            return None
        try:
            entry = self.queue.pop()
        except RedisUnavailable as exc:
            self.stop_on_fault(exc)
            return None
        if entry is None:
            self._wake_for_turn(self.queue.next_turn_ms)
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
        self._wake_floor = 0.0
        self._idle_since = None
        if self.run is not None:
            self.run.idle = False
        return request

    def _wake_for_turn(self, ms: int | None) -> None:
        """Ask the queue again in ``ms`` (a host held back by its delay is free then: pop.lua)
        rather than at the next tick, so a host is asked as soon as its delay allows.

        Every pop that finds nothing doubles the least wait (from WAKE_MIN_SECONDS up to the
        tick): workers that outnumber what the hosts allow all wake for the same free turn, and
        only one gets it; the others back off to the tick instead of each scanning the queue's
        window once per turn of every host. A granted request resets it."""
        if ms is None:
            return
        wait = max(ms / 1000, self._wake_floor)
        self._wake_floor = min(POLL_SECONDS, max(WAKE_MIN_SECONDS, self._wake_floor * 2))
        if wait >= POLL_SECONDS:
            return  # the tick asks then
        at = time.monotonic() + wait
        if self._wake is not None:
            if self._wake_at <= at:
                return  # an earlier wake is set
            self._wake.cancel()
        from scrapy.utils.asyncio import call_later

        self._wake_at = at
        self._wake = call_later(wait, self._on_wake)

    def _on_wake(self) -> None:
        self._wake = None
        if self._fatal is None:
            compat.wake_engine(self.crawler.engine)

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
        if self._fatal is None:
            compat.pull_requests(self.crawler.engine)

    def _on_item_error(self, item: Any, response: Any, spider: Spider, failure: Failure) -> None:
        # A pipeline failed on this page's item (Redis away, disk full, a bug): the page is not
        # done; it counts as a failed attempt and is tried again on a later run.
        request = getattr(response, "request", None)
        if request is None:
            return
        lease = self._leases.get(request.meta.get(LEASE, ""))
        if lease is not None:
            lease.item_failure = failure
        fault = system_fault(failure.value)
        site = request.meta.get(SITE)
        if isinstance(site, str):
            self.site_stats.failed(site, request_kind(request),
                                   "storage" if fault is not None and fault.kind == "storage"
                                   else "pipeline")
        self.stop_on_fault(failure.value)

    def _outcome(self, lease: Lease) -> tuple[str, str]:
        """(ack outcome, stats name) of a request the engine is done with."""
        run_kind = lease.entry.kind in RUN_KINDS
        failed = q.OUTCOME_SOURCE_FAILED if run_kind else q.OUTCOME_FAILED
        if lease.item_failure is not None:
            return failed, "item_failed"
        failure = lease.failure
        if failure is not None:
            if failure.check(HttpError) or not failure.check(IgnoreRequest):
                return failed, "failed"
            return (q.OUTCOME_SOURCE_DONE if run_kind else q.OUTCOME_DONE), "ignored"
        if lease.replaced:
            return q.OUTCOME_RELEASE, "replaced"
        if lease.entry.request.meta.get(PAGE_FAILED):
            return failed, "page_failed"
        if lease.responded:
            return (q.OUTCOME_SOURCE_DONE if run_kind else q.OUTCOME_DONE), "processed"
        return q.OUTCOME_RELEASE, "no_outcome"

    def _complete(self, request: Request) -> None:
        lease = self._leases.pop(request.meta.get(LEASE, ""), None)
        if lease is None or self.queue is None:
            return
        if self._fatal is not None:
            self._leases[lease.entry.id] = lease  # stays in flight in Redis
            return
        outcome, name = self._outcome(lease)
        seen = []
        if outcome in (q.OUTCOME_DONE, q.OUTCOME_FAILED):
            seen = [self.df.seen_target(fp) for fp in (lease.entry.fp, *lease.entry.origins)]
        reason = _failure_reason(lease)
        try:
            result = self.queue.ack(
                lease.entry, outcome, seen, today(), self.config.max_attempts,
                failed_key=self.df.listseen_key(self.run.run_id) if self.run else None,
                failed_ttl=self.config.run_ttl, reason=reason,
            )
        except RedisUnavailable as exc:
            self._leases[lease.entry.id] = lease
            self.stop_on_fault(exc)
            return
        self._inc(name)
        number, site = request.meta.get(ORDER), request.meta.get(SITE)
        if isinstance(number, int) and isinstance(site, str) and self.order is not None \
                and self.run is not None:
            try:
                self.order.finished(self.run.run_id, site, [request.url])
            except RedisUnavailable as exc:
                self.stop_on_fault(exc)
        if result == q.ACK_LOST:
            self._inc("lease_lost")
            logger.warning(
                "Lease of %s expired before it was processed (requeued for another worker);"
                " raise NEWSCRAWL_LEASE_SECONDS if requests take this long", request.url,
            )
        elif result == q.ACK_GAVE_UP:
            self._inc("gave_up")
            logger.warning("Giving up on %s after %d failed attempts (last: %s)", request.url,
                           self.config.max_attempts, reason)
        elif name == "no_outcome":
            logger.warning("No response nor error recorded for %s; released", request.url)

    # --- periodic tick and idle handling -------------------------------------------------------

    def _tick(self) -> None:
        if self._fatal is not None or self.queue is None or self.run is None:
            return
        # Wake the engine so a worker with free slots takes requests others have queued.
        compat.wake_engine(self.crawler.engine)
        now = time.monotonic()
        if now - self._last_beat >= self.config.heartbeat_interval:
            try:
                self._heartbeat()
            except RedisUnavailable as exc:
                self.stop_on_fault(exc)
                return
        if now - self._last_reap < self.config.reap_interval:
            return
        self._last_reap = now
        try:
            raws = [lease.entry.raw for lease in self._leases.values()]
            renewed = self.queue.renew(raws)
            if renewed < len(raws):
                logger.warning("%d leases of this worker had already expired",
                               len(raws) - renewed)
            reaped = self.queue.reap()
            if reaped:
                self._inc("requeued_expired", reaped)
                logger.info("Requeued %d requests whose worker died (lease expired)", reaped)
        except RedisUnavailable as exc:
            self.stop_on_fault(exc)
            return

    def _heartbeat(self) -> None:
        assert self.run is not None
        self._last_beat = time.monotonic()
        if self.site_stats is not None:
            self.run.pages = self.site_stats.pages_fetched()  # what the site figures count
        self.run.heartbeat()
        if self.run.rescued:
            self._inc("requeued_dead_worker", self.run.rescued)
            logger.info("Requeued %d requests of a worker that stopped beating",
                        self.run.rescued)

    def _on_idle(self, spider: Spider) -> None:
        if self._fatal is not None or self.queue is None:
            return
        if self.site_stats is not None:
            # this worker's figures are in the run's hash before any worker can end the run
            # (it ends after idle_exit_seconds with nothing in flight anywhere)
            self.site_stats.flush()
        try:
            busy = bool(self._leases) or len(self.queue) > 0 or self.queue.inflight_count() > 0
        except RedisUnavailable as exc:
            self.stop_on_fault(exc)
            return
        now = time.monotonic()
        assert self.run is not None
        if busy:
            self._idle_since = None
            self.run.idle = False
            raise DontCloseSpider
        if self._idle_since is None:
            self._idle_since = now
        self.run.idle = True
        try:
            self._heartbeat()
        except RedisUnavailable as exc:
            self.stop_on_fault(exc)
            return
        # Nothing queued or in flight anywhere and every other live worker idle too (its start
        # pages all scheduled): no one can add work, done now. A worker still busy may add some
        # (its start pages): waited for, up to NEWSCRAWL_IDLE_EXIT_SECONDS.
        if self.run.busy_others and now - self._idle_since < self.config.idle_exit_seconds:
            raise DontCloseSpider
        self._finished = True
        logger.info("Queue empty and nothing in flight for %.1f s: done", now - self._idle_since)
