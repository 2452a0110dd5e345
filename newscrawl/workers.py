"""Article extraction and fingerprints in worker processes, one pool per crawl.

The spider awaits ``pool.extract(PageJob(...))`` and the near-duplicate pipeline
``pool.fingerprint(text)``: the same functions as in-process, run in
``NEWSCRAWL_FINGERPRINT_WORKERS`` processes on pipes read by the asyncio event loop, so the crawl
process downloads, schedules and stores. See docs/design/architecture.md#worker-processes.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from newscrawl._worker_process import (
    Outcome,
    RemoteTraceback,
    Result,
    analyze,
    extract,
    serve,
)
from newscrawl.errors import NewscrawlError
from newscrawl.simhash.decision import get_decision
from newscrawl.simhash.fingerprinter import FingerprintConfig

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from newscrawl._extract_job import Extracted

__all__ = ["PageJob", "RemoteTraceback", "Result", "WorkerFailed", "WorkerPool"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PageJob:
    """What extraction needs of one response (picklable, sent to a worker)."""

    body: bytes
    url: str
    header_encoding: str | None
    forced_encoding: str | None
    selectors: dict[str, str] | None


#: Jobs sent to a worker and not answered yet, at most: the rest wait in the calling process.
MAX_IN_PIPE = 32

#: A worker whose first message has not come this many seconds after its start did not start.
START_TIMEOUT = 300.0


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """While a worker process is started: a spawned process imports the caller's ``__main__``
    first, unless it has neither a spec nor a file. The worker needs nothing of it, and the
    ``scrapy`` command's script imports all of Scrapy."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    names = [name for name in ("__spec__", "__file__") if name in main.__dict__]
    saved: dict[str, Any] = {name: main.__dict__[name] for name in names}
    main.__dict__.pop("__file__", None)
    main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


class WorkerFailed(NewscrawlError, RuntimeError):
    """The worker process died or could not take the request."""


