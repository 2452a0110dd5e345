"""What the ``portal`` spider queues outside its callbacks: the run's waiting article links,
oldest first, once the run's discovery is done, and URLs pushed through Redis; and what keeps
an idle worker in the run. Design: docs/design/scheduling.md.
"""

from __future__ import annotations

import logging
from collections import Counter

from scrapy.exceptions import DontCloseSpider
from scrapy.http import Request
from scrapy.utils.asyncio import create_looping_call

from newscrawl.connection import RedisUnavailable
from newscrawl.context import CrawlContext
from newscrawl.formats import plural
from newscrawl.meta import ORDER, ORDER_DAY, ORDER_RUN, ORDER_TIMED_DAY, RequestKind
from newscrawl.middlewares.faults import report_fault
from newscrawl.scheduling.waiting import BATCH, UNDATED, day_only
from newscrawl.sites import route_pushed
from newscrawl.spiders.portal.base import PortalBase

logger = logging.getLogger(__package__ or __name__)  # one logger for all parts of the spider

#: seconds between two looks at whether the run's waiting article links can be queued
RELEASE_SECONDS = 0.5

#: what becomes of a pushed URL, as the "Took N URLs pushed through Redis: ..." line says it
LIST_PAGE = "list page"
ARTICLE = "article"
ALREADY_DONE = "already done"
FETCHED_AGAIN = "fetched again"
REFUSED = "refused: "  # + why, in a few words
PUSHED_OUTCOMES = {
    LIST_PAGE: ("list page", "list pages", " (walked from there)"),
    ARTICLE: ("article", "articles", " (queued with the run's article links)"),
    ALREADY_DONE: ("article already done", "articles already done", " (not fetched again)"),
    FETCHED_AGAIN: ("article done before", "articles done before",
                    " (pushed with --again: fetched once more)"),
}


def pushed_outcomes(outcomes: Counter[str]) -> str:
    """``outcomes`` (outcome -> how many pushed URLs) in words, e.g. ``2 articles (queued with
    the run's article links), 1 refused (no site takes it)``."""
    parts = []
    for outcome, (one, many, note) in PUSHED_OUTCOMES.items():
        n = outcomes.get(outcome, 0)
        if n:
            parts.append(plural(n, one, many) + note)
    refused = {k.removeprefix(REFUSED): n for k, n in outcomes.items() if k.startswith(REFUSED)}
    if refused:
        whys = (f"{n} {why}" if len(refused) > 1 else why for why, n in sorted(refused.items()))
        parts.append(f"{sum(refused.values())} refused ({', '.join(whys)})")
    return ", ".join(parts)


