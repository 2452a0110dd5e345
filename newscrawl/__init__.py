"""newscrawl: incremental news-portal crawler with simhash near-duplicate detection."""

from __future__ import annotations

__version__ = "0.1.0"
