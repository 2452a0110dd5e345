"""The Scrapy internals newscrawl relies on, checked at start (a missing one stops the crawl with
:class:`ScrapyIncompatible` naming it), and the Scrapy versions they are tested with; the
downloader that holds each slot to its concurrency under the asyncio reactor.
See docs/scrapy-upstream.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

import scrapy
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from scrapy.core.downloader import Downloader as ScrapyDownloader
from scrapy.core.downloader import Slot
from scrapy.utils.asyncio import call_later, is_asyncio_available

from newscrawl.errors import NewscrawlError

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from scrapy import Request
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)

#: The Scrapy versions CI tests; pyproject.toml's ``scrapy`` requirement is exactly this range.
TESTED_SCRAPY = ">=2.19,<2.20"
#: What newscrawl.middlewares.robots uses of Scrapy's ``RobotsTxtMiddleware``.
ROBOTS_INTERNALS = ("_parsers", "_parse_robots", "_robots_error", "_stats")
#: What :class:`Downloader` uses of Scrapy's ``Downloader`` and of its download ``Slot``.
DOWNLOADER_INTERNALS = ("_process_queue", "_wait_for_download", "_download")
SLOT_INTERNALS = ("transferring", "free_transfer_slots")

_warned: set[str] = set()


class ScrapyIncompatible(NewscrawlError, RuntimeError):
    """The installed Scrapy lacks an internal newscrawl needs."""


def check_scrapy_version() -> bool:
    """Whether the installed Scrapy is a tested one; one WARNING per version if it is not."""
    version = scrapy.__version__
    try:
        tested = Version(version) in SpecifierSet(TESTED_SCRAPY)
    except InvalidVersion:
        tested = False
    if not tested and version not in _warned:
        _warned.add(version)
        logger.warning(
            "Scrapy %s is installed but newscrawl is tested with Scrapy %s: it uses Scrapy"
            " internals that may have changed (install with constraints.txt for the tested"
            " version)", version, TESTED_SCRAPY,
        )
    return tested


def require(obj: object, names: Iterable[str], owner: str) -> None:
    """:class:`ScrapyIncompatible` unless ``obj`` (a Scrapy ``owner``) has all of ``names``."""
    missing = [name for name in names if not hasattr(obj, name)]
    if missing:
        raise ScrapyIncompatible(
            f"newscrawl needs {', '.join(f'{owner}.{name}' for name in missing)}, which Scrapy"
            f" {scrapy.__version__} does not have (newscrawl is tested with Scrapy {TESTED_SCRAPY})"
        )


def on_request_done(engine: ExecutionEngine, callback: Callable[[Request], None]
                    ) -> Callable[[], None]:
    """Call ``callback(request)`` when ``engine`` is done with a request (its download, callback
    or errback and every item through the pipelines); returns the function that undoes it."""
    require(engine, ("_remove_request", "_slot"), "ExecutionEngine")
    require(engine._slot, ("nextcall", "closing"), "ExecutionEngine._slot")
    original = engine._remove_request

    def _remove_request(result: Any, request: Request) -> Any:
        try:
            callback(request)
        finally:
            return original(result, request=request)  # noqa: B012

    engine._remove_request = _remove_request  # type: ignore[method-assign,assignment]
    return partial(setattr, engine, "_remove_request", original)


def wake_engine(engine: ExecutionEngine | None) -> None:
    """Make ``engine`` ask the scheduler for requests now, as a finished download does."""
    slot = getattr(engine, "_slot", None)
    if slot is not None:
        slot.nextcall.schedule()


def closing(engine: ExecutionEngine | None) -> bool:
    """Whether ``engine`` is stopping: not running, or closing its spider (a fault, SIGTERM,
    the end of the crawl)."""
    if engine is None:
        return False
    if not getattr(engine, "running", True):
        return True
    slot = getattr(engine, "_slot", None)
    return slot is not None and getattr(slot, "closing", None) is not None


def stalled_by_waiting(engine: ExecutionEngine | None, waiting: int) -> bool:
    """Whether ``engine`` can make no progress until one of ``waiting`` items (held in the item
    pipelines, one response each) goes on: the responses its scraper holds exceed
    ``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` (so no request is started), every response in it is such
    an item, and nothing is being downloaded."""
    slot = getattr(getattr(engine, "scraper", None), "slot", None)
    needs_backout = getattr(slot, "needs_backout", None)
    if not callable(needs_backout) or not needs_backout():
        return False
    if getattr(getattr(engine, "downloader", None), "active", None) is None:
        return False  # a downloader of another kind: not known to be idle
    return not busy_besides(engine, waiting)


def uncount_response(engine: ExecutionEngine | None, size: int) -> bool:
    """Take ``size`` bytes off what the scraper slot counts against
    ``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` (a response waiting in the item pipelines); False when the
    slot is not one whose count is known. :func:`count_response` gives them back."""
    slot = getattr(getattr(engine, "scraper", None), "slot", None)
    if not isinstance(getattr(slot, "active_size", None), int):
        return False
    slot.active_size -= size  # type: ignore[union-attr]
    return True


def count_response(engine: ExecutionEngine | None, size: int) -> None:
    """Give back what :func:`uncount_response` took, before the slot finishes the response."""
    slot = getattr(getattr(engine, "scraper", None), "slot", None)
    if isinstance(getattr(slot, "active_size", None), int):
        slot.active_size += size  # type: ignore[union-attr]


def busy_besides(engine: ExecutionEngine | None, waiting: int) -> bool:
    """Whether ``engine`` still downloads a page, or its scraper holds responses besides the
    ``waiting`` items held in the item pipelines (one response each): a stopping engine finishes
    those, and an article waiting for its turn may be waiting for one of them."""
    if engine is None:
        return False
    downloading = getattr(getattr(engine, "downloader", None), "active", None)
    if downloading:
        return True
    slot = getattr(getattr(engine, "scraper", None), "slot", None)
    return bool(getattr(slot, "queue", ())) or len(getattr(slot, "active", ())) > waiting


def call_soon(func: Callable[[], Any]) -> None:
    """Run ``func`` at the head of the event loop's next turn (asyncio's ``call_soon``; a
    zero-delay call on another reactor), ahead of what a zero-delay timer would wait behind."""
    if is_asyncio_available():
        asyncio.get_event_loop().call_soon(func)
    else:
        call_later(0, func)


def pull_requests(engine: ExecutionEngine | None) -> None:
    """Make ``engine`` ask the scheduler for requests now (its pending wake-up is run at once).

    Scrapy wakes the engine after each download with a zero-delay timer: when several responses
    arrive in one turn of the loop, the timer runs only after all of them were parsed and the
    worker's download slots stay empty meanwhile (at 200 ms latency the portal then sees the
    requests in bursts). Called first in the next turn, this refills the slots before."""
    slot = getattr(engine, "_slot", None)
    if slot is not None and getattr(engine, "spider", None) is not None:
        slot.nextcall.cancel()
        slot.nextcall()


class Downloader(ScrapyDownloader):
    """Scrapy's downloader, with each slot held to its concurrency (``DOWNLOADER`` setting).

    Scrapy 2.19's ``Downloader._process_queue`` loops ``while slot.queue and
    slot.free_transfer_slots() > 0`` and hands each request to
    ``_schedule_coro(self._wait_for_download(...))``; under the asyncio reactor that task starts
    later, and ``slot.transferring`` (which ``free_transfer_slots`` counts) is filled only when
    ``_download`` starts in it, so one call drains the whole slot queue. Here a request counts
    as transferring from the moment it is handed over; ``_download`` adds it again (a set) and
    removes it when the download ends, as before.
    """

    def __init__(self, crawler: Crawler) -> None:
        require(ScrapyDownloader, DOWNLOADER_INTERNALS, "Downloader")
        require(Slot, SLOT_INTERNALS, "Slot")
        super().__init__(crawler)

    def _wait_for_download(self, slot: Slot, request: Request, queue_dfd: Deferred[Response]
                           ) -> Coroutine[Any, Any, None]:
        slot.transferring.add(request)
        return super()._wait_for_download(slot, request, queue_dfd)


def no_local_delay(engine: ExecutionEngine | None) -> bool:
    """Give the downloader's new slots no delay of their own (the scheduler's cluster-wide
    grant applies DOWNLOAD_DELAY); returns whether the downloader had the attribute."""
    downloader = getattr(engine, "downloader", None)
    if downloader is None or not hasattr(downloader, "_delay"):
        return False
    downloader._delay = 0.0
    for slot in getattr(downloader, "slots", {}).values():
        slot.delay = 0.0
    return True
