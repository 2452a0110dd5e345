"""Near-duplicate index of 64-bit simhash fingerprints in Redis (Manku et al., WWW 2007).

A fingerprint is split into four 16-bit blocks (block 0 = most significant bits). Two
fingerprints at Hamming distance <= 3 differ in at most three blocks, so by pigeonhole they agree
exactly on at least one: looking up the four buckets ``{prefix}:simhash:{block}:{value:04x}`` of a
fingerprint finds every stored fingerprint within distance 3. That guarantee stops at 3 (distance 4
can put one differing bit in each block). For ``max_distance`` 4-7 (opt-in) the script also reads
each block's 16 one-bit neighbour buckets: at distance <= 7 some block differs in at most one bit.
Same data, same keys; 68 buckets read instead of 4. ``max_distance > 7`` is rejected.

Layout per stored fingerprint (compact; see docs/design/index.md for measurements):

* field = the fingerprint's six big-endian bytes outside the bucket's block (the key holds the
  other two; ``field_of``) in each of its four bucket hashes;
* block-0 bucket value = ``"<day>:<doc id>"`` (the doc id, usually a URL, is stored once), or
  with the text sketch (``newscrawl.simhash.sketch``, 34 bytes) ``<code><day><sketch><rest>``:
  a code byte (1: the doc id as is, 2: it starts with ``https://``, 3: ``http://``, 4:
  ``https://www.``, 5: ``http://www.``; ``rest`` leaves that prefix out), the day in 2
  big-endian bytes (days 0-65535, to 2149), the sketch and the rest of the doc id
  (``parse_record``); the day (days since the Unix epoch) is what retention and prune read;
  several docs stored with the same fingerprint (texts their sketches tell apart) each keep a
  record in that one value: ``\\0`` then ``(<2-byte length><record>)*`` (``split_records``);
* blocks 1-3 values = ``""``;
* with a sketch, the fingerprint (8 bytes) is also a field of its two band buckets, which are
  block hashes: ``{prefix}:simhash:2:{band 0}`` and ``{prefix}:simhash:3:{band 1}`` (value: one
  4-bit check value in decimal; the field length tells a band entry from a block entry).

With a sketch, a candidate stored with one is a match only if the sketches confirm it, and the
band buckets add candidates at any distance (see ``check_and_add``; docs/design/near-duplicates.md).

All reads and writes of one operation run in ONE Lua script, called through redis-py's
``Script`` (``EVALSHA``; on ``NOSCRIPT`` loaded and run again; in pipelines too), so two workers
adding near-duplicates concurrently cannot both be accepted. Fingerprints never travel to Lua as
numbers (Lua numbers are doubles).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis

from newscrawl.defaults import COMPACT_HASH_CONFIG, MAX_DISTANCE
from newscrawl.defaults import REDIS_PREFIX as DEFAULT_PREFIX
from newscrawl.errors import SystemFaultError
from newscrawl.formats import day_number
from newscrawl.redis.keys import SIMHASH_BUCKET, SIMHASH_META, simhash_bucket
from newscrawl.simhash.sketch import BANDS, DEFAULT_THRESHOLDS, SKETCH_BYTES, Thresholds

logger = logging.getLogger(__name__)


FINGERPRINT_BITS = 64
BLOCKS = 4
BLOCK_BITS = 16
#: Largest distance found by reading only the fingerprint's own four buckets (BLOCKS - 1):
#: a fingerprint within it agrees exactly with the query on at least one block (pigeonhole).
BUCKET_DISTANCE = BLOCKS - 1
#: Largest distance the index finds. Up to 2 * BLOCKS - 1 some block differs in at most one
#: bit, so max_distance 4-7 reads each block's bucket and its 16 one-bit neighbours (68
#: buckets: about 17x the candidates, 7-10x fewer checks/s at 1M; docs/design/index.md).
MAX_SUPPORTED_DISTANCE = 2 * BLOCKS - 1
#: The blocks whose hashes hold the text sketch's band entries ({prefix}:simhash:2:{band 0},
#: {prefix}:simhash:3:{band 1}; 8-byte fields beside the blocks' 6-byte ones), as index.lua's
#: BAND0_BLOCK, BAND1_BLOCK.
BAND_BLOCKS = (2, 3)
assert len(BAND_BLOCKS) == BANDS, "one block hash per band (index.lua)"

_INCOMPATIBLE = "NEWSCRAWL_INCOMPATIBLE_INDEX "


def _load_lua(name: str) -> str:
    return resources.files("newscrawl.index").joinpath("lua", name).read_text(encoding="utf-8")


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


@dataclass(frozen=True)
class Match:
    """A stored fingerprint near the one looked up."""

    doc_id: str
    fingerprint: int
    distance: int


def check_fingerprint(fingerprint: int) -> int:
    """``fingerprint`` if it is an unsigned 64-bit int, else ValueError/TypeError."""
    if isinstance(fingerprint, bool) or not isinstance(fingerprint, int):
        raise TypeError(f"fingerprint must be an int, not {type(fingerprint).__name__}")
    if not 0 <= fingerprint < 1 << FINGERPRINT_BITS:
        raise ValueError(f"fingerprint must be an unsigned 64-bit int, got {fingerprint}")
    return fingerprint


def blocks_of(fingerprint: int) -> tuple[int, int, int, int]:
    """The four 16-bit blocks, most significant first."""
    f = check_fingerprint(fingerprint)
    return ((f >> 48) & 0xFFFF, (f >> 32) & 0xFFFF, (f >> 16) & 0xFFFF, f & 0xFFFF)


def field_of(fingerprint: int, block: int) -> bytes:
    """The field of ``fingerprint`` in its bucket hash of ``block`` (0-3): its six bytes outside
    that block (the bucket's key holds the other two), big-endian."""
    raw = check_fingerprint(fingerprint).to_bytes(8, "big")
    return raw[: 2 * block] + raw[2 * block + 2 :]


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


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




#: The storage layout of the index's records (newscrawl/index/lua/index.lua): bucket fields without
#: the bucket's own block (six bytes), empty block 1-3 values, band entries in the hashes of blocks
#: 2 and 3, sketch records with a binary day and a code for the URL scheme, several records of
#: docs sharing one fingerprint in its block-0 value. It is part of every
#: version the index records, so an index written in another layout is refused, not misread.
INDEX_LAYOUT = "ix5"


def layout_version(version: str | None) -> str | None:
    """The version an index records and checks for ``version``: ``"<version>/<INDEX_LAYOUT>"``
    (None: unchecked, as before)."""
    return None if version is None else f"{version}/{INDEX_LAYOUT}"


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
        self.meta_key = SIMHASH_META.format(prefix=prefix)
        self._tune_server = tune_server
        self._tuned = False
        # keys.SIMHASH_BUCKET with prefix and block filled in (Python), and as a Lua format
        # string (Lua names the other buckets of fingerprints it deletes or looks up).
        escaped = prefix.replace("{", "{{").replace("}", "}}")
        self._bucket_templates = tuple(
            SIMHASH_BUCKET.replace("{prefix}", escaped).replace("{block}", str(block))
            for block in range(BLOCKS)
        )
        self._lua_bucket_format = (
            SIMHASH_BUCKET.replace("%", "%%")
            .replace("{prefix}", prefix.replace("%", "%%"))
            .replace("{block}", "%d")
            .replace("{value:04x}", "%04x")
        )
        self._script = client.register_script(_load_lua("index.lua"))
        self._prune_script = client.register_script(_load_lua("prune.lua"))

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

    def _run(self, mode: str, fingerprint: int, doc_id: str = "", sketch: bytes | None = None
             ) -> Any:
        f = check_fingerprint(fingerprint)
        sketch = self._check_sketch(sketch)
        now = self.clock()
        today = day_number(now)
        days = self.retention_days
        min_day = -1 if days is None else today - days
        keys, args = self._keys_args(mode, f, doc_id, today, min_day, now, sketch)
        try:
            # redis-py's Script: EVALSHA, on NOSCRIPT (SCRIPT FLUSH, a restarted server) loaded
            # and run again; reconnects and retries follow the client's retry policy.
            return self._script(keys, args)
        except redis.ResponseError as exc:
            self._raise_incompatible(exc)
            raise

    def _raise_incompatible(self, error: redis.ResponseError) -> None:
        """IncompatibleIndexError if ``error`` is the script's refusal of another version."""
        stored = str(error)
        if stored.startswith(_INCOMPATIBLE):
            raise IncompatibleIndexError(stored[len(_INCOMPATIBLE) :], self.version or "") from None

    def _keys_args(
        self,
        mode: str,
        f: int,
        doc_id: str,
        today: int,
        min_day: int,
        now: float,
        sketch: bytes | None = None,
    ) -> tuple[list[str], list[Any]]:
        """KEYS and ARGV of the index script (newscrawl/index/lua/index.lua)."""
        t0, t1, t2, t3 = self._bucket_templates
        keys = [
            self.meta_key,
            t0.format(value=f >> 48),
            t1.format(value=(f >> 32) & 0xFFFF),
            t2.format(value=(f >> 16) & 0xFFFF),
            t3.format(value=f & 0xFFFF),
        ]
        args: list[Any] = [
            mode,
            f.to_bytes(8, "big"),
            self.version or "",
            self.max_distance,
            today,
            min_day,
            doc_id,
            self._lua_bucket_format,
            repr(now),
        ]
        if sketch:
            keys += self.band_keys(sketch)
            t = self.thresholds
            args += [sketch, t.text, t.numbers, t.wide, t.support, t.chance]
        return keys, args

    @staticmethod
    def _matches(flat: list[Any]) -> list[Match]:
        return [
            Match(
                doc_id=_text(flat[i + 2]),
                fingerprint=int(_text(flat[i + 1]), 16),
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
        return [
            simhash_bucket(self.prefix, block, int.from_bytes(sketch[2 + 2 * k : 4 + 2 * k], "big"))
            for k, block in enumerate(BAND_BLOCKS)
        ]

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
        found = self._matches(self._run("check_add", fingerprint, doc_id, sketch))
        return found[0] if found else None

    def query(self, fingerprint: int, sketch: bytes | None = None) -> list[Match]:
        """Stored fingerprints within ``max_distance`` (with a ``sketch``: those it confirms, as
        ``check_and_add`` decides), nearest first, one match for each doc stored with such a
        fingerprint (docs sharing one in the order stored); adds nothing."""
        return self._matches(self._run("query", fingerprint, "", sketch))

    def add(self, fingerprint: int, doc_id: str, sketch: bytes | None = None) -> None:
        """Store a fingerprint unconditionally (a record of this doc id replaces this doc's earlier
        one; other docs stored with the same fingerprint keep theirs)."""
        self._check_doc_id(doc_id)
        self._maybe_tune()
        self._run("add", fingerprint, doc_id, sketch)

    def remove(self, fingerprint: int, doc_id: str | None = None) -> bool:
        """Delete a stored fingerprint, or with ``doc_id`` only that doc's record of it (the
        fingerprint stays while another doc's record is left). True if it was deleted by this call
        (False when a call sent again after a lost reply finds it gone)."""
        return bool(self._run("remove", fingerprint, doc_id or ""))

    def stored_day(self, fingerprint: int, doc_id: str) -> int | None:
        """The day (days since 1970-01-01, UTC) ``fingerprint`` was stored under ``doc_id``, or
        None if it is not stored under that doc id. One HGET of its block-0 value (the doc's
        record among those of every doc stored with that fingerprint)."""
        raw = self.client.hget(self.bucket_keys(fingerprint)[0], field_of(fingerprint, 0))
        if raw is None:
            return None
        for part in split_records(raw):
            record = parse_record(part)
            if record is not None and record[1] == doc_id:
                return record[0]
        return None

    def stored_sketch(self, fingerprint: int, doc_id: str) -> bytes | None:
        """The text sketch stored with ``fingerprint`` under ``doc_id`` (None: not stored, or
        stored without a sketch). One HGET, as :meth:`stored_day`."""
        raw = self.client.hget(self.bucket_keys(fingerprint)[0], field_of(fingerprint, 0))
        for part in split_records(raw) if raw is not None else ():
            record = parse_record(part)
            if record is not None and record[1] == doc_id:
                return record[2]
        return None

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
        today, now = self.today(), self.clock()
        for item in items:
            fingerprint, doc_id = item[0], item[1]
            sketch = self._check_sketch(item[2] if len(item) > 2 else None)
            self._check_doc_id(doc_id)
            f = check_fingerprint(fingerprint)
            keys, args = self._keys_args("add", f, doc_id, today, -1, now, sketch)
            self._script(keys, args, client=pipe)  # the pipeline loads the script if needed
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
        today = day_number(now)
        days = self.retention_days
        min_day = -1 if days is None else today - days
        mode = "check_add" if add else "query"
        pipe = self.client.pipeline(transaction=False)
        for fingerprint, doc_id, sketch in items:
            f = check_fingerprint(fingerprint)
            if add:
                self._check_doc_id(doc_id)
            keys, args = self._keys_args(
                mode, f, doc_id if add else "", today, min_day, now, self._check_sketch(sketch)
            )
            self._script(keys, args, client=pipe)
        out: list[Match | None | redis.ResponseError] = []
        for result in pipe.execute(raise_on_error=False):
            if isinstance(result, redis.ResponseError):
                self._raise_incompatible(result)
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
                self._raise_incompatible(result)
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
        pattern = _glob_escape(self.prefix) + ":simhash:0:*"
        deleted = 0
        batch: list[str] = []
        for key in self.client.scan_iter(match=pattern, count=1000):
            batch.append(_text(key))
            if len(batch) >= batch_keys:
                deleted += int(
                    self._prune_script(
                        keys=[self.meta_key, *batch], args=[min_day, self._lua_bucket_format]
                    )
                )
                batch = []
        if batch:
            deleted += int(
                self._prune_script(
                    keys=[self.meta_key, *batch], args=[min_day, self._lua_bucket_format]
                )
            )
        if deleted:
            logger.info("Pruned %d fingerprints older than %d days", deleted, days)
        return deleted

    def stored_version(self) -> str | None:
        """The fingerprint configuration version recorded in the index (None if not set)."""
        value = self.client.hget(self.meta_key, "version")
        return None if value is None else _text(value)

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


#: Doc id prefixes a record with a sketch names by its first byte (index.lua's DOC_PREFIXES).
DOC_PREFIXES = {1: b"", 2: b"https://", 3: b"http://", 4: b"https://www.", 5: b"http://www."}


def split_records(raw: bytes | str) -> list[bytes]:
    """The records of a block-0 value (index.lua's split_records): the value itself, or, when
    several docs are stored with the same fingerprint, ``b"\\0"`` then
    ``(<2-byte big-endian length><record>)*`` (no record starts with byte 0)."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8")
    if not data or data[0] != 0:
        return [data]
    out: list[bytes] = []
    pos = 1
    while pos + 2 <= len(data):
        n = int.from_bytes(data[pos : pos + 2], "big")
        out.append(data[pos + 2 : pos + 2 + n])
        pos += 2 + n
    return out


def parse_record(raw: bytes | str) -> tuple[int, str, bytes | None] | None:
    """(day, doc id, sketch or None) of a block-0 value ``"<day>:<doc id>"`` or
    ``<code><2-byte day><sketch><doc id less the code's prefix>``; None when unreadable (as
    index.lua's parse_record)."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8")
    prefix = DOC_PREFIXES.get(data[0]) if data else None
    if prefix is not None:
        if len(data) < 3 + SKETCH_BYTES:
            return None
        day = int.from_bytes(data[1:3], "big")
        return day, _text(prefix + data[3 + SKETCH_BYTES :]), data[3 : 3 + SKETCH_BYTES]
    cut = data.find(b":")
    if cut < 0:
        return None
    try:
        day = int(data[:cut].decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    return day, _text(data[cut + 1 :]), None


def _glob_escape(text: str) -> str:
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)
