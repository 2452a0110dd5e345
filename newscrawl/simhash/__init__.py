"""64-bit simhash fingerprints of article text (no Scrapy, no Redis here).

Public API (other layers code against it)::

    fingerprint(text) -> int | None   # default configuration, as the crawl pipeline applies it
    hamming(a, b) -> int
    simhash_from_features(pairs, bits=64) -> int
    Fingerprinter(config).fingerprint(text) / .analyze(text) / .version
    get_fingerprinter(idf_file=None) -> Fingerprinter   # cached per argument
    get_decision(idf_file=None) -> Decision   # fingerprint + text sketch, as the crawl decides
    Decision().analyze(text) -> Analysis(fingerprint, sketch, reason)
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
