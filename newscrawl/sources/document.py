"""What reading a sitemap or feed gives (:class:`SourceDocument`), the bounds on reading one
(:class:`SourcesConfig`), the newest-entries cap and the errors; shared by the sitemap and the
feed readers. Design: docs/design/sources.md.
"""

from __future__ import annotations

import heapq
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from newscrawl.defaults import SITEMAP_MAX_BYTES as DEFAULT_MAX_BYTES
from newscrawl.defaults import SITEMAP_MAX_CHILDREN as DEFAULT_MAX_CHILDREN
from newscrawl.defaults import SITEMAP_MAX_DEPTH as DEFAULT_MAX_DEPTH
from newscrawl.defaults import SITEMAP_MAX_ENTRIES as DEFAULT_MAX_ENTRIES
from newscrawl.defaults import SITEMAP_MAX_RUN_ENTRIES as DEFAULT_MAX_RUN_ENTRIES

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

_GZIP_MAGIC = b"\x1f\x8b"
#: the start of an HTML page served where a sitemap or feed was expected
HTML_START = re.compile(
    rb"^(?:\xef\xbb\xbf)?\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)\b", re.I | re.S
)
#: Entries handed to ``select`` at once (one done-records round trip each in the crawl).
SELECT_BATCH = 1000
#: ``should_stop`` is asked every this many entries.
STOP_CHECK_EVERY = 1000


#: A listed entry: its absolute URL and the date the document gives it (aware), or None.
Entry = tuple[str, "datetime | None"]
#: The caller's filter, applied before any cap: for each entry of a batch (document order),
#: the entry to keep (its URL may be rewritten, e.g. to its canonical form) or, for one it does
#: not want, a short reason (counted in :attr:`SourceDocument.rejected`). It may be called again
#: for the same entries (a feed the fast path gives up on is read again), so it keeps no state.
Select = Callable[[list[Entry]], list["Entry | str"]]


