"""Sitemaps, robots.txt ``Sitemap:`` lines and feeds as sources of the ``portal`` spider: read
every run in a worker thread one at a time (:mod:`newscrawl.sources`), the site's rules and done
records applied before the caps, the article URLs they list held like a list page's.
Design: docs/design/sources.md.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from scrapy.http import Request, Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread

from newscrawl.extract.dates import ParsedDate, parse_date
from newscrawl.meta import DEPTH, KIND, LISTED_DATE, ROBOTS, ROOT, SITE, SITEMAP_DEPTH, RequestKind
from newscrawl.sites import Site
from newscrawl.sources import (
    Entry,
    Select,
    SourceDocument,
    SourceError,
    newest_children,
    parse_feed,
    parse_sitemap,
    robots_sitemaps,
)
from newscrawl.spiders.portal.base import LIST_PRIORITY
from newscrawl.spiders.portal.outcomes import PLURAL, Outcomes

logger = logging.getLogger(__package__ or __name__)  # one logger for all parts of the spider

#: Article requests queued from a sitemap or feed between two returns to the reactor.
SOURCE_REQUESTS_PER_TURN = 20


def _listed_date(request: Request) -> ParsedDate | None:
    """The date a sitemap or feed gave an article request (meta ``newscrawl_listed_date``)."""
    value = request.meta.get(LISTED_DATE)
    return parse_date(value) if isinstance(value, str) else None


class SourcePages(Outcomes):
    """The sitemap and feed callbacks."""

    def _source_request(self, url: str, site: Site, kind: RequestKind, *, sitemap_depth: int = 0,
                        robots: bool = False, root: bool = False) -> Request:
        meta: dict[str, Any] = {KIND: kind, SITE: site.name, DEPTH: 0,
                                SITEMAP_DEPTH: sitemap_depth}
        if robots:
            meta[ROBOTS] = True
            meta["dont_obey_robotstxt"] = True  # reading robots.txt is always allowed
        if root:
            meta[ROOT] = True
        return Request(
            url,
            callback=self.parse_sitemap if kind == RequestKind.SITEMAP else self.parse_feed,
            errback=self.on_error,
            priority=LIST_PRIORITY,
            meta=meta,
        )

    def _source_roots(self, site: Site) -> Iterator[Request]:
        """The configured sitemaps and feeds of ``site`` (read on every run, like start pages)."""
        for url in site.sitemap_robots:
            self._inc("newscrawl/requests/sitemap")
            yield self._source_request(url, site, RequestKind.SITEMAP, robots=True, root=True)
        for url in site.sitemap_urls:
            self._inc("newscrawl/requests/sitemap")
            yield self._source_request(url, site, RequestKind.SITEMAP, root=True)
        for url in site.feed_urls:
            self._inc("newscrawl/requests/feed")
            yield self._source_request(url, site, RequestKind.FEED, root=True)

    def _unusable(self, site: Site, kind: str, response: Response, exc: SourceError) -> None:
        self._source_failed(site.name, kind, exc.reason)
        logger.warning("Site %s: %s %s cannot be read (%s): %s", site.name, kind, response.url,
                       exc.reason, exc)

    def _read(self, site: Site, kind: str, response: Response, doc: SourceDocument) -> None:
        self._inc(f"newscrawl/pages/{kind}")
        self.site_stats.inc(site.name, "pages", kind)
        if doc.error is not None:
            self._inc(f"newscrawl/{PLURAL[kind]}/recovered")
            # INFO: read all the same, and nothing the user can fix (portals' feeds often carry
            # a bare "&"); a daily WARNING for it would be noise
            # every entry read, those done before and those left out included
            logger.info("Site %s: %s %s has XML errors; read %d entries anyway (%s)",
                        site.name, kind, response.url, max(doc.listed, len(doc.urls))
                        + len(doc.children), doc.error)

    @staticmethod
    def _content_type(response: Response) -> str:
        return (response.headers.get(b"Content-Type") or b"").decode("latin-1")

    async def parse_sitemap(self, response: Response) -> AsyncIterator[Request]:
        """A robots.txt (its ``Sitemap:`` lines), a sitemap index (its newest child sitemaps, to
        ``NEWSCRAWL_SITEMAP_MAX_DEPTH``) or a urlset (its article URLs)."""
        site = self._site_of(response)
        if site is None:
            return
        if response.meta.get(ROBOTS):
            for request in self._robots(response, site):
                yield request
            return
        doc = await self._parse_source(site, RequestKind.SITEMAP, response, parse_sitemap)
        if doc is None:
            return
        if doc.kind == "sitemapindex":
            for request in self._children(response, site, doc):
                yield request
        else:
            async for request in self._queue_listed(site, RequestKind.SITEMAP, doc.entries):
                yield request

    async def _parse_source(self, site: Site, kind: RequestKind, response: Response,
                            parse: Callable[..., SourceDocument]) -> SourceDocument | None:
        """``parse`` (parse_sitemap or parse_feed) of the response, in a worker thread while
        no other source is parsed; the site's rules and done records applied to its entries
        before the caps (:meth:`_selector`); what a cap still cuts counted and logged at WARNING.
        None when unusable."""
        config = self.sources_config
        select = self._selector(site)
        await maybe_deferred_to_future(self._parse_lock.acquire())
        try:
            budget = self._source_budget.setdefault(site.name, config.max_run_entries)
            limit = min(config.max_entries, budget)
            doc = await maybe_deferred_to_future(deferToThread(
                parse, response.body, response.url, max_bytes=config.max_bytes,
                content_type=self._content_type(response), max_entries=limit,
                should_stop=self._stopping, select=select))
            self._source_budget[site.name] = budget - len(doc.urls)
        except SourceError as exc:
            if exc.reason == "stopped":
                self._inc(f"newscrawl/{PLURAL[kind]}/stopped")
                logger.info("Site %s: stopped reading %s %s: the crawl is stopping",
                            site.name, kind, response.url)
            else:
                self._unusable(site, kind, response, exc)
            return None
        finally:
            self._parse_lock.release()
        self._read(site, kind, response, doc)
        plural = PLURAL[kind]
        for reason, count in doc.rejected.items():
            self._inc(f"newscrawl/{plural}/{reason}", count)
        self._inc("newscrawl/links/article", doc.wanted)
        # every article link read, those done on earlier days included (as a list page's)
        self.site_stats.inc(site.name, "links", "seen",
                            count=doc.wanted + doc.rejected.get("done", 0))
        if doc.capped:
            by_run = limit < config.max_entries
            self._inc(f"newscrawl/{plural}/{'run_capped' if by_run else 'entries_capped'}",
                      doc.capped)
            self.site_stats.inc(site.name, "links", "capped", count=doc.capped)
            if not by_run:
                logger.warning(
                    "Site %s: %s %s lists %d article URLs not fetched yet; taking the %d newest,"
                    " %d are left for the next run (NEWSCRAWL_SITEMAP_MAX_ENTRIES)", site.name,
                    kind, response.url, doc.wanted, len(doc.urls), doc.capped)
            elif site.name not in self._warned_run_cap:
                self._warned_run_cap.add(site.name)
                logger.warning(
                    "Site %s: %d article URLs taken from its sitemaps and feeds in this run; %d"
                    " more not fetched yet are left for the next run (the summary counts them"
                    " all; NEWSCRAWL_SITEMAP_MAX_RUN_ENTRIES)", site.name,
                    config.max_run_entries, doc.capped)
        return doc

    def _selector(self, site: Site) -> Select:
        """The site's rules for the entries of its sitemaps and feeds, applied before the caps
        (in the parser's worker thread): within ``allowed_domains``, matching ``article_url``
        (canonical form), not done yet (one done-records round trip per batch). Each entry is
        kept canonical, or gets the reason it is left out (``offsite``, ``invalid``,
        ``not_article``, ``done``)."""
        walks = self.walks  # built here, on the reactor thread

        def select(batch: list[Entry]) -> list[Entry | str]:
            verdicts: list[Entry | str] = []
            candidates: list[tuple[int, Request]] = []
            for url, when in batch:
                try:
                    if not site.allows(url):
                        verdicts.append("offsite")
                        continue
                    article = site.article_link(url, listed=True)
                    if article is None:
                        verdicts.append("not_article")
                        continue
                    request = self._request(article, site, RequestKind.ARTICLE, 1)
                except ValueError:
                    verdicts.append("invalid")
                    continue
                candidates.append((len(verdicts), request))
                verdicts.append((article, when))
            done = walks.done([request for _, request in candidates]) if candidates else []
            for (index, _), is_done in zip(candidates, done, strict=True):
                if is_done:
                    verdicts[index] = "done"
            return verdicts

        return select

    async def _queue_listed(self, site: Site, kind: RequestKind, entries: list[Entry]
                            ) -> AsyncIterator[Request]:
        """:meth:`_listed`, :data:`SOURCE_REQUESTS_PER_TURN` at a time, back to the reactor
        between them, and no more once the crawl is stopping: they wait for the end of the
        run's discovery with the date the document gives them (:meth:`_articles`; the done ones
        were left out when the document was read)."""
        batch: list[tuple[int, Request]] = []
        listed = list(self._listed(site, kind, entries))
        for number, request in enumerate(listed, 1):
            batch.append((len(listed) - number, request))
            if len(batch) < SOURCE_REQUESTS_PER_TURN and number < len(listed):
                continue
            if self._stopping():
                self._inc(f"newscrawl/{PLURAL[kind]}/stopped")
                return
            requests = [r for _, r in batch]
            done = [False] * len(requests)  # the done ones were left out already
            found = [(_listed_date(r), where) for where, r in batch]
            batch = []
            for request in self._articles(site, requests, done, found):
                yield request
            from twisted.internet import reactor  # the crawl's, installed by then

            await maybe_deferred_to_future(deferLater(reactor, 0, lambda: None))

    def _robots(self, response: Response, site: Site) -> Iterator[Request]:
        self._inc("newscrawl/sitemaps/robots_txt")
        urls = robots_sitemaps(response.body, response.url)
        if not urls:
            self._source_failed(site.name, RequestKind.SITEMAP, "robots_none")
            logger.warning("Site %s: %s lists no Sitemap: line", site.name, response.url)
            return
        for url in urls:
            if url in site.sitemap_urls:
                continue  # also configured: requested already
            if not self._allowed(site, url):
                self._inc("newscrawl/sitemaps/offsite")
                logger.warning("Site %s: %s lists the sitemap %s outside allowed_domains; not"
                               " read (add its host to allowed_domains to read it)", site.name,
                               response.url, url)
                continue
            self._inc("newscrawl/requests/sitemap")
            yield self._source_request(url, site, RequestKind.SITEMAP)

    @staticmethod
    def _allowed(site: Site, url: str) -> bool:
        try:
            return site.allows(url)
        except ValueError:
            return False

    def _children(self, response: Response, site: Site, doc: SourceDocument) -> Iterator[Request]:
        depth = int(response.meta.get(SITEMAP_DEPTH, 0))
        config = self.sources_config
        if depth >= config.max_depth:
            self._inc("newscrawl/sitemaps/index_too_deep")
            logger.warning("Site %s: sitemap index %s is nested %d deep; its %d sitemaps are not"
                           " read (NEWSCRAWL_SITEMAP_MAX_DEPTH = %d)", site.name, response.url,
                           depth, len(doc.children), config.max_depth)
            return
        urls, left_out = newest_children(doc.children, config.max_children)
        if left_out:
            self._inc("newscrawl/sitemaps/children_capped", left_out)
            logger.info("Site %s: sitemap index %s lists %d sitemaps; reading the %d newest"
                        " (NEWSCRAWL_SITEMAP_MAX_CHILDREN)", site.name, response.url,
                        len(doc.children), len(urls))
        for url in urls:
            if not self._allowed(site, url):
                self._inc("newscrawl/sitemaps/offsite")
                continue
            self._inc("newscrawl/requests/sitemap")
            yield self._source_request(url, site, RequestKind.SITEMAP, sitemap_depth=depth + 1)

    async def parse_feed(self, response: Response) -> AsyncIterator[Request]:
        """An RSS or Atom feed: the article URLs of its entries."""
        site = self._site_of(response)
        if site is None:
            return
        doc = await self._parse_source(site, RequestKind.FEED, response, parse_feed)
        if doc is None:
            return
        async for request in self._queue_listed(site, RequestKind.FEED, doc.entries):
            yield request

    def _listed(self, site: Site, kind: str, entries: list[Entry]) -> Iterator[Request]:
        """Article requests for the entries a sitemap or feed lists, as :meth:`_selector` kept
        them (canonical, each once); the date the source gives each is in the request's meta
        :data:`~newscrawl.meta.LISTED_DATE`."""
        plural = PLURAL[kind]
        for url, when in entries:
            try:
                request = self._request(url, site, RequestKind.ARTICLE, 1)
            except ValueError:
                self._inc(f"newscrawl/{plural}/invalid")
                continue
            if when is not None:
                request.meta[LISTED_DATE] = when.isoformat()
            yield request
