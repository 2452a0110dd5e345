"""Near-duplicate pipeline: fingerprint and sketch, check-and-add in the Redis index, drop reprints.

The fingerprint and the text sketch (``newscrawl.simhash.Decision``: the same decision as
``newscrawl dedup``) are added to the index (atomically, one Lua call) BEFORE the storage pipeline
sees the item, so an article is stored only once its fingerprint is in the index. A near-duplicate
(a candidate within Hamming distance ``NEWSCRAWL_MAX_DISTANCE`` or in the sketch's band buckets,
confirmed by the sketches) is dropped with :class:`NearDuplicate` and recorded in the duplicate log
(url, original url, distance, both fingerprints, time, site, title).

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
import multiprocessing
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured

from newscrawl.context import CrawlContext
from newscrawl.redis import describe
from newscrawl.storage import ArticleStore, day_of

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

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


class AlreadyStored(DropItem):
    """The article was indexed and stored by a run that stopped before recording it as done
    (its own fingerprint is in the index and its record in the store): not stored again."""

    def __init__(self, message: str) -> None:
        # an expected outcome (every article again after `newscrawl reset`): INFO, like the
        # line logged with it, not one WARNING per article
        super().__init__(message, log_level="INFO")


def hex64(value: int) -> str:
    return f"{value:016x}"


def _set_simhash(adapter: ItemAdapter, value: str | None) -> None:
    """The fingerprint in the item's ``simhash`` field, unless its class declares no such field."""
    with contextlib.suppress(KeyError):
        adapter["simhash"] = value


Result = tuple[int | None, bytes | None]  # (fingerprint, sketch): what the index needs


def _worker_fingerprint(text: str, idf_file: str | None) -> Result:
    """The fingerprint and sketch of ``text`` (the decision is cached per process and IDF file)."""
    from newscrawl.simhash import get_decision

    analysis = get_decision(idf_file=idf_file).analyze(text)
    return analysis.fingerprint, analysis.sketch


def _worker_version(idf_file: str | None) -> str:
    from newscrawl.simhash import get_decision

    return get_decision(idf_file=idf_file).version


