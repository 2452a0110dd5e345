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
import pickle
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from newscrawl.errors import NewscrawlError
from newscrawl.extract import Article, decode_html_detailed, extract_article, has_mojibake
from newscrawl.simhash.decision import get_decision
from newscrawl.simhash.fingerprinter import FingerprintConfig
from newscrawl.urls import canonical_link

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

Result = tuple[int | None, bytes | None]  # (fingerprint, sketch): what the index needs


@dataclass(frozen=True, slots=True)
class PageJob:
    """What extraction needs of one response (picklable, sent to a worker)."""

    body: bytes
    url: str
    header_encoding: str | None
    forced_encoding: str | None
    selectors: dict[str, str] | None


@dataclass(frozen=True, slots=True)
class Extracted:
    """One page's extraction: the article (None: no article found), how the body was decoded
    (:class:`newscrawl.extract.Decoded`'s ``encoding``, ``source``, ``declared``), whether the
    title or text carries mojibake, and the page's canonical link."""

    article: Article | None
    encoding: str
    source: str
    declared: str | None
    mojibake: bool
    canonical_url: str | None


def extract_page(job: PageJob) -> Extracted:
    """Decode, extract, check for mojibake and read the canonical link: the spider's whole
    extraction of one article page (raises what decoding or extraction raises)."""
    decoded = decode_html_detailed(job.body, header_encoding=job.header_encoding,
                                   forced_encoding=job.forced_encoding)
    article = extract_article(decoded.text, job.url, selectors=job.selectors)
    found = article is not None and bool((article.text or "").strip())
    mojibake = found and article is not None and (
        has_mojibake(article.title or "") or has_mojibake(article.text))
    return Extracted(article, decoded.encoding, decoded.source, decoded.declared, mojibake,
                     canonical_link(decoded.text, job.url) if found else None)


def _analyze(text: str, idf_file: str | None) -> Result:
    """The fingerprint and sketch of ``text`` (the decision is cached per process and IDF file)."""
    analysis = get_decision(idf_file=idf_file).analyze(text)
    return analysis.fingerprint, analysis.sketch


def _run(kind: str, payload: Any, idf_file: str | None) -> Any:
    if kind == "extract":
        return extract_page(payload)
    return _analyze(payload, idf_file)


class _RemoteTraceback(Exception):
    """The cause of an exception a worker raised: its traceback there, as text."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _raised_again(exc: BaseException, worker_traceback: str) -> BaseException:
    exc.__cause__ = _RemoteTraceback(worker_traceback)
    return exc


class _Raised:
    """An exception sent back by a worker: unpickled, it is the exception itself, caused by a
    :class:`_RemoteTraceback` of the worker's traceback."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.traceback = "".join(traceback.format_exception(exc))

    def __reduce__(self) -> tuple[Any, ...]:
        return _raised_again, (self.exc, self.traceback)


# A reply: (the result, None), (None, the exception raised), or None: run the job in-process.
Outcome = tuple[Any, BaseException | None]


def _outcome(kind: str, payload: Any, idf_file: str | None) -> tuple[Any, Any] | None:
    """The job's result, or the exception it raised when that can be sent back (None: it
    cannot, the caller runs the job itself)."""
    try:
        return _run(kind, payload, idf_file), None
    except Exception as exc:
        raised = _Raised(exc)
        try:
            pickle.loads(pickle.dumps(raised))
        except Exception:
            return None
        return None, raised


class _Records(logging.Handler):
    """Keeps the worker's log records of one job, to be logged again by the caller."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        record.msg, record.args = record.getMessage(), None  # arguments may not pickle
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        self.records.append(record)

    def take(self) -> list[logging.LogRecord]:
        records, self.records = self.records, []
        return records


def _serve(conn: Connection, idf_file: str | None, fingerprints: bool, log_level: int) -> None:
    """Worker process: its decision version first (None without fingerprints), then
    lists of ``(request id, kind, payload)`` in, lists of ``(request id, outcome, log records at
    ``log_level`` or above)`` out (:func:`_outcome`, :class:`_Replies`).

    A thread reads the pipe into a queue, so the caller's ``send`` never waits on a worker that
    is itself waiting for the caller to read its answers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is for the caller, which stops us
    records = _Records()
    logging.getLogger().addHandler(records)
    logging.getLogger().setLevel(log_level)
    try:
        version = get_decision(idf_file=idf_file).version if fingerprints else None
        conn.send((version, None))
    except Exception as exc:  # the caller raises it again in-process, with its traceback
        conn.send((None, f"{type(exc).__name__}: {exc}"))
        return
    jobs: queue.SimpleQueue[tuple[int, str, Any] | None] = queue.SimpleQueue()

    def read() -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):  # the calling process is gone
                message = None
            if message is None:
                jobs.put(None)
                return
            for job in message:  # a list of jobs
                jobs.put(job)

    threading.Thread(target=read, daemon=True).start()
    out = _Replies(conn, jobs)
    while (job := jobs.get()) is not None:
        request_id, kind, payload = job
        outcome = _outcome(kind, payload, idf_file)
        logged = records.take()
        try:
            # without an outcome the caller runs the job again and logs what it logs
            out.send((request_id, outcome, logged if outcome is not None else []))
        except (OSError, ValueError):
            return
    with contextlib.suppress(OSError, ValueError):
        out.flush()


#: A worker's reply waits this long at most for others to go in the same message.
REPLY_WAIT = 0.005


