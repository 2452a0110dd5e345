"""``SimhashIndex``: the near-duplicate index of 64-bit simhash fingerprints in Redis (Manku et
al., WWW 2007), its Python API over the Lua scripts of ``scripts.py``. Each operation is one
atomic script call. Design, layout and measurements: docs/design/index.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from newscrawl.defaults import COMPACT_HASH_CONFIG, MAX_DISTANCE
from newscrawl.defaults import REDIS_PREFIX as DEFAULT_PREFIX
from newscrawl.errors import ExitCode, SystemFaultError
from newscrawl.formats import as_text, day_number, plural
from newscrawl.index.records import (
    BAND_BLOCKS,
    BLOCK_BITS,
    BLOCKS,
    FINGERPRINT_BITS,
    INDEX_LAYOUT,
    blocks_of,
    check_fingerprint,
    field_of,
    find_record,
    glob_escape,
    layout_version,
    parse_record,
    split_records,
)
from newscrawl.index.scripts import INCOMPATIBLE, LOST, IndexScripts
from newscrawl.keys import simhash_bucket
from newscrawl.simhash.sketch import DEFAULT_THRESHOLDS, SKETCH_BYTES, Thresholds

__all__ = [
    "BAND_BLOCKS",
    "BLOCKS",
    "BLOCK_BITS",
    "BUCKET_DISTANCE",
    "COMPACT_HASH_CONFIG",
    "FINGERPRINT_BITS",
    "INDEX_LAYOUT",
    "MAX_SUPPORTED_DISTANCE",
    "IncompatibleIndexError",
    "Match",
    "SimhashIndex",
    "blocks_of",
    "check_fingerprint",
    "ensure_compact_encoding",
    "field_of",
    "layout_version",
    "parse_record",
    "split_records",
]

logger = logging.getLogger(__name__)

#: Largest distance found by reading only the fingerprint's own four buckets (BLOCKS - 1):
#: a fingerprint within it agrees exactly with the query on at least one block (pigeonhole).
BUCKET_DISTANCE = BLOCKS - 1
#: Largest distance the index finds. Up to 2 * BLOCKS - 1 some block differs in at most one
#: bit, so max_distance 4-7 reads each block's bucket and its 16 one-bit neighbours (68 buckets).
MAX_SUPPORTED_DISTANCE = 2 * BLOCKS - 1

_INCOMPATIBLE = INCOMPATIBLE + " "
_LOST = LOST + " "

REBUILD_HINT = (
    "To rebuild it from the stored articles, into a new data directory (or under another "
    "prefix): cat <data dir>/articles/*.jsonl | newscrawl --data-dir NEW_DIR dedup --jsonl - "
    "> /dev/null (see docs/operations.md, 'Upgrading an index')."
)


class IncompatibleIndexError(SystemFaultError, RuntimeError):
    """The index was built with a different decision (fingerprint and sketch) version."""

    kind = "index"

    def __init__(self, stored: str, requested: str) -> None:
        self.stored = stored
        self.requested = requested
        super().__init__(
            f"the simhash index holds fingerprints of version {stored!r} but this writer computes "
            f"version {requested!r}; fingerprints of different versions are not comparable",
            f"Use another NEWSCRAWL_REDIS_PREFIX or rebuild the index for version {requested!r}. "
            + REBUILD_HINT)


class IndexLostError(SystemFaultError, RuntimeError):
    """The index is not the one this client watched (:meth:`SimhashIndex.watch`): Redis lost
    its data, or it was deleted, while the client used it. Nothing was added."""

    kind = "index"
    exit_code = ExitCode.REDIS_UNAVAILABLE

    def __init__(self, expected: str, found: str) -> None:
        self.expected = expected
        self.found = found
        super().__init__(
            "the near-duplicate index in Redis is gone or was replaced while the crawl used it"
            + (" (now an index begun at " + found + ")" if found else "")
            + ": Redis lost its data (restarted without persistence, flushed, failed over to an"
            " empty replica) or the index was deleted (`newscrawl reset`)",
            "The crawl stops so that no near-duplicate is stored against what is left; the next"
            " crawl rebuilds the index from the article store before its first check")


@dataclass(frozen=True)
class Match:
    """A stored fingerprint near the one looked up."""

    doc_id: str
    fingerprint: int
    distance: int


def ensure_compact_encoding(client: redis.Redis) -> bool:
    """Raise (never lower) the server's listpack limits for hashes, best effort.

    Returns True when the limits are at least ``COMPACT_HASH_CONFIG``; logs a warning and returns
    False when the server refuses CONFIG GET/SET (managed Redis often does).
    """
    ok = True
    for name, wanted in COMPACT_HASH_CONFIG.items():
        try:
            current_raw = client.config_get(name).get(name)
            current = int(current_raw) if current_raw is not None else 0
            if current < wanted:
                client.config_set(name, wanted)
                logger.info("Raised Redis %s from %s to %s", name, current, wanted)
        except (redis.ResponseError, ValueError) as exc:
            ok = False
            logger.warning(
                "Could not raise Redis %s to %s (%s); simhash buckets may use more memory. "
                "Set it in redis.conf: '%s %s'",
                name,
                wanted,
                exc,
                name,
                wanted,
            )
    return ok


class SimhashIndex:
    """Redis index of 64-bit fingerprints, near-duplicate lookups by Hamming distance."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        max_distance: int = MAX_DISTANCE,
        version: str | None = None,
        retention_days: int | None = None,
        clock: Callable[[], float] = time.time,
        tune_server: bool = True,
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
    ) -> None:
        if isinstance(max_distance, bool) or not isinstance(max_distance, int):
            raise TypeError("max_distance must be an int")
        if not 0 <= max_distance <= MAX_SUPPORTED_DISTANCE:
            raise ValueError(
                f"max_distance must be between 0 and {MAX_SUPPORTED_DISTANCE}, got {max_distance}: "
                f"the index splits 64-bit fingerprints into {BLOCKS} blocks of {BLOCK_BITS} bits, "
                f"and only distances below {2 * BLOCKS} are guaranteed to leave one block with "
                f"at most one differing bit (pigeonhole)"
            )
        if retention_days is not None and retention_days < 1:
            raise ValueError(f"retention_days must be >= 1 or None, got {retention_days}")
        if not prefix:
            raise ValueError("prefix must not be empty")
        self.client = client
        self.prefix = prefix
        self.max_distance = max_distance
        self.version = layout_version(version)
        self.retention_days = retention_days
        self.clock = clock
        self.thresholds = thresholds
        self._tune_server = tune_server
        self._tuned = False
        self._scripts = IndexScripts(client, prefix, self.version or "", max_distance, thresholds)
        self.meta_key = self._scripts.meta_key
        #: with :meth:`watch`: the index's creation mark as this client saw it, else None
        self.created: str | None = None

    def close(self) -> None:
        """Nothing to give back: each call checks a connection out of the client's pool and
        returns it (the client owns its connections). Kept, with ``with``, so callers can end an
        index's use in one place. Idempotent; the index still works afterwards."""

    def __enter__(self) -> SimhashIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- helpers ----------------------------------------------------------------------------
    def bucket_keys(self, fingerprint: int) -> list[str]:
        """The four bucket keys of a fingerprint (block 0 first)."""
        return [simhash_bucket(self.prefix, i, b) for i, b in enumerate(blocks_of(fingerprint))]

    def today(self) -> int:
        return day_number(self.clock())

    def _maybe_tune(self) -> None:
        if self._tune_server and not self._tuned:
            self._tuned = True
            ensure_compact_encoding(self.client)

    def _days(self, now: float) -> tuple[int, int]:
        """Today's day number at ``now`` and the oldest day still compared (-1: no retention)."""
        today = day_number(now)
        return today, -1 if self.retention_days is None else today - self.retention_days

    def _call(self, call: Callable[[], Any]) -> Any:
        """One script call (redis-py's ``Script``: EVALSHA, on NOSCRIPT loaded and run again);
        the script's refusals as :class:`IncompatibleIndexError` or :class:`IndexLostError`."""
        try:
            return call()
        except redis.ResponseError as exc:
            self._raise_refusal(exc)
            raise

    def _raise_refusal(self, error: redis.ResponseError) -> None:
        """IncompatibleIndexError if ``error`` is the script's refusal of another version;
        IndexLostError if it is its refusal of another index than the one watched."""
        stored = str(error)
        if stored.startswith(_INCOMPATIBLE):
            raise IncompatibleIndexError(stored[len(_INCOMPATIBLE) :], self.version or "") from None
        if stored.startswith(LOST):
            raise IndexLostError(self.created or "", stored[len(_LOST):].strip()) from None

    def watch(self) -> None:
        """From now on, :meth:`check_and_add` adds only to the index this client sees now: an
        index lost meanwhile (Redis restarted without its data, flushed, the index deleted)
        raises :class:`IndexLostError` instead of being begun again from nothing, against which
        every near-duplicate would pass. The index's creation mark (its meta hash's ``created``,
        set here when it has none) is what tells them apart; one round trip."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hsetnx(self.meta_key, "created", repr(self.clock()))
        pipe.hget(self.meta_key, "created")
        self.created = as_text(pipe.execute()[1])

    def check_watched(self) -> None:
        """:class:`IndexLostError` when the index watched (:meth:`watch`) is gone or another
        (one HGET; nothing when not watching): for a client that may not write for a while."""
        if self.created is None:
            return
        found = as_text(self.client.hget(self.meta_key, "created") or b"")
        if found != self.created:
            raise IndexLostError(self.created, found)

    @staticmethod
    def _matches(flat: list[Any]) -> list[Match]:
        return [
            Match(
                doc_id=as_text(flat[i + 2]),
                fingerprint=int(as_text(flat[i + 1]), 16),
                distance=int(flat[i]),
            )
            for i in range(0, len(flat), 3)
        ]

    @staticmethod
    def _check_sketch(sketch: bytes | None) -> bytes | None:
        if sketch is None or sketch == b"":
            return None
        if not isinstance(sketch, bytes | bytearray) or len(sketch) != SKETCH_BYTES:
            raise ValueError(f"sketch must be {SKETCH_BYTES} bytes (newscrawl.simhash.sketch)")
        return bytes(sketch)

    def band_keys(self, sketch: bytes) -> list[str]:
        """The band bucket keys of a text sketch (``{prefix}:simhash:2:{value}``, ``...:3:...``)."""
        return self._scripts.band_keys(sketch)

    @staticmethod
    def _check_doc_id(doc_id: str) -> str:
        if not isinstance(doc_id, str) or not doc_id:
            raise ValueError("doc_id must be a non-empty string")
        return doc_id

    # --- public API -------------------------------------------------------------------------
    def check_and_add(
        self, fingerprint: int, doc_id: str, sketch: bytes | None = None
    ) -> Match | None:
        """The nearest stored fingerprint within ``max_distance``; if none, store this one.

        With the text's ``sketch`` (``newscrawl.simhash.Decision.analyze``), a candidate stored
        with a sketch is a match only if the sketches confirm it (``newscrawl.simhash.sketch``,
        ``confirms``), and candidates are also looked up by the sketch's two band buckets, at
        any distance (their ``Match.distance`` can exceed ``max_distance``); the sketch is stored
        with the fingerprint. Without one, the decision is on the fingerprint alone.

        Atomic (one Lua script): of two concurrent near-duplicates exactly one is added.
        Safe to repeat: this fingerprint already stored under this same ``doc_id`` (a repeated
        call, or a call sent again after its reply was lost on a broken connection, as redis-py
        retries do) comes back as ``Match(doc_id, fingerprint, 0)`` and nothing is added twice;
        compare ``match.doc_id`` with your ``doc_id`` to tell it from a near-duplicate.
        """
        self._check_doc_id(doc_id)
        self._maybe_tune()
        f, sketch, now = check_fingerprint(fingerprint), self._check_sketch(sketch), self.clock()
        today, min_day = self._days(now)
        found = self._matches(
            self._call(lambda: self._scripts.check_add(f, doc_id, today, min_day, now, sketch,
                                                       expected=self.created))
        )
        return found[0] if found else None

    def query(self, fingerprint: int, sketch: bytes | None = None) -> list[Match]:
        """Stored fingerprints within ``max_distance`` (with a ``sketch``: those it confirms, as
        ``check_and_add`` decides), nearest first, one match for each doc stored with such a
        fingerprint (docs sharing one in the order stored); adds nothing."""
        f, sketch = check_fingerprint(fingerprint), self._check_sketch(sketch)
        min_day = self._days(self.clock())[1]
        return self._matches(self._call(lambda: self._scripts.query(f, min_day, sketch)))

    def add(self, fingerprint: int, doc_id: str, sketch: bytes | None = None) -> None:
        """Store a fingerprint unconditionally (a record of this doc id replaces this doc's earlier
        one; other docs stored with the same fingerprint keep theirs)."""
        self._check_doc_id(doc_id)
        self._maybe_tune()
        f, sketch, now = check_fingerprint(fingerprint), self._check_sketch(sketch), self.clock()
        self._call(lambda: self._scripts.add(f, doc_id, day_number(now), now, sketch))

    def remove(self, fingerprint: int, doc_id: str | None = None) -> bool:
        """Delete a stored fingerprint, or with ``doc_id`` only that doc's record of it (the
        fingerprint stays while another doc's record is left). True if it was deleted by this call
        (False when a call sent again after a lost reply finds it gone)."""
        f = check_fingerprint(fingerprint)
        return bool(self._call(lambda: self._scripts.remove(f, doc_id or "")))

    def stored_day(self, fingerprint: int, doc_id: str) -> int | None:
        """The day (days since 1970-01-01, UTC) ``fingerprint`` was stored under ``doc_id``, or
        None if it is not stored under that doc id. One HGET of its block-0 value (the doc's
        record among those of every doc stored with that fingerprint)."""
        record = find_record(self._block0_value(fingerprint), doc_id)
        return None if record is None else record.day

    def stored_sketch(self, fingerprint: int, doc_id: str) -> bytes | None:
        """The text sketch stored with ``fingerprint`` under ``doc_id`` (None: not stored, or
        stored without a sketch). One HGET, as :meth:`stored_day`."""
        record = find_record(self._block0_value(fingerprint), doc_id)
        return None if record is None else record.sketch

    def _block0_value(self, fingerprint: int) -> Any:
        return self.client.hget(self.bucket_keys(fingerprint)[0], field_of(fingerprint, 0))

    def add_many(
        self,
        items: Iterable[tuple[int, str] | tuple[int, str, bytes | None]],
        *,
        batch_size: int = 5000,
    ) -> int:
        """Bulk-store ``(fingerprint, doc_id)`` or ``(fingerprint, doc_id, sketch)`` items without
        near-duplicate checks (pipelined).

        For loading or rebuilding an index. Returns the number of new fingerprints.
        """
        self._maybe_tune()
        added = 0
        pipe = self.client.pipeline(transaction=False)
        pending = 0
        now = self.clock()
        today = day_number(now)
        for item in items:
            fingerprint, doc_id = item[0], item[1]
            sketch = self._check_sketch(item[2] if len(item) > 2 else None)
            self._check_doc_id(doc_id)
            f = check_fingerprint(fingerprint)
            # the pipeline loads the script if needed
            self._scripts.add(f, doc_id, today, now, sketch, client=pipe)
            pending += 1
            if pending >= batch_size:
                added += self._flush(pipe)
                pending = 0
        if pending:
            added += self._flush(pipe)
        return added

    def check_many(
        self, items: Sequence[tuple[int, str, bytes | None]], *, add: bool = True
    ) -> list[Match | None]:
        """``check_and_add`` (or, with ``add=False``, the nearest ``query`` match) of each
        ``(fingerprint, doc_id, sketch)`` in order, in one pipeline.

        The same decisions as one call each, in the same order: the server runs the scripts one
        after the other, so item k sees items < k (atomic each, not as a batch). The first error
        is raised (the other items have run: see :meth:`check_each` to know which).
        """
        out: list[Match | None] = []
        for result in self.check_each(items, add=add):
            if isinstance(result, redis.ResponseError):
                raise result
            out.append(result)
        return out

    def check_each(
        self, items: Sequence[tuple[int, str, bytes | None]], *, add: bool = True
    ) -> list[Match | None | redis.ResponseError]:
        """:meth:`check_many`, with the error of each item that failed in its place (Redis runs
        the items after a failed one too: e.g. an item refused for a wrong-typed bucket key, the
        next one added). ``None``: no match (with ``add``, the item was added). An index of
        another version raises :class:`IncompatibleIndexError`; a lost connection raises (Redis
        ran a first part of the items, in order)."""
        self._maybe_tune()
        now = self.clock()
        today, min_day = self._days(now)
        pipe = self.client.pipeline(transaction=False)
        for fingerprint, doc_id, sketch in items:
            f = check_fingerprint(fingerprint)
            if add:
                self._check_doc_id(doc_id)
            sk = self._check_sketch(sketch)
            if add:
                self._scripts.check_add(f, doc_id, today, min_day, now, sk, client=pipe)
            else:
                self._scripts.query(f, min_day, sk, client=pipe)
        out: list[Match | None | redis.ResponseError] = []
        for result in pipe.execute(raise_on_error=False):
            if isinstance(result, redis.ResponseError):
                self._raise_refusal(result)
                out.append(result)
                continue
            found = self._matches(result)
            out.append(found[0] if found else None)
        return out

    def _flush(self, pipe: Any) -> int:
        results = pipe.execute(raise_on_error=False)
        added = 0
        for result in results:
            if isinstance(result, redis.ResponseError):
                self._raise_refusal(result)
                raise result
            added += int(result)
        return added

    def prune(self, retention_days: int | None = None, *, batch_keys: int = 200) -> int:
        """Delete fingerprints older than ``retention_days`` (default: the index's setting).

        Scans the block-0 buckets with SCAN; each batch of buckets is pruned atomically by one
        Lua script. Returns the number of fingerprints deleted (a fingerprint several docs
        share loses its expired records and goes with its last one).
        """
        days = self.retention_days if retention_days is None else retention_days
        if days is None:
            raise ValueError("prune() needs retention_days (the index has no retention set)")
        if days < 1:
            raise ValueError(f"retention_days must be >= 1, got {days}")
        min_day = self.today() - days
        pattern = glob_escape(self.prefix) + ":simhash:0:*"
        deleted = 0
        batch: list[str] = []
        for key in self.client.scan_iter(match=pattern, count=1000):
            batch.append(as_text(key))
            if len(batch) >= batch_keys:
                deleted += int(self._scripts.prune(batch, min_day))
                batch = []
        if batch:
            deleted += int(self._scripts.prune(batch, min_day))
        # what was pruned is not wanted back: an index a prune emptied is not rebuilt from the
        # article store's older days (newscrawl.pipelines.reconcile)
        before = self.pruned_before()
        if before is None or before < min_day:
            self.client.hset(self.meta_key, "pruned_before", str(min_day))
        if deleted:
            logger.info("Pruned %s older than %s", plural(deleted, "fingerprint"),
                        plural(days, "day"))
        return deleted

    def pruned_before(self) -> int | None:
        """The day (number) before which the last prune deleted fingerprints (None: never
        pruned)."""
        value = self.client.hget(self.meta_key, "pruned_before")
        return None if value is None else int(value)

    def stored_version(self) -> str | None:
        """The fingerprint configuration version recorded in the index (None if not set)."""
        value = self.client.hget(self.meta_key, "version")
        return None if value is None else as_text(value)

    def check_version(self) -> None:
        """IncompatibleIndexError if the index holds fingerprints of another version (the check
        every write makes, asked before the first one)."""
        stored = self.stored_version()
        if stored is not None and self.version is not None and stored != self.version:
            raise IncompatibleIndexError(stored, self.version)

    def count(self) -> int:
        """Number of stored fingerprints (from the meta counter)."""
        value = self.client.hget(self.meta_key, "count")
        return 0 if value is None else int(value)
