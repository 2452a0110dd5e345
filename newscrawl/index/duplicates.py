"""Record of dropped near-duplicates: each URL not stored as a near-copy of a stored article
(``original_url``), and whether the dropped copy was the story's original (``late_original``).
Keys ``{prefix}:duplicates`` (url -> JSON record) and ``{prefix}:duplicates:log`` (urls by time
recorded); each url is recorded once. Records older than a retention are deleted by
:meth:`DuplicateLog.prune` (the crawl's daily prune, ``NEWSCRAWL_DUPLICATE_RETENTION_DAYS``).
Design: docs/design/near-duplicates.md.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import redis

from newscrawl.defaults import REDIS_PREFIX as DEFAULT_PREFIX
from newscrawl.formats import SECONDS_PER_DAY, fingerprint_hex
from newscrawl.keys import DUPLICATES, DUPLICATES_LOG

logger = logging.getLogger(__name__)

#: Deletes up to ARGV[2] records logged at or before ARGV[1] (seconds) from KEYS[1] (the hash) and
#: KEYS[2] (the log) and returns how many urls it took; one batch is one atomic step, so a reader
#: never sees a log entry whose record is gone.
_PRUNE_LUA = """
local urls = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #urls > 0 then
  redis.call('HDEL', KEYS[1], unpack(urls))
  redis.call('ZREM', KEYS[2], unpack(urls))
end
return #urls
"""
#: urls deleted per script call (a call blocks the server for about a millisecond)
PRUNE_BATCH = 500

_CORE = ("url", "original_url", "distance", "simhash", "original_simhash", "seen_at")

#: ``published_first`` of a record: the stored copy (``original_url``) was published first, or
#: no later than the dropped one (the usual case: a reprint dropped)
ORIGINAL_FIRST = "original"
#: ... the dropped copy (``url``) was published first: the story's original, met after its copy
#: was stored (``late_original`` true)
DUPLICATE_FIRST = "duplicate"


@dataclass(frozen=True)
class DuplicateRecord:
    """One dropped near-duplicate (not stored) and the stored copy it was matched to."""

    url: str
    original_url: str
    distance: int
    simhash: int
    original_simhash: int
    seen_at: float
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def late_original(self) -> bool:
        """Whether the dropped copy is the story's original, published before the stored one."""
        return bool(self.extra.get("late_original")) or \
            self.extra.get("published_first") == DUPLICATE_FIRST

    @property
    def seen_at_iso(self) -> str:
        return datetime.fromtimestamp(self.seen_at, tz=UTC).isoformat()

    def to_json_dict(self) -> dict[str, Any]:
        """JSON-ready dict: fingerprints as 16 hex digits, ``seen_at`` as ISO 8601 (UTC)."""
        out: dict[str, Any] = {
            "url": self.url,
            "original_url": self.original_url,
            "distance": self.distance,
            "simhash": fingerprint_hex(self.simhash),
            "original_simhash": fingerprint_hex(self.original_simhash),
            "seen_at": self.seen_at_iso,
        }
        out.update((k, v) for k, v in self.extra.items() if k not in out)
        return out

    @classmethod
    def from_stored(cls, raw: bytes | str) -> DuplicateRecord:
        data = json.loads(raw)
        extra = {k: v for k, v in data.items() if k not in _CORE}
        return cls(
            url=data["url"],
            original_url=data["original_url"],
            distance=int(data["distance"]),
            simhash=int(data["simhash"], 16),
            original_simhash=int(data["original_simhash"], 16),
            seen_at=float(data["seen_at"]),
            extra=extra,
        )


class DuplicateLog:
    """Near-duplicates recorded in Redis, newest first."""

    def __init__(self, client: redis.Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix
        self.hash_key = DUPLICATES.format(prefix=prefix)
        self.log_key = DUPLICATES_LOG.format(prefix=prefix)

    def record(
        self,
        url: str,
        original_url: str,
        distance: int,
        simhash: int,
        original_simhash: int,
        *,
        seen_at: float | None = None,
        **extra: Any,
    ) -> bool:
        """Store one near-duplicate; False (nothing changed) if ``url`` was already recorded."""
        if not url or not original_url:
            raise ValueError("url and original_url must be non-empty")
        for name, value in (("simhash", simhash), ("original_simhash", original_simhash)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 64:
                raise ValueError(f"{name} must be an unsigned 64-bit int, got {value!r}")
        when = time.time() if seen_at is None else float(seen_at)
        record = {
            **extra,
            "url": url,
            "original_url": original_url,
            "distance": int(distance),
            "simhash": fingerprint_hex(simhash),
            "original_simhash": fingerprint_hex(original_simhash),
            "seen_at": when,
        }
        try:
            payload = json.dumps(record, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"extra fields of a duplicate record must be JSON: {exc}") from exc
        pipe = self.client.pipeline(transaction=True)
        pipe.hsetnx(self.hash_key, url, payload)
        pipe.zadd(self.log_key, {url: when}, nx=True)
        created, _ = pipe.execute()
        return bool(created)

    def get(self, url: str) -> DuplicateRecord | None:
        raw = self.client.hget(self.hash_key, url)
        return None if raw is None else DuplicateRecord.from_stored(raw)

    def list(self, limit: int | None = None) -> list[DuplicateRecord]:
        """Recorded near-duplicates, newest first (at most ``limit``)."""
        if limit is not None and limit <= 0:
            return []
        end = -1 if limit is None else limit - 1
        urls: list[Any] = list(self.client.zrevrange(self.log_key, 0, end))
        if not urls:
            return []
        raws = self.client.hmget(self.hash_key, urls)
        out: list[DuplicateRecord] = []
        for url, raw in zip(urls, raws, strict=True):
            if raw is None:
                logger.warning("duplicate log lists %r but its record is missing", url)
                continue
            try:
                out.append(DuplicateRecord.from_stored(raw))
            except (ValueError, KeyError, TypeError) as exc:
                logger.warning("unreadable duplicate record for %r: %s", url, exc)
        return out

    def count(self) -> int:
        return int(self.client.hlen(self.hash_key))

    def prune(self, days: int, *, now: float | None = None) -> int:
        """Delete the records logged more than ``days`` days ago; returns how many.

        In batches of :data:`PRUNE_BATCH`, each one atomic, so a crawl can record meanwhile.
        """
        if isinstance(days, bool) or not isinstance(days, int) or days < 1:
            raise ValueError(f"days must be an integer >= 1, got {days!r}")
        cutoff = (time.time() if now is None else float(now)) - days * SECONDS_PER_DAY
        script = self.client.register_script(_PRUNE_LUA)
        deleted = 0
        while True:
            n = int(script(keys=[self.hash_key, self.log_key], args=[repr(cutoff), PRUNE_BATCH]))
            deleted += n
            if n < PRUNE_BATCH:
                return deleted
