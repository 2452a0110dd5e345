"""What the spider tells the scheduler about a request: its kind and the other meta keys.

They travel with the request through the Redis queue (JSON), so a kind is stored as its string
value. Keys starting with ``_newscrawl`` are per-process and never queued.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy import Request


class RequestKind(StrEnum):
    """What a request fetches (meta :data:`KIND`; stats ``newscrawl/pages/<kind>``)."""

    START = "start"
    LIST = "list"
    SITEMAP = "sitemap"  # also a robots.txt read for its Sitemap: lines, and sitemap indexes
    FEED = "feed"
    ARTICLE = "article"


#: Kinds read on every run (once per run). Every other kind is an article: fetched once ever.
RUN_KINDS = (RequestKind.START, RequestKind.LIST, RequestKind.SITEMAP, RequestKind.FEED)

KIND = "newscrawl_kind"
SITE = "newscrawl_site"
DEPTH = "newscrawl_depth"
SITEMAP_DEPTH = "newscrawl_sitemap_depth"  # index nesting below a configured sitemap
ROBOTS = "newscrawl_robots"  # a robots.txt read for its Sitemap: lines
#: Walk id (fingerprint of the start page a list page was reached from) and the number of
#: consecutive list pages without anything new up to its parent; they travel with the request
#: through the Redis queue, so any worker continues the walk.
WALK = "newscrawl_walk"
KNOWN = "newscrawl_known"
WALK_START = "newscrawl_walk_start"
#: The number a list page has in the pagination bar it was reached from (its successor in the
#: bar is the next page: newscrawl/spiders/portal/pagebar.py).
PAGE_NUMBER = "newscrawl_page_number"
#: [URL, number] of the page after it in that bar: the walk goes on there if this page fails.
PAGE_AFTER = "newscrawl_page_after"
#: Set on the requests a spider yields from ``start()`` besides start pages (configured sitemaps
#: and feeds): like start pages, only the worker that claimed the run schedules them.
ROOT = "newscrawl_root"
#: The date a sitemap or feed gives an article it lists (``<news:publication_date>`` or
#: ``<lastmod>``, a feed entry's published or updated date), known before the page is fetched:
#: an ISO 8601 string with its UTC offset; absent when the source gives none.
LISTED_DATE = "newscrawl_listed_date"
#: The scheduler's lease of a request in flight (per process, never queued).
LEASE = "_newscrawl_lease"
#: Set by the spider on a page it fetched but could not use (an article page without a body):
#: the reason; the scheduler counts it as a failed attempt, retried by a later run.
PAGE_FAILED = "_newscrawl_page_failed"


def request_kind(request: Request) -> str:
    """The request's kind; a request without one is an article."""
    kind = request.meta.get(KIND)
    return kind if isinstance(kind, str) and kind else RequestKind.ARTICLE
#: The date a sitemap or feed gives an article URL (ISO 8601), known before it is fetched: it
#: orders the run's waiting article links (newscrawl/scheduling/waiting.py)
LISTED_DATE = "newscrawl_listed_date"
#: An article request's place in the run's order (newscrawl/scheduling/waiting.py): the
#: near-duplicate check takes it after other sites' articles of a lower number
ORDER = "newscrawl_order"
#: ... and its day (ordinal) when a day was all that was known of its date
ORDER_DAY = "newscrawl_order_day"
#: ... or its day when its time of day was known too (a same-day article known by its day
#: alone that names a source waits for it as for the other sites' day-only ones)
ORDER_TIMED_DAY = "newscrawl_order_timed_day"
#: ... and the id of the run that numbered it (a later run that finishes it numbers it again,
#: in the order of (this run id, its number): run ids sort by their start time)
ORDER_RUN = "newscrawl_order_run"