class Queueing(PortalBase):
    """The release loop, pushed URLs and the idle signal."""

    def _start_release_loop(self) -> None:
        self._release_loop = create_looping_call(self._release_tick)
        self._release_loop.start(RELEASE_SECONDS, now=False)

    def _stop_release_loop(self) -> None:
        if self._release_loop is not None and self._release_loop.running:
            self._release_loop.stop()

    def _release_tick(self) -> None:
        try:
            self._take_pushed()
            self._release()
        except Exception as exc:
            if self.crawler is None or not CrawlContext.of(self.crawler).report_fault(exc):
                logger.exception("Cannot queue the run's waiting article links")

    def _release(self) -> int:
        """Queue the run's waiting article links, oldest first, once its discovery is done (any
        worker may; one at a time). Returns how many were queued."""
        run_id = self._run_id()
        engine = self.crawler.engine if self.crawler is not None else None
        if run_id is None or engine is None or self._starting or self._stopping():
            return 0
        queued = 0
        while True:
            release = self.wait.take(run_id)
            if release is None:
                break
            # order numbers carry the order into the near-duplicate check, where an article
            # waits for other sites' earlier ones: with one site there are none
            ordered = len(self.sites) > 1 and bool(release.links)
            first = self.order.reserve(run_id, len(release.links)) if ordered else 0
            for number, link in enumerate(release.links, first):
                site = self.sites.get(link.site)
                if site is None:
                    self._inc("newscrawl/requests/unknown_site")
                    continue
                request = self._request(link.url, site, RequestKind.ARTICLE, link.depth)
                if ordered:
                    request.meta[ORDER] = number
                    request.meta[ORDER_RUN] = run_id
                    day = day_only(link.score)
                    if day is not None:
                        request.meta[ORDER_DAY] = day
                    elif link.score < UNDATED:
                        request.meta[ORDER_TIMED_DAY] = int(link.score // 86400)
                engine.crawl(request)
            if self._stopping():
                self.wait.abandon(run_id, release)  # queued again by the next run
                break
            self.wait.done(run_id, release)
            queued += len(release.links)
            if release.bound and not self._warned_wait_bound:
                self._warned_wait_bound = True
                self._inc("newscrawl/lists/wait_bound_reached")
                logger.warning(
                    "Discovery of run %s still going after %d s (NEWSCRAWL_ARTICLE_WAIT):"
                    " queueing the article links found so far; links found later are queued"
                    " as they come, in order among themselves", run_id,
                    self.wait.wait_seconds)
            if len(release.members) < BATCH:
                break
        if queued:
            self._inc("newscrawl/lists/articles_released", queued)
            logger.info("Queued %s of run %s, oldest first", plural(queued, "article link"),
                        run_id)
        return queued

    def _take_pushed(self) -> int:
        """Schedule the URLs pushed to ``{prefix}:{spider}:start_urls`` (any worker of the run;
        one at a time): each as an article or list page of the site that takes it. Returns how
        many were taken (read as a URL, refused ones included)."""
        run_id = self._run_id()
        engine = self.crawler.engine if self.crawler is not None else None
        if run_id is None or engine is None or self._stopping():
            return 0
        pushed = self.pushed.take()
        if pushed is None:
            return 0
        outcomes: Counter[str] = Counter()
        for url, name, again in pushed.entries:
            outcome, requests = self._pushed_requests(url, name, again)
            outcomes[outcome] += 1
            for request in requests:
                engine.crawl(request)
        if pushed.unreadable:
            outcomes[REFUSED + "not a URL"] += pushed.unreadable
            self._inc("newscrawl/pushed/refused", pushed.unreadable)
            logger.warning("%d entries pushed to the crawl's start_urls are neither a URL nor"
                           ' JSON {"url": ..., "site": ...}: skipped', pushed.unreadable)
        self.pushed.done(pushed)
        if pushed.entries:
            self._inc("newscrawl/pushed/taken", len(pushed.entries))
        if outcomes:
            logger.info("Took %d URLs pushed through Redis: %s", sum(outcomes.values()),
                        pushed_outcomes(outcomes))
        return len(pushed.entries)

    def _pushed_requests(self, url: str, name: str | None,
                         again: bool = False) -> tuple[str, list[Request]]:
        """What becomes of one pushed URL (one of :data:`PUSHED_OUTCOMES`, or :data:`REFUSED`
        and why) and its requests: a list page (a walk of its own) or an article (waiting with
        the run's others); none, with one WARNING, for a URL no site takes. ``again``: an
        article done before (stored, dropped or given up on) loses its done record and is
        fetched once more."""
        route = route_pushed(self.sites, url, name)
        site = route.site
        if route.kind is None or site is None:
            return self._refuse_pushed(route.url, route.why, route.short)
        if route.kind == "list":
            self._inc("newscrawl/links/list")
            return LIST_PAGE, [self._request(route.url, site, RequestKind.LIST, 1,
                                             walk=self.walks.walk_id(Request(route.url)),
                                             known=0, start_url=route.url)]
        request = self._request(route.url, site, RequestKind.ARTICLE, 1)
        self._inc("newscrawl/links/article")
        self.site_stats.inc(site.name, "links", "seen")
        done = self.walks.done([request])
        if again and done[0] and self.walks.df.forget(request):
            # its item meets the index again: an article stored before is found in the store
            # and not stored twice
            logger.info("Pushed URL %s was done: fetched again (--again)", route.url)
            return FETCHED_AGAIN, self._articles(site, [request], [False], [(None, 0)])
        # the done one goes to the scheduler, which drops it; a new one waits
        return (ALREADY_DONE if done[0] else ARTICLE,
                self._articles(site, [request], done, [(None, 0)]))

    def _refuse_pushed(self, url: str, why: str, short: str) -> tuple[str, list[Request]]:
        self._inc("newscrawl/pushed/refused")
        logger.warning("Pushed URL %s not crawled: %s", url, why)
        return REFUSED + short, []

    def _on_idle(self) -> None:
        """A crawl with nothing queued or in flight anywhere takes the URLs pushed meanwhile
        and queues the links still waiting."""
        try:
            released = self._take_pushed() + self._release()
        except Exception as exc:
            if self.crawler is None or not CrawlContext.of(self.crawler).report_fault(exc):
                logger.exception("Cannot queue the run's waiting article links")
            return
        if released:
            raise DontCloseSpider
        run_id = self._run_id()
        try:
            waiting = run_id is not None and not self._stopping() and self.wait.waiting(run_id)
        except RedisUnavailable as exc:
            report_fault(self.crawler, exc)
            return
        if waiting:
            # links still wait (another worker is queueing them, or discovery goes on): work
            # for this worker too, so it does not leave the run
            raise DontCloseSpider
