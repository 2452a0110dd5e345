"""The Scrapy internals newscrawl relies on, and the Scrapy versions they are tested with.

A Scrapy minor release may change private attributes. :func:`check_scrapy_version` logs one
WARNING when the installed Scrapy is outside :data:`TESTED_SCRAPY` (pyproject.toml requires the
same range; ``constraints.txt`` pins the version CI tests); an internal that is missing stops the
crawl at start with :class:`ScrapyIncompatible` naming it, not with an ``AttributeError`` in the
middle of a crawl.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

import scrapy
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.engine import ExecutionEngine

logger = logging.getLogger(__name__)

#: The Scrapy versions CI tests; pyproject.toml's ``scrapy`` requirement is exactly this range.
TESTED_SCRAPY = ">=2.19,<2.20"
#: What newscrawl.middlewares.robots uses of Scrapy's ``RobotsTxtMiddleware``.
ROBOTS_INTERNALS = ("_parsers", "_parse_robots", "_robots_error", "_stats")

_warned: set[str] = set()


class ScrapyIncompatible(RuntimeError):
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
    require(engine._slot, ("nextcall",), "ExecutionEngine._slot")
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
