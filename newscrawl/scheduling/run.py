"""The run's life for one worker: the run marker (one run at a time, joined by extra workers,
taken over at once when none of its workers is alive), the heartbeats that keep it and requeue
the requests of dead workers, and the idle exit that ends it.
See docs/design/scheduling.md ("Runs, cron and several workers").
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import DontCloseSpider

from newscrawl.context import CrawlContext
from newscrawl.faults import RunRefused
from newscrawl.formats import as_text, plural
from newscrawl.meta import RUN_KINDS, SITE, request_kind
from newscrawl.scheduling.liveness import pid_alive
from newscrawl.scheduling.lua import load
from newscrawl.scheduling.queue import (
    FILTERED_DONE,
    MAX_PRIORITY,
    MODE_FORCE_PENDING,
    MODE_ONCE,
    PRIORITY_SPAN,
    PUSHED,
    LeasedPriorityQueue,
    OrderedLink,
)
from newscrawl.scheduling.serializer import SerializationError
from newscrawl.scheduling.stopping import REASON_REDIS_UNAVAILABLE, REASON_SYSTEM_FAULT
from newscrawl.scheduling.waiting import ArticleWait

if TYPE_CHECKING:
    import redis
    from scrapy.crawler import Crawler

    from newscrawl.connection import RetryPolicy
    from newscrawl.context import SchedulingConfig
    from newscrawl.keys import CrawlKeys
    from newscrawl.scheduling.dupefilter import RedisDupeFilter
    from newscrawl.sitestats import SiteStats

logger = logging.getLogger(__name__)

__all__ = ["REASON_REDIS_UNAVAILABLE", "REASON_SYSTEM_FAULT", "RunLife", "RunMarker",
           "current_run", "set_current_run"]


#: claim.lua's results
RUN_JOINED = 0
RUN_STARTED = 1
RUN_TOOK_OVER = 2
RUN_REFUSED = 3

# lib.lua's constants are the queue's
_LIB = {"PRIORITY_SPAN": PRIORITY_SPAN, "MAX_PRIORITY": MAX_PRIORITY}
_CLAIM = load("lib.lua", "workers.lua", "claim.lua", constants={**globals(), **_LIB})
_HEARTBEAT = load("lib.lua", "workers.lua", "heartbeat.lua", constants={**globals(), **_LIB})
_LEAVE = load("leave.lua", constants=globals())
_REFRESH = load("refresh.lua", constants=globals())


def sites_fingerprint(sites: object) -> str:
    """A short fingerprint of the sites a crawl was started with (names and their keys)."""
    text = json.dumps(sites, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def worker_name() -> str:
    """A new worker id: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


#: the meta keys of Scrapy's RedirectMiddleware: a request queued again from the start of its
#: redirect chain leaves them behind
_REDIRECT_META = ("redirect_urls", "redirect_times", "redirect_ttl", "redirect_reasons")


