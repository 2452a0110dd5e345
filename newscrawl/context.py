"""``CrawlContext.of(crawler)``: what the newscrawl components of one crawler share, built once:
the settings read and checked against :mod:`newscrawl.defaults`' registry, the Redis client and
its retry policy, key names, per-site figures, the run id and the exit code the crawl asks for
(docs/design/architecture.md, docs/settings.md).
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from newscrawl import defaults
from newscrawl.connection import RedisConfig, RetryPolicy, close_embedded, embedded_server_gone
from newscrawl.defaults import BY_NAME, ENVIRONMENT_ONLY, REGISTRY
from newscrawl.errors import ConfigError, ExitCode
from newscrawl.keys import Keys
from newscrawl.sitestats import SiteStats

if TYPE_CHECKING:
    import redis
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

_ATTR = "_newscrawl_context"


def read_setting(settings: BaseSettings, name: str) -> Any:
    """Setting ``name`` (declared in :data:`newscrawl.defaults.REGISTRY`) as its type, within its
    bounds; its default when unset (None for an optional one set to nothing or ``None``).
    :class:`ConfigError` naming the setting for a value of another type or out of its bounds."""
    setting = BY_NAME[name]
    raw = settings.get(name)
    text_like = setting.optional or setting.type is str
    if raw is None or (text_like and str(raw).strip() == "") or (
            setting.optional and setting.type is not str and str(raw).strip().lower() == "none"):
        return None if setting.optional else setting.default
    if setting.type is str:
        return str(raw)
    getter, kind = _READERS[setting.type]
    try:
        value = getattr(settings, getter)(name)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {name} = {raw!r} is not {kind}") from None
    if setting.type is bool:
        return value
    low, high = setting.minimum, setting.maximum
    if (low is None or value >= low) and (high is None or value <= high):
        return value
    if setting.clamp:
        return setting.type(low if low is not None and value < low else high)
    note = setting.bound_note
    if note and high is not None:
        raise ConfigError(f"setting {name} = {value} is out of range: {note}")
    if note:
        raise ConfigError(f"setting {name} = {value} must not be negative ({note})"
                          if low == 0 else f"setting {name} = {value} must be at least {low}")
    if value < 0:
        raise ConfigError(f"{name} must not be negative (got {value})")
    raise ConfigError(f"{name} must be at least {low}")


#: how each type is read from Scrapy's settings, and its name in an error
_READERS: dict[type, tuple[str, str]] = {
    bool: ("getbool", "a boolean (True/False, 1/0)"),
    int: ("getint", "an integer"),
    float: ("getfloat", "a number"),
}


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
    max_errors_in_a_row: int = defaults.MAX_ERRORS_IN_A_ROW
    polite_window: int = defaults.POLITE_WINDOW
    article_wait: float = defaults.ARTICLE_WAIT_SECONDS

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SchedulingConfig:
        def read(name: str) -> Any:
            return read_setting(settings, name)

        return cls(
            persist=read("SCHEDULER_PERSIST"),
            lease_seconds=read("NEWSCRAWL_LEASE_SECONDS"),
            max_attempts=read("NEWSCRAWL_MAX_ATTEMPTS"),
            redis_retry_seconds=read("NEWSCRAWL_REDIS_RETRY_SECONDS"),
            url_retention_days=read("NEWSCRAWL_URL_RETENTION_DAYS"),
            run_ttl=read("NEWSCRAWL_RUN_TTL"),
            heartbeat_seconds=read("NEWSCRAWL_HEARTBEAT_SECONDS"),
            idle_exit_seconds=read("NEWSCRAWL_IDLE_EXIT_SECONDS"),
            deadletter_max=read("NEWSCRAWL_DEADLETTER_MAX"),
            max_errors_in_a_row=read("NEWSCRAWL_MAX_ERRORS_IN_A_ROW"),
            polite_window=read("NEWSCRAWL_POLITE_WINDOW"),
            article_wait=read("NEWSCRAWL_ARTICLE_WAIT"),
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
    order_memory: int = defaults.CHECK_ORDER_MEMORY_BYTES
    #: days a record of a dropped near-duplicate is kept (None: forever)
    duplicate_retention_days: int | None = defaults.DUPLICATE_RETENTION_DAYS

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DedupConfig:
        def read(name: str) -> Any:
            return read_setting(settings, name)

        return cls(
            enabled=read("NEWSCRAWL_DEDUP_ENABLED"),
            max_distance=read("NEWSCRAWL_MAX_DISTANCE"),
            idf_file=read("NEWSCRAWL_IDF_FILE"),
            # 0 / None / "" / "None" (from -s): no retention (fingerprints compared forever)
            retention_days=read("NEWSCRAWL_FINGERPRINT_RETENTION_DAYS") or None,
            workers=read("NEWSCRAWL_FINGERPRINT_WORKERS"),
            url_field=read("NEWSCRAWL_URL_FIELD"),
            text_field=read("NEWSCRAWL_TEXT_FIELD"),
            order_wait=read("NEWSCRAWL_CHECK_ORDER_WAIT"),
            order_memory=read("NEWSCRAWL_CHECK_ORDER_MEMORY"),
            duplicate_retention_days=read("NEWSCRAWL_DUPLICATE_RETENTION_DAYS") or None,
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
            enabled=read_setting(settings, "NEWSCRAWL_STORE"),
            directory=Path(read_setting(settings, "NEWSCRAWL_STORE_DIR") or data_dir / "articles")
            .expanduser(),
            fsync=read_setting(settings, "NEWSCRAWL_STORE_FSYNC"),
            url_field=read_setting(settings, "NEWSCRAWL_URL_FIELD"),
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


#: Every ``NEWSCRAWL_*`` setting (:data:`newscrawl.defaults.REGISTRY`).
KNOWN_SETTINGS = frozenset(name for name in BY_NAME if name.startswith("NEWSCRAWL_"))

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
    """:class:`ConfigError` naming the first setting of :data:`newscrawl.defaults.REGISTRY`
    whose value is not of its type or out of its bounds, so that a crawl given ``-s
    NEWSCRAWL_REDIS_RETRY_SECONDS=abc`` stops at start with one line naming it; a
    ``NEWSCRAWL_*`` name that is none of newscrawl's settings (a typo would silently leave the
    setting at its default), with the closest known name; and an environment variable given as
    a setting. A name close to one of Scrapy's own settings (``CONCURENT_REQUESTS``) is a
    WARNING, not an error: other extensions' settings can lie as close (``USER_AGENTS`` of
    random user-agent middlewares)."""
    for name in settings:
        if not isinstance(name, str) or not name.startswith("NEWSCRAWL_"):
            continue
        if name in ENVIRONMENT_ONLY:
            raise ConfigError(f"{name} is read from the environment only, not from the settings:"
                              f" set the environment variable {name} for the crawl instead")
        if name not in KNOWN_SETTINGS:
            close = difflib.get_close_matches(name, sorted(KNOWN_SETTINGS), n=1)
            raise ConfigError(f"unknown setting {name}" + (
                f" (did you mean {close[0]}?)" if close else "") + ": docs/settings.md lists"
                " newscrawl's settings")
    for message in unread_environment(os.environ):
        logger.warning("%s", message)
    for name, scrapy_name in misspelt_scrapy_settings(settings):
        logger.warning(
            "setting %s is none of Scrapy's (did you mean %s?): unless an extension reads it, "
            "it has no effect", name, scrapy_name)
    for setting in REGISTRY:
        read_setting(settings, setting.name)
    CrawlConfig.from_settings(settings)  # what only the configuration checks (appendfsync)
    idf_file = read_setting(settings, "NEWSCRAWL_IDF_FILE")
    if idf_file and read_setting(settings, "NEWSCRAWL_DEDUP_ENABLED"):
        _check_idf_file(idf_file)


#: ``NEWSCRAWL_*`` environment variables something reads: the crawl and the ``newscrawl``
#: command (``NEWSCRAWL_DATA_DIR``, ``NEWSCRAWL_REDIS_PREFIX``, the environment-only ones) and
#: the dependency audit (``deploy/audit.py``).
READ_FROM_ENVIRONMENT = frozenset(
    {"NEWSCRAWL_DATA_DIR", "NEWSCRAWL_REDIS_PREFIX", "NEWSCRAWL_AUDIT_STRICT", *ENVIRONMENT_ONLY})


def unread_environment(environ: Mapping[str, str]) -> list[str]:
    """One message for each ``NEWSCRAWL_*`` environment variable nothing reads: a setting put in
    the environment (``NEWSCRAWL_MAX_DISTANCE=5`` in a compose file) or a misspelt variable
    would otherwise leave its value silently unused."""
    messages = []
    for name in sorted(environ):
        if not name.startswith("NEWSCRAWL_") or name in READ_FROM_ENVIRONMENT:
            continue
        if name in KNOWN_SETTINGS:
            messages.append(
                f"environment variable {name} is not read: {name} is a setting, give it as"
                f" -s {name}=... or in the project's settings.py")
            continue
        close = difflib.get_close_matches(
            name, sorted(READ_FROM_ENVIRONMENT | KNOWN_SETTINGS), n=1)
        messages.append(f"environment variable {name} is none of newscrawl's" + (
            f" (did you mean {close[0]}?)" if close else "") + ": it has no effect")
    return messages


def _check_idf_file(path: str) -> None:
    """:class:`ConfigError` when ``NEWSCRAWL_IDF_FILE`` cannot be read or parsed, before the crawl
    starts (the worker process that fingerprints would otherwise meet it mid-start)."""
    from newscrawl.simhash.idf import IdfFormatError, load_idf  # not at import: jieba is slow

    try:
        load_idf(path)
    except IdfFormatError as exc:
        raise ConfigError(f"NEWSCRAWL_IDF_FILE: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"NEWSCRAWL_IDF_FILE: cannot read {path}: {exc.strerror or exc}"
                          ) from exc


class CrawlContext:
    """What the newscrawl components of one crawler share (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.site_stats = SiteStats(crawler)
        self.site_stats.on_fault = self.report_fault
        #: set by the scheduler: stops the crawl on a system fault (:mod:`newscrawl.faults`)
        self.stop_on_fault: Callable[[BaseException], bool] | None = None
        #: whether a system fault has stopped the crawl (the scheduler's)
        self.fault_stopped: Callable[[], bool] = lambda: False
        #: set by the near-duplicate pipeline once it watches the index: raises IndexLostError
        #: when the index is gone (Redis lost its data), asked with each heartbeat
        self.check_index_mark: Callable[[], None] | None = None
        #: set by the scheduler: one more page whose processing raised (the exception, the
        #: page's request), counted towards NEWSCRAWL_MAX_ERRORS_IN_A_ROW
        self.page_error: Callable[[BaseException, Any], None] | None = None
        #: the id of the run this worker started or joined (set by the scheduler)
        self.run_id: str | None = None
        #: article URL -> the size of its response (set by the spider as it yields the item,
        #: taken by the near-duplicate pipeline: a waiting article frees its share of Scrapy's
        #: scraper slot, NEWSCRAWL_CHECK_ORDER_MEMORY)
        self.response_sizes: dict[str, int] = {}
        #: the exit code the crawl asked for and its cause (:mod:`newscrawl.exitcodes`)
        self.exit_code = ExitCode.OK
        self.exit_why: str | None = None

    def report_page_error(self, exc: BaseException, request: Any) -> None:
        """One more page whose processing raised (the scheduler's :meth:`page_error`); nothing
        without newscrawl's scheduler."""
        if self.page_error is not None:
            self.page_error(exc, request)

    def report_fault(self, exc: BaseException) -> bool:
        """Stop the crawl if ``exc`` is a system fault (the scheduler's :meth:`stop_on_fault`);
        whether it was one. Without newscrawl's scheduler, nothing is stopped (False)."""
        return self.stop_on_fault(exc) if self.stop_on_fault is not None else False

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlContext:
        """The crawler's context (created on first use): the one attribute newscrawl sets on a
        crawler; everything else a crawl shares lives in it."""
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
        """The crawl's Redis retry; its wait ends early once the crawl is being stopped (Scrapy's
        graceful stop clears ``crawler.crawling``), from whichever thread waits."""
        crawler = self.crawler
        began = crawler.crawling
        return RetryPolicy(self.config.scheduling.redis_retry_seconds,
                           stopping=lambda: began and not crawler.crawling,
                           gone=lambda: embedded_server_gone(self.__dict__.get("redis")))

    @property
    def prefix(self) -> str:
        return self.config.redis.prefix

    def keys(self) -> Keys:
        """The key names of this crawl's spider."""
        spider = self.crawler.spider
        return Keys(self.prefix, spider.name if spider is not None else self.crawler.spidercls.name)

    @cached_property
    def redis(self) -> redis.Redis:
        """The crawl's Redis client (opened on first use). The embedded Redis is stopped (data
        saved, unless another process still uses it) on ``engine_stopped``: after the pipelines
        and extensions, which close on ``spider_closed``."""
        client = self.config.redis.connect(store_dir=self.config.store.directory)
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
