"""The near-duplicate decision's text side: the fingerprint and the text sketch of a document, under
one version string, as the crawl and ``newscrawl dedup`` compute them (no Scrapy, no Redis here).

See docs/design/near-duplicates.md.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from newscrawl.simhash.fingerprinter import Fingerprinter, get_fingerprinter
from newscrawl.simhash.sketch import (
    BANDS,
    BIN_BITS,
    BINS,
    DEFAULT_THRESHOLDS,
    NUMBER_BITS,
    SHINGLE,
    Thresholds,
    sketch,
)

#: The decision's own part of the version (sketch layout and thresholds): an index built by another
#: decision is refused (fingerprints and sketches of different versions are not comparable). The
#: index adds its storage layout to every version it records (``SimhashIndex``, INDEX_LAYOUT).
SKETCH_VERSION = f"sk1-g{SHINGLE}b{BINS}x{BIN_BITS}n{NUMBER_BITS}u-l{BANDS}"


@dataclass(frozen=True)
class Analysis:
    """What the index needs of a document: its fingerprint and sketch (both None when the text
    is too short to fingerprint; ``reason`` says why)."""

    fingerprint: int | None
    sketch: bytes | None
    reason: str | None


class Decision:
    """Fingerprint + sketch of a text, and the version of the decision they belong to."""

    def __init__(
        self, fingerprinter: Fingerprinter | None = None, thresholds: Thresholds | None = None
    ) -> None:
        self.fingerprinter = fingerprinter or Fingerprinter()
        self.thresholds = thresholds or DEFAULT_THRESHOLDS
        self.version = f"{self.fingerprinter.version}/{SKETCH_VERSION}-{self.thresholds.label()}"

    def __repr__(self) -> str:
        return f"Decision({self.version!r})"

    def analyze(self, text: str) -> Analysis:
        result = self.fingerprinter.analyze(text)
        if result.value is None:
            return Analysis(None, None, result.reason)
        return Analysis(result.value, sketch(text).to_bytes(), None)


@functools.lru_cache(maxsize=16)
def _cached(idf_file: str | None) -> Decision:
    return Decision(get_fingerprinter(idf_file=idf_file))


def get_decision(*, idf_file: str | os.PathLike[str] | None = None) -> Decision:
    """The default decision (optionally with another IDF file), cached."""
    path = os.path.abspath(os.fspath(idf_file)) if idf_file is not None else None
    return _cached(path)
