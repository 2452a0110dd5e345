"""Every default value of newscrawl, in one place.

The add-on sets :data:`SETTINGS` (newscrawl/addon.py), the crawl's configuration
(:mod:`newscrawl.context`) falls back to the same values when a setting is absent, and the
``newscrawl`` command, the near-duplicate index and the embedded Redis read the constants below.
Every ``NEWSCRAWL_*`` setting is documented in docs/settings.md. No imports: anything may read it.
"""

from __future__ import annotations

from typing import Any

# --- Redis: where, and the names of the keys ---------------------------------------------------
DATA_DIR = ".newscrawl"  # NEWSCRAWL_DATA_DIR: the embedded Redis and the stored articles
REDIS_PREFIX = "newscrawl"  # NEWSCRAWL_REDIS_PREFIX: the first part of every key
#: NEWSCRAWL_EMBEDDED_APPENDFSYNC: when the embedded Redis fsyncs its append-only file
EMBEDDED_APPENDFSYNC = "everysec"
#: Listpack limits that keep the index's buckets compact: a bucket averages n/65536 entries (763
#: at 50M fingerprints) and block-0 values hold the fingerprint's record. The embedded Redis
#: starts with them; the index raises (never lowers) a server's limits to them.
COMPACT_HASH_CONFIG: dict[str, int] = {
    "hash-max-ziplist-entries": 1024,
    "hash-max-ziplist-value": 256,
}

# --- scheduling --------------------------------------------------------------------------------
LEASE_SECONDS = 120  # in-flight lease; expired leases (dead workers) are requeued
MAX_ATTEMPTS = 3  # failed downloads of an article before giving up on it
REDIS_RETRY_SECONDS = 60  # retry Redis this long, then stop (exit code 3)
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
FINGERPRINT_RETENTION_DAYS = 365  # 0 or None: compared forever
FINGERPRINT_WORKERS = 1  # fingerprint in N worker processes (0: in-process)
URL_FIELD = "url"  # the item field with the article's URL
TEXT_FIELD = "text"  # the item field with the article's text
DEDUP_ENABLED = True  # NEWSCRAWL_DEDUP_ENABLED
# the longest an article waits in the near-duplicate check for other sites' articles queued
# before it (NEWSCRAWL_CHECK_ORDER_WAIT, seconds)
CHECK_ORDER_WAIT_SECONDS = 60
STORE_ENABLED = True  # NEWSCRAWL_STORE
STORE_FSYNC = False  # NEWSCRAWL_STORE_FSYNC
SCHEDULER_PERSIST = True  # scrapy-redis's setting: the crawl state outlives a run

#: The settings the add-on sets (at its priority: a project's own settings win).
SETTINGS: dict[str, Any] = {
    "SCHEDULER_PERSIST": SCHEDULER_PERSIST,
    "NEWSCRAWL_LEASE_SECONDS": LEASE_SECONDS,
    "NEWSCRAWL_MAX_ATTEMPTS": MAX_ATTEMPTS,
    "NEWSCRAWL_REDIS_RETRY_SECONDS": REDIS_RETRY_SECONDS,
    "NEWSCRAWL_URL_RETENTION_DAYS": URL_RETENTION_DAYS,
    "NEWSCRAWL_RUN_TTL": RUN_TTL,
    "NEWSCRAWL_HEARTBEAT_SECONDS": HEARTBEAT_SECONDS,
    "NEWSCRAWL_IDLE_EXIT_SECONDS": IDLE_EXIT_SECONDS,
    "NEWSCRAWL_ARTICLE_WAIT": ARTICLE_WAIT_SECONDS,
    "NEWSCRAWL_POLITE_WINDOW": POLITE_WINDOW,
    "NEWSCRAWL_URL_FIELD": URL_FIELD,
    "NEWSCRAWL_TEXT_FIELD": TEXT_FIELD,
    "NEWSCRAWL_DEDUP_ENABLED": DEDUP_ENABLED,
    "NEWSCRAWL_CHECK_ORDER_WAIT": CHECK_ORDER_WAIT_SECONDS,
    "NEWSCRAWL_MAX_DISTANCE": MAX_DISTANCE,
    "NEWSCRAWL_IDF_FILE": None,
    "NEWSCRAWL_FINGERPRINT_RETENTION_DAYS": FINGERPRINT_RETENTION_DAYS,
    "NEWSCRAWL_FINGERPRINT_WORKERS": FINGERPRINT_WORKERS,
    "NEWSCRAWL_STORE": STORE_ENABLED,
    "NEWSCRAWL_STORE_DIR": None,  # default: <NEWSCRAWL_DATA_DIR>/articles
}
