"""Redis near-duplicate index of 64-bit simhash fingerprints and the log of dropped copies
(imports no Scrapy). Design: docs/design/index.md.
"""

from __future__ import annotations

from newscrawl.index.duplicates import DuplicateLog, DuplicateRecord, fingerprint_hex
from newscrawl.index.simhash_index import (
    BUCKET_DISTANCE,
    MAX_SUPPORTED_DISTANCE,
    IncompatibleIndexError,
    IndexLostError,
    Match,
    SimhashIndex,
    blocks_of,
    ensure_compact_encoding,
)
from newscrawl.index.stats import index_stats

__all__ = [
    "BUCKET_DISTANCE",
    "MAX_SUPPORTED_DISTANCE",
    "DuplicateLog",
    "DuplicateRecord",
    "IncompatibleIndexError",
    "IndexLostError",
    "Match",
    "SimhashIndex",
    "blocks_of",
    "ensure_compact_encoding",
    "fingerprint_hex",
    "index_stats",
]
