"""One home for every Redis key template and default used by newscrawl.

Every key starts with a prefix (``NEWSCRAWL_REDIS_PREFIX``, default ``newscrawl``) so one Redis can
hold several independent deployments. docs/redis-keys.md documents each key with ``redis-cli``
examples.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

# --- near-duplicate index (newscrawl.index) ---------------------------------------------------
# One hash per (block position, 16-bit block value); block 0 is the most significant 16 bits.
SIMHASH_BUCKET = "{prefix}:simhash:{block}:{value:04x}"
# Hash: the fingerprint configuration version the index was built with, creation time, counters.
SIMHASH_META = "{prefix}:simhash:meta"
# String with TTL (2 days): the day (days since 1970) whose daily prune of expired fingerprints
# was claimed (SET NX EX by the crawl worker that runs it; newscrawl/extensions/index_prune.py).
SIMHASH_PRUNED = "{prefix}:simhash:pruned:{day}"
# Hash: url -> JSON record of a dropped near-duplicate (url, original_url, distance, ...).
DUPLICATES = "{prefix}:duplicates"
# Sorted set: url scored by the time it was recorded (newest first with ZREVRANGE).
DUPLICATES_LOG = "{prefix}:duplicates:log"

# --- crawl state (scheduler, queue, dupefilter), per spider; see docs/design/scheduling.md -----
# Sorted set: JSON queue entry, scored by priority then FIFO (lowest score first).
CRAWL_QUEUE = "{prefix}:{spider}:requests"
# String counter: FIFO sequence number of queue entries.
CRAWL_SEQ = "{prefix}:{spider}:requests:seq"
# (the queue's scripts keep CRAWL_QUEUE + ":hosts", a hash: host slot key -> the place of the
# host's last queued entry, so the hosts take turns in the queue; lib.lua)
# Sorted set: JSON entry popped by a worker, scored by its lease deadline (ms, Redis clock).
CRAWL_INFLIGHT = "{prefix}:{spider}:inflight"
# Sorted sets (65536 shards by the first 2 bytes of the 8-byte fingerprint): the other 6 bytes
# of each processed ("done") article URL, scored by the day (days since 1970) it was last seen.
CRAWL_SEEN = "{prefix}:{spider}:seen:{shard}"
# String: the last day the seen shards were pruned.
CRAWL_SEEN_PRUNED = "{prefix}:{spider}:seen-pruned"
# Hash: 8-byte fingerprint -> number of queue/in-flight entries for that URL (queued, not done).
CRAWL_PENDING = "{prefix}:{spider}:pending"
# Hash: 8-byte fingerprint -> "attempts:day" of an article whose download failed.
CRAWL_FAILURES = "{prefix}:{spider}:failures"
# Hash: 8-byte fingerprint -> JSON {url, kind, reason, ts, entry} of a request (an article, a
# list/sitemap/feed page) whose last attempt failed: the next run's first worker queues it again,
# wherever it sits, until NEWSCRAWL_MAX_ATTEMPTS (then it is given up and removed).
CRAWL_RETRY = "{prefix}:{spider}:retry"
# List: JSON {ts, error, raw_b64} of queue entries that could not be read (capped).
CRAWL_DEADLETTER = "{prefix}:{spider}:deadletter"
# String with TTL: the id of the current run (SET NX EX by the worker that starts the run).
CRAWL_RUN = "{prefix}:{spider}:run"
# (claim.lua keeps the fingerprint of the run's sites at this key + ":sites", with the same TTL:
# a worker with other sites does not join a live run.)
# Hash: worker id (host:pid:random) -> JSON {host, pid, run, beat} of the workers that registered;
# a worker whose heartbeat key is gone is removed (and its leases requeued) by the next heartbeat.
CRAWL_WORKERS = "{prefix}:{spider}:workers"
# String with TTL (NEWSCRAWL_HEARTBEAT_SECONDS, refreshed every quarter of it): the worker's
# heartbeat, holding its run id.
CRAWL_WORKER = "{prefix}:{spider}:worker:{worker}"
# String with TTL (twice NEWSCRAWL_HEARTBEAT_SECONDS): set by a worker that finds its own
# heartbeat gone (Redis was away, every heartbeat ran out together); while it lives, a
# registered worker without a heartbeat is late, not dead (its entries are not requeued).
CRAWL_BEATS_RESUMED = "{prefix}:{spider}:beats-resumed"
# String with TTL (NEWSCRAWL_REDIS_RETRY_SECONDS + NEWSCRAWL_HEARTBEAT_SECONDS): the Redis time
# (ms) of the last heartbeat or claim of any worker: no beat for 3/4 of a heartbeat while a worker
# may still wait for Redis also sets beats-resumed.
CRAWL_BEATS_LAST = "{prefix}:{spider}:beats-last"
# Hash: in-flight queue entry -> the id of the worker holding it (its entries go back to the
# queue at once when its heartbeat is gone).
CRAWL_INFLIGHT_OWNERS = "{prefix}:{spider}:inflight:owners"
# Sorted set: the ids of the in-flight entries holding a slot of host {host} (Scrapy's slot key:
# the host name, or the request's download_slot), scored by their lease deadline (ms, Redis
# clock); pop.lua grants a request of the host while fewer than its concurrency are unexpired.
CRAWL_SLOTS = "{prefix}:{spider}:slots:{host}"
# (pop.lua keeps this key + ":next", a string with the host's jittered delay as TTL, present
# while the host must not be asked yet.)
# String with TTL (60 s + 2 x AUTOTHROTTLE_MAX_DELAY after the host's last response):
# AutoThrottle's delay for host {host} in ms, one figure for all workers, moved by each response
# (throttle.lua); pop.lua keeps the host's turns at least this far apart. Absent:
# AUTOTHROTTLE_START_DELAY.
CRAWL_SLOT_THROTTLE = "{prefix}:{spider}:slots:{host}:throttle"
# Hash with TTL (a day after its last update): netloc -> JSON of the robots.txt response fetched
# for it in run {run} ({status, url, type, body_b64}), or {fetching: deadline} while a worker
# fetches it: every worker of the run reads it instead of fetching robots.txt itself.
CRAWL_ROBOTS = "{prefix}:{spider}:robots:{run}"
# Set with TTL: fingerprints of start/list pages already scheduled in run {run}.
CRAWL_LISTSEEN = "{prefix}:{spider}:listseen:{run}"
# Set with TTL (a day after its last update): the list pages (8-byte fingerprints) that the walk
# below start page {walk} (its fingerprint, hex) may fetch in run {run}; at most max_list_pages.
CRAWL_WALK = "{prefix}:{spider}:walk:{run}:{walk}"
# Sorted set with TTL: the article links found by every walk, sitemap and feed of run {run},
# waiting until the run's discovery is done (newscrawl/scheduling/waiting.py): member
# "<rank><order>:<depth>\n<site>\n<url>", scored by the date known before fetching (seconds of
# the wall-clock date; undated links after every dated one); then queued in that order.
CRAWL_WAITING = "{prefix}:{spider}:waiting:{run}"
# String with TTL: the Unix time the first link of run {run} started waiting (the wait's bound
# counts from it, NEWSCRAWL_ARTICLE_WAIT).
CRAWL_WAITING_SINCE = "{prefix}:{spider}:waiting:{run}:since"
# String with a 60 s expiry: the worker releasing run {run}'s waiting links (one at a time).
CRAWL_WAITING_LOCK = "{prefix}:{spider}:waiting:{run}:lock"
# List (scrapy-redis's <spider>:start_urls convention, under the prefix): URLs pushed by hand or
# by `newscrawl push` (a URL, or JSON {"url": ..., "site": ...}); a worker of the running crawl,
# or of the next one, takes them in order and fetches each as an article or list page of its site.
CRAWL_START_URLS = "{prefix}:{spider}:start_urls"
# String with a 30 s expiry: the worker taking pushed URLs (one at a time).
CRAWL_START_URLS_LOCK = "{prefix}:{spider}:start_urls:lock"
# Counter with TTL: the order numbers given to run {run}'s article links as they are queued.
CRAWL_ORDER_SEQ = "{prefix}:{spider}:order:{run}"
# Sorted set with TTL: run {run}'s queued article links not yet through the near-duplicate check
# ("<site>\n<url>", scored by order number): an article waits there for other sites' earlier ones.
CRAWL_UNCHECKED = "{prefix}:{spider}:unchecked:{run}"
# Hash with TTL: members of the unchecked set that reached the check -> 's' (the page names
# another outlet as its source) or 'n'.
CRAWL_UNCHECKED_ARRIVED = CRAWL_UNCHECKED + ":arrived"
# Hash with TTL: members of the unchecked set whose only known date was a day -> the day ordinal.
CRAWL_UNCHECKED_DAYS = CRAWL_UNCHECKED + ":days"
# Sorted set with TTL: the members of the unchecked set of day {day}, scored by order number
# (turn.lua and checked.lua build its name from the days hash).
CRAWL_UNCHECKED_DAY = CRAWL_UNCHECKED + ":day:{day}"
# Hash with TTL (a day after its last update): "<site>/<path>" -> count, the run's per-site
# figures (newscrawl/sitestats.py) that the end-of-run summary and exit code 4 are based on.
CRAWL_RUNSTATS = "{prefix}:{spider}:runstats:{run}"
# Hash, no TTL: site name -> the id of the first finished run that fetched any page of it (a new
# site's home page may have no next page yet: no list page read is no sign of a bad follow_url).
CRAWL_SITES_FIRST_RUN = "{prefix}:{spider}:sites-first-run"
# Hash, no TTL: site name -> its follow_url ("" for none) in the last finished run that fetched
# its start pages. A run whose follow_url differs walks that site's list pages past known ones.
CRAWL_SITES_FOLLOW_URL = "{prefix}:{spider}:sites-follow-url"


def simhash_bucket(prefix: str, block: int, value: int) -> str:
    return SIMHASH_BUCKET.format(prefix=prefix, block=block, value=value)


@dataclass(frozen=True)
class Keys:
    """The key names of one deployment (``prefix``) and spider:
    ``Keys("newscrawl", "portal")(CRAWL_RUN)`` is ``newscrawl:portal:run``."""

    prefix: str
    spider: str

    def __call__(self, template: str, **fields: Any) -> str:
        return template.format(prefix=self.prefix, spider=self.spider, **fields)


@dataclass(frozen=True)
class CrawlKeys:
    """The crawl-state key names of one deployment, spider and run, built once:
    ``CrawlKeys("newscrawl", "portal").queue`` is ``newscrawl:portal:requests``. The run's own
    keys need ``run`` (:meth:`for_run`, once the run marker gave the run id)."""

    prefix: str
    spider: str
    run: str = ""

    @classmethod
    def of(cls, keys: Keys, run: str = "") -> CrawlKeys:
        return cls(keys.prefix, keys.spider, run)

    def for_run(self, run: str) -> CrawlKeys:
        return replace(self, run=run)

    def _key(self, template: str, **fields: Any) -> str:
        return template.format(prefix=self.prefix, spider=self.spider, **fields)

    def _run_key(self, template: str) -> str:
        if not self.run:
            raise ValueError("the run's keys need the run id (CrawlKeys.for_run)")
        return self._key(template, run=self.run)

    @property
    def queue(self) -> str:
        return self._key(CRAWL_QUEUE)

    @property
    def seq(self) -> str:
        return self._key(CRAWL_SEQ)

    @property
    def inflight(self) -> str:
        return self._key(CRAWL_INFLIGHT)

    @property
    def inflight_owners(self) -> str:
        return self._key(CRAWL_INFLIGHT_OWNERS)

    @property
    def pending(self) -> str:
        return self._key(CRAWL_PENDING)

    @property
    def failures(self) -> str:
        return self._key(CRAWL_FAILURES)

    @property
    def retry(self) -> str:
        return self._key(CRAWL_RETRY)

    @property
    def deadletter(self) -> str:
        return self._key(CRAWL_DEADLETTER)

    @property
    def run_marker(self) -> str:
        return self._key(CRAWL_RUN)

    @property
    def workers(self) -> str:
        return self._key(CRAWL_WORKERS)

    @property
    def beats_resumed(self) -> str:
        return self._key(CRAWL_BEATS_RESUMED)

    @property
    def beats_last(self) -> str:
        return self._key(CRAWL_BEATS_LAST)

    def worker(self, worker_id: str) -> str:
        """The heartbeat key of worker ``worker_id`` ("": the prefix of every worker's)."""
        return self._key(CRAWL_WORKER, worker=worker_id)

    def slots(self, host: str) -> str:
        return self._key(CRAWL_SLOTS, host=host)

    @property
    def listseen(self) -> str:
        return self._run_key(CRAWL_LISTSEEN)

    @property
    def runstats(self) -> str:
        return self._run_key(CRAWL_RUNSTATS)
