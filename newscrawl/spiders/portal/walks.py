"""Start and list pages of the ``portal`` spider: the article links a page shows (with the date
printed beside each), and which of its list links the page's walk follows (stop-at-known, the
per-run cap, the pagination bar of :mod:`.pagebar`). Design: docs/design/pagination.md.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urldefrag, urlsplit

from scrapy.http import Request, Response, TextResponse

from newscrawl.connection import RedisUnavailable
from newscrawl.extract.dates import ParsedDate
from newscrawl.meta import (
    DEPTH,
    KIND,
    KNOWN,
    PAGE_AFTER,
    PAGE_NUMBER,
    SITE,
    WALK,
    WALK_START,
    RequestKind,
)
from newscrawl.middlewares.faults import report_fault
from newscrawl.scheduling.lists import ADMITTED, OVER_CAP, position
from newscrawl.scheduling.waiting import row_date
from newscrawl.sites import Site, follow_pattern, quote_regex
from newscrawl.spiders.portal.base import PortalBase, article_pattern
from newscrawl.spiders.portal.pagebar import ListLink, looks_like_list, plan

if TYPE_CHECKING:
    from twisted.python.failure import Failure

logger = logging.getLogger(__package__ or __name__)  # one logger for all parts of the spider

#: elements that hold one entry of a listing (the link and what is printed beside it)
_ROW_TAGS = frozenset({"li", "tr", "dd", "dt"})
#: a parent element whose text is at most this long is the link's row when no _ROW_TAGS is near
_ROW_TEXT_MAX = 200


def _beside(anchor: Any) -> ParsedDate | None:
    """The date printed beside a link in its list row (its ``<li>``, table row, ``<dd>``, or a
    short parent element), the link's own text left out."""
    own = anchor.text_content() if hasattr(anchor, "text_content") else ""
    row = None
    node = anchor.getparent()
    for _ in range(3):
        if node is None or not isinstance(node.tag, str):
            break
        if node.tag in _ROW_TAGS:
            row = node
            break
        node = node.getparent()
    if row is None:
        parent = anchor.getparent()
        if parent is None or not isinstance(parent.tag, str) or parent.tag in ("body", "html"):
            return None
        row = parent
    text = row.text_content()
    if len(text) > 4 * _ROW_TEXT_MAX or (row is anchor.getparent() and row.tag not in _ROW_TAGS
                                         and len(text) > _ROW_TEXT_MAX):
        return None
    if own:
        text = text.replace(own, " ", 1)
    return row_date(text)