class SourceError(ValueError):
    """A sitemap or feed that cannot be used; ``reason`` is a stats-friendly name."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class SourcesConfig:
    """Bounds on reading sitemaps and feeds (settings ``NEWSCRAWL_SITEMAP_*``)."""

    max_bytes: int = DEFAULT_MAX_BYTES  # decompressed size of one gzip sitemap or feed
    max_depth: int = DEFAULT_MAX_DEPTH  # sitemap index nesting below a configured sitemap
    max_children: int = DEFAULT_MAX_CHILDREN  # child sitemaps taken from one index (newest)
    max_entries: int = DEFAULT_MAX_ENTRIES  # article URLs taken from one document (newest)
    max_run_entries: int = DEFAULT_MAX_RUN_ENTRIES  # ... from all documents of a site and run

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SourcesConfig:
        return cls(
            max_bytes=max(0, settings.getint("NEWSCRAWL_SITEMAP_MAX_BYTES", DEFAULT_MAX_BYTES)),
            max_depth=max(0, settings.getint("NEWSCRAWL_SITEMAP_MAX_DEPTH", DEFAULT_MAX_DEPTH)),
            max_children=max(
                0, settings.getint("NEWSCRAWL_SITEMAP_MAX_CHILDREN", DEFAULT_MAX_CHILDREN)
            ),
            max_entries=max(
                0, settings.getint("NEWSCRAWL_SITEMAP_MAX_ENTRIES", DEFAULT_MAX_ENTRIES)
            ),
            max_run_entries=max(
                0, settings.getint("NEWSCRAWL_SITEMAP_MAX_RUN_ENTRIES", DEFAULT_MAX_RUN_ENTRIES)
            ),
        )


@dataclass
class SourceDocument:
    """What a sitemap or feed lists.

    ``kind`` is ``urlset``, ``sitemapindex`` or ``feed``; ``urls`` are absolute (relative links
    resolved against the document URL), in document order; ``entries`` the same URLs with the
    date the document gives each (a sitemap's ``<news:publication_date>`` or else its
    ``<lastmod>``, a feed entry's published or else updated date; an aware datetime, or None);
    ``children`` are the child sitemaps of an index as (url, lastmod or None); ``error`` the
    first XML error the parser recovered from, None for a clean document; ``listed`` the article
    entries read, ``wanted`` the distinct ones ``select`` kept (all of them without one),
    ``rejected`` the reasons ``select`` gave for the others (reason -> count), ``capped`` the
    wanted ones left out by ``max_entries``.
    """

    kind: str
    urls: list[str] = field(default_factory=list)
    children: list[tuple[str, datetime | None]] = field(default_factory=list)
    error: str | None = None
    capped: int = 0
    entries: list[Entry] = field(default_factory=list)
    listed: int = 0
    wanted: int = 0
    rejected: dict[str, int] = field(default_factory=dict)

    def keep(self, newest: Newest) -> None:
        """Take the entries and counts of ``newest`` (its pending batch selected first)."""
        self.entries = newest.entries()
        self.urls = [url for url, _ in self.entries]
        self.capped, self.listed, self.wanted = newest.left_out, newest.listed, newest.seen
        self.rejected = dict(newest.rejected)


class Newest:
    """The ``limit`` newest of the URLs added that ``select`` wants (dated before undated, then
    document order), kept in a heap of at most ``limit`` entries. Added entries wait in a batch
    of up to :data:`SELECT_BATCH` for ``select``."""

    _OLDEST = datetime.min.replace(tzinfo=UTC)

    def __init__(self, limit: int | None, select: Select | None = None) -> None:
        self.limit = limit
        self.select = select
        self.heap: list[tuple[bool, datetime, int, str, datetime | None]] = []
        self.seen = 0  # wanted entries (after select, each URL once)
        self.listed = 0  # entries added
        self.rejected: dict[str, int] = {}
        self._batch: list[Entry] = []
        self._wanted: set[str] = set()  # with select: the URLs kept so far (each once)

    def add(self, url: str, when: datetime | None) -> None:
        self.listed += 1
        if self.select is None:
            self._keep(url, when)
            return
        self._batch.append((url, when))
        if len(self._batch) >= SELECT_BATCH:
            self.flush()

    def flush(self) -> None:
        """Give the pending batch to ``select`` and keep what it wants."""
        batch, self._batch = self._batch, []
        if not batch or self.select is None:
            return
        for verdict in self.select(batch):
            if isinstance(verdict, str):
                self.rejected[verdict] = self.rejected.get(verdict, 0) + 1
            elif verdict[0] not in self._wanted:
                self._wanted.add(verdict[0])
                self._keep(*verdict)

    def _keep(self, url: str, when: datetime | None) -> None:
        # the heap's smallest is the one to drop first: undated, oldest, latest in the document
        entry = (when is not None, when or self._OLDEST, -self.seen, url, when)
        self.seen += 1
        if self.limit is None or len(self.heap) < self.limit:
            heapq.heappush(self.heap, entry)
        elif self.heap and entry[:4] > self.heap[0][:4]:
            heapq.heapreplace(self.heap, entry)

    def entries(self) -> list[Entry]:
        """The kept entries in document order (the pending batch selected first)."""
        self.flush()
        return [(e[3], e[4]) for e in sorted(self.heap, key=lambda e: -e[2])]

    @property
    def left_out(self) -> int:
        return self.seen - len(self.heap)


def check_stop(should_stop: Callable[[], bool] | None) -> None:
    if should_stop is not None and should_stop():
        raise SourceError("stopped", "the crawl is stopping")


def unpack(body: bytes, max_bytes: int) -> bytes:
    """The body, gunzipped when it starts with the gzip magic (at most ``max_bytes``)."""
    if body[:2] != _GZIP_MAGIC:
        return body
    from scrapy.utils.gz import gunzip

    try:
        return gunzip(body, max_size=max_bytes)
    except ValueError as exc:  # scrapy's _DecompressionMaxSizeExceeded is a ValueError
        raise SourceError("too_large", f"over {max_bytes} bytes once gunzipped ({exc})") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise SourceError("malformed", f"broken gzip data ({exc})") from None


def is_http(url: str) -> bool:
    return url.startswith(("http://", "https://"))
