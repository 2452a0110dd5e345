"""64-bit simhash fingerprints and text sketches of article text: the near-duplicate decision's
text side (no Scrapy, no Redis here). Other layers use ``fingerprint``, ``hamming``,
``get_fingerprinter`` and ``get_decision``.

See docs/design/fingerprint.md.
"""

from __future__ import annotations

from newscrawl.simhash.core import feature_hash, hamming, simhash_from_features
from newscrawl.simhash.decision import Analysis, Decision, get_decision
from newscrawl.simhash.fingerprinter import (
    FingerprintConfig,
    Fingerprinter,
    FingerprintResult,
    fingerprint,
    get_fingerprinter,
)
from newscrawl.simhash.idf import IdfFormatError

__all__ = [
    "Analysis",
    "Decision",
    "get_decision",
    "FingerprintConfig",
    "FingerprintResult",
    "Fingerprinter",
    "IdfFormatError",
    "feature_hash",
    "fingerprint",
    "get_fingerprinter",
    "hamming",
    "simhash_from_features",
]