class ListPages(PortalBase):
    """The start and list page callback, and the walks below them."""

    def parse_page(self, response: Response) -> Iterator[Request]:
        """A start or list page: its list links while the walk goes on (see
        :meth:`_follow_lists`), and its article links: those not done yet wait for the end of
        the run's discovery (see :meth:`_articles`)."""
        site = self._site_of(response)
        if site is None:
            return
        kind = response.meta.get(KIND, RequestKind.START)
        self._inc(f"newscrawl/pages/{kind}")
        self.site_stats.inc(site.name, "pages", kind)
        if not isinstance(response, TextResponse):
            self._inc("newscrawl/pages/not_html")
            logger.warning("List page %s is not HTML (%s)", response.url,
                           response.headers.get(b"Content-Type"))
            return
        depth = int(response.meta.get(DEPTH, 0))
        start = kind == RequestKind.START and site.follow_url is not None
        article_urls, list_links, row_dates, next_like = self._page_links(
            response, site, next_like=start)
        if start and not list_links:
            self._next_unmatched(response, site, next_like)
        articles = [self._request(url, site, RequestKind.ARTICLE, depth + 1)
                    for url in article_urls]
        self._inc("newscrawl/links/article", len(articles))
        self.site_stats.inc(site.name, "links", "seen", count=len(articles))
        done = self.walks.done(articles) if articles else []
        lists, _ = self._follow_lists(response, site, kind, depth, bool(articles),
                                      done.count(False), list_links)
        yield from self._articles(site, articles, done, [
            (row_dates.get(request.url), position(depth, place))
            for place, request in enumerate(articles)])
        yield from lists

    def _page_links(self, response: TextResponse, site: Site, *, next_like: bool = False
                    ) -> tuple[list[str], list[ListLink], dict[str, ParsedDate], list[ListLink]]:
        """(article URLs, list links, dates printed beside article links, other links of the
        site that look like a next page) linked from a page, each once, in page order.

        A URL that matches both ``follow_url`` and ``article_url`` is a list page (warned about
        once per site); links to the site's start URLs are skipped (read every run anyway). A list
        link keeps its anchor text and ``rel`` (:mod:`.pagebar`). A list-like link is one
        ``follow_url`` does not match whose text or ``rel`` says it leads to more of a listing
        ("下一页", page number 2: :func:`.pagebar.looks_like_list`; collected when
        ``next_like``)."""
        seen: set[str] = set()
        article_urls: list[str] = []
        list_links: list[ListLink] = []
        nexts: list[ListLink] = []
        dates: dict[str, ParsedDate] = {}
        for anchor in response.xpath("//a[@href]"):
            href = (anchor.attrib.get("href") or "").strip()
            if not href or href.startswith(("javascript:", "mailto:", "#")):
                continue
            try:
                url = urldefrag(response.urljoin(href))[0]
                if url in seen or not url.startswith(("http://", "https://")):
                    continue
                seen.add(url)
                urlsplit(url).port  # noqa: B018 - raises ValueError for a port out of range
                if not site.allows(url) or url in site.start_urls:
                    continue
                is_list = site.is_list(url)
                article = site.article_link(url)
                if article is not None:
                    if not is_list:
                        if article != url and article in seen:
                            continue
                        seen.add(article)
                        article_urls.append(article)
                        when = _beside(anchor.root)
                        if when is not None:
                            dates[article] = when
                        continue
                    self._warn_ambiguous(site, url)
                if is_list or (next_like and article is None):
                    text = " ".join(anchor.xpath(".//text()").getall())
                    link = ListLink(url, text, anchor.attrib.get("rel") or "")
                    if is_list:
                        list_links.append(link)
                    elif looks_like_list(link):
                        nexts.append(link)
            except ValueError as exc:
                # e.g. "http://[::1/x" (invalid IPv6) or a port out of range: one bad link must
                # not end the page's generator and lose every link after it
                self._inc("newscrawl/links/invalid")
                logger.warning("Skipping an invalid link on %s: %r (%s)", response.url, href, exc)
        return article_urls, list_links, dates, nexts

    def _next_unmatched(self, response: Response, site: Site, next_like: list[ListLink]
                        ) -> None:
        """A start page with no link ``follow_url`` matches, but one that looks like a list page
        (a next page, page 2, or a ``<link rel="next">``): most likely a ``follow_url``
        that misses the site's list pages. Counted for the end-of-run warning (which it makes
        fire on a site's first crawl too) and logged once per site and worker, with the link."""
        heads = self._head_next(response, site, lists_only=False)
        if any(site.is_list(url) for url in heads):
            return
        found = next_like + [ListLink(url, "", "next") for url in heads]
        if not found:
            return
        self.site_stats.inc(site.name, "links", "next_unmatched")
        if site.name in self._warned_next:
            return
        self._warned_next.add(site.name)
        link = found[0]
        logger.warning(
            "Site %s: start page %s links to %s (%s), a list page by the look of it, but"
            " follow_url %s does not match it: no list page below this start page is read."
            " Does follow_url match the site's list pages?",
            site.name, response.url, link.url,
            repr(" ".join(link.text.split())) if link.text.strip() else f'rel="{link.rel}"',
            quote_regex(site.follow_url.pattern) if site.follow_url is not None else "")

    @staticmethod
    def _head_next(response: Response, site: Site, *, lists_only: bool = True) -> list[str]:
        """The list pages a page's ``<link rel="next">`` names (``lists_only=False``: every
        page of the site it names, ``follow_url`` or not)."""
        out = []
        for href in response.xpath("//head/link[@rel='next']/@href").getall():
            try:
                url = urldefrag(response.urljoin(href.strip()))[0]
                if site.allows(url) and (site.is_list(url) or not lists_only):
                    out.append(url)
            except ValueError:
                continue
        return out

    def _warn_ambiguous(self, site: Site, url: str) -> None:
        self._inc("newscrawl/links/ambiguous")
        self.site_stats.inc(site.name, "links", "ambiguous")
        if site.name not in self._warned_ambiguous:
            self._warned_ambiguous.add(site.name)
            logger.warning(
                "Site %s: list page %s also matches article_url %s; it is followed as a list"
                " page (follow_url wins). Make article_url stricter.",
                site.name, url, article_pattern(site),
            )

    def _follow_lists(self, response: Response, site: Site, kind: str, depth: int,
                      has_articles: bool, new: int, list_links: list[ListLink]
                      ) -> tuple[list[Request], bool]:
        """A page's list links, while its walk goes on, and whether the walk goes on below this
        page (it admitted a list page not admitted before).

        ``known`` counts the consecutive list pages (this one included) whose article links were
        all done already; a list page without any article link leaves it as it was, and a start
        page starts a walk at 0. The walk stops below a page once ``known`` reaches
        ``stop_after_known``; it never admits more than ``max_list_pages`` list pages per start
        page and run (Redis, shared by the workers; see newscrawl/scheduling/lists.py). Of a
        numbered pagination bar only the next page is followed (:mod:`.pagebar`):
        the one after it is asked for once that page showed something new."""
        start_url = str(response.meta.get(WALK_START) or response.url)
        if kind == RequestKind.START:
            known = 0
            walk = self.walks.walk_id(Request(start_url))
        else:
            parent_known = int(response.meta.get(KNOWN, 0) or 0)
            known = 0 if new else (parent_known + 1 if has_articles else parent_known)
            walk = str(response.meta.get(WALK) or site.name)
        number = response.meta.get(PAGE_NUMBER)
        page_plan = plan(
            list_links, response.url, number if isinstance(number, int) else None,
            next_urls=self._head_next(response, site))
        if page_plan.withheld:
            self._inc("newscrawl/lists/sequence_withheld", page_plan.withheld)
        list_urls = page_plan.follow
        if not list_urls:
            return [], False
        if known >= site.stop_after_known and not self._follow_url_changed(site):
            self._inc("newscrawl/lists/stopped_at_known")
            logger.debug("Site %s: nothing new on %d list page(s) up to %s; not following its"
                         " %d list links", site.name, known, response.url, len(list_urls))
            return [], False
        if site.too_deep(depth + 1):
            self._inc("newscrawl/links/list_too_deep", len(list_urls))
            return [], False
        requests = [self._request(url, site, RequestKind.LIST, depth + 1, walk=walk, known=known,
                                  start_url=start_url, number=page_plan.numbers.get(url),
                                  after=page_plan.after.get(url))
                    for url in list_urls]
        run_id = self._run_id()
        results = (self.walks.reserve(run_id, walk, requests, site.max_list_pages) if run_id
                   else [ADMITTED] * len(requests))
        over = 0
        out = []
        for request, result in zip(requests, results, strict=True):
            if result == OVER_CAP:
                over += 1
                continue
            self._inc("newscrawl/links/list")
            out.append(request)
        if over:
            self._inc("newscrawl/lists/over_cap", over)
            if new:
                self._inc("newscrawl/lists/cap_reached")
                self.site_stats.inc(site.name, "lists", "cap_reached")
                logger.warning(
                    "Site %s: max_list_pages (%d) reached below %s while %s still had %d new"
                    " article(s); %d list link(s) not followed: older articles may be missed."
                    " Raise max_list_pages or crawl more often.",
                    site.name, site.max_list_pages, start_url, response.url, new,
                    over,
                )
        return out, ADMITTED in results

    def _follow_url_changed(self, site: Site) -> bool:
        """Whether ``site``'s ``follow_url`` differs from the one of the last finished run that
        fetched its start pages: then this run walks its list pages past pages of known
        articles, down to ``max_list_pages``, for the articles the old one did not reach (a
        mended typo, list pages the portal moved). Asked once per site and worker; the value is
        recorded at the end of a finished run, so every worker of a run gets the same answer."""
        changed = self._follow_changed.get(site.name)
        if changed is None:
            before = self.walks.follow_url_before(site.name) if self._run_id() else None
            now = follow_pattern(site)
            changed = before is not None and before != now
            self._follow_changed[site.name] = changed
            if changed:
                self.site_stats.inc(site.name, "lists", "follow_url_changed")
                logger.info(
                    "Site %s: follow_url changed since the last finished run (%s, now %s): its"
                    " walks go on past list pages of known articles this run, down to"
                    " max_list_pages (%d), to fetch what the old one did not reach",
                    site.name, quote_regex(before) if before else "none",
                    quote_regex(now) if now else "none", site.max_list_pages)
        return changed

    def _after_failed(self, failure: Failure) -> list[Request]:
        request = getattr(failure, "request", None)
        site = request.meta.get(SITE) if request is not None else None
        if request is None or not isinstance(site, str):
            return []
        try:
            return self._page_after(request, self.sites.get(site))
        except RedisUnavailable as exc:
            report_fault(self.crawler, exc)  # stops the crawl (exit code 3)
            return []

    def _page_after(self, failed: Request, site: Site | None) -> list[Request]:
        """The page after a failed page of a numbered bar, admitted to its walk: the walk goes
        on there (a sequence does not end at one broken page)."""
        after = failed.meta.get(PAGE_AFTER)
        run_id = self._run_id()
        if site is None or run_id is None or failed.meta.get(KIND) != RequestKind.LIST or \
                not isinstance(after, list) or len(after) != 2:
            return []
        url, number = after
        walk = str(failed.meta.get(WALK) or site.name)
        try:
            request = self._request(
                str(url), site, RequestKind.LIST, int(failed.meta.get(DEPTH, 1)), walk=walk,
                known=int(failed.meta.get(KNOWN, 0) or 0),
                start_url=str(failed.meta.get(WALK_START) or ""),
                number=int(number) if isinstance(number, int) else None)
        except (TypeError, ValueError):
            return []
        if self.walks.reserve(run_id, walk, [request], site.max_list_pages) != [ADMITTED]:
            return []
        self._inc("newscrawl/lists/skipped_failed_page")
        self._inc("newscrawl/links/list")
        logger.info("Site %s: list page %s failed; its walk goes on at %s, the page after it",
                    site.name, failed.url, request.url)
        return [request]
