"""One home for every Redis key template and default used by newscrawl.

Every key starts with a prefix (``NEWSCRAWL_REDIS_PREFIX``, default ``newscrawl``) so one Redis can
hold several independent deployments. README.md documents each key with ``redis-cli`` examples.
"""

from __future__ import annotations

DEFAULT_PREFIX = "newscrawl"

# --- near-duplicate index (newscrawl.index) ---------------------------------------------------
# One hash per (block position, 16-bit block value); block 0 is the most significant 16 bits.
SIMHASH_BUCKET = "{prefix}:simhash:{block}:{value:04x}"
# Hash: the fingerprint configuration version the index was built with, creation time, counters.
SIMHASH_META = "{prefix}:simhash:meta"
# Hash: url -> JSON record of a dropped near-duplicate (url, original_url, distance, ...).
DUPLICATES = "{prefix}:duplicates"
# Sorted set: url scored by the time it was recorded (newest first with ZREVRANGE).
DUPLICATES_LOG = "{prefix}:duplicates:log"

# --- crawl state (scheduler, queue, dupefilter), per spider -----------------------------------
CRAWL_QUEUE = "{prefix}:{spider}:requests"
CRAWL_INFLIGHT = "{prefix}:{spider}:inflight"
CRAWL_SEEN = "{prefix}:{spider}:seen"
CRAWL_PENDING = "{prefix}:{spider}:pending"
CRAWL_FAILURES = "{prefix}:{spider}:failures"
CRAWL_DEADLETTER = "{prefix}:{spider}:deadletter"
CRAWL_RUN = "{prefix}:{spider}:run"
CRAWL_LISTSEEN = "{prefix}:{spider}:listseen:{run}"


def simhash_bucket(prefix: str, block: int, value: int) -> str:
    return SIMHASH_BUCKET.format(prefix=prefix, block=block, value=value)
