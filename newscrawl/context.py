"""``CrawlContext.of(crawler)``: what the newscrawl components of one crawler share, built once
and cached on the crawler: the configuration (settings read once into small dataclasses,
defaults from :mod:`newscrawl.defaults`), the Redis client, the :class:`RetryPolicy` every Redis
call of the crawl goes through (one outage per crawl), key names and per-site figures.

Shutdown order: pipelines and extensions close on ``spider_closed`` (the index prune is waited
for there); the embedded Redis is stopped (data saved, unless another process still uses it) on
``engine_stopped``, after them.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from newscrawl import defaults
from newscrawl.errors import ExitCode
from newscrawl.index.simhash_index import MAX_SUPPORTED_DISTANCE
from newscrawl.redis import RedisConfig, RetryPolicy, close_embedded
from newscrawl.redis.keys import Keys
from newscrawl.sitestats import SiteStats

if TYPE_CHECKING:
    import redis
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

_ATTR = "_newscrawl_context"


@dataclass(frozen=True)
class SchedulingConfig:
    persist: bool
    lease_seconds: float
    max_attempts: int
    redis_retry_seconds: float
    url_retention_days: int
    run_ttl: int
    heartbeat_seconds: float
    idle_exit_seconds: float
    deadletter_max: int
    polite_window: int = defaults.POLITE_WINDOW
    article_wait: float = defaults.ARTICLE_WAIT_SECONDS

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SchedulingConfig:
        def num(name: str, default: float, minimum: float = 0) -> float:
            value = settings.getfloat(name, default)
            if value < 0:
                raise ValueError(f"{name} must not be negative (got {value})")
            if value < minimum:
                raise ValueError(f"{name} must be at least {minimum}")
            return value

        return cls(
            persist=settings.getbool("SCHEDULER_PERSIST", defaults.SCHEDULER_PERSIST),
            lease_seconds=num("NEWSCRAWL_LEASE_SECONDS", defaults.LEASE_SECONDS, 1),
            max_attempts=int(num("NEWSCRAWL_MAX_ATTEMPTS", defaults.MAX_ATTEMPTS, 1)),
            redis_retry_seconds=num("NEWSCRAWL_REDIS_RETRY_SECONDS", defaults.REDIS_RETRY_SECONDS),
            url_retention_days=int(num("NEWSCRAWL_URL_RETENTION_DAYS",
                                       defaults.URL_RETENTION_DAYS)),
            run_ttl=int(num("NEWSCRAWL_RUN_TTL", defaults.RUN_TTL, 1)),
            heartbeat_seconds=num("NEWSCRAWL_HEARTBEAT_SECONDS", defaults.HEARTBEAT_SECONDS, 1),
            idle_exit_seconds=num("NEWSCRAWL_IDLE_EXIT_SECONDS", defaults.IDLE_EXIT_SECONDS),
            deadletter_max=int(num("NEWSCRAWL_DEADLETTER_MAX", defaults.DEADLETTER_MAX)),
            polite_window=int(num("NEWSCRAWL_POLITE_WINDOW", defaults.POLITE_WINDOW)),
            article_wait=num("NEWSCRAWL_ARTICLE_WAIT", defaults.ARTICLE_WAIT_SECONDS),
        )

    @property
    def heartbeat_interval(self) -> float:
        """Seconds between heartbeats: a quarter of NEWSCRAWL_HEARTBEAT_SECONDS, at least 0.5."""
        return max(0.5, self.heartbeat_seconds / 4)

    @property
    def reap_interval(self) -> float:
        """Seconds between lease renewals / reaping: a quarter of the lease, 0.5 s .. 30 s."""
        return min(30.0, max(0.5, self.lease_seconds / 4))


@dataclass(frozen=True)
class DedupConfig:
    enabled: bool
    max_distance: int
    idf_file: str | None
    retention_days: int | None
    workers: int
    url_field: str
    text_field: str
    order_wait: float = defaults.CHECK_ORDER_WAIT_SECONDS

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DedupConfig:
        retention = settings.get("NEWSCRAWL_FINGERPRINT_RETENTION_DAYS")  # the add-on sets it
        max_distance = settings.getint("NEWSCRAWL_MAX_DISTANCE", defaults.MAX_DISTANCE)
        if not 0 <= max_distance <= MAX_SUPPORTED_DISTANCE:
            raise ValueError(f"setting NEWSCRAWL_MAX_DISTANCE = {max_distance} is out of range:"
                             f" the index finds distances 0 to {MAX_SUPPORTED_DISTANCE}")
        workers = settings.getint("NEWSCRAWL_FINGERPRINT_WORKERS", defaults.FINGERPRINT_WORKERS)
        if workers < 0:
            raise ValueError(f"setting NEWSCRAWL_FINGERPRINT_WORKERS = {workers} must not be"
                             " negative (0: fingerprints in the crawl process)")
        return cls(
            enabled=settings.getbool("NEWSCRAWL_DEDUP_ENABLED", defaults.DEDUP_ENABLED),
            max_distance=max_distance,
            idf_file=settings.get("NEWSCRAWL_IDF_FILE") or None,
            # 0 / None / "" / "None" (from -s): no retention (fingerprints compared forever)
            retention_days=(
                None if str(retention).strip().lower() in ("", "none") else int(retention) or None
            ),
            workers=workers,
            url_field=settings.get("NEWSCRAWL_URL_FIELD") or defaults.URL_FIELD,
            text_field=settings.get("NEWSCRAWL_TEXT_FIELD") or defaults.TEXT_FIELD,
            order_wait=max(0.0, settings.getfloat("NEWSCRAWL_CHECK_ORDER_WAIT",
                                                  defaults.CHECK_ORDER_WAIT_SECONDS)),
        )


@dataclass(frozen=True)
class StoreConfig:
    enabled: bool
    directory: Path
    fsync: bool
    url_field: str

    @classmethod
    def from_settings(cls, settings: BaseSettings, data_dir: Path) -> StoreConfig:
        return cls(
            enabled=settings.getbool("NEWSCRAWL_STORE", defaults.STORE_ENABLED),
            directory=Path(settings.get("NEWSCRAWL_STORE_DIR") or data_dir / "articles")
            .expanduser(),
            fsync=settings.getbool("NEWSCRAWL_STORE_FSYNC", defaults.STORE_FSYNC),
            url_field=settings.get("NEWSCRAWL_URL_FIELD") or defaults.URL_FIELD,
        )


@dataclass(frozen=True)
class CrawlConfig:
    redis: RedisConfig
    scheduling: SchedulingConfig
    dedup: DedupConfig
    store: StoreConfig

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> CrawlConfig:
        redis = RedisConfig.from_settings(settings)
        return cls(
            redis=redis,
            scheduling=SchedulingConfig.from_settings(settings),
            dedup=DedupConfig.from_settings(settings),
            store=StoreConfig.from_settings(settings, redis.data_dir),
        )


#: newscrawl's settings that the add-on does not set, with their defaults (read by the spider).
_OTHER_SETTINGS = {
    "NEWSCRAWL_DEADLETTER_MAX": defaults.DEADLETTER_MAX,
    "NEWSCRAWL_SITEMAP_MAX_BYTES": defaults.SITEMAP_MAX_BYTES,
    "NEWSCRAWL_SITEMAP_MAX_DEPTH": defaults.SITEMAP_MAX_DEPTH,
    "NEWSCRAWL_SITEMAP_MAX_CHILDREN": defaults.SITEMAP_MAX_CHILDREN,
    "NEWSCRAWL_SITEMAP_MAX_ENTRIES": defaults.SITEMAP_MAX_ENTRIES,
    "NEWSCRAWL_SITEMAP_MAX_RUN_ENTRIES": defaults.SITEMAP_MAX_RUN_ENTRIES,
}


#: Every ``NEWSCRAWL_*`` setting a crawl reads (the add-on's, the spider's, where data goes).
KNOWN_SETTINGS = frozenset({
    *(n for n in defaults.SETTINGS if n.startswith("NEWSCRAWL_")), *_OTHER_SETTINGS,
    "NEWSCRAWL_SITES", "NEWSCRAWL_DATA_DIR", "NEWSCRAWL_REDIS_PREFIX", "NEWSCRAWL_STORE",
    "NEWSCRAWL_STORE_DIR", "NEWSCRAWL_STORE_FSYNC", "NEWSCRAWL_IDF_FILE", "NEWSCRAWL_URL_FIELD",
    "NEWSCRAWL_TEXT_FIELD", "NEWSCRAWL_EMBEDDED_APPENDFSYNC", "NEWSCRAWL_CACHE_DIR",
})

#: The integer settings (read with ``getint``); the other numeric ones may be fractions.
_INTEGERS = frozenset({"NEWSCRAWL_MAX_DISTANCE", "NEWSCRAWL_FINGERPRINT_WORKERS",
                       "NEWSCRAWL_FINGERPRINT_RETENTION_DAYS", "NEWSCRAWL_MAX_ATTEMPTS",
                       "NEWSCRAWL_RUN_TTL", "NEWSCRAWL_URL_RETENTION_DAYS",
                       "NEWSCRAWL_DEADLETTER_MAX", *(
                           n for n in _OTHER_SETTINGS if n.startswith("NEWSCRAWL_SITEMAP_"))})


#: how close a name must be to one of Scrapy's settings to be taken for a misspelling of it
#: (CONCURENT_REQUESTS, LOG_LEVL, ROBOTSTXT_OBBEY; not DUPEFILTER_KEY or SCHEDULER_QUEUE_KEY)
SCRAPY_TYPO_CUTOFF = 0.85


def misspelt_scrapy_settings(settings: BaseSettings) -> list[tuple[str, str]]:
    """``(name, Scrapy's setting)`` for each setting name that is not one of Scrapy's own
    (``scrapy.settings.default_settings``) nor newscrawl's but close to one of Scrapy's: most
    likely a misspelling, which would leave Scrapy's setting at its value without a word."""
    from scrapy.settings import default_settings

    scrapy_names = sorted(n for n in dir(default_settings) if n.isupper())
    known = set(scrapy_names)
    found = []
    for name in settings:
        if not isinstance(name, str) or name in known or name.startswith("NEWSCRAWL_"):
            continue
        close = difflib.get_close_matches(name, scrapy_names, n=1, cutoff=SCRAPY_TYPO_CUTOFF)
        if close:
            found.append((name, close[0]))
    return found


def check_settings(settings: BaseSettings) -> None:
    """ValueError naming the first ``NEWSCRAWL_*`` setting (or ``SCHEDULER_PERSIST``) whose value
    is not of its kind (a number, an integer, a boolean) or out of its range, so that a crawl
    given ``-s NEWSCRAWL_REDIS_RETRY_SECONDS=abc`` stops at start with one line naming it; and
    a ``NEWSCRAWL_*`` name that is none of newscrawl's settings (a typo would silently leave
    the setting at its default), with the closest known name. A name close to one of Scrapy's
    own settings (``CONCURENT_REQUESTS``) is a WARNING, not an error: other extensions' settings
    can lie as close (``USER_AGENTS`` of random user-agent middlewares)."""
    for name in settings:
        if isinstance(name, str) and name.startswith("NEWSCRAWL_") and name not in KNOWN_SETTINGS:
            close = difflib.get_close_matches(name, sorted(KNOWN_SETTINGS), n=1)
            raise ValueError(f"unknown setting {name}" + (
                f" (did you mean {close[0]}?)" if close else "") + ": docs/settings.md lists"
                " newscrawl's settings")
    for name, scrapy_name in misspelt_scrapy_settings(settings):
        logger.warning(
            "setting %s is none of Scrapy's (did you mean %s?): unless an extension reads it, "
            "it has no effect", name, scrapy_name)
    for name, default in {**defaults.SETTINGS, **_OTHER_SETTINGS}.items():
        value = settings.get(name)
        if value is None or (name == "NEWSCRAWL_FINGERPRINT_RETENTION_DAYS"
                             and str(value).strip().lower() in ("", "none")):
            continue
        read: Callable[[str], object]
        if isinstance(default, bool):
            read, kind = settings.getbool, "a boolean (True/False, 1/0)"
        elif name in _INTEGERS:
            read, kind = settings.getint, "an integer"
        elif isinstance(default, int | float):
            read, kind = settings.getfloat, "a number"
        else:
            continue
        try:
            read(name)
        except (TypeError, ValueError):
            raise ValueError(f"setting {name} = {value!r} is not {kind}") from None
    CrawlConfig.from_settings(settings)  # ranges: its errors name the setting


class CrawlContext:
    """What the newscrawl components of one crawler share (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.site_stats = SiteStats(crawler)
        self.site_stats.on_fault = self.report_fault
        #: set by the scheduler: stops the crawl on a system fault (:mod:`newscrawl.faults`)
        self.stop_on_fault: Callable[[BaseException], bool] | None = None
        #: the id of the run this worker started or joined (set by the scheduler)
        self.run_id: str | None = None
        #: the exit code the crawl asked for and its cause (:mod:`newscrawl.exitcodes`)
        self.exit_code = ExitCode.OK
        self.exit_why: str | None = None

    def report_fault(self, exc: BaseException) -> bool:
        """Stop the crawl if ``exc`` is a system fault (the scheduler's :meth:`stop_on_fault`);
        whether it was one. Without newscrawl's scheduler, nothing is stopped (False)."""
        return self.stop_on_fault(exc) if self.stop_on_fault is not None else False

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlContext:
        """The crawler's context (created on first use)."""
        context: CrawlContext | None = getattr(crawler, _ATTR, None)
        if context is None:
            context = cls(crawler)
            setattr(crawler, _ATTR, context)
        return context

    @cached_property
    def config(self) -> CrawlConfig:
        """The settings, read on first use (a bad value fails the first component that asks)."""
        return CrawlConfig.from_settings(self.crawler.settings)

    @cached_property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.config.scheduling.redis_retry_seconds)

    @property
    def prefix(self) -> str:
        return self.config.redis.prefix

    def keys(self) -> Keys:
        """The key names of this crawl's spider."""
        spider = self.crawler.spider
        return Keys(self.prefix, spider.name if spider is not None else self.crawler.spidercls.name)

    @cached_property
    def redis(self) -> redis.Redis:
        """The crawl's Redis client (opened on first use)."""
        client = self.config.redis.connect()
        if not self.config.redis.url:
            from scrapy import signals

            self.crawler.signals.connect(self._stop_embedded, signal=signals.engine_stopped,
                                         weak=False)
        return client

    def _stop_embedded(self) -> None:
        try:
            close_embedded(self.redis)
        except Exception:  # pragma: no cover - best effort at exit
            logger.exception("Error while stopping the embedded Redis")
