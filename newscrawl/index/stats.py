"""Summary of the near-duplicate index for operators (``newscrawl stats``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import redis

from newscrawl.defaults import REDIS_PREFIX as DEFAULT_PREFIX
from newscrawl.index.records import glob_escape, text
from newscrawl.index.scripts import COUNT_DOCS, lua_bucket_format
from newscrawl.redis.keys import DUPLICATES, SIMHASH_META


def _size_bin(size: int) -> str:
    """Power-of-two bins: "1", "2-3", "4-7", ..."""
    if size <= 1:
        return str(size)
    low = 1 << (size.bit_length() - 1)
    return f"{low}-{2 * low - 1}"


def index_stats(client: redis.Redis, *, prefix: str = DEFAULT_PREFIX) -> dict[str, Any]:
    """Fingerprints stored, duplicates recorded, bucket-size distribution, Redis memory.

    Scans every bucket key (SCAN + pipelined HLEN / OBJECT ENCODING): a few seconds per million
    fingerprints. The sizes of block 2 and 3 hashes include the text sketches' band entries
    stored in them (what the listpack limit counts). ``fingerprints`` counts distinct
    fingerprints: docs stored with the same one (texts their sketches tell apart) share its
    block-0 value, one record each, and count once; ``articles`` counts the records (counted in
    Redis, ``lua/count_docs.lua``: nothing but the counts crosses the network).
    """
    meta_key = SIMHASH_META.format(prefix=prefix)
    raw_meta = client.hgetall(meta_key)
    meta = {text(k): text(v) for k, v in raw_meta.items()}
    sizes: dict[int, list[int]] = {0: [], 1: [], 2: [], 3: []}
    hashtable = 0
    articles = 0
    count_docs = client.register_script(COUNT_DOCS)
    bucket_format = lua_bucket_format(prefix)
    pattern = glob_escape(prefix) + ":simhash:[0-3]:*"
    batch: list[str] = []

    def flush() -> None:
        nonlocal hashtable, articles
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.hlen(key)
            pipe.object("encoding", key)
        block0 = [k for k in batch if k[len(prefix) + len(":simhash:")] == "0"]
        if block0:
            count_docs(keys=[meta_key, *block0], args=[bucket_format], client=pipe)
        results = pipe.execute()
        if block0:
            articles += int(results[-1])
        for i, key in enumerate(batch):
            block = int(key[len(prefix) + len(":simhash:")])
            sizes[block].append(int(results[2 * i]))
            if text(results[2 * i + 1] or "") == "hashtable":
                hashtable += 1
        batch.clear()

    for key in client.scan_iter(match=pattern, count=1000):
        batch.append(text(key))
        if len(batch) >= 1000:
            flush()
    if batch:
        flush()

    all_sizes = [s for block in sizes.values() for s in block]
    hist = Counter(_size_bin(s) for s in all_sizes)
    ordered_hist = dict(sorted(hist.items(), key=lambda kv: int(kv[0].split("-")[0])))
    ordered = sorted(all_sizes)
    memory = client.info("memory")
    return {
        "prefix": prefix,
        "version": meta.get("version"),
        "fingerprints": sum(sizes[0]),
        "articles": articles,
        "fingerprints_counter": int(meta.get("count", 0)),
        "duplicates": int(client.hlen(DUPLICATES.format(prefix=prefix))),
        "buckets": len(all_sizes),
        "buckets_per_block": {str(b): len(v) for b, v in sizes.items()},
        "bucket_size": {
            "min": ordered[0] if ordered else 0,
            "median": ordered[len(ordered) // 2] if ordered else 0,
            "p99": ordered[min(len(ordered) - 1, (len(ordered) * 99) // 100)] if ordered else 0,
            "max": ordered[-1] if ordered else 0,
            "histogram": ordered_hist,
        },
        "buckets_hashtable_encoded": hashtable,
        "used_memory": int(memory.get("used_memory", 0)),
        "used_memory_human": str(memory.get("used_memory_human", "")),
    }
