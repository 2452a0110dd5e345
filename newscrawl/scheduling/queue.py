"""A Redis priority queue whose pops are leased, not deleted: an entry stays in the in-flight set
until its request is acknowledged, and goes back to the queue when its lease expires. It takes a
redis client and key names, never Scrapy settings. See docs/design/scheduling.md ("How a request
flows").
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import redis
from scrapy_redis.queue import Base

from newscrawl.meta import (
    ORDER,
    ORDER_DAY,
    ORDER_RUN,
    ORDER_TIMED_DAY,
    RUN_KINDS,
    SITE,
    RequestKind,
)
from newscrawl.scheduling import serializer
from newscrawl.scheduling.lua import load
from newscrawl.scheduling.serializer import SerializationError

if TYPE_CHECKING:
    from scrapy import Request, Spider

    from newscrawl.connection import RetryPolicy
    from newscrawl.keys import CrawlKeys

logger = logging.getLogger(__name__)

ENTRY_VERSION = 1
PRIORITY_SPAN = 4294967296  # score = -priority * 2**32 + sequence number
MAX_PRIORITY = 1 << 20

# push modes
MODE_ONCE = "once"  # article: skip when done or pending, else count as pending
MODE_RUN = "run"  # start/list page: skip when already scheduled in this run
MODE_FORCE = "force"  # dont_filter: always push, not counted as pending
MODE_FORCE_PENDING = "forcepending"  # dont_filter article (a retry): always push, pending

# push results
PUSHED = 1
FILTERED_DONE = 0
FILTERED_PENDING = -1
FILTERED_RUN = -2
FILTERED_FAILED_THIS_RUN = -3

# ack outcomes / results
OUTCOME_DONE = "done"
OUTCOME_FAILED = "failed"
OUTCOME_RELEASE = "release"
OUTCOME_SOURCE_DONE = "srcdone"  # a start/list/sitemap/feed page fetched: nothing to retry
OUTCOME_SOURCE_FAILED = "srcfailed"  # ... failed: retried by a later run, as articles are
ACK_LOST = -1
ACK_RELEASED = 0
ACK_DONE = 1
ACK_FAILED = 2
ACK_GAVE_UP = 3

# the scripts (lua/*.lua), checked against the constants above
_PUSH = load("lib.lua", "push.lua", constants=globals())
_POP = load("lib.lua", "pop.lua", constants=globals())
_RENEW = load("lib.lua", "renew.lua", constants=globals())
_REAP = load("lib.lua", "reap.lua", constants=globals())
_REQUEUE = load("lib.lua", "requeue.lua", constants=globals())
_ACK = load("lib.lua", "ack.lua", constants=globals())
_MARK_DONE = load("mark_done.lua", constants=globals())
_THROTTLE = load("throttle.lua", constants=globals())

#: Suffix of a host's AutoThrottle key: its slots key + this (keys.CRAWL_SLOT_THROTTLE).
THROTTLE_SUFFIX = ":throttle"


@dataclass(frozen=True)
class DedupeSpec:
    """How one request is de-duplicated on push (built by the dupefilter)."""

    mode: str
    fp: bytes  # 8-byte fingerprint
    seen_key: str
    seen_member: bytes
    listseen_key: str
    day: int
    listseen_ttl: int


#: an article link of an earlier run's order: ((run id, number), site, URL, day, timed day)
OrderedLink = tuple[tuple[str, int], str, str, int | None, int | None]


@dataclass(frozen=True)
class Inherited:
    """What a run that takes over a queue finds in it (:meth:`LeasedPriorityQueue.inherited`):
    site -> article entries queued as new links, and the fingerprints of the queued
    start/list/sitemap/feed pages."""

    articles: dict[str, int]
    sources: list[bytes]
    #: the article entries with a place in their run's check order: ((the run that numbered
    #: it, its number), site, URL, day known alone, day known with a time), for the run that
    #: finishes them to keep it
    ordered: list[OrderedLink] = field(default_factory=list)


@dataclass(frozen=True)
class HostSlot:
    """The politeness of one request's host for the whole cluster (pop.lua): the host's slots
    key, how many of its requests may be in flight at once (0: no limit) and the delay in ms
    between two of its requests' turns (0: none)."""

    key: str
    concurrency: int
    delay_ms: int


@dataclass(frozen=True)
class Throttle:
    """AutoThrottle shared by the cluster (throttle.lua, pop.lua): Scrapy's
    AUTOTHROTTLE_TARGET_CONCURRENCY, AUTOTHROTTLE_START_DELAY and AUTOTHROTTLE_MAX_DELAY (ms),
    and how long a host's shared delay outlives its last response (ms)."""

    target_concurrency: float
    start_ms: float
    max_ms: float
    ttl_ms: int