@dataclass
class RunMarker:
    """The run marker and this worker's heartbeat in Redis (see the module docstring)."""

    server: redis.Redis
    keys: CrawlKeys
    ttl: int
    retry: RetryPolicy
    heartbeat_seconds: float = 10.0
    sites: str = ""  # fingerprint of this worker's sites (sites_fingerprint)
    run_id: str = ""
    claimed: bool = False
    took_over: str = ""  # the id of the dead run this worker took over
    rescued: int = 0  # requests of dead workers put back in the queue by the last call
    previous_sites: str = ""  # the sites fingerprint of the run taken over ('' if unknown)
    pages: int = 0  # pages this worker fetched (told with its heartbeat, for newscrawl status)
    idle: bool = False  # this worker has nothing to do (told to the others with its heartbeat)
    busy_others: int = 0  # other live workers not idle at the last heartbeat
    worker_id: str = field(default_factory=lambda: worker_name())

    @property
    def key(self) -> str:
        return self.keys.run_marker

    @property
    def sites_key(self) -> str:
        return self.key + ":sites"

    @property
    def worker_prefix(self) -> str:
        """+ a worker id: its heartbeat key."""
        return self.keys.worker("")

    @property
    def heartbeat_key(self) -> str:
        return self.keys.worker(self.worker_id)

    def _outage_ms(self) -> int:
        """How long, in ms, a worker may still be waiting for Redis after its last beat (its
        retry window and a heartbeat): a gap in the beats shorter than that may be an outage."""
        return int((max(self.retry.retry_seconds, 0) + self.heartbeat_seconds) * 1000)

    def _info(self) -> str:
        return json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                           "run": self.run_id, "beat": round(time.time(), 1),
                           "idle": self.idle, "pages": self.pages})

    def claim(self) -> bool:
        """Start a new run, take over a dead one, or join the current one. True if this worker
        started (or took over) the run; raises :class:`RunRefused` for a live run of other
        sites. Dead workers' leases go back to the queue on the way (:attr:`rescued`)."""
        new_id = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + os.urandom(4).hex()
        self._forget_dead_local_workers()
        script = self.server.register_script(_CLAIM)
        code, run_id, other, rescued, sites = self.retry.call(
            script,
            keys=[self.key, self.sites_key, self.keys.queue, self.keys.inflight, self.keys.pending,
                  self.keys.seq, self.keys.workers, self.heartbeat_key, self.keys.inflight_owners,
                  self.keys.beats_resumed, self.keys.beats_last],
            args=[new_id, self.ttl, self.worker_id, int(self.heartbeat_seconds * 1000),
                  self._info(), self.worker_prefix, self.sites, self._outage_ms()],
            what="claim run",
        )
        self.rescued = int(rescued)
        if int(code) == RUN_REFUSED:
            raise RunRefused(as_text(run_id), self.workers())
        self.claimed = int(code) in (RUN_STARTED, RUN_TOOK_OVER)
        self.took_over = as_text(other) if int(code) == RUN_TOOK_OVER else ""
        self.previous_sites = as_text(sites)
        self.run_id = as_text(run_id)
        return self.claimed

    def _forget_dead_local_workers(self) -> None:
        """End the heartbeat of registered workers of this host whose process is gone (killed:
        its heartbeat would otherwise live up to NEWSCRAWL_HEARTBEAT_SECONDS), so a crawl
        started right after a kill -9 takes the run over at once."""
        host = socket.gethostname()
        raw = self.retry.call(self.server.hgetall, self.keys.workers, what="read workers")
        for worker, info in raw.items():
            try:
                data = json.loads(info)
                pid = int(data["pid"])
            except (ValueError, KeyError, TypeError):
                continue
            if data.get("host") == host and (pid == os.getpid() or not pid_alive(pid)):
                self.retry.call(self.server.delete, self.worker_prefix + as_text(worker),
                                what="forget a dead worker")

    def heartbeat(self) -> int:
        """Refresh this worker's heartbeat (and the run marker while the run is ours); move the
        leases of dead workers back to the queue. Returns the number of other live workers."""
        script = self.server.register_script(_HEARTBEAT)
        live, rescued, busy = self.retry.call(
            script,
            keys=[self.keys.workers, self.heartbeat_key, self.key, self.sites_key,
                  self.keys.inflight, self.keys.queue, self.keys.seq, self.keys.inflight_owners,
                  self.keys.beats_resumed, self.keys.beats_last],
            args=[self.worker_id, int(self.heartbeat_seconds * 1000), self.run_id, self._info(),
                  self.worker_prefix, self.ttl, self._outage_ms()],
            what="heartbeat",
        )
        self.rescued = int(rescued)
        self.busy_others = int(busy)
        return int(live)

    def workers(self) -> list[dict[str, object]]:
        """The registered workers that are alive (their info: host, pid, run, last beat)."""
        raw = self.retry.call(self.server.hgetall, self.keys.workers, what="read workers")
        alive = []
        for worker, info in raw.items():
            if self.retry.call(self.server.exists, self.worker_prefix + as_text(worker),
                               what="read workers"):
                try:
                    alive.append(dict(json.loads(info), id=as_text(worker)))
                except ValueError:
                    alive.append({"id": as_text(worker)})
        return alive

    def leave(self) -> None:
        """This worker stops: its heartbeat and registry entry go."""
        script = self.server.register_script(_LEAVE)
        self.retry.call(script, keys=[self.keys.workers, self.heartbeat_key],
                        args=[self.worker_id], what="leave run")

    def _refresh(self, ttl: str) -> bool:
        script = self.server.register_script(_REFRESH)
        return bool(self.retry.call(script, keys=[self.key], args=[self.run_id, ttl],
                                    what="refresh run"))

    def release(self) -> bool:
        """Delete the marker if it is still ours: the run is finished."""
        if not self.claimed:
            return False
        released = self._refresh("")
        self.claimed = False
        return released


def set_current_run(crawler: Crawler, run_id: str) -> None:
    """Record the id of the run this worker started or joined (set by the scheduler)."""
    CrawlContext.of(crawler).run_id = run_id


def current_run(crawler: Crawler) -> str | None:
    """The id of the run this worker works for (None before the scheduler opened)."""
    return CrawlContext.of(crawler).run_id or None


