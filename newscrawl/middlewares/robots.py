"""robots.txt that holds for the first, concurrent requests to a host too (each waiter gets its own
Deferred), fetched once per host and run for every worker through Redis.
docs/design/scheduling.md ("robots.txt for the first requests").
"""

from __future__ import annotations

import base64
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as _ScrapyRobotsTxt
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Headers, Response
from scrapy.http.request import NO_CALLBACK
from scrapy.responsetypes import responsetypes
from scrapy.utils.asyncio import sleep
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from newscrawl import _scrapy_compat as compat
from newscrawl.context import CrawlContext
from newscrawl.meta import ROBOTS
from newscrawl.middlewares.faults import report_fault
from newscrawl.redis import keys
from newscrawl.scheduling.run import current_run

ROBOTS_TTL = 86400  # the run's robots hash lives a day after its last update
POLL_SECONDS = 0.2  # a worker waiting for another one's robots.txt looks this often

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

logger = logging.getLogger(__name__)


class RobotsForbidden(IgnoreRequest):
    """The request is disallowed by its host's robots.txt (reason ``robots_forbidden``)."""


class RobotsTxtMiddleware(_ScrapyRobotsTxt):
    """Drop-in replacement for Scrapy's middleware (same settings and stats)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        compat.require(self, compat.ROBOTS_INTERNALS, "RobotsTxtMiddleware")
        #: netloc -> the robots.txt response downloaded for it (for the spider's own request)
        self._responses: dict[str, Response] = {}

    async def process_request(  # type: ignore[override]  # may answer with a Response
        self, request: Request, spider: Spider | None = None
    ) -> Response | None:
        if request.meta.get(ROBOTS) and urlparse_cached(request).path == "/robots.txt":
            # the spider reads the Sitemap: lines of the robots.txt fetched here anyway
            await self.robot_parser(request)
            fetched = self._responses.get(urlparse_cached(request).netloc)
            if fetched is not None:
                return fetched.replace(request=request)  # not downloaded again
            return None  # it could not be downloaded here: the spider's request tries itself
        await super().process_request(request)
        return None

    def process_request_2(self, rp: RobotParser | None, request: Request) -> None:
        try:
            super().process_request_2(rp, request)
        except IgnoreRequest as exc:
            raise RobotsForbidden(str(exc)) from None

    async def robot_parser(self, request: Request) -> RobotParser | None:
        netloc = urlparse_cached(request).netloc
        current = self._parsers.get(netloc, _MISSING)
        if current is _MISSING:
            # The first request downloads robots.txt and stores the result.
            return await self._download(request, netloc)
        if isinstance(current, Deferred):
            waiter: Deferred[RobotParser | None] = Deferred()

            def _relay(result: RobotParser | None) -> RobotParser | None:
                waiter.callback(result)
                return result  # keep the result for the next waiter

            current.addCallback(_relay)
            return await maybe_deferred_to_future(waiter)
        return current  # type: ignore[return-value]

    async def _download(self, request: Request, netloc: str) -> RobotParser | None:
        """The parent's first-request branch, logging a download failure at WARNING."""
        url = urlparse_cached(request)
        self._parsers[netloc] = Deferred()
        robotsreq = Request(
            f"{url.scheme}://{netloc}/robots.txt",
            priority=self.DOWNLOAD_PRIORITY,
            meta={"dont_obey_robotstxt": True},
            callback=NO_CALLBACK,
        )
        shared = self._shared_key()
        try:
            assert self.crawler.engine is not None
            resp = await self._fetched_by_another(shared, netloc, robotsreq) if shared else None
            if resp is None:
                try:
                    resp = await self.crawler.engine.download_async(robotsreq)
                except BaseException:
                    self._share(shared, netloc, None)  # the others try themselves
                    raise
                self._share(shared, netloc, resp)
            else:
                self._stats.inc_value("newscrawl/robots/shared")
            self._responses[netloc] = resp
            await self._parse_robots(resp, netloc, request)
        except Exception as exc:
            if not isinstance(exc, IgnoreRequest):
                logger.warning(
                    "Could not download %s (%s: %s): fetching %s as if it had no robots.txt",
                    robotsreq.url, type(exc).__name__, exc, netloc,
                )
            self._robots_error(exc, netloc)
        self._stats.inc_value("robotstxt/request_count")
        parser = self._parsers[netloc]
        if isinstance(parser, Deferred):
            return await maybe_deferred_to_future(parser)
        return parser


    def _shared_key(self) -> str | None:
        """The run's robots hash (None before the scheduler opened or without Redis)."""
        run = current_run(self.crawler)
        if run is None:
            return None
        return CrawlContext.of(self.crawler).keys()(keys.CRAWL_ROBOTS, run=run)

    def _redis(self) -> Any:
        return CrawlContext.of(self.crawler).redis

    async def _fetched_by_another(self, key: str, netloc: str, request: Request
                                  ) -> Response | None:
        """robots.txt of ``netloc`` as another worker of the run fetched it; None when this
        worker is to fetch it (first to ask, the other gave up or took too long, or Redis
        failed: fetched here, never an error)."""
        wait = self.crawler.settings.getfloat("DOWNLOAD_TIMEOUT", 180) + 5
        try:
            client = self._redis()
            while True:
                if client.hsetnx(key, netloc, json.dumps({"fetching": time.time() + wait})):
                    client.expire(key, ROBOTS_TTL)
                    return None
                raw = client.hget(key, netloc)
                record = json.loads(raw) if raw is not None else {}
                if "status" in record:
                    body = base64.b64decode(record["body_b64"])
                    headers = Headers({"Content-Type": record["type"]} if record.get("type")
                                      else {})
                    cls = responsetypes.from_args(headers=headers, url=record["url"], body=body)
                    return cls(url=record["url"], status=int(record["status"]), headers=headers,
                               body=body, request=request)
                if raw is not None and float(record.get("fetching", 0)) < time.time():
                    return None
                await sleep(POLL_SECONDS)
        except Exception as exc:  # Redis away or a bad record: this worker fetches it
            report_fault(self.crawler, exc)  # Redis refusing the command stops the crawl
            logger.debug("Shared robots.txt of %s not used: %r", netloc, exc)
            return None

    def _share(self, key: str | None, netloc: str, resp: Response | None) -> None:
        """Store the robots.txt response for the other workers (None: give up the fetch)."""
        if key is None:
            return
        try:
            client = self._redis()
            if resp is None:
                client.hdel(key, netloc)
                return
            ctype = resp.headers.get("Content-Type")
            client.hset(key, netloc, json.dumps({
                "status": resp.status, "url": resp.url,
                "type": ctype.decode("latin-1") if ctype else "",
                "body_b64": base64.b64encode(resp.body).decode("ascii")}))
            client.expire(key, ROBOTS_TTL)
        except Exception as exc:  # the others fetch it themselves
            report_fault(self.crawler, exc)  # Redis refusing the command stops the crawl
            logger.debug("Could not share robots.txt of %s: %r", netloc, exc)


_MISSING: object = object()
