"""Near-duplicate pipeline: fingerprint and sketch, check-and-add in the Redis index, drop reprints.

The fingerprint and the text sketch (``newscrawl.simhash.Decision``: the same decision as
``newscrawl dedup``) are added to the index (atomically, one Lua call) BEFORE the storage pipeline
sees the item, so an article is stored only once its fingerprint is in the index. A near-duplicate
(a candidate within Hamming distance ``NEWSCRAWL_MAX_DISTANCE`` or in the sketch's band buckets,
confirmed by the sketches) is dropped with :class:`NearDuplicate` and recorded in the duplicate log
(url, stored copy's url, distance, both fingerprints, time, both sites, titles, sources and
publication times). The first copy checked is the one stored, whatever the dates say; a copy
published before it is the story's original met too late: dropped all the same, counted
(``newscrawl/dedup/late_original``) and recorded with ``published_first: "duplicate"``. The run's
order of article links (oldest first across its sites) is what makes the stored copy the
original.

Any item works (a dict, a :class:`scrapy.Item`, a dataclass...: through ``itemadapter``): the URL
and the text are read from the fields named by ``NEWSCRAWL_URL_FIELD`` and ``NEWSCRAWL_TEXT_FIELD``
(``url``, ``text``); ``site`` and ``title`` are recorded when the item has them; the fingerprint
is set in its ``simhash`` field when the item can take one. An item without a URL is dropped and
counted (``newscrawl/dedup/no_url``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured

from newscrawl import _scrapy_compat as compat
from newscrawl.connection import RedisUnavailable
from newscrawl.context import CrawlContext
from newscrawl.formats import fingerprint_hex, published_before
from newscrawl.index.duplicates import DUPLICATE_FIRST, ORIGINAL_FIRST
from newscrawl.pipelines.reconcile import sync_index_with_store
from newscrawl.pipelines.store import AlreadyStored, StorePipeline
from newscrawl.scheduling.run import current_run
from newscrawl.scheduling.waiting import GO, NOT_ORDERED, TURN_REUSE_SECONDS, CheckOrder
from newscrawl.simhash.core import speedups_status
from newscrawl.workers import WorkerPool

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from newscrawl.index.simhash_index import Match

logger = logging.getLogger(__name__)
T = TypeVar("T")

STATS = "newscrawl/dedup/"
#: the longest a waiting article sleeps before it asks again whether other sites' earlier
#: articles have been checked (an article checked in this worker wakes the waiting ones at once;
#: one checked by another worker is seen on the next look)
ORDER_POLL_SECONDS = 0.25


class NearDuplicate(DropItem):
    """The item's text is a near-duplicate of an article already in the index."""

    def __init__(self, message: str, *, url: str, original_url: str, distance: int) -> None:
        # an expected outcome, counted per site: INFO, not one WARNING per reprint
        super().__init__(message, log_level="INFO")
        self.url = url
        self.original_url = original_url
        self.distance = distance


def _set_simhash(adapter: ItemAdapter, value: str | None) -> None:
    """The fingerprint in the item's ``simhash`` field, unless its class declares no such field."""
    with contextlib.suppress(KeyError):
        adapter["simhash"] = value