class RunLife:
    """This worker's part in the run: starting, joining or taking it over, its heartbeats, the
    idle exit and the end of the run (called by the scheduler)."""

    def __init__(self, crawler: Crawler, marker: RunMarker, config: SchedulingConfig,
                 site_stats: SiteStats, inc: Callable[[str, int], None]) -> None:
        self.crawler = crawler
        self.marker = marker
        self.config = config
        self.site_stats = site_stats
        self._inc = inc
        self.queue: LeasedPriorityQueue | None = None
        self.df: RedisDupeFilter | None = None
        self._last_beat = time.monotonic()
        self._idle_since: float | None = None
        #: the run is done (the idle exit): closing ends it
        self.finished = False
        #: requests that failed in earlier runs, queued again by this worker as it started the run
        self.failures_queued = 0
        #: the articles among them, per site (the summary's "failed before, tried again")
        self.articles_retried: Counter[str] = Counter()
        #: article links an earlier run queued with a place in its check order (queue.Inherited)
        self.inherited_order: list[OrderedLink] = []

    def start(self, df: RedisDupeFilter, queue: LeasedPriorityQueue, sites: object) -> bool:
        """Claim the run (Redis must be reachable: retried up to
        NEWSCRAWL_REDIS_RETRY_SECONDS); True if this worker started it or took it over: then
        it also readies the queue for the run. ``sites``: the spider's sites (a dict), if any."""
        self.queue, self.df = queue, df
        run = self.marker
        claimed = run.claim()
        set_current_run(self.crawler, run.run_id)
        if run.rescued:
            self._inc("requeued_dead_worker", run.rescued)
        if claimed and run.took_over:
            self._inc("run_took_over", 1)
            adopted = ArticleWait(df, ttl=self.config.run_ttl,
                                  wait_seconds=self.config.article_wait).adopt(
                run.run_id, str(run.took_over))
            if adopted:
                logger.info("%d article links of run %s were still waiting: they wait in run %s",
                            adopted, run.took_over, run.run_id)
            logger.info(
                "Took over crawl run %s, left unfinished: none of its workers runs any more"
                " (stopped by Ctrl-C or SIGTERM, killed or crashed; %s they held put back in the"
                " queue); started run %s (this worker schedules the start pages and finishes"
                " what it left queued)",
                run.took_over, plural(run.rescued, "request"), run.run_id)
        inherited: dict[str, int] = {}
        if claimed:
            self._inc("run_started", 1)
            if not run.took_over:
                logger.info("Started crawl run %s (this worker schedules the start pages)",
                            run.run_id)
            if isinstance(sites, dict) and run.previous_sites \
                    and run.previous_sites != run.sites:
                self._drop_removed_sites(sites)
            # articles an earlier run queued and left: "new" for this run, which finishes them
            found = queue.inherited()
            inherited = found.articles
            self.inherited_order = found.ordered
            queue.mark_queued_this_run(df.listseen_key(run.run_id), found.sources,
                                       self.config.run_ttl)
            df.prune()
            self._queue_failed(sites)
        else:
            self._inc("run_joined", 1)
            logger.info("Joined crawl run %s as an extra worker (start pages skipped)",
                        run.run_id)
        self.site_stats.start_run(run.server, run.keys.for_run(run.run_id).runstats,
                                  self.config.run_ttl, took_over=run.took_over if claimed else "",
                                  worker=run.worker_id)
        if inherited:
            for site, n in inherited.items():
                self.site_stats.inc_many(site, {"links/new": n, "links/inherited": n})
            logger.info("%d article requests queued by an earlier run count as new in this run",
                        sum(inherited.values()))
        for site, n in self.articles_retried.items():
            self.site_stats.inc(site, "links", "retried", count=n)
        return claimed

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

    def _queue_failed(self, sites: object) -> None:
        """Queue again what failed in earlier runs (the retry hash), wherever it sits: a page
        below the list pages a walk reads again is not linked again by them. Articles keep their
        de-duplication (done or already queued: skipped); a source page is queued once per
        run like any other."""
        assert self.queue is not None and self.df is not None
        queued = skipped = 0
        articles: list[bytes] = []
        for fp, record in self.queue.retry_records():
            raw = record.get("entry")
            try:
                entry = self.queue.decode(raw.encode("utf-8") if isinstance(raw, str) else b"")
            except (SerializationError, ValueError, TypeError, KeyError) as exc:
                logger.warning("Dropping an unreadable failed-request record (%s)", exc)
                self.queue.forget_retry(fp)
                continue
            request, fp8, origins = entry.request, entry.fp, entry.origins
            if request.dont_filter:
                # Scrapy's RetryMiddleware sets it on its copies, so a page whose last try was a
                # retry would skip this run's de-duplication: queued beside this run's own start
                # page (fetched twice), or an article done since fetched again
                request = request.replace(dont_filter=False)
            chain = request.meta.get("redirect_urls")
            if chain and isinstance(chain[0], str) and chain[0] != request.url:
                # a hop of a redirect that failed (a loop, an error at its target): the URL as
                # linked is queued, so that this run's link to it finds it queued (else fetched
                # twice, and counted as new), and the redirect is followed again
                request = request.replace(url=chain[0], meta={
                    k: v for k, v in request.meta.items() if k not in _REDIRECT_META})
                fp8, origins = self.df.fingerprint8(request), []
            site = request.meta.get(SITE)
            if isinstance(sites, dict) and isinstance(site, str) and site not in sites:
                skipped += 1  # its site is not in this sites file: kept for a crawl that has it
                continue
            kind = request_kind(request)
            spec = self.df.spec(request, kind, fp8, self.marker.run_id)
            payload = self.queue.encode(
                request, kind=kind, fp=fp8,
                pending=spec.mode in (MODE_ONCE, MODE_FORCE_PENDING), origins=origins)
            result = self.queue.push_entry(payload, request.priority, spec)
            if result == PUSHED:
                queued += 1
                if kind not in RUN_KINDS:
                    articles.append(fp8)
                    if isinstance(site, str):
                        self.articles_retried[site] += 1
            elif result == FILTERED_DONE:
                self.queue.forget_retry(fp)  # done since (e.g. by a redirect of another link)
        # one attempt per run: this run's links to them are not queued again, also once the
        # attempt left the queue (a redirect's hop took its place) and before it failed
        self.queue.mark_queued_this_run(self.df.listseen_key(self.marker.run_id), articles,
                                        self.config.run_ttl)
        self.failures_queued = queued
        if queued:
            self._inc("retried_failures", queued)
            logger.info("Queued %s that failed in earlier runs (an article or list page is"
                        " tried until it has failed on %s, NEWSCRAWL_MAX_ATTEMPTS; a start page"
                        " on every run)", plural(queued, "request"),
                        plural(self.config.max_attempts, "day"))
        if skipped:
            logger.info("Kept %s of sites not in this sites file for later",
                        plural(skipped, "failed request"))

    def busy(self) -> None:
        """This worker got work."""
        self._idle_since = None
        self.marker.idle = False

    def beat_if_due(self) -> bool:
        """Beat when it is time; whether it did."""
        if time.monotonic() - self._last_beat >= self.config.heartbeat_interval:
            self.heartbeat()
            return True
        return False

    def heartbeat(self) -> None:
        self._last_beat = time.monotonic()
        if self.site_stats is not None:
            self.marker.pages = self.site_stats.pages_fetched()  # what the site figures count
        self.marker.heartbeat()
        if self.marker.rescued:
            self._inc("requeued_dead_worker", self.marker.rescued)
            logger.info("Requeued %s of a worker that stopped beating",
                        plural(self.marker.rescued, "request"))

    def idle(self, busy: bool) -> None:
        """The engine is idle; ``busy``: this worker holds requests, or the run has some queued
        or in flight. Raises DontCloseSpider while the run may still get work."""
        if busy:
            self.busy()
            raise DontCloseSpider
        now = time.monotonic()
        if self._idle_since is None:
            self._idle_since = now
        self.marker.idle = True
        self.heartbeat()
        # Nothing queued or in flight anywhere and every other live worker idle too (its start
        # pages all scheduled): no one can add work, done now. A worker still busy may add some
        # (its start pages): waited for, up to NEWSCRAWL_IDLE_EXIT_SECONDS.
        if self.marker.busy_others and now - self._idle_since < self.config.idle_exit_seconds:
            raise DontCloseSpider
        self.finished = True
        logger.info("Queue empty and nothing in flight for %.1f s: done", now - self._idle_since)

    def end(self) -> None:
        """The worker closes normally: the run ends if it is finished."""
        if self.finished and self.marker.release():
            logger.info("Crawl run %s finished", self.marker.run_id)

    def end_after_fault(self) -> None:
        """The crawl stopped on a fault: the run this worker started ends, so the next crawl
        starts a run of its own (with the start pages) instead of joining a stopped one."""
        if self.marker.release():
            logger.info("Crawl run %s stopped; the next crawl starts a new run",
                        self.marker.run_id)
