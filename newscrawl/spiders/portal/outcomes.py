"""How the ``portal`` spider counts and logs what went wrong (a download's failure reason, an
unusable sitemap or feed) and sums up the run at its end: a line per site, warnings, exit
code 4. Design: docs/design/architecture.md.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
    UnsupportedURLSchemeError,
)
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet.error import ConnectError, ConnectionLost, DNSLookupError, TCPTimedOutError
from twisted.internet.error import ConnectionRefusedError as TxConnectionRefusedError
from twisted.internet.error import TimeoutError as TxTimeoutError
from twisted.web._newclient import ResponseFailed

from newscrawl.exitcodes import ExitCode, exit_code, set_exit_code
from newscrawl.keys import CRAWL_SITES_FIRST_RUN
from newscrawl.meta import KIND, SITE, RequestKind
from newscrawl.middlewares.faults import report_fault
from newscrawl.middlewares.redirects import RedirectedAway, RedirectLoop
from newscrawl.middlewares.robots import RobotsForbidden
from newscrawl.scheduling.run import REASON_REDIS_UNAVAILABLE, current_run
from newscrawl.sites import follow_pattern, quote_regex
from newscrawl.sitestats import run_outcome
from newscrawl.spiders.portal.base import PortalBase, article_pattern

if TYPE_CHECKING:
    from twisted.python.failure import Failure

logger = logging.getLogger(__package__ or __name__)  # one logger for all parts of the spider

#: the request kinds of sitemaps and feeds
_DOCUMENT_KINDS = (RequestKind.SITEMAP, RequestKind.FEED)
PLURAL: dict[str, str] = {RequestKind.SITEMAP: "sitemaps", RequestKind.FEED: "feeds"}

#: Download failure reasons by exception class, first match wins (Scrapy 2.19 wraps Twisted's
#: errors in its own; both are listed for other download handlers). Documented in
#: docs/design/architecture.md (``newscrawl/download/failed/<reason>``).
_FAILURE_REASONS: tuple[tuple[tuple[type[BaseException], ...], str], ...] = (
    ((RobotsForbidden,), "robots_forbidden"),
    ((RedirectLoop,), "redirect_loop"),
    ((RedirectedAway,), "redirected_away"),
    ((DownloadCancelledError,), "too_large"),  # what DOWNLOAD_MAXSIZE raises
    ((DownloadTimeoutError, TxTimeoutError, TCPTimedOutError), "timeout"),
    ((CannotResolveHostError, DNSLookupError), "dns"),
    ((DownloadConnectionRefusedError, TxConnectionRefusedError), "connection_refused"),
    ((ResponseDataLossError,), "data_loss"),
    ((DownloadFailedError, ResponseFailed, ConnectionLost), "connection_lost"),
    ((ConnectError,), "connect_error"),
    ((UnsupportedURLSchemeError,), "unsupported_scheme"),
    ((IgnoreRequest,), "ignored"),
)


def _status_line(status: int) -> str:
    """``HTTP 503 Service Unavailable``."""
    try:
        return f"HTTP {status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def failure_reason(failure: Failure) -> str:
    """A short, stats-friendly name for why a request failed."""
    exc = failure.value
    if isinstance(exc, HttpError):
        return f"http_{exc.response.status}"
    for classes, reason in _FAILURE_REASONS:
        if isinstance(exc, classes):
            return reason
    return "other"


#: Scrapy's download handlers, which log a WARNING for a response over DOWNLOAD_MAXSIZE
_SIZE_LOGGERS = ("scrapy.core.downloader.handlers.http11",
                 "scrapy.core.downloader.handlers._base_streaming")


class _SaidByTheSpider(logging.Filter):
    """Drops Scrapy's WARNING for a response over DOWNLOAD_MAXSIZE: the failed download's own
    WARNING (:meth:`Outcomes._log_error`) repeats its text with what follows for the page."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "larger than download max size" not in record.getMessage()


def quiet_scrapy_size_warnings() -> None:
    """Install :class:`_SaidByTheSpider` once on Scrapy's download handler loggers."""
    for name in _SIZE_LOGGERS:
        target = logging.getLogger(name)
        if not any(isinstance(f, _SaidByTheSpider) for f in target.filters):
            target.addFilter(_SaidByTheSpider())