@dataclass
class Entry:
    """A popped queue entry: the exact Redis member plus the decoded request."""

    raw: bytes
    id: str
    kind: str
    fp: bytes
    pending: bool
    origins: list[bytes]
    request: Request
    extra: dict[str, Any] = field(default_factory=dict)
    slot: str = ""  # the host slot key it holds while in flight ("" for none)


class LeasedPriorityQueue(Base):
    """Per-spider priority queue with leased pops (see the module docstring)."""

    def __init__(
        self,
        server: redis.Redis,
        spider: Spider,
        key: str,
        serializer_module: Any = serializer,
        *,
        inflight_key: str,
        seq_key: str,
        deadletter_key: str,
        pending_key: str,
        failures_key: str,
        retry_key: str,
        lease_seconds: float,
        owners_key: str = "",
        worker_id: str = "",
        retry: RetryPolicy,
        deadletter_max: int,
        on_dead_letter: Callable[[bytes, str], None] | None = None,
        on_meta_dropped: Callable[[Request, list[str]], None] | None = None,
        host_slot: Callable[[Request], HostSlot | None] | None = None,
        polite_window: int = 0,
        randomize_delay: bool = True,
        throttle: Throttle | None = None,
    ) -> None:
        super().__init__(server, spider, key, serializer=serializer_module)
        self.inflight_key = inflight_key
        self.seq_key = seq_key
        self.deadletter_key = deadletter_key
        self.pending_key = pending_key
        self.failures_key = failures_key
        self.retry_key = retry_key
        # the hash of in-flight entry -> worker holding it, and this worker's id (run.py: a
        # worker's entries go back to the queue at once when its heartbeat is gone); "" keeps
        # no owners (leases then return to the queue when they expire)
        self.owners_key = owners_key
        self.worker_id = worker_id
        self.lease_ms = int(lease_seconds * 1000)
        self.retry = retry
        self.deadletter_max = deadletter_max
        self.on_dead_letter = on_dead_letter
        self.on_meta_dropped = on_meta_dropped
        # per-host politeness for the whole cluster (pop.lua): the slot each entry is encoded
        # with, how many queue entries a pop looks at for a grantable one (0: the first entry,
        # no host limits), and Scrapy's delay jitter
        self.host_slot = host_slot
        self.polite_window = max(0, int(polite_window))
        self.randomize_delay = randomize_delay
        # AutoThrottle's delay per host, one figure for the whole cluster that the grant keeps
        # (None: the grant keeps the entries' own delays only)
        self.throttle = throttle if polite_window > 0 else None
        self._throttle = server.register_script(_THROTTLE)
        #: after a pop that granted nothing: ms until a host held back by its delay is free
        self.next_turn_ms: int | None = None
        # entries whose download ended: their host slots are freed by the next pop (pop.lua)
        self._downloaded: dict[bytes, None] = {}
        self._push = server.register_script(_PUSH)
        self._pop = server.register_script(_POP)
        self._renew = server.register_script(_RENEW)
        self._reap = server.register_script(_REAP)
        self._requeue = server.register_script(_REQUEUE)
        self._ack = server.register_script(_ACK)
        self._mark_done = server.register_script(_MARK_DONE)

    @classmethod
    def from_keys(cls, server: redis.Redis, spider: Spider, keys: CrawlKeys, worker_id: str,
                  **options: Any) -> LeasedPriorityQueue:
        """The queue of a crawl's keys, held by worker ``worker_id``."""
        return cls(server, spider, keys.queue, inflight_key=keys.inflight, seq_key=keys.seq,
                   deadletter_key=keys.deadletter, pending_key=keys.pending,
                   failures_key=keys.failures, retry_key=keys.retry,
                   owners_key=keys.inflight_owners, worker_id=worker_id, **options)

    # --- helpers ------------------------------------------------------------------------------

    def encode(
        self, request: Request, *, kind: str, fp: bytes, pending: bool, origins: Sequence[bytes]
    ) -> bytes:
        """The JSON entry for ``request`` (raises SerializationError)."""
        data, dropped = serializer.request_to_dict(request, self.spider)
        if dropped and self.on_meta_dropped is not None:
            self.on_meta_dropped(request, dropped)
        envelope = {
            "v": ENTRY_VERSION,
            "id": os.urandom(8).hex(),
            "k": kind,
            "fp": fp.hex(),
            "p": 1 if pending else 0,
            "o": [o.hex() for o in origins],
            "r": data,
        }
        slot = self.host_slot(request) if self.host_slot is not None else None
        if slot is not None:
            envelope["s"] = slot.key
            envelope["c"] = max(0, int(slot.concurrency))
            envelope["d"] = max(0, int(slot.delay_ms))
        return bytes(self.serializer.dumps(envelope))

    def decode(self, raw: bytes) -> Entry:
        """Parse an entry (raises SerializationError for anything unexpected)."""
        obj = self.serializer.loads(raw)
        if obj.get("v") != ENTRY_VERSION:
            raise SerializationError(f"unknown entry version {obj.get('v')!r}")
        try:
            entry_id = str(obj["id"])
            kind = str(obj.get("k") or "")
            fp = bytes.fromhex(obj["fp"])
            origins = [bytes.fromhex(o) for o in obj.get("o") or []]
        except (KeyError, TypeError, ValueError) as exc:
            raise SerializationError(f"bad entry envelope: {exc!r}") from None
        if len(fp) != 8 or any(len(o) != 8 for o in origins):
            raise SerializationError("fingerprints must be 8 bytes")
        request = serializer.request_from_dict(obj.get("r"), self.spider)
        return Entry(
            raw=raw,
            id=entry_id,
            kind=kind,
            fp=fp,
            pending=obj.get("p") == 1,
            origins=origins,
            request=request,
            slot=obj["s"] if isinstance(obj.get("s"), str) else "",
        )

    # --- queue operations ---------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.retry.call(self.server.zcard, self.key, what="queue length"))

    def inflight_count(self) -> int:
        return int(self.retry.call(self.server.zcard, self.inflight_key, what="in-flight count"))

    def push_entry(self, payload: bytes, priority: int, spec: DedupeSpec) -> int:
        """Push ``payload`` unless ``spec`` says it is a duplicate; returns PUSHED / FILTERED_*."""
        priority = max(-MAX_PRIORITY, min(MAX_PRIORITY, int(priority)))
        return int(
            self.retry.call(
                self._push,
                keys=[self.key, self.seq_key, self.pending_key, spec.seen_key, spec.listseen_key],
                args=[payload, priority, spec.mode, spec.fp, spec.seen_member, spec.day,
                      spec.listseen_ttl],
                what="enqueue",
            )
        )

    def push(self, request: Request) -> None:
        """Plain push without de-duplication (scrapy-redis interface)."""
        payload = self.encode(request, kind="", fp=bytes(8), pending=False, origins=())
        spec = DedupeSpec(MODE_FORCE, bytes(8), self.key + ":none", b"", self.key + ":none", 0, 1)
        self.push_entry(payload, request.priority, spec)

    def downloaded(self, entry: Entry) -> None:
        """``entry``'s download ended: the host slot it holds is freed by the next pop, in the
        same call (the portal no longer sees the request; its processing goes on), or by its
        ack, whichever comes first."""
        if entry.slot:
            self._downloaded[entry.raw] = None

    def pop_raw(self) -> bytes | None:
        """The next entry granted its turn (leased), or None; then :attr:`next_turn_ms` says
        how soon a host held back by its delay may be asked (None: no host waits for one).
        The host slots of the entries :meth:`downloaded` since the last pop are freed first."""
        downloaded = list(self._downloaded)
        raw = self.retry.call(self._pop, keys=[self.key, self.inflight_key, self.owners_key],
                              args=[self.lease_ms, self.worker_id, self.polite_window,
                                    "1" if self.randomize_delay else "0",
                                    "" if self.throttle is None else self.throttle.start_ms,
                                    *downloaded],
                              what="dequeue")
        for done in downloaded:
            self._downloaded.pop(done, None)
        if isinstance(raw, int):
            self.next_turn_ms = raw
            return None
        self.next_turn_ms = None
        return bytes(raw) if raw is not None else None

    def pop(self, timeout: int = 0, max_bad: int = 100) -> Entry | None:
        """The next entry, leased; unreadable entries are dead-lettered on the way. None when
        the queue is empty or none of the first ``polite_window`` entries' hosts may be asked
        now (pop.lua)."""
        for _ in range(max_bad):
            raw = self.pop_raw()
            if raw is None:
                return None
            try:
                return self.decode(raw)
            except SerializationError as exc:
                self.dead_letter(raw, str(exc))
        return None

    def adapt_delay(self, slot: HostSlot, latency: float, ok: bool) -> tuple[float, float]:
        """Move ``slot``'s shared AutoThrottle delay after a response that took ``latency``
        seconds (``ok``: its status was 200), as Scrapy's AutoThrottle moves a downloader slot's
        delay, its minimum being the slot's own delay; returns (old, new) delay in seconds.
        One atomic call (throttle.lua); requires :attr:`throttle`."""
        throttle = self.throttle
        if throttle is None:
            raise RuntimeError("adapt_delay needs a queue with a shared AutoThrottle")
        old, new = self.retry.call(
            self._throttle, keys=[slot.key + THROTTLE_SUFFIX],
            args=[latency * 1000, throttle.target_concurrency, slot.delay_ms, throttle.max_ms,
                  throttle.start_ms, "1" if ok else "0", throttle.ttl_ms],
            what="AutoThrottle delay")
        return float(old) / 1000, float(new) / 1000

    def dead_letter(self, raw: bytes, error: str) -> None:
        record = json.dumps({
            "ts": time.time(),
            "error": error,
            "raw_b64": base64.b64encode(raw).decode("ascii"),
        })

        def move() -> None:
            pipe = self.server.pipeline(transaction=True)
            pipe.zrem(self.inflight_key, raw)
            pipe.rpush(self.deadletter_key, record)
            pipe.ltrim(self.deadletter_key, -self.deadletter_max, -1)
            pipe.execute()

        self.retry.call(move, what="dead-letter")
        logger.error("Unreadable queue entry moved to %s: %s", self.deadletter_key, error)
        if self.on_dead_letter is not None:
            self.on_dead_letter(raw, error)

    def renew(self, raws: Sequence[bytes]) -> int:
        if not raws:
            return 0
        return int(self.retry.call(self._renew, keys=[self.inflight_key],
                              args=[self.lease_ms, *raws], what="lease renewal"))

    def reap(self, limit: int = 1000) -> int:
        """Move entries whose lease expired back to the queue; returns how many."""
        return int(self.retry.call(
            self._reap, keys=[self.inflight_key, self.key, self.seq_key, self.owners_key],
            args=[limit], what="reap expired leases"))

    def requeue(self, raw: bytes) -> bool:
        """Give a leased entry back to the queue (e.g. at shutdown)."""
        return bool(self.retry.call(
            self._requeue, keys=[self.inflight_key, self.key, self.seq_key, self.owners_key],
            args=[raw, self.worker_id], what="requeue"))

    def ack(
        self,
        entry: Entry,
        outcome: str,
        seen: Sequence[tuple[str, bytes]],
        day: int,
        max_attempts: int,
        *,
        failed_key: str | None = None,
        failed_ttl: int = 0,
        reason: str = "",
    ) -> int:
        """Remove a processed entry from the in-flight set and record its outcome.

        ``seen`` lists (shard key, member) to mark done on success or when giving up. A failed
        entry is added to ``failed_key`` (the run's set, TTL ``failed_ttl``) when given, so it is
        not queued again in this run, and kept in the retry hash with ``reason`` until a later
        run fetches it (:meth:`retry_records`). Returns ACK_* (ACK_LOST when the entry was no
        longer in flight).
        """
        keys = [self.inflight_key, self.pending_key, self.failures_key,
                failed_key or self.key + ":none", self.retry_key, self.owners_key,
                *(k for k, _ in seen)]
        record = json.dumps({"url": entry.request.url, "kind": entry.kind, "reason": reason,
                             "ts": int(time.time()), "entry": entry.raw.decode("utf-8")},
                            ensure_ascii=False)
        self._downloaded.pop(entry.raw, None)  # ack.lua frees its slot
        args: list[Any] = [entry.raw, outcome, entry.fp, "1" if entry.pending else "0", day,
                           max_attempts, failed_ttl if failed_key else 0, record,
                           self.worker_id, *(m for _, m in seen)]
        return int(self.retry.call(self._ack, keys=keys, args=args, what="ack"))

    def retry_records(self, count: int = 500) -> Iterator[tuple[bytes, dict[str, Any]]]:
        """(fingerprint, record) of every request whose last attempt failed (``ack``), to be
        queued again; a record that does not parse is yielded as ``{}``."""
        cursor = 0
        while True:
            cursor, batch = self.retry.call(self.server.hscan, self.retry_key, cursor,
                                            count=count, what="read failed requests")
            for fp, raw in batch.items():
                try:
                    record = json.loads(raw)
                except ValueError:
                    record = {}
                yield bytes(fp), record if isinstance(record, dict) else {}
            if not cursor:
                return

    def drop_sites(self, keep: Callable[[str], bool], batch: int = 1000) -> dict[str, int]:
        """Remove the queued entries whose site (meta ``newscrawl_site``) ``keep`` rejects, with
        their pending counts; returns site -> entries removed. For a run taken over with another
        sites file (run.py): its queue holds requests for sites no longer crawled."""
        dropped: dict[str, int] = {}
        cursor = 0
        while True:
            cursor, items = self.retry.call(self.server.zscan, self.key, cursor, count=batch,
                                            what="read the queue")
            doomed: list[tuple[bytes, str, bytes | None]] = []
            for raw, _score in items:
                try:
                    obj = json.loads(raw)
                    site = obj["r"]["meta"].get(SITE)
                    fp = bytes.fromhex(obj["fp"]) if obj.get("p") == 1 else None
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue
                if isinstance(site, str) and not keep(site):
                    doomed.append((bytes(raw), site, fp))
            if doomed:
                def remove(doomed: list[tuple[bytes, str, bytes | None]] = doomed) -> None:
                    pipe = self.server.pipeline(transaction=False)
                    for raw, _site, fp in doomed:
                        pipe.zrem(self.key, raw)
                        if fp is not None:
                            pipe.hincrby(self.pending_key, fp, -1)
                    pipe.execute()
                    # counts that reached zero go (push.lua treats an existing field as pending)
                    for _raw, _site, fp in doomed:
                        if fp is not None and int(self.server.hget(self.pending_key, fp) or 0) <= 0:
                            self.server.hdel(self.pending_key, fp)

                self.retry.call(remove, what="drop requests of removed sites")
                for _raw, site, _fp in doomed:
                    dropped[site] = dropped.get(site, 0) + 1
            if not cursor:
                return dropped

    def inherited(self, batch: int = 1000) -> Inherited:
        """What a run that takes over this queue will finish: per site the article entries that
        were queued as new links (not a retry, a redirect's hop or a forced request), and the
        source pages queued. One pass over the queue (ZSCAN), made once by the worker that claims
        a run."""
        counts: dict[str, int] = {}
        sources: list[bytes] = []
        ordered: list[OrderedLink] = []

        def whole(value: Any) -> int | None:  # an int of the meta, else None
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        cursor = 0
        while True:
            cursor, items = self.retry.call(self.server.zscan, self.key, cursor, count=batch,
                                            what="read the queue")
            for raw, _score in items:
                try:
                    obj = json.loads(raw)
                    if obj.get("k") in RUN_KINDS:
                        sources.append(bytes.fromhex(obj["fp"]))
                    meta = obj["r"]["meta"]
                    site = meta.get(SITE)
                    first = obj.get("k") == RequestKind.ARTICLE and obj.get("p") == 1 \
                        and not obj.get("o") and not obj["r"].get("dont_filter")
                    number, url = meta.get(ORDER), obj["r"]["url"]
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue
                if first and isinstance(site, str):
                    counts[site] = counts.get(site, 0) + 1
                if obj.get("k") == RequestKind.ARTICLE and isinstance(site, str) \
                        and whole(number) is not None and isinstance(url, str):
                    numbered_by = meta.get(ORDER_RUN)
                    ordered.append(((numbered_by if isinstance(numbered_by, str) else "",
                                     int(number)), site, url, whole(meta.get(ORDER_DAY)),
                                    whole(meta.get(ORDER_TIMED_DAY))))
            if not cursor:
                return Inherited(counts, sources, ordered)

    def mark_queued_this_run(self, listseen_key: str, fps: Sequence[bytes], ttl: int) -> None:
        """Record fingerprints as queued in this run (its failed-this-run set, ``listseen``):
        source pages an earlier run queued, now this run's, so that seeding the start pages or
        the retries does not queue them twice; articles queued again from the retry hash, so
        that this run's links to them are not (their one attempt of the run)."""
        def record() -> None:
            pipe = self.server.pipeline(transaction=True)
            pipe.sadd(listseen_key, *fps)
            pipe.expire(listseen_key, ttl)
            pipe.execute()

        if fps:
            self.retry.call(record, what="record what this run queued")

    def forget_retry(self, fp: bytes) -> None:
        self.retry.call(self.server.hdel, self.retry_key, fp, what="forget a failed request")

    def mark_done(self, seen: Sequence[tuple[str, bytes]], day: int) -> None:
        if seen:
            self.retry.call(self._mark_done, keys=[k for k, _ in seen],
                       args=[day, *(m for _, m in seen)], what="mark done")

    def clear(self) -> None:
        self.retry.call(self.server.delete, self.key, self.inflight_key, self.seq_key,
                   self.key + ":hosts", what="clear queue")
