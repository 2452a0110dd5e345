"""Near-duplicate pipeline: fingerprint and sketch, check-and-add in the Redis index, drop reprints.

The fingerprint and the text sketch (``newscrawl.simhash.Decision``: the same decision as
``newscrawl dedup``) are added to the index (atomically, one Lua call) BEFORE the storage pipeline
sees the item, so an article is stored only once its fingerprint is in the index. A near-duplicate
(a candidate within Hamming distance ``NEWSCRAWL_MAX_DISTANCE`` or in the sketch's band buckets,
confirmed by the sketches) is dropped with :class:`NearDuplicate` and recorded in the duplicate log
(url, original url, distance, both fingerprints, time, site, title, both publication times) --
unless the item was published before every stored copy it matches (its ``published`` against the
stored records'): then the item is the original, stored too, and the stored copies are recorded as
its near-duplicates (``newscrawl/dedup/earlier_original``).

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

from newscrawl.context import CrawlContext
from newscrawl.formats import fingerprint_hex, published_before
from newscrawl.pipelines.reconcile import sync_index_with_store
from newscrawl.pipelines.store import AlreadyStored, StorePipeline
from newscrawl.redis import RedisUnavailable
from newscrawl.simhash.pool import FingerprintPool

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from newscrawl.index.simhash_index import Match

logger = logging.getLogger(__name__)
T = TypeVar("T")

STATS = "newscrawl/dedup/"


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
        from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

        from newscrawl.index import DuplicateLog, SimhashIndex

        self.config = config = context.config.dedup
        self.stats: StatsCollector | None = crawler.stats
        self.site_stats = context.site_stats
        self.retry = context.retry  # shared with the scheduler: one outage per crawl
        self.context = context
        # Worker replies are read by the asyncio event loop: with another Twisted reactor,
        # fingerprint in-process (without a running loop, each call does so by itself).
        asyncio_ok = not is_reactor_installed() or is_asyncio_reactor_installed()
        workers = config.workers if asyncio_ok else 0
        self.fingerprints = FingerprintPool(config.idf_file, workers)
        client = context.redis
        self.index = SimhashIndex(
            client,
            prefix=context.prefix,
            max_distance=config.max_distance,
            version=self.fingerprints.version,
            retention_days=config.retention_days,
        )
        self.log = DuplicateLog(client, prefix=context.prefix)
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
            "decision version %s, %s",
            config.max_distance,
            self.fingerprints.version,
            f"{workers} fingerprint worker process(es)" if workers else "fingerprints in-process",
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

    def check_index(self) -> None:
        """Refuse to start on an index of another decision version (one CRITICAL line with the
        rebuild recipe, exit 1) instead of failing every item; or stop it on a Redis fault met
        while the index was checked against the store (:meth:`open_spider`, before the spider
        was open: closing it then would leave Scrapy's components half opened)."""
        if self._open_fault is not None and self.context.report_fault(self._open_fault):
            return
        try:
            self.retry.call(self.index.check_version, what="index version")
        except Exception as exc:
            if not self.context.report_fault(exc):
                raise

    async def open_spider(self) -> None:
        """Before the first item (the scheduler has reached Redis by then): make the index agree
        with the article store (an empty index rebuilt, lost recent entries added again, see
        :mod:`newscrawl.pipelines.reconcile`), in the index thread."""
        from newscrawl.index import IncompatibleIndexError

        if self.store is None:
            return
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
        """Stop the fingerprint workers and close the index (the crawl's embedded Redis is
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

    async def _published_after(self, url: str, published: Any, fp: int, sketch: bytes | None,
                               match: Match, stored: dict[str, Any]
                               ) -> tuple[list[tuple[Match, dict[str, Any]]],
                                          tuple[Match, dict[str, Any]] | None]:
        """The item was published before its nearest stored copy ``match``; is it before every
        stored copy? Returns the stored copies published after it (each with its stored record),
        and the first copy (nearest first) not published after it, or None when there is none:
        of two reprints of one text met after it, the one published first is the original, not
        whichever is nearest."""
        matches = await self._redis(self.index.query, fp, sketch,
                                    what="stored copies of an earlier original")
        later: list[tuple[Match, dict[str, Any]]] = []
        for other in matches:
            if other.doc_id == url:
                continue
            record = (stored if other.doc_id == match.doc_id
                      else await self._stored_record(other) or {})
            if not published_before(published, record.get("published")):
                return later, (other, record)
            later.append((other, record))
        if not any(m.doc_id == match.doc_id for m, _ in later):
            later.insert(0, (match, stored))
        return later, None

    async def _keep_earlier(self, item: Any, url: str, fp: int, sketch: bytes | None,
                            later: list[tuple[Match, dict[str, Any]]]) -> Any:
        """The item is a near-duplicate of stored copies all published after it: the item is the
        original. It is stored too (and indexed), and each stored copy is recorded as its
        near-duplicate, so the duplicate log and ``newscrawl clusters`` name the copy published
        first as the original."""
        adapter = ItemAdapter(item)
        self._inc("earlier_original")
        await self._redis(self.index.add, fp, url, sketch, what="index an earlier original")
        for match, stored in later:
            await self._redis(
                self.log.record,
                match.doc_id,
                url,
                match.distance,
                match.fingerprint,
                fp,
                seen_at=time.time(),
                site=stored.get("site"),
                title=stored.get("title"),
                original_title=adapter.get("title"),
                published=stored.get("published"),
                original_published=adapter.get("published"),
                published_first="original",
                what="duplicate log",
            )
        copies = ", ".join(m.doc_id for m, _ in later)
        logger.info("%s was published before %s, a near-duplicate of it stored earlier: stored"
                    " too, and %s recorded as its near-duplicate", url, copies, copies)
        return item

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        url = adapter.get(self.config.url_field)
        if not isinstance(url, str) or not url:
            self._inc("no_url")
            raise DropItem(f"not checked: the item has no {self.config.url_field!r} field "
                           "with a URL")
        text = adapter.get(self.config.text_field) or ""
        fp, sketch = await self.fingerprints.fingerprint(text)
        if fp is None:
            self._inc("no_text")
            _set_simhash(adapter, None)
            logger.debug("No fingerprint for %s: stored without near-duplicate check", url)
            return item
        _set_simhash(adapter, fingerprint_hex(fp))
        self._inc("checked")
        # Retried while Redis is briefly away; safe to repeat (a retried add finds its own URL).
        match = await self._redis(self.index.check_and_add, fp, url, sketch,
                                  what="near-duplicate check")
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
                logger.info("%s is already stored (indexed and in the article store): not "
                            "stored again", url)
                raise AlreadyStored(f"{url} is already stored")
            self._inc("reprocessed")
            logger.info("%s is already in the index (re-processed after an interruption)", url)
            return item
        site = adapter.get("site")
        published = adapter.get("published")
        stored = await self._stored_record(match) if published else None
        original_published = stored.get("published") if stored else None
        earlier = published_before(published, original_published)
        if earlier:
            later, first = await self._published_after(url, published, fp, sketch, match,
                                                       stored or {})
            if first is None:
                return await self._keep_earlier(item, url, fp, sketch, later)
            # a stored copy published no later than the item: the item is its near-duplicate
            match, stored = first
            original_published = stored.get("published")
            earlier = published_before(published, original_published)
        self._inc("near_duplicate")
        if site:
            self.site_stats.inc(str(site), "near_duplicate")
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
            published=published,
            original_published=original_published,
            published_first=None if earlier is None else "original",
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