class NearDuplicatePipeline:
    def __init__(self, crawler: Crawler, context: CrawlContext) -> None:
        from newscrawl.index import DuplicateLog, SimhashIndex

        self.config = config = context.config.dedup
        self.stats: StatsCollector | None = crawler.stats
        self.site_stats = context.site_stats
        self.retry = context.retry  # shared with the scheduler: one outage per crawl
        self.context = context
        # the crawl's worker processes, shared with the spider's extraction (closed with it)
        self.fingerprints = WorkerPool.of(crawler)
        assert self.fingerprints.version is not None  # built with fingerprints (dedup on)
        client = context.redis
        self.index = SimhashIndex(
            client,
            prefix=context.prefix,
            max_distance=config.max_distance,
            version=self.fingerprints.version,
            retention_days=config.retention_days,
        )
        self.log = DuplicateLog(client, prefix=context.prefix)
        self._order: CheckOrder | None = None
        self._order_event: asyncio.Event | None = None  # set when an article here is checked
        self._next_release = 0.0  # when a waiting article may next go because the slot is full
        self._stopping_told = False  # the WARNING on articles checked out of turn by a stop
        self._out_of_turn_told: set[str] = set()  # out-of-turn causes logged at INFO once
        self._waiters: dict[str, int] = {}  # articles waiting for their turn: their numbers
        self._uncounted = 0  # bytes of waiting responses taken off Scrapy's scraper slot
        self._held_bytes: dict[str, int] = {}  # those bytes per waiting article
        # Index calls wait for Redis (a check runs a Lua script over the candidate buckets) in
        # this one thread, not on the reactor, which meanwhile goes on downloading and parsing;
        # one thread, so items are checked one at a time, in the order they arrive.
        self._open_fault: RedisUnavailable | None = None  # met in open_spider
        self._redis_thread = ThreadPoolExecutor(1, thread_name_prefix="newscrawl-index")
        # asked whether a re-processed article is stored, so an interrupted run's articles are
        # not stored twice (None when storage is off)
        self.store = StorePipeline.article_store(crawler)
        logger.info(
            "Near-duplicate check on: Hamming distance <= %d, confirmed by text sketches, "
            "decision version %s, %s, %s",
            config.max_distance,
            self.fingerprints.version,
            f"{workers} fingerprint worker process(es)" if (workers := self.fingerprints.processes)
            else "fingerprints in-process",
            speedups_status(),
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDuplicatePipeline:
        context = CrawlContext.of(crawler)
        if not context.config.dedup.enabled:
            raise NotConfigured("NEWSCRAWL_DEDUP_ENABLED is off")
        pipe = cls(crawler, context)
        from scrapy import signals

        crawler.signals.connect(pipe.close, signal=signals.spider_closed)
        crawler.signals.connect(pipe.check_index, signal=signals.spider_opened)
        return pipe

    @property
    def order(self) -> CheckOrder:
        """The run's article order (built on first use: the key names need the spider)."""
        if self._order is None:
            context = self.context
            self._order = CheckOrder(context.redis, context.keys(), context.retry,
                                     ttl=context.config.scheduling.run_ttl)
        return self._order

    def check_index(self) -> None:
        """Refuse to start on an index of another decision version (one CRITICAL line with the
        rebuild recipe, exit 1) instead of failing every item; or stop it on a Redis fault met
        while the index was checked against the store (:meth:`open_spider`, before the spider
        was open: closing it then would leave Scrapy's components half opened). Then watch the
        index: one lost while the crawl runs (Redis restarted without its data) stops the crawl
        at the next check (IndexLostError, exit 3) instead of passing every near-duplicate."""
        if self._open_fault is not None and self.context.report_fault(self._open_fault):
            return
        if self.context.fault_stopped():
            return
        try:
            self.retry.call(self.index.check_version, what="index version")
            self.retry.call(self.index.watch, what="index mark")
            self.context.check_index_mark = self.index.check_watched
        except Exception as exc:
            if not self.context.report_fault(exc):
                raise

    async def open_spider(self) -> None:
        """Before the first item (the scheduler has reached Redis by then): make the index agree
        with the article store (an empty index rebuilt, lost recent entries added again, see
        :mod:`newscrawl.pipelines.reconcile`), in the index thread."""
        from newscrawl.index import IncompatibleIndexError

        if self.store is None or self.context.fault_stopped():
            return  # a crawl refused at its start (e.g. an evicting Redis) writes nothing there
        config = self.config
        sync = functools.partial(
            sync_index_with_store, self.index, self.store.directory, idf_file=config.idf_file,
            url_field=config.url_field, text_field=config.text_field,
            retention_days=config.retention_days, retry=self.retry.call)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no asyncio loop (another Twisted reactor)
            loop = None
        try:
            if loop is None:
                sync()
            else:
                await loop.run_in_executor(self._redis_thread, sync)
        except RedisUnavailable as exc:  # the crawl stops on it once open (check_index)
            self._open_fault = exc
            logger.warning("The near-duplicate index was not checked against the article "
                           "store: %s", exc)
        except IncompatibleIndexError:
            pass  # the crawl is refused when the spider opens (check_index): one CRITICAL line

    def close(self) -> None:
        """Stop the worker processes and close the index (the crawl's embedded Redis is
        stopped after this, when the engine stops)."""
        self.fingerprints.close()
        self._redis_thread.shutdown(wait=True)
        self.index.close()

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(STATS + key)

    async def _redis(self, fn: Callable[..., T], *args: Any, what: str, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` with the crawl's Redis retry, in the index thread when an
        asyncio loop runs (see ``__init__``), else here."""
        call = functools.partial(self.retry.call, fn, *args, what=what, **kwargs)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no asyncio loop (another Twisted reactor)
            loop = None
        return call() if loop is None else await loop.run_in_executor(self._redis_thread, call)

    async def _already_stored(self, url: str, fp: int) -> bool:
        """Whether the store holds ``url``'s record, asked with the day ``fp`` was indexed."""
        if self.store is None:
            return False
        day = await self._redis(self.index.stored_day, fp, url,
                                what="index day of a re-processed article")
        return day is not None and self.store.already_stored(url, day)

    async def _stored_record(self, match: Match) -> dict[str, Any] | None:
        """The stored record of a match (its ``published``, ``site``, ``title``), read from the
        article store in the index thread; None when storage is off or it is not found."""
        store = self.store
        if store is None:
            return None

        def look_up() -> dict[str, Any] | None:
            day = self.index.stored_day(match.fingerprint, match.doc_id)
            return None if day is None else store.record_of(match.doc_id, day)

        try:
            return await self._redis(look_up, what="stored copy of a near-duplicate")
        except OSError as exc:
            logger.warning("Cannot read the stored copy of %s: %s", match.doc_id, exc)
            return None

    async def _wait_turn(self, site: Any, url: str, *, names_source: bool = False,
                         size: int = 0) -> str | None:
        """Wait until no article of another site queued before this one (the run's order,
        :class:`~newscrawl.scheduling.waiting.CheckOrder`) is still unchecked, at most
        ``NEWSCRAWL_CHECK_ORDER_WAIT`` seconds. Returns the run id when the article has a place
        in the run's order (it is taken out of it once checked), else None. While it waits,
        its response (``size`` bytes) is not counted in Scrapy's scraper slot, so downloads go on
        (up to ``NEWSCRAWL_CHECK_ORDER_MEMORY`` bytes for all waiting articles)."""
        crawler = self.context.crawler
        run_id = current_run(crawler)
        if run_id is None or not isinstance(site, str) or not site:
            return None
        sites = getattr(crawler.spider, "sites", None)
        if isinstance(sites, dict) and len(sites) < 2:
            return None  # one site: nothing to wait for (the spider gives no order numbers)
        deadline = time.monotonic() + self.config.order_wait
        try:
            return await self._wait_loop(site, url, run_id, deadline, names_source=names_source,
                                         size=size)
        finally:
            self._waiters.pop(url, None)
            uncounted = self._held_bytes.pop(url, 0)
            if uncounted:
                self._uncounted -= uncounted
                compat.count_response(crawler.engine, uncounted)

    async def _wait_loop(self, site: str, url: str, run_id: str, deadline: float, *,
                         names_source: bool, size: int = 0) -> str | None:
        crawler = self.context.crawler
        waited = False
        while True:
            turn, waiting_for = await self._redis(self.order.turn_why, run_id, site, url,
                                                  names_source=names_source,
                                                  what="article order")
            if turn == NOT_ORDERED:
                return None
            if turn == GO:
                break
            if compat.closing(crawler.engine) and not compat.busy_besides(
                    crawler.engine, len(self._waiters.keys() | {url})):
                # the crawl is stopping and has nothing left to download or extract: what it
                # waits for is not fetched in this run (the response is here: keeping it for the
                # next run's turn would fetch it again). Until then it waits, as the page it
                # waits for may be among those the stop finishes.
                self._inc("order_wait_stopping")
                if not self._stopping_told:
                    self._stopping_told = True
                    logger.warning(
                        "The crawl is stopping: articles waiting for other sites' articles queued"
                        " before them, which this run will not fetch, are checked now, out of"
                        " their turn (the first: %s, waiting for %s). A reprint among them is"
                        " stored if its original is still queued; the next run then records the"
                        " original as a late original (`newscrawl duplicates`), not stored", url,
                        waiting_for)
                else:
                    logger.info("%s checked out of its turn: the crawl is stopping (it waited for"
                                " %s)", url, waiting_for)
                break
            number = self.order.number(run_id, site, url)
            self._waiters[url] = number if number is not None else 2 ** 62
            if size and url not in self._held_bytes \
                    and self._uncounted + size <= self.config.order_memory \
                    and compat.uncount_response(crawler.engine, size):
                # its response no longer holds the downloads back while it waits (up to
                # NEWSCRAWL_CHECK_ORDER_MEMORY for all waiting ones)
                self._held_bytes[url] = size
                self._uncounted += size
            if compat.stalled_by_waiting(crawler.engine, len(self._waiters)) \
                    and self._release_first(url):
                # the waiting responses fill the scraper slot and nothing is downloading: the
                # engine fetches nothing, what they wait for included, until one is checked
                self._inc("order_wait_full")
                logger.log(self._once("full"),
                           "%s checked before articles of other sites queued before it (the"
                           " last one %s): the responses waiting for their turn fill Scrapy's"
                           " scraper slot (SCRAPER_SLOT_MAX_ACTIVE_SIZE, beyond"
                           " NEWSCRAWL_CHECK_ORDER_MEMORY), so no page is fetched until one is"
                           " checked (the next ones at DEBUG, counted in"
                           " newscrawl/dedup/order_wait_full)", url, waiting_for)
                break
            if time.monotonic() >= deadline:
                self._inc("order_wait_expired")
                logger.log(self._once("expired"),
                           "%s waited %.0f s for articles of other sites queued before it"
                           " (NEWSCRAWL_CHECK_ORDER_WAIT), the last one %s: checked now (the"
                           " next ones at DEBUG, counted in newscrawl/dedup/order_wait_expired)",
                           url, self.config.order_wait, waiting_for)
                break
            waited = True
            await self._order_moved(min(ORDER_POLL_SECONDS, TURN_REUSE_SECONDS))
        if waited:
            self._inc("order_waited")
        return run_id

    def _once(self, cause: str) -> int:
        """INFO the first time an article is checked out of its turn for ``cause`` in this crawl,
        DEBUG after that (a first crawl of many sites can have thousands)."""
        if cause in self._out_of_turn_told:
            return logging.DEBUG
        self._out_of_turn_told.add(cause)
        return logging.INFO

    def _release_first(self, url: str) -> bool:
        """Whether the waiting article ``url`` may go now because the worker is stalled by the
        waiting ones: the first of them in the run's order, one every ``ORDER_POLL_SECONDS``, so
        that the slot drains by as few articles out of their turn as it takes."""
        now = time.monotonic()
        if now < self._next_release or self._waiters.get(url) != min(self._waiters.values()):
            return False
        self._next_release = now + ORDER_POLL_SECONDS
        return True

    async def _order_moved(self, timeout: float) -> None:
        """Sleep until an article is checked in this worker or ``timeout`` seconds pass: the
        waiting articles ask again when what they wait for may have moved, not every few
        milliseconds each (hundreds can wait at once, and each question is a trip to the
        index thread)."""
        if self._order_event is None:
            self._order_event = asyncio.Event()
        try:
            await asyncio.wait_for(self._order_event.wait(), timeout)
        except TimeoutError:
            pass

    def _order_advanced(self) -> None:
        """Wake the articles waiting in :meth:`_order_moved`."""
        if self._order_event is not None:
            self._order_event.set()
            self._order_event = None

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        url = adapter.get(self.config.url_field)
        if not isinstance(url, str) or not url:
            self._inc("no_url")
            raise DropItem(f"not checked: the item has no {self.config.url_field!r} field "
                           "with a URL")
        size = self.context.response_sizes.pop(url, 0)  # its response's, set by the spider
        text = adapter.get(self.config.text_field) or ""
        fp, sketch = await self.fingerprints.fingerprint(text)
        if fp is None:
            self._inc("no_text")
            _set_simhash(adapter, None)
            logger.debug("No fingerprint for %s: stored without near-duplicate check", url)
            return item
        _set_simhash(adapter, fingerprint_hex(fp))
        self._inc("checked")
        site = adapter.get("site")
        turn = await self._wait_turn(site, url, names_source=bool(adapter.get("source")),
                                     size=size)
        try:
            # Retried while Redis is briefly away; safe to repeat (a retried add finds its URL).
            match = await self._redis(self.index.check_and_add, fp, url, sketch,
                                      what="near-duplicate check")
        finally:
            if turn:
                await self._redis(self.order.finished, turn, str(site), [url],
                                  what="article order")
                self._order_advanced()
        if match is None:
            self._inc("unique")
            return item
        if match.doc_id == url:
            # Our own earlier fingerprint: the article was indexed by a run that stopped before
            # recording it as done (crash, kill, Redis outage), or its done record was deleted
            # (`newscrawl reset`). If it was stored then, the store has its record: drop it, so
            # it is stored once; else store it now rather than lose it.
            # (the index holds the fingerprint of the text stored then: the page may have
            # changed a little since, so look up the matched fingerprint, not this one)
            if await self._already_stored(url, match.fingerprint):
                self._inc("already_stored")
                if site:
                    self.site_stats.inc(str(site), "already_stored")
                # one INFO line: Scrapy's "Dropped URL: <this message>"
                raise AlreadyStored(f"{url} is already stored (indexed and in the article"
                                    " store): not stored again")
            self._inc("reprocessed")
            logger.info("%s is already in the index (re-processed after an interruption)", url)
            return item
        published = adapter.get("published")
        stored = await self._stored_record(match)
        original_published = stored.get("published") if stored else None
        # The stored copy stays the only copy, whatever the dates say: an item published before
        # it is the story's original met too late (the order of the run's article links is what
        # keeps originals first, docs/design/near-duplicates.md), dropped and recorded as such.
        order = published_before(published, original_published)
        late = order is True
        if late:
            self._inc("late_original")
            if site:
                self.site_stats.inc(str(site), "late_original")
            logger.info("%s was published before %s, a near-duplicate of it stored earlier: the"
                        " original met after its copy, not stored", url, match.doc_id)
        else:
            self._inc("near_duplicate")
            if site:
                self.site_stats.inc(str(site), "near_duplicate")
        published_first = None if order is None else DUPLICATE_FIRST if late else ORIGINAL_FIRST
        recorded = await self._redis(
            self.log.record,
            url,
            match.doc_id,
            match.distance,
            fp,
            match.fingerprint,
            seen_at=time.time(),
            site=site,
            title=adapter.get("title"),
            source=adapter.get("source"),
            original_site=(stored or {}).get("site"),
            original_title=(stored or {}).get("title"),
            original_source=(stored or {}).get("source"),
            published=published,
            original_published=original_published,
            published_first=published_first,
            late_original=late,
            what="duplicate log",
        )
        if not recorded:
            self._inc("near_duplicate_already_recorded")
        raise NearDuplicate(
            f"near-duplicate of {match.doc_id} (distance {match.distance})",
            url=url,
            original_url=match.doc_id,
            distance=match.distance,
        )