class _Replies:
    """A worker's replies, sent as lists. A reply is held while more jobs are queued and the
    first reply held plus the job just done (the next one is likely alike) stays under
    REPLY_WAIT: fast jobs (fingerprints) cost the two processes one message for several, a slow
    one (an extraction) goes out at once, and a held reply waits at most REPLY_WAIT plus one
    job."""

    def __init__(self, conn: Connection, jobs: queue.SimpleQueue[Any]) -> None:
        self.conn = conn
        self.jobs = jobs
        self.replies: list[tuple[int, Any, list[logging.LogRecord]]] = []
        self.since = self.last = time.monotonic()

    def send(self, reply: tuple[int, Any, list[logging.LogRecord]]) -> None:
        now = time.monotonic()
        took, self.last = now - self.last, now  # the job's time (and any wait for it)
        if not self.replies:
            self.since = now
        self.replies.append(reply)
        if self.jobs.empty() or now - self.since + took >= REPLY_WAIT:
            self.flush()

    def flush(self) -> None:
        replies, self.replies = self.replies, []
        if replies:
            self.conn.send(replies)


#: Jobs sent to a worker and not answered yet, at most: the rest wait in the calling process.
MAX_IN_PIPE = 32


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
    """One worker process on a pipe; a reply resolves its request's future in the event loop."""

    def __init__(self, idf_file: str | None, fingerprints: bool, log_level: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=_serve, args=(child, idf_file, fingerprints, log_level),
                                   daemon=True, name="newscrawl-fingerprint")
        with _main_module_hidden():
            self.process.start()
        child.close()
        self.pending: dict[int, asyncio.Future[Outcome | None]] = {}
        self.in_pipe = 0  # sent, not answered yet
        self.waiting: collections.deque[tuple[int, str, Any]] = collections.deque()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._next_id = 0
        self.broken = False
        try:  # the worker's first message: its decision version (or why it could not start)
            version, error = self.conn.recv() if self.conn.poll(300) else (None, "timeout")
        except (EOFError, OSError) as exc:  # it died before answering (killed, crashed)
            self.process.join(timeout=5)
            version, error = None, f"exited ({exc!r}, exit code {self.process.exitcode})"
        if error is not None:
            self.close()
            raise WorkerFailed(f"fingerprint worker did not start: {error}")
        self.version = None if version is None else str(version)

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
        try:
            while self.conn.poll():
                for request_id, outcome, records in self.conn.recv():  # a list of replies
                    self.in_pipe -= 1
                    for record in records:  # the worker's log lines, in the crawl's log
                        logging.getLogger(record.name).handle(record)
                    future = self.pending.pop(request_id, None)
                    if future is not None and not future.done():
                        future.set_result(outcome)
        except (EOFError, OSError) as exc:
            self._fail(exc)
            return
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
    """``await extract(job)`` -> :class:`Extracted` and ``await fingerprint(text)`` ->
    (fingerprint, sketch), in ``workers`` processes or, with 0, in the calling process.
    ``fingerprints=False``: the workers do not load the fingerprint decision (no jieba)."""

    def __init__(self, idf_file: str | None, workers: int, *, fingerprints: bool = True,
                 log_level: int = logging.DEBUG) -> None:
        self.idf_file = idf_file
        # Only the first max_chars characters of a text count: no more is sent to a worker.
        self.max_chars = FingerprintConfig().max_chars
        self._workers: list[_Worker] = []
        try:
            for _ in range(workers):
                self._workers.append(_Worker(idf_file, fingerprints, log_level))
        except WorkerFailed as exc:
            self.close()
            # A configuration error (bad IDF file, missing segmenter) is raised here, in full;
            # a worker that merely died leaves the work to the calling process.
            if fingerprints:
                get_decision(idf_file=idf_file)
            logger.error("%s: extraction and fingerprints in the crawl process", exc)
        self.version: str | None = None
        if fingerprints:
            self.version = (self._workers[0].version if self._workers
                            else get_decision(idf_file=idf_file).version)

    @classmethod
    def of(cls, crawler: Crawler) -> WorkerPool:
        """The crawl's pool (built on first use, closed when the spider closes):
        ``NEWSCRAWL_FINGERPRINT_WORKERS`` processes, in-process without an asyncio reactor."""
        pool: WorkerPool | None = getattr(crawler, "_newscrawl_workers", None)
        if pool is None:
            # imported here, not at the top: the worker processes import this module, and need
            # neither Scrapy nor Redis
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
                       fingerprints=config.enabled,
                       log_level=level if isinstance(level, int) else logging.DEBUG)
            crawler._newscrawl_workers = pool  # type: ignore[attr-defined]
            crawler.signals.connect(pool.close, signal=signals.spider_closed)
        return pool

    @property
    def processes(self) -> int:
        """Worker processes still in use."""
        return sum(not w.broken for w in self._workers)

    async def _call(self, kind: str, payload: Any, local: Callable[[], Any]) -> Any:
        """The job's result from a worker, or the exception it raised there raised here; run
        here when no worker takes it (none left, no running loop, a worker gone mid-job)."""
        live = [w for w in self._workers if not w.broken]
        outcome: Outcome | None = None
        if live:
            worker = min(live, key=lambda w: len(w.pending))
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
                                          lambda: _analyze(text, self.idf_file))
        return result

    async def extract(self, job: PageJob) -> Extracted:
        """:func:`extract_page` of ``job``; an exception it raises in a worker is raised here,
        caused by a :class:`_RemoteTraceback` of the worker's traceback."""
        result: Extracted = await self._call("extract", job, lambda: extract_page(job))
        return result

    def close(self) -> None:
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.close()
