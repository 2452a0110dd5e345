"""Per-site figures of a crawl: one naming scheme (``newscrawl/sites/<name>/...``), this worker's
stats, and the run's totals in Redis (``{prefix}:{spider}:runstats:{run}``) sent in batches.
The stats: docs/operations.md; the hash's fields: docs/redis-keys.md.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from newscrawl.formats import SECONDS_PER_DAY, as_text
from newscrawl.meta import RUN_KINDS, RequestKind

if TYPE_CHECKING:
    import redis
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

PREFIX = "newscrawl/sites"
#: Kinds of pages a site's articles are found on (a run that fetched none of them did nothing).
SOURCE_KINDS = RUN_KINDS
PAGE_KINDS = tuple(RequestKind)
_SOURCE_PAGES = frozenset(f"pages/{kind}" for kind in SOURCE_KINDS)
#: Sent to the run's hash at once: a fetched source page (the exit decision depends on it) and a
#: stored article (the run's "stored" stays the store's count when a worker is killed)
_AT_ONCE = _SOURCE_PAGES | {"stored"}
#: Why a page failed (``failed_by/<cause>``), each failure counted under one
CAUSES = ("download", "extraction", "pipeline", "callback", "storage")
#: Seconds the run's hash is kept after its last update (at least; see start_run).
MIN_RUN_STATS_TTL = SECONDS_PER_DAY
#: Seconds a worker adds up its increments before it sends them to the run's hash.
FLUSH_SECONDS = 1.0
#: Seconds of one rate bucket (``rate:<site>:<t>``) and how long a worker keeps its buckets.
RATE_BUCKET_SECONDS = 10
RATE_KEEP_SECONDS = 120


def site_stat(site: str, *path: str) -> str:
    """The stats key of a per-site figure: ``site_stat("a", "pages", "list")`` is
    ``newscrawl/sites/a/pages/list``."""
    return "/".join((PREFIX, site, *path))


class SiteStats:
    """Per-site counters of one crawler (see the module docstring); its one instance is the
    crawl context's (``CrawlContext.of(crawler).site_stats``)."""

    def __init__(self, crawler: Crawler | None) -> None:
        self.crawler = crawler
        self.server: redis.Redis | None = None
        self.run_key: str | None = None
        self.ttl = MIN_RUN_STATS_TTL
        self._redis_failed = False
        self._pending: dict[str, int] = {}  # "<site>/<path>" -> count not yet in the run's hash
        self._flushed_at = time.monotonic()
        self._rate_fields: dict[int, set[str]] = {}  # bucket -> rate fields this worker wrote
        self.worker = ""
        #: stops the crawl on a system fault, whether it was one (the crawl context's)
        self.on_fault: Callable[[BaseException], bool] | None = None

    @property
    def stats(self) -> StatsCollector | None:
        """The crawler's stats (set when the crawl starts, after the spider is built)."""
        try:
            return self.crawler.stats if self.crawler is not None else None
        except RuntimeError:
            return None

    def start_run(self, server: redis.Redis, run_key: str, ttl: int = 0, *,
                  took_over: str = "", worker: str = "") -> None:
        """From now on, also count in the run's hash ``run_key`` (called by the scheduler);
        ``took_over``: the id of the dead run this worker's run took over; ``worker``: this
        worker's id (its pages are counted under ``worker:<id>``)."""
        self.server = server
        self.run_key = run_key
        self.worker = worker
        self.ttl = max(int(ttl), MIN_RUN_STATS_TTL)
        if took_over:
            self._record({"run:took_over": took_over})

    def end_run(self, *, exit_code: int, reason: str, sites: Iterable[str],
                warnings: Mapping[str, list[str]] | None = None) -> None:
        """Record this worker's end in the run's hash (``run:ended``, ``run:exit_code``,
        ``run:reason``, ``run:sites``, ``run:warnings``: site -> the end-of-run warnings about
        it, written only by a worker that judged them, ``warnings`` not None; the last worker to
        end has the last word)."""
        self.flush()
        fields: dict[str, str | int | float] = {
            "run:ended": round(time.time(), 1), "run:exit_code": int(exit_code),
            "run:reason": reason, "run:sites": json.dumps(list(sites))}
        if warnings is not None:
            fields["run:warnings"] = json.dumps(dict(warnings), ensure_ascii=False)
        self._record(fields, increment="run:workers_ended")

    def first_crawls(self, key: str, run_id: str, sites: Iterable[str]) -> set[str]:
        """Of ``sites`` (each fetched a page in run ``run_id``), those this run crawls for the
        first time: each site's first run is recorded in the hash ``key`` (HSETNX), so every
        worker of the run gets the same answer. Empty when Redis fails (a refused command, such as
        a key of another type, stops the crawl as a system fault)."""
        names = list(sites)
        if self.server is None or not names:
            return set()
        try:
            pipe = self.server.pipeline(transaction=False)
            for name in names:
                pipe.hsetnx(key, name, run_id)
            pipe.hmget(key, names)
            first = pipe.execute()[-1]
        except Exception as exc:  # redis errors of any kind: not worth a crash
            if not self._report_fault(exc):  # but Redis refusing a command stops the crawl
                logger.warning("Cannot read the sites' first runs in Redis: %s", exc)
            return set()
        return {name for name, value in zip(names, first, strict=True)
                if value is not None and as_text(value) == run_id}

    def _record(self, fields: Mapping[str, str | int | float], increment: str = "") -> None:
        if self.server is None or self.run_key is None or self._redis_failed:
            return
        try:
            pipe = self.server.pipeline(transaction=False)
            pipe.hset(self.run_key, mapping=dict[Any, Any](fields))
            if increment:
                pipe.hincrby(self.run_key, increment, 1)
            pipe.expire(self.run_key, self.ttl)
            pipe.execute()
        except Exception as exc:  # redis errors of any kind: not worth a crash
            logger.warning("Cannot record the run's %s in Redis: %s", ", ".join(fields), exc)

    def inc(self, site: str, *path: str, count: int = 1) -> None:
        self.inc_many(site, {"/".join(path): count})

    def failed(self, site: str, kind: str, cause: str) -> None:
        """Count one failed page of ``site``: in the total, by page kind and by cause."""
        self.inc_many(site, {"failed": 1, f"failed/{kind}": 1, f"failed_by/{cause}": 1})

    def inc_many(self, site: str, counts: Mapping[str, int]) -> None:
        """Add ``counts`` (path -> n, e.g. ``{"links/seen": 8}``) for ``site``: at once to this
        worker's stats, and to the run's hash with the next :meth:`flush`."""
        counts = {path: n for path, n in counts.items() if n}
        if not counts:
            return
        if self.stats is not None:
            for path, n in counts.items():
                self.stats.inc_value(f"{PREFIX}/{site}/{path}", n)
        if self.server is None or self.run_key is None or self._redis_failed:
            return
        for path, n in counts.items():
            name = f"{site}/{path}"
            self._pending[name] = self._pending.get(name, 0) + n
        # A fetched source page is sent at once: whether a run fetched any is its exit decision
        # (a worker that dies holding it would leave the run's next worker to exit with 4); a
        # stored article too, so the run's figure agrees with the store after a kill -9.
        if any(path in _AT_ONCE for path in counts) \
                or time.monotonic() - self._flushed_at >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Send the increments added up since the last flush to the run's hash: one Redis round
        trip. A Redis error loses the run's copy of the figures (logged once), never the crawl."""
        self._flushed_at = time.monotonic()
        pending, self._pending = self._pending, {}
        if not pending or self.server is None or self.run_key is None or self._redis_failed:
            return
        try:
            # one transaction: a reader sees a worker's count and its sites' figures agree
            pipe = self.server.pipeline(transaction=True)
            for name, n in pending.items():
                pipe.hincrby(self.run_key, name, n)
            self._rate(pipe, pending)
            pipe.expire(self.run_key, self.ttl)
            pipe.execute()
        except Exception as exc:  # redis errors of any kind: the figures are not worth a crash
            self._redis_failed = True
            if self._report_fault(exc):  # but Redis refusing a command stops the crawl
                return
            logger.warning("Cannot count the run's per-site figures in Redis (%s): the"
                           " summary shows this worker's figures", exc)

    def _rate(self, pipe: Any, pending: Mapping[str, int]) -> None:
        """Add the pages of ``pending`` to this 10 s's rate buckets; delete this worker's
        buckets older than :data:`RATE_KEEP_SECONDS`."""
        now = time.time()
        bucket = int(now // RATE_BUCKET_SECONDS)
        pages = 0
        for name, n in pending.items():
            site, _, path = name.partition("/")
            if path.startswith("pages/"):
                pages += n
                field_name = f"rate:{site}:{bucket}"
                pipe.hincrby(self.run_key, field_name, n)
                self._rate_fields.setdefault(bucket, set()).add(field_name)
        if pages and self.worker:
            pipe.hincrby(self.run_key, f"worker:{self.worker}", pages)
        oldest = int((now - RATE_KEEP_SECONDS) // RATE_BUCKET_SECONDS)
        for old in [b for b in self._rate_fields if b < oldest]:
            pipe.hdel(self.run_key, *self._rate_fields.pop(old))

    def pages_fetched(self) -> int:
        """Pages this worker fetched, of any kind and site (what its ``worker:<id>`` counts)."""
        return sum(n for paths in self.local_figures().values()
                   for path, n in paths.items() if path.startswith("pages/"))
    def _report_fault(self, exc: BaseException) -> bool:
        """Stop the crawl if ``exc`` is a system fault (Redis refusing a command); whether it
        was one."""
        return self.on_fault is not None and self.on_fault(exc)

    def local_figures(self) -> dict[str, dict[str, int]]:
        """This worker's figures: site -> path -> count."""
        figures: dict[str, dict[str, int]] = {}
        if self.stats is None:
            return figures
        for key, value in self.stats.get_stats().items():
            if isinstance(key, str) and key.startswith(PREFIX + "/") and isinstance(value, int):
                site, _, path = key[len(PREFIX) + 1:].partition("/")
                figures.setdefault(site, {})[path] = value
        return figures

    def run_figures(self, *, redis_ok: bool = True) -> tuple[dict[str, dict[str, int]], bool]:
        """(site -> path -> count, whether these are the run's): the run's hash, or this
        worker's figures when there is no run or Redis cannot be read (``redis_ok`` False: do
        not even try)."""
        if redis_ok:
            self.flush()
        if not redis_ok or self.server is None or self.run_key is None or self._redis_failed:
            return self.local_figures(), False
        try:
            raw = self.server.hgetall(self.run_key)
        except Exception as exc:
            if not self._report_fault(exc):
                logger.warning("Cannot read the run's per-site figures (%s): this worker's"
                               " instead", exc)
            return self.local_figures(), False
        return split_run_hash(raw)[0], True


def split_run_hash(raw: Mapping[Any, Any]) -> tuple[dict[str, dict[str, int]], dict[str, str]]:
    """A run's hash (as read from Redis) as (site -> path -> count, the other fields: ``run:*``
    and ``rate:*`` by name, as text)."""
    figures: dict[str, dict[str, int]] = {}
    other: dict[str, str] = {}
    for name, value in raw.items():
        site, _, path = as_text(name).partition("/")
        if ":" in site:  # no site name has one
            other[as_text(name)] = as_text(value)
            continue
        try:
            figures.setdefault(site, {})[path] = int(value)
        except ValueError:
            continue
    return figures, other



#: the summary line's articles not stored besides the near-duplicates, named only when there are any
_NOT_STORED_WHEN_ANY = (
    ("late_original", "originals met after their copy (not stored)"),
    ("already_stored", "already stored (not stored again)"),
    ("not_html", "not HTML (skipped)"),
)


@dataclass
class SiteSummary:
    """One site's figures in a run, with the checks the summary warns about."""

    name: str
    figures: Mapping[str, int] = field(default_factory=dict)

    def get(self, path: str) -> int:
        return int(self.figures.get(path, 0))

    @property
    def sources_fetched(self) -> int:
        return sum(self.get(f"pages/{kind}") for kind in SOURCE_KINDS)

    @property
    def sources_failed(self) -> int:
        return sum(self.get(f"failed/{kind}") for kind in SOURCE_KINDS)

    def line(self, label: str | None = None) -> str:
        """``Site NAME: pages fetched ...`` (``label`` instead of ``Site NAME``)."""
        pages = ", ".join(f"{kind} {self.get('pages/' + kind)}" for kind in PAGE_KINDS)
        failed = ", ".join(f"{kind} {self.get('failed/' + kind)}" for kind in PAGE_KINDS
                           if self.get("failed/" + kind))
        causes = ", ".join(f"{cause} {self.get('failed_by/' + cause)}" for cause in CAUSES
                           if self.get("failed_by/" + cause))
        if causes:
            failed = f"{failed}; {causes}"
        return (
            f"{label or 'Site ' + self.name}: pages fetched {pages}; article links seen"
            f" {self.get('links/seen')}, new {self.get('links/new')}"
            + (f", failed before and tried again {self.get('links/retried')}"
               if self.get("links/retried") else "")
            + (f" ({self.get('links/capped')} left for the next run by the sitemap/feed caps)"
               if self.get("links/capped") else "")
            + f"; stored {self.get('stored')},"
            f" near-duplicates dropped (not stored) {self.get('near_duplicate')}"
            + "".join(f", {label} {self.get(path)}" for path, label in _NOT_STORED_WHEN_ANY
                      if self.get(path))
            + f", failed {self.get('failed')}"
            + (f" ({failed})" if failed else "")
            # of the failed ones, those that failed on NEWSCRAWL_MAX_ATTEMPTS days: done now
            + (f"; given up {self.get('gave_up')}" if self.get("gave_up") else "")
        )


@dataclass(frozen=True)
class RunOutcome:
    summaries: list[SiteSummary]
    no_sources: bool  # not one start/list/sitemap/feed page of any site could be fetched

    def total(self) -> SiteSummary:
        """The figures of every site added up (the summary's ``All N sites:`` line)."""
        summed: dict[str, int] = {}
        for summary in self.summaries:
            for path, value in summary.figures.items():
                summed[path] = summed.get(path, 0) + int(value)
        return SiteSummary("all", summed)


def run_outcome(sites: Iterable[str], figures: Mapping[str, Mapping[str, int]]) -> RunOutcome:
    """Per-site summaries of ``sites`` (in that order) from ``figures``, and whether the run
    fetched no source page at all."""
    summaries = [SiteSummary(name, figures.get(name, {})) for name in sites]
    return RunOutcome(summaries, no_sources=not any(s.sources_fetched for s in summaries))
