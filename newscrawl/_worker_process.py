"""What runs in a worker process of :class:`newscrawl.workers.WorkerPool`: the loop that reads jobs
from the pipe and sends replies back in batches, with the worker's log records and the exceptions
jobs raise. Imports neither asyncio nor the extraction libraries (loaded with the first page,
or right after the version is sent with ``preload_extraction``).
See docs/design/architecture.md#worker-processes.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import queue
import signal
import threading
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from newscrawl.errors import NewscrawlError
from newscrawl.simhash.decision import get_decision

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from newscrawl._extract_job import Extracted
    from newscrawl.workers import PageJob

Result = tuple[int | None, bytes | None]  # (fingerprint, sketch): what the index needs

# A reply: (the result, None), (None, the exception raised), or None: run the job in-process.
Outcome = tuple[Any, BaseException | None]


def analyze(text: str, idf_file: str | None) -> Result:
    """The fingerprint and sketch of ``text`` (the decision is cached per process and IDF file)."""
    analysis = get_decision(idf_file=idf_file).analyze(text)
    return analysis.fingerprint, analysis.sketch


def _extraction() -> Callable[[PageJob], Extracted]:
    """The extraction job, imported on first use, not with this module: a process that only
    fingerprints (a worker, the calling process) never loads trafilatura and lxml, the larger
    part of its start."""
    from newscrawl._extract_job import extract_page

    return extract_page


def extract(job: PageJob) -> Extracted:
    """:func:`newscrawl._extract_job.extract_page` of ``job`` (raises what it raises)."""
    return _extraction()(job)


def _run(kind: str, payload: Any, idf_file: str | None) -> Any:
    if kind == "extract":
        return extract(payload)
    return analyze(payload, idf_file)


class RemoteTraceback(NewscrawlError):
    """The cause of an exception a worker raised: its traceback there, as text."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _raised_again(exc: BaseException, worker_traceback: str) -> BaseException:
    exc.__cause__ = RemoteTraceback(worker_traceback)
    return exc


class _Raised:
    """An exception sent back by a worker: unpickled, it is the exception itself, caused by a
    :class:`RemoteTraceback` of the worker's traceback."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.traceback = "".join(traceback.format_exception(exc))

    def __reduce__(self) -> tuple[Any, ...]:
        return _raised_again, (self.exc, self.traceback)


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


def serve(conn: Connection, idf_file: str | None, fingerprints: bool, preload_extraction: bool,
          log_level: int) -> None:
    """Worker process: its decision version first (None without fingerprints), then
    lists of ``(request id, kind, payload)`` in, lists of ``(request id, outcome, log records at
    ``log_level`` or above)`` out (:func:`_outcome`, :class:`_Replies`). ``preload_extraction``:
    extraction is loaded right after the version is sent, not with the first page.

    A thread reads the pipe into a queue, so the caller's ``send`` never waits on a worker that
    is itself waiting for the caller to read its answers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is for the caller, which stops us
    records = _Records()
    logging.getLogger().addHandler(records)
    logging.getLogger().setLevel(log_level)
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

    # reading from the start: jobs the caller sends before the version do not fill the pipe
    threading.Thread(target=read, daemon=True).start()
    try:
        started: tuple[str | None, str | None] = (
            get_decision(idf_file=idf_file).version if fingerprints else None, None)
    except Exception as exc:  # the caller raises it again in-process, with its traceback
        started = (None, f"{type(exc).__name__}: {exc}")
    try:
        conn.send(started)
    except (OSError, ValueError):  # the caller closed the pool before it needed us
        return
    if started[1] is not None:
        return
    if preload_extraction:  # while the caller goes on with its own start
        with contextlib.suppress(Exception):  # met again, and sent back, with the first page
            _extraction()
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