class Outcomes(PortalBase):
    """Failed downloads and unusable sources counted and logged; the end-of-run summary."""

    def _log_error(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        # the URL as linked (the first of a redirect chain): the one its retry fetches
        redirects = request.meta.get("redirect_urls") if request is not None else None
        url = redirects[0] if redirects else request.url if request is not None else "?"
        kind = request.meta.get(KIND, "?") if request is not None else "?"
        site = request.meta.get(SITE) if request is not None else None
        reason = failure_reason(failure)
        if kind in _DOCUMENT_KINDS and request is not None:
            self._source_failed(site, kind, reason, downloaded=False)
        if reason == "robots_forbidden":
            self._inc("newscrawl/download/robots_forbidden")
            logger.debug("Forbidden by robots.txt: %s", url)
            return
        self._inc("newscrawl/download/failed")
        self._inc(f"newscrawl/download/failed/{reason}")
        if isinstance(site, str) and site in self.sites:
            self.site_stats.failed(site, kind, "download")
        detail = failure.getErrorMessage()
        if isinstance(failure.value, HttpError):  # Scrapy's "Ignoring non-200 response"
            detail = _status_line(failure.value.response.status)
        if reason == "other":
            detail = f"{failure.type.__name__}: {detail}" if failure.type else detail
        elif not detail.strip() and reason == "data_loss":
            detail = "the connection closed before the whole body came"
        elif not detail.strip() and failure.type is not None:
            detail = failure.type.__name__
        if redirects and reason not in ("redirect_loop", "redirected_away") \
                and request is not None:
            detail = f"{detail}; redirected to {request.url}"
        logger.warning("Download of %s page %s failed: %s (%s); %s", kind, url, reason, detail,
                       "every run fetches it again" if kind == RequestKind.START
                       else "counted as a failed attempt: later runs try it again until it has"
                       " failed on NEWSCRAWL_MAX_ATTEMPTS days")

    def _source_failed(self, site_name: Any, kind: str, reason: str, *,
                       downloaded: bool = True) -> None:
        """Count an unusable sitemap or feed (``downloaded``: the download itself worked; a
        failed download is counted per site by :meth:`on_error`)."""
        self._inc(f"newscrawl/{PLURAL[kind]}/{reason}")
        if downloaded and isinstance(site_name, str) and site_name in self.sites:
            self.site_stats.failed(site_name, kind, "extraction")

    def closed(self, reason: str) -> None:
        """One INFO line per site with the run's figures, a WARNING per site that yielded no
        article link or could not be fetched at all, and exit code 4 when no source page of any
        site could be fetched (see newscrawl/sitestats.py)."""
        if not self.sites:
            return
        if reason == REASON_REDIS_UNAVAILABLE and self.crawler is not None \
                and current_run(self.crawler) is None:
            return  # Redis was unreachable at start: nothing was crawled, nothing to sum up
        figures, of_run = self.site_stats.run_figures(
            redis_ok=reason != REASON_REDIS_UNAVAILABLE)
        outcome = run_outcome(self.sites, figures)
        run_id = self._run_id()
        joined = bool(self.crawler is not None and self.crawler.stats is not None
                      and self.crawler.stats.get_value("newscrawl/scheduler/run_joined"))
        # a worker that joined the run skipped its start pages: the figures do not say it
        # fetched them (the run's) or why it has none (its own)
        logger.info("Summary of %s (%s%s%s):", f"run {run_id}" if run_id else "this crawl",
                    "the run's figures so far, all workers" if of_run
                    else "this worker's figures",
                    "; this worker joined the run, whose first worker queued the start pages"
                    if joined else "",
                    f"; this worker stopped before the run's end: {reason}"
                    + (" (Ctrl-C or SIGTERM)" if reason == "shutdown" else "")
                    if reason != "finished" else "")
        if reason != "finished" and not any(
                summary.sources_fetched or summary.get("pages/article")
                for summary in outcome.summaries):
            # stopped before any page came in: a line of zeros per site would read as an empty run
            logger.info("No page of any site was fetched before the stop")
        else:
            for summary in outcome.summaries:
                logger.info("%s", summary.line())
            if len(outcome.summaries) > 1:
                idle = [s.name for s in outcome.summaries
                        if not s.sources_fetched and not s.get("pages/article")]
                logger.info("%s%s", outcome.total().line(f"All {len(outcome.summaries)} sites"),
                            f"; fetched nothing: {len(idle)} ({', '.join(idle[:10])}"
                            f"{', ...' if len(idle) > 10 else ''})" if idle else "")
        if reason != "finished":
            # stopped (a fault of the crawl's own, Ctrl-C, a shutdown): a site's missing pages
            # say nothing about the site or the network, and the CRITICAL line above says why
            self._end_run(reason)
            return
        # the site warnings of a finished run, also recorded for `newscrawl status` and `report`
        warnings: dict[str, list[str]] = {}
        first = self._first_crawls(run_id, outcome.summaries)
        for summary in outcome.summaries:
            site = self.sites[summary.name]
            seen = summary.get("links/seen")
            if not summary.sources_fetched:
                text = (f"none of its start/list/sitemap/feed pages could be fetched and"
                        f" read ({summary.sources_failed} failed; each failure's cause is logged"
                        f" above, as 'Download of ... failed' or, for a page that came but is"
                        f" not what it should be, '... cannot be read'): check the network and"
                        f" the site's start URLs, sitemaps and feeds")
            elif not seen:
                text = (f"its {summary.sources_fetched} start/list/sitemap/feed page(s) yielded"
                        f" no article link: "
                        + (f"does article_url {article_pattern(site)} match its article URLs?"
                           if site.article_url is not None else
                           "do its sitemaps and feeds list URLs on its hosts"
                           f" ({', '.join(site.allowed_domains)})?"))
            elif (site.follow_url is not None
                  and (summary.name not in first or summary.get("links/next_unmatched"))
                  and site.max_list_depth != 0
                  and summary.sources_fetched == summary.get("pages/start")
                  and not summary.get("failed/list")):
                # its source pages all start pages (no list, sitemap or feed page): a walk
                # follows a start page's list links on every run, whatever it shows, so none
                # read means follow_url matched none (a failed one has its own WARNING). On a
                # site's first crawl only when a start page has a link that looks like a list
                # page ("下一页", "2") and follow_url misses it: a new site's home page may
                # have no next page yet.
                new = summary.get("links/new") - summary.get("links/inherited")
                text = (f"follow_url {quote_regex(site.follow_url.pattern)} matched no link of"
                        f" its start page(s), so no list page was read (article links {seen},"
                        f" new {new}): articles further down its list are not fetched. Does"
                        f" follow_url match its next-page links?"
                        + (" (A start page links to what looks like its next page and"
                           " follow_url does not match it: the crawl's log names the link.)"
                           if summary.get("links/next_unmatched")
                           else " (A site without them: leave follow_url out.)"))
            else:
                continue
            warnings.setdefault(summary.name, []).append(text)
            logger.warning("Site %s: %s", summary.name, text)
        self._record_follow_urls([s.name for s in outcome.summaries if s.get("pages/start")])
        if outcome.no_sources and not of_run and joined:
            # an extra worker without the run's figures cannot tell: the start pages were not its
            logger.warning("Cannot read the run's figures: not deciding whether the run fetched"
                           " any page (exit code 0)")
        elif outcome.no_sources and reason == "finished" and self.crawler is not None:
            why = ("No start, list, sitemap or feed page of any site could be fetched and read"
                   " in this run")
            logger.error("%s: exit code %d", why, ExitCode.NO_SOURCES)
            set_exit_code(self.crawler, ExitCode.NO_SOURCES, why)
        self._end_run(reason, warnings)

    def _record_follow_urls(self, names: list[str]) -> None:
        """The follow_url of each site whose start pages this finished run fetched: a later
        run with another one walks past known list pages (ListPages._follow_url_changed)."""
        if self._run_id() is None:
            return
        try:
            self.walks.record_follow_urls({name: follow_pattern(self.sites[name])
                                           for name in names})
        except Exception as exc:  # redis errors of any kind: the next run decides without it
            if not report_fault(self.crawler, exc):  # but Redis refusing a command stops
                logger.warning("Cannot record the sites' follow_url in Redis: %s", exc)

    def _first_crawls(self, run_id: str | None, summaries: list[Any]) -> set[str]:
        """The sites run ``run_id`` is the first to fetch pages of."""
        if run_id is None:
            return set()
        key = str(self.walks.df.keys(CRAWL_SITES_FIRST_RUN))
        return self.site_stats.first_crawls(
            key, run_id, [s.name for s in summaries if s.sources_fetched])

    def _end_run(self, reason: str, warnings: dict[str, list[str]] | None = None) -> None:
        if reason != REASON_REDIS_UNAVAILABLE and self.crawler is not None:
            # for `newscrawl status` and `newscrawl report`: how the run ended
            self.site_stats.end_run(exit_code=exit_code(self.crawler), reason=reason,
                                    sites=self.sites, warnings=warnings)