def _serve(conn: Connection, idf_file: str | None) -> None:
    """Fingerprint worker process: ``(request id, text)`` in, ``(request id, fp, error)`` out."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is for the crawl, which stops us
    try:
        conn.send(("version", _worker_version(idf_file), None))
    except Exception as exc:  # the parent re-raises it in-process, with its traceback
        conn.send(("version", None, f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the crawl process is gone
            return
        if message is None:
            return
        request_id, text = message
        reply: tuple[int, Result | None, str | None]
        try:
            reply = (request_id, _worker_fingerprint(text, idf_file), None)
        except Exception as exc:  # recomputed in-process, which raises it for the item
            reply = (request_id, None, f"{type(exc).__name__}: {exc}")
        conn.send(reply)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class WorkerFailed(RuntimeError):
    """The fingerprint worker process died or could not take the request."""


class _Worker:
    """One fingerprint worker process on a pipe, its replies read by the asyncio event loop.

    No threads in the crawl process (a ProcessPoolExecutor has a manager and a feeder thread whose
    GIL hand-offs cost the reactor about as much as fingerprinting in-process): a request is one
    pickled ``send`` on the pipe, the reply wakes the event loop through ``add_reader``.
    """

    def __init__(self, idf_file: str | None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=_serve, args=(child, idf_file), daemon=True,
                                   name="newscrawl-fingerprint")
        self.process.start()
        child.close()
        self.pending: dict[int, asyncio.Future[tuple[Result | None, str | None]]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self._next_id = 0
        self.broken = False
        # The worker's first message: its fingerprint version (or why it could not start).
        try:
            _, version, error = (
                self.conn.recv() if self.conn.poll(300) else (None, None, "timeout")
            )
        except (EOFError, OSError) as exc:  # it died before answering (killed, crashed)
            self.process.join(timeout=5)
            version, error = None, f"exited ({exc!r}, exit code {self.process.exitcode})"
        if error is not None:
            self.close()
            raise WorkerFailed(f"fingerprint worker did not start: {error}")
        self.version = str(version)

    def submit(self, text: str) -> asyncio.Future[tuple[Result | None, str | None]]:
        if self.broken:
            raise WorkerFailed("fingerprint worker is gone")
        loop = asyncio.get_running_loop()
        if loop is not self.loop:
            self._watch(loop)
        self._next_id += 1
        future: asyncio.Future[tuple[Result | None, str | None]] = loop.create_future()
        try:
            self.conn.send((self._next_id, text))
        except (OSError, ValueError) as exc:
            self._fail(exc)
            raise WorkerFailed(f"fingerprint worker is gone: {exc}") from exc
        self.pending[self._next_id] = future
        return future

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.loop is not None and not self.loop.is_closed():
            self.loop.remove_reader(self.conn.fileno())
        loop.add_reader(self.conn.fileno(), self._on_readable)
        self.loop = loop

    def _on_readable(self) -> None:
        try:
            while self.conn.poll():
                request_id, fp, error = self.conn.recv()
                future = self.pending.pop(request_id, None)
                if future is not None and not future.done():
                    future.set_result((fp, error))
        except (EOFError, OSError) as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        """The worker died: unwatch the pipe, hand every waiting item back for in-process work."""
        if not self.broken:
            self.broken = True
            logger.error("Fingerprint worker process failed (%s): fingerprinting in-process",
                         describe(exc))
        if self.loop is not None and not self.loop.is_closed():
            self.loop.remove_reader(self.conn.fileno())
        self.loop = None
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_result((None, "worker failed"))

    def close(self) -> None:
        if self.loop is not None and not self.loop.is_closed():
            self.loop.remove_reader(self.conn.fileno())
        self.loop = None
        pending, self.pending = self.pending, {}
        for future in pending.values():  # items still waiting go in-process, none hangs
            if not future.done():
                with contextlib.suppress(RuntimeError):  # its event loop is closed already
                    future.set_result((None, "worker closed"))
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.conn.close()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)


class Fingerprints:
    """``await fingerprint(text)`` -> (fingerprint, sketch) in worker processes or, with 0
    workers, in the crawl process.

    Extraction keeps the crawl process busy; segmenting and weighting the text in another process
    takes the fingerprint off the crawl's critical path. If a worker dies or reports an error,
    the text is fingerprinted in-process (so an error is raised for its item with a traceback),
    and a dead worker's items go in-process from then on (logged).
    """

    def __init__(self, idf_file: str | None, workers: int) -> None:
        from newscrawl.simhash import FingerprintConfig

        self.idf_file = idf_file
        # Only the first max_chars characters of a text count: no more is sent to a worker.
        self.max_chars = FingerprintConfig().max_chars
        self._workers: list[_Worker] = []
        try:
            for _ in range(workers):
                self._workers.append(_Worker(idf_file))
        except WorkerFailed as exc:
            self.close()
            # A configuration error (bad IDF file, missing segmenter) is raised here, in full;
            # a worker that merely died leaves the fingerprints to the crawl process.
            _worker_version(idf_file)
            logger.error("%s: fingerprinting in the crawl process", exc)
        self.version = self._workers[0].version if self._workers else _worker_version(idf_file)

    @property
    def processes(self) -> int:
        return sum(not w.broken for w in self._workers)

    async def fingerprint(self, text: str) -> Result:
        if isinstance(text, str) and len(text) > self.max_chars:
            text = text[: self.max_chars]  # the same fingerprint, a bounded message
        live = [w for w in self._workers if not w.broken]
        if live and _running_loop() is not None:
            worker = min(live, key=lambda w: len(w.pending))
            try:
                result, error = await worker.submit(text)
            except WorkerFailed:
                pass
            else:
                if error is None and result is not None:
                    return result
        return _worker_fingerprint(text, self.idf_file)

    def close(self) -> None:
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.close()


class NearDuplicatePipeline:
    def __init__(self, crawler: Crawler, context: CrawlContext) -> None:
        from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

        from newscrawl.index import DuplicateLog, SimhashIndex

        self.config = config = context.config.dedup
        self.stats: StatsCollector | None = crawler.stats
        self.site_stats = context.site_stats
        self.retry = context.retry  # shared with the scheduler: one outage per crawl
        # Worker replies are read by the asyncio event loop: with another Twisted reactor,
        # fingerprint in-process (without a running loop, each call does so by itself).
        asyncio_ok = not is_reactor_installed() or is_asyncio_reactor_installed()
        workers = config.workers if asyncio_ok else 0
        self.fingerprints = Fingerprints(config.idf_file, workers)
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
        self._redis_thread = ThreadPoolExecutor(1, thread_name_prefix="newscrawl-index")
        # where StorePipeline writes (None when storage is off): a re-processed article is
        # looked up there, so an interrupted run's articles are not stored twice
        store = context.config.store
        self.store = (
            ArticleStore(store.directory, url_field=store.url_field) if store.enabled else None
        )
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
        return pipe

    def close(self) -> None:
        """Stop the fingerprint workers and give back the index's Redis connection (the crawl's
        embedded Redis is stopped after this, when the engine stops)."""
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
        loop = _running_loop()
        if loop is None:
            return call()
        return await loop.run_in_executor(self._redis_thread, call)

    async def _already_stored(self, url: str, fp: int) -> bool:
        """Whether the store holds ``url``'s record, looked up in the files of the day its
        fingerprint was indexed and the day after (it is stored right after being indexed, so
        the UTC day can only have turned in between)."""
        if self.store is None:
            return False
        day = await self._redis(self.index.stored_day, fp, url,
                                what="index day of a re-processed article")
        if day is None:
            return False
        days = [day_of((day + n) * 86400) for n in (0, 1)]
        return self.store.contains(url, days)

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
        _set_simhash(adapter, hex64(fp))
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
        self._inc("near_duplicate")
        site = adapter.get("site")
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