class _Worker:
    """One worker process on a pipe; a reply resolves its request's future in the event loop.

    Started, not waited for: its first message (its decision version, or why it could not start)
    is read when the version is asked for (:meth:`wait_started`) or, with the replies, by the
    event loop; jobs submitted before it go in the pipe and are served once the worker is up."""

    def __init__(self, idf_file: str | None, fingerprints: bool, preload_extraction: bool,
                 log_level: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(
            target=serve, args=(child, idf_file, fingerprints, preload_extraction, log_level),
            daemon=True, name="newscrawl-fingerprint")
        with _main_module_hidden():
            self.process.start()
        self.started_at = time.monotonic()
        child.close()
        self.pending: dict[int, asyncio.Future[Outcome | None]] = {}
        self.in_pipe = 0  # sent, not answered yet
        self.waiting: collections.deque[tuple[int, str, Any]] = collections.deque()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._next_id = 0
        self.broken = False
        self.started = False  # its first message read
        self.start_error: str | None = None  # why it did not start
        self.version: str | None = None

    def wait_started(self) -> None:
        """Wait for the worker's first message unless it was read already; raises
        :class:`WorkerFailed` when the worker did not start."""
        if not self.started:
            try:
                ready = self.conn.poll(self._start_left())
                message = self.conn.recv() if ready else (None, "timeout")
            except (EOFError, OSError) as exc:  # it died before answering (killed, crashed)
                message = (None, self._exited(exc))
            self._on_start(message)
        if self.start_error is not None:
            raise WorkerFailed(f"fingerprint worker did not start: {self.start_error}")

    def _start_left(self) -> float:
        """Seconds left of START_TIMEOUT for the worker's first message."""
        return max(START_TIMEOUT - (time.monotonic() - self.started_at), 0.0)

    def _start_timed_out(self) -> None:
        if not self.started:
            self._on_start((None, "timeout"))

    def _exited(self, exc: BaseException) -> str:
        self.process.join(timeout=5)
        return f"exited ({exc!r}, exit code {self.process.exitcode})"

    def _on_start(self, message: tuple[str | None, str | None]) -> None:
        """The worker's first message: its version, or why it could not start (logged; the
        worker is closed and its jobs run in the calling process)."""
        self.started = True
        version, error = message
        if error is None:
            self.version = None if version is None else str(version)
            return
        self.start_error = error
        self.broken = True
        logger.error("fingerprint worker did not start: %s: extraction and fingerprints in the "
                     "crawl process", error)
        self.close()

    def submit(self, kind: str, payload: Any) -> asyncio.Future[Outcome | None]:
        """The future of the job's :data:`Outcome` (None: run it in-process). Raises
        RuntimeError without a running loop, :class:`WorkerFailed` when the worker is gone."""
        if self.broken:
            raise WorkerFailed("worker is gone")
        loop = asyncio.get_running_loop()
        if loop is not self.loop:
            self._unwatch()
            loop.add_reader(self.conn.fileno(), self._on_readable)
            self.loop = loop
            if not self.started:
                loop.call_later(self._start_left(), self._start_timed_out)
        self._next_id += 1
        future: asyncio.Future[Outcome | None] = loop.create_future()
        self.pending[self._next_id] = future
        self.waiting.append((self._next_id, kind, payload))
        self._send_waiting()
        if self.broken:
            raise WorkerFailed("worker is gone")
        return future

    def _send_waiting(self) -> None:
        """Send waiting jobs, in one message, while fewer than MAX_IN_PIPE are unanswered."""
        count = min(len(self.waiting), MAX_IN_PIPE - self.in_pipe)
        if count > 0:
            message = [self.waiting.popleft() for _ in range(count)]
            try:
                self.conn.send(message)
            except (OSError, ValueError) as exc:
                self._fail(exc)
                return
            self.in_pipe += count

    def _on_readable(self) -> None:
        """One message from the worker (the event loop calls again while the pipe holds more)."""
        try:
            message = self.conn.recv()
        except (EOFError, OSError) as exc:
            self._fail(exc)
            return
        if not self.started:
            self._on_start(message)
            return
        for request_id, outcome, records in message:  # a list of replies
            self.in_pipe -= 1
            for record in records:  # the worker's log lines, in the crawl's log
                logging.getLogger(record.name).handle(record)
            future = self.pending.pop(request_id, None)
            if future is not None and not future.done():
                future.set_result(outcome)
        self._send_waiting()

    def _unwatch(self) -> None:
        """Stop reading the pipe; every waiting job goes in-process (none hangs)."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.remove_reader(self.conn.fileno())
        self.loop = None
        self.waiting.clear()
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                with contextlib.suppress(RuntimeError):  # its event loop is closed already
                    future.set_result(None)

    def _fail(self, exc: BaseException) -> None:
        if not self.started:  # it died before its first message
            self._on_start((None, self._exited(exc)))
            return
        if not self.broken:
            self.broken = True
            logger.error("Fingerprint worker process failed (%s: %s): extraction and "
                         "fingerprints in-process", type(exc).__name__, exc)
        self._unwatch()

    def close(self) -> None:
        self._unwatch()
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(None)
        self.conn.close()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)


class WorkerPool:
    """``await extract(job)`` -> :class:`~newscrawl._extract_job.Extracted` and
    ``await fingerprint(text)`` -> (fingerprint, sketch), in ``workers`` processes or, with 0, in
    the calling process.
    ``fingerprints=False``: the workers do not load the fingerprint decision (no jieba).
    ``preload_extraction``: they load extraction once started, not with the first page."""

    def __init__(self, idf_file: str | None, workers: int, *, fingerprints: bool = True,
                 preload_extraction: bool = False, log_level: int = logging.DEBUG) -> None:
        self.idf_file = idf_file
        # Only the first max_chars characters of a text count: no more is sent to a worker.
        self.max_chars = FingerprintConfig().max_chars
        self.fingerprints = fingerprints
        # started at once, all of them, and waited for only when their version is asked for:
        # the caller goes on with its own start meanwhile
        self._workers = [_Worker(idf_file, fingerprints, preload_extraction, log_level)
                         for _ in range(workers)]
        self._version: str | None = None

    def _wait_started(self) -> None:
        """Wait for every worker's first message. A configuration error a worker met (bad IDF
        file, missing segmenter) is raised here, in full; a worker that merely died leaves its
        work to the calling process."""
        failed = False
        for worker in self._workers:
            try:
                worker.wait_started()
            except WorkerFailed:
                failed = True
        if failed and self.fingerprints:
            get_decision(idf_file=self.idf_file)

    @property
    def version(self) -> str | None:
        """The fingerprint decision's version (None without fingerprints): the workers' (waits
        for them to start), or the calling process's when none started."""
        if self.fingerprints and self._version is None:
            self._wait_started()
            started = [w.version for w in self._workers if w.version is not None]
            self._version = started[0] if started else get_decision(idf_file=self.idf_file).version
        return self._version

    @classmethod
    def of(cls, crawler: Crawler) -> WorkerPool:
        """The crawl's pool (built on first use, closed when the spider closes):
        ``NEWSCRAWL_FINGERPRINT_WORKERS`` processes, in-process without an asyncio reactor."""
        pool: WorkerPool | None = getattr(crawler, "_newscrawl_workers", None)
        if pool is None:
            # imported here, not at the top: a worker process imports this module with its first
            # page (PageJob), and needs neither Scrapy nor Redis
            from scrapy import signals
            from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

            from newscrawl.context import CrawlContext

            config = CrawlContext.of(crawler).config.dedup
            # Replies are read by the asyncio event loop: with another Twisted reactor,
            # in-process (without a running loop, each call does so by itself).
            asyncio_ok = not is_reactor_installed() or is_asyncio_reactor_installed()
            level = crawler.settings.get("LOG_LEVEL") or logging.DEBUG
            if not isinstance(level, int):
                level = logging.getLevelName(str(level).upper())
            pool = cls(config.idf_file, config.workers if asyncio_ok else 0,
                       fingerprints=config.enabled, preload_extraction=True,  # the spider's pages
                       log_level=level if isinstance(level, int) else logging.DEBUG)
            crawler._newscrawl_workers = pool  # type: ignore[attr-defined]
            crawler.signals.connect(pool.close, signal=signals.spider_closed)
        return pool

    @property
    def processes(self) -> int:
        """Worker processes still in use (waits for them to start)."""
        self._wait_started()
        return sum(not w.broken for w in self._workers)

    async def _call(self, kind: str, payload: Any, local: Callable[[], Any]) -> Any:
        """The job's result from a worker, or the exception it raised there raised here; run
        here when no worker takes it (none left, no running loop, a worker gone mid-job)."""
        worker: _Worker | None = None
        for w in self._workers:  # the live worker with the fewest jobs
            if not w.broken and (worker is None or len(w.pending) < len(worker.pending)):
                worker = w
        outcome: Outcome | None = None
        if worker is not None:
            try:
                future = worker.submit(kind, payload)
            except RuntimeError:  # no running loop, or WorkerFailed
                future = None
            if future is not None:
                outcome = await future
        if outcome is None:
            return local()
        result, error = outcome
        if error is not None:
            raise error
        return result

    async def fingerprint(self, text: str) -> Result:
        if isinstance(text, str) and len(text) > self.max_chars:
            text = text[: self.max_chars]  # the same fingerprint, a bounded message
        result: Result = await self._call("fingerprint", text,
                                          lambda: analyze(text, self.idf_file))
        return result

    async def extract(self, job: PageJob) -> Extracted:
        """:func:`~newscrawl._extract_job.extract_page` of ``job``; an exception it raises in a
        worker is raised here, caused by a :class:`RemoteTraceback` of the worker's traceback."""
        result: Extracted = await self._call("extract", job, lambda: extract(job))
        return result

    def close(self) -> None:
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.close()
