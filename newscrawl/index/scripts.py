"""The index's calls into Redis: one Lua script per operation (check-and-add, query, add, remove,
prune, count), their KEYS and ARGV, and the constants ``lua/lib.lua`` shares with Python
(checked when this module loads). Design: docs/design/index.md.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.typing import EncodableT

from newscrawl.index.lua import load
from newscrawl.index.records import BAND_BLOCKS, BLOCKS, DOC_PREFIXES
from newscrawl.keys import SIMHASH_BUCKET, SIMHASH_META, simhash_bucket
from newscrawl.simhash.sketch import BANDS, NUMBER_BITS, SKETCH_BYTES, Thresholds

# The constants of lua/lib.lua (1-based byte positions in the sketch: sketch.py's layout).
SK_NUM = 2 + 2 * BANDS + 1
SK_NUM_END = SK_NUM + NUMBER_BITS // 8 - 1
SK_MIN = SK_NUM_END + 1
SK_MIN_END = SKETCH_BYTES
BAND0_BLOCK, BAND1_BLOCK = BAND_BLOCKS
MAX_DAY = 0xFFFF
INCOMPATIBLE = "NEWSCRAWL_INCOMPATIBLE_INDEX"
LOST = "NEWSCRAWL_INDEX_LOST"
assert len(BAND_BLOCKS) == BANDS, "one block hash per band"
# DOC_PREFIXES (from records) is lua/lib.lua's too: load() checks it in globals()
__all__ = ["COUNT_DOCS", "DOC_PREFIXES", "IndexScripts", "lua_bucket_format"]

CHECK_ADD = load("lib.lua", "lookup.lua", "check_add.lua", constants=globals())
QUERY = load("lib.lua", "lookup.lua", "query.lua", constants=globals())
ADD = load("lib.lua", "add.lua", constants=globals())
REMOVE = load("lib.lua", "remove.lua", constants=globals())
PRUNE = load("lib.lua", "prune.lua", constants=globals())
COUNT_DOCS = load("lib.lua", "count_docs.lua", constants=globals())


def lua_bucket_format(prefix: str) -> str:
    """keys.SIMHASH_BUCKET of ``prefix`` as a Lua format string (block %d, value %04x)."""
    return (
        SIMHASH_BUCKET.replace("%", "%%")
        .replace("{prefix}", prefix.replace("%", "%%"))
        .replace("{block}", "%d")
        .replace("{value:04x}", "%04x")
    )


class IndexScripts:
    """The index's scripts registered on one client, called with one index's prefix, version,
    max distance and thresholds. Each call returns the script's raw reply; ``client`` queues it
    in a pipeline instead."""

    def __init__(
        self,
        client: redis.Redis,
        prefix: str,
        version: str,
        max_distance: int,
        thresholds: Thresholds,
    ) -> None:
        self.prefix = prefix
        self.meta_key = SIMHASH_META.format(prefix=prefix)
        self.version = version
        self.max_distance = max_distance
        t = thresholds
        self.thresholds = f"{t.text} {t.numbers} {t.wide} {t.support} {t.chance}"
        self.bucket_format = lua_bucket_format(prefix)
        # keys.SIMHASH_BUCKET with prefix and block filled in
        escaped = prefix.replace("{", "{{").replace("}", "}}")
        self._templates = tuple(
            SIMHASH_BUCKET.replace("{prefix}", escaped).replace("{block}", str(block))
            for block in range(BLOCKS)
        )
        self.check_add_script = client.register_script(CHECK_ADD)
        self.query_script = client.register_script(QUERY)
        self.add_script = client.register_script(ADD)
        self.remove_script = client.register_script(REMOVE)
        self.prune_script = client.register_script(PRUNE)

    def keys(self, f: int, sketch: bytes | None) -> list[str]:
        """The meta hash, the four block buckets of ``f`` and, with a sketch, its band buckets."""
        t0, t1, t2, t3 = self._templates
        keys = [
            self.meta_key,
            t0.format(value=f >> 48),
            t1.format(value=(f >> 32) & 0xFFFF),
            t2.format(value=(f >> 16) & 0xFFFF),
            t3.format(value=f & 0xFFFF),
        ]
        if sketch:
            keys += self.band_keys(sketch)
        return keys

    def band_keys(self, sketch: bytes) -> list[str]:
        """The band bucket keys of a text sketch (``{prefix}:simhash:2:{value}``, ``...:3:...``)."""
        return [
            simhash_bucket(self.prefix, block, int.from_bytes(sketch[2 + 2 * k : 4 + 2 * k], "big"))
            for k, block in enumerate(BAND_BLOCKS)
        ]

    def check_add(
        self, f: int, doc_id: str, today: int, min_day: int, now: float, sketch: bytes | None,
        client: Any = None, expected: str | None = None,
    ) -> Any:
        args: list[EncodableT] = [
            self.bucket_format, f.to_bytes(8, "big"), self.version, self.max_distance, min_day,
            doc_id, today, repr(now)]
        if sketch:
            args += [sketch, self.thresholds]
        if expected:
            args += ([] if sketch else ["", ""]) + [expected]
        return self.check_add_script(self.keys(f, sketch), args, client=client)

    def query(self, f: int, min_day: int, sketch: bytes | None, client: Any = None) -> Any:
        args: list[EncodableT] = [
            self.bucket_format, f.to_bytes(8, "big"), self.version, self.max_distance, min_day
        ]
        if sketch:
            args += [sketch, self.thresholds]
        return self.query_script(self.keys(f, sketch), args, client=client)

    def add(
        self, f: int, doc_id: str, today: int, now: float, sketch: bytes | None,
        client: Any = None,
    ) -> Any:
        args: list[EncodableT] = [
            self.bucket_format, f.to_bytes(8, "big"), self.version, doc_id, today, repr(now)
        ]
        if sketch:
            args.append(sketch)
        return self.add_script(self.keys(f, sketch), args, client=client)

    def remove(self, f: int, doc_id: str) -> Any:
        args: list[EncodableT] = [self.bucket_format, f.to_bytes(8, "big"), self.version, doc_id]
        return self.remove_script(self.keys(f, None), args)

    def prune(self, block0_keys: list[str], min_day: int) -> Any:
        keys: list[str] = [self.meta_key, *block0_keys]
        return self.prune_script(keys, [self.bucket_format, min_day])

