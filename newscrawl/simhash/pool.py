"""Fingerprints in worker processes: ``await FingerprintPool(idf_file, n).fingerprint(text)``.

Extraction keeps a crawl process busy; segmenting and weighting the text in another process takes
the fingerprint off the crawl's critical path. Each worker is a process on a pipe whose replies
the asyncio event loop reads (``add_reader``): no thread in the calling process (a
``ProcessPoolExecutor`` has a manager and a feeder thread whose GIL hand-offs cost the event loop
about as much as fingerprinting in-process), one pickled ``send`` per text.

A worker that dies hands its waiting texts back and is not used again (logged once); an error in
a worker is raised for its text by recomputing it in the calling process, with its traceback.
With 0 workers, or without a running asyncio loop, texts are fingerprinted in-process.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import multiprocessing
import signal
from typing import TYPE_CHECKING

from newscrawl.errors import NewscrawlError
from newscrawl.simhash.decision import get_decision
from newscrawl.simhash.fingerprinter import FingerprintConfig

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

logger = logging.getLogger(__name__)

Result = tuple[int | None, bytes | None]  # (fingerprint, sketch): what the index needs


def _analyze(text: str, idf_file: str | None) -> Result:
    """The fingerprint and sketch of ``text`` (the decision is cached per process and IDF file)."""
    analysis = get_decision(idf_file=idf_file).analyze(text)
    return analysis.fingerprint, analysis.sketch


def _serve(conn: Connection, idf_file: str | None) -> None:
    """Worker process: its decision version first, then ``(request id, text)`` in,
    ``(request id, result or None on an error)`` out."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is for the caller, which stops us
    try:
        conn.send((get_decision(idf_file=idf_file).version, None))
    except Exception as exc:  # the caller raises it again in-process, with its traceback
        conn.send((None, f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the calling process is gone
            return
        if message is None:
            return
        request_id, text = message
        result: Result | None = None  # an error: recomputed in-process, raised for the text
        with contextlib.suppress(Exception):
            result = _analyze(text, idf_file)
        conn.send((request_id, result))


#: Texts sent to a worker and not answered yet, at most: the rest wait in the calling process.
#: With no bound, a burst of texts fills the pipe to the worker while the worker, its pipe back
#: full of unread answers, waits for the caller to read them: both block for good. Answers are
#: about 200 bytes, so this many never fill a pipe (64 KiB).
MAX_IN_PIPE = 32


class WorkerFailed(NewscrawlError, RuntimeError):
    """The fingerprint worker process died or could not take the request."""


class _Worker:
    """One worker process on a pipe; a reply resolves its request's future in the event loop."""

    def __init__(self, idf_file: str | None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=_serve, args=(child, idf_file), daemon=True,
                                   name="newscrawl-fingerprint")
        self.process.start()
        child.close()
        self.pending: dict[int, asyncio.Future[Result | None]] = {}
        self.in_pipe = 0  # sent, not answered yet
        self.waiting: collections.deque[tuple[int, str]] = collections.deque()  # not sent yet
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
        self.version = str(version)

    def submit(self, text: str) -> asyncio.Future[Result | None]:
        """The future of ``text``'s result (None: compute it in-process). Raises RuntimeError
        without a running loop, :class:`WorkerFailed` when the worker is gone."""
        if self.broken:
            raise WorkerFailed("fingerprint worker is gone")
        loop = asyncio.get_running_loop()
        if loop is not self.loop:
            self._unwatch()
            loop.add_reader(self.conn.fileno(), self._on_readable)
            self.loop = loop
        self._next_id += 1
        future: asyncio.Future[Result | None] = loop.create_future()
        self.pending[self._next_id] = future
        self.waiting.append((self._next_id, text))
        self._send_waiting()
        if self.broken:
            raise WorkerFailed("fingerprint worker is gone")
        return future

    def _send_waiting(self) -> None:
        """Send waiting texts while fewer than MAX_IN_PIPE are unanswered."""
        while self.waiting and self.in_pipe < MAX_IN_PIPE:
            message = self.waiting.popleft()
            try:
                self.conn.send(message)
            except (OSError, ValueError) as exc:
                self._fail(exc)
                return
            self.in_pipe += 1

    def _on_readable(self) -> None:
        try:
            while self.conn.poll():
                request_id, result = self.conn.recv()
                self.in_pipe -= 1
                future = self.pending.pop(request_id, None)
                if future is not None and not future.done():
                    future.set_result(result)
        except (EOFError, OSError) as exc:
            self._fail(exc)
            return
        self._send_waiting()

    def _unwatch(self) -> None:
        """Stop reading the pipe; every waiting text goes in-process (none hangs)."""
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
            logger.error("Fingerprint worker process failed (%s: %s): fingerprinting in-process",
                         type(exc).__name__, exc)
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


class FingerprintPool:
    """``await fingerprint(text)`` -> (fingerprint, sketch), as ``get_decision(idf_file)``
    computes them, in ``workers`` processes or, with 0, in the calling process."""

    def __init__(self, idf_file: str | None, workers: int) -> None:
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
            # a worker that merely died leaves the fingerprints to the calling process.
            get_decision(idf_file=idf_file)
            logger.error("%s: fingerprinting in the crawl process", exc)
        self.version = (self._workers[0].version if self._workers
                        else get_decision(idf_file=idf_file).version)

    @property
    def processes(self) -> int:
        """Worker processes still in use."""
        return sum(not w.broken for w in self._workers)

    async def fingerprint(self, text: str) -> Result:
        if isinstance(text, str) and len(text) > self.max_chars:
            text = text[: self.max_chars]  # the same fingerprint, a bounded message
        live = [w for w in self._workers if not w.broken]
        if live:
            worker = min(live, key=lambda w: len(w.pending))
            with contextlib.suppress(RuntimeError):  # no running loop, or WorkerFailed
                result = await worker.submit(text)
                if result is not None:
                    return result
        return _analyze(text, self.idf_file)

    def close(self) -> None:
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.close()
