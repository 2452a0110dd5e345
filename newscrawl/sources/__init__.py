"""Sitemaps and feeds as sources of article URLs: reading the documents (never fetching them),
within bounds on their size and on the entries taken. Design: docs/design/sources.md.
"""

from __future__ import annotations

from newscrawl.sources.document import (
    Entry,
    Select,
    SourceDocument,
    SourceError,
    SourcesConfig,
    unpack,
)
from newscrawl.sources.feeds import FEED_BATCH_ENTRIES, parse_feed
from newscrawl.sources.sitemaps import newest_children, parse_sitemap, robots_sitemaps

__all__ = [
    "FEED_BATCH_ENTRIES",
    "Entry",
    "Select",
    "SourceDocument",
    "SourceError",
    "SourcesConfig",
    "newest_children",
    "parse_feed",
    "parse_sitemap",
    "robots_sitemaps",
    "unpack",
]
