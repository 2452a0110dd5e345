"""Article storage: daily JSON Lines files (``<dir>/YYYY-MM-DD.jsonl``, UTC days), one ``write()``
under ``O_APPEND`` and ``flock`` per article, a torn last line moved aside, a failed write undone
and raised as :class:`StoreWriteError`. docs/operations.md.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from newscrawl.errors import ExitCode, SystemFaultError
from newscrawl.formats import SECONDS_PER_DAY

logger = logging.getLogger(__name__)

#: day files whose URLs contains() keeps in memory
KNOWN_DAYS = 4
#: the suffix added to a day file's name for the torn records set aside from it
TORN_SUFFIX = ".torn"


class StoreWriteError(SystemFaultError, OSError):
    """A record could not be written to the store (``errno``: ENOSPC, EROFS, EACCES...); what
    the write had added was removed again. ``path`` is the file written (``filename`` too)."""

    kind = "storage"
    exit_code = ExitCode.STORAGE_FAILED

    def __init__(self, path: str | os.PathLike[str], error: OSError) -> None:
        code = error.errno if error.errno is not None else errno.EIO
        OSError.__init__(self, code, error.strerror or str(error), os.fspath(path))
        self.path = Path(path)
        self.cause = store_fault_cause(self)
        self.advice = STORE_ADVICE

    def __str__(self) -> str:
        return f"cannot write to the article store: {self.strerror}: {self.path}"


#: what the operator does when the article store cannot be written
STORE_ADVICE = ("Free space or fix the permissions of NEWSCRAWL_STORE_DIR and run again; the"
                " articles not stored are fetched again")


def store_fault_cause(exc: OSError) -> str:
    """What happened, in the CRITICAL line of a store that cannot be written."""
    where = f" ({exc.filename})" if exc.filename else ""
    return f"cannot write the article store{where}: {exc.strerror or exc}"


@contextlib.contextmanager
def _flocked(fd: int, operation: int) -> Iterator[None]:
    """``flock(fd, operation)`` held inside the block; without it where the filesystem has no
    locks (the single write() still keeps records whole)."""
    try:
        fcntl.flock(fd, operation)
    except OSError as exc:
        logger.debug("no flock on fd %d (%s): going on without", fd, exc)
        yield
        return
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _complete_size(fd: int) -> int:
    """The file's size when no writer of this module is inside a write (shared ``flock``)."""
    with _flocked(fd, fcntl.LOCK_SH):
        return os.fstat(fd).st_size


def parse_record(line: bytes) -> dict[str, Any] | None:
    """The record of one complete line (without or with its newline), None unless it is a
    JSON object."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _warn_bad_line(path: Path, line_no: int, line: bytes, complete: bool) -> None:
    if complete:
        logger.warning("%s:%d: not a JSON object (%d bytes): skipped", path, line_no, len(line))
    else:
        logger.warning("%s:%d: incomplete last line (%d bytes, no newline: cut short by a crash "
                       "or a full disk): skipped; the next write to this file moves it to %s",
                       path, line_no, len(line), path.name + TORN_SUFFIX)


def read_records(path: str | os.PathLike[str], *, warn: bool = True
                 ) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` of every complete, parseable line of one store file; a bad line
    (not a JSON object, or an incomplete last line) is skipped with a WARNING naming the file
    and line number (``warn=False``: silently)."""
    path = Path(path)
    with path.open("rb") as fh:
        size = _complete_size(fh.fileno())
        line_no = 0
        read = 0
        for line in fh:
            if read >= size:
                break  # appended after we looked: the next reader's
            line_no += 1
            read += len(line)
            complete = line.endswith(b"\n")
            record = parse_record(line) if complete else None
            if record is None:
                if warn:
                    _warn_bad_line(path, line_no, line, complete)
                continue
            yield line_no, record


def _url_first(field: str) -> re.Pattern[bytes]:
    """The start of a record as ArticleStore writes it: ``{"<field>": "<JSON string>", ...``"""
    name = re.escape(json.dumps(field, ensure_ascii=False).encode())
    return re.compile(rb'^\{' + name + rb': ("(?:[^"\\]|\\.)*")')


_URL_FIRST = _url_first("url")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _url_of(line: bytes, field: str = "url",
            url_first: re.Pattern[bytes] = _URL_FIRST) -> str | None:
    match = url_first.match(line)
    try:
        if match:
            value = json.loads(match.group(1))
        else:  # written by something else: parse it all
            record = json.loads(line)
            value = record.get(field) if isinstance(record, dict) else None
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def day_of(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(timestamp))


class ArticleStore:
    """Append-only daily JSON Lines files under ``directory``; a record's URL is its
    ``url_field`` (written first, so a reader finds the URL at the start of each line)."""

    def __init__(self, directory: str | os.PathLike[str], *, fsync: bool = False,
                 url_field: str = "url") -> None:
        self.directory = Path(directory)
        self.fsync = fsync
        self.url_field = url_field
        self._fd: int | None = None
        self._day: str | None = None
        # day -> (bytes read, lines read, URLs recorded): see contains()
        self._known: dict[str, tuple[int, int, set[str]]] = {}

    def path_for(self, day: str) -> Path:
        return self.directory / f"{day}.jsonl"

    def _fd_for(self, day: str) -> int:
        if self._fd is None or self._day != day:
            self.close()
            self.directory.mkdir(parents=True, exist_ok=True)
            # read too: the last byte is checked before each append
            self._fd = os.open(
                self.path_for(day), os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644
            )
            self._day = day
        return self._fd

    def write(self, record: Mapping[str, Any], *, now: float | None = None) -> Path:
        """Append one record (flushed to the OS, and with ``fsync`` to the disk, before
        returning); the file written.

        Raises :class:`StoreWriteError` when the file cannot be opened or written (no space,
        read-only, no permission): what the write had added is removed first, so the file ends
        with the last complete record, as before the call.
        """
        day = day_of(time.time() if now is None else now)
        line = (json.dumps(dict(record), ensure_ascii=False, sort_keys=False) + "\n").encode()
        path = self.path_for(day)
        try:
            fd = self._fd_for(day)
        except OSError as exc:
            raise StoreWriteError(path, exc) from exc
        with _flocked(fd, fcntl.LOCK_EX):  # no other writer between the check and the append
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    size = _set_aside_torn_tail(fd, path, size)
            except OSError as exc:
                raise StoreWriteError(path, exc) from exc
            try:
                written = 0
                while written < len(line):  # a short write: ENOSPC follows on the next one
                    written += os.write(fd, line[written:])
                if self.fsync:
                    os.fsync(fd)
            except OSError as exc:
                _undo_append(fd, path, size)
                raise StoreWriteError(path, exc) from exc
        known = self._known.get(day)
        if known is not None and known[0] == size:  # contains() need not read it back
            url = record.get(self.url_field)
            if isinstance(url, str):
                known[2].add(url)
            self._known[day] = (size + len(line), known[1] + 1, known[2])
        return path

    def contains(self, url: str, days: Iterable[str]) -> bool:
        """Whether a complete, parseable record of ``url`` is in the files of these days
        (``YYYY-MM-DD``).

        The URLs of a day file are read once and kept (for the last few days asked about), then
        only what was appended since is read: a crawl that has lost its done records and meets
        every article again reads each day file once, not once per article.
        """
        return any(url in self._urls_of(day) for day in days)

    def already_stored(self, url: str, indexed_day: int) -> bool:
        """Whether ``url``'s record is stored, given the day its fingerprint was indexed (days
        since 1970-01-01, UTC): looked up in the files of that day and the day after (an
        article is stored right after being indexed, so the UTC day can only have turned)."""
        return self.contains(url, [day_of((indexed_day + n) * SECONDS_PER_DAY) for n in (0, 1)])

    def stored_recently(self, url: str, *, now: float | None = None) -> bool:
        """Whether ``url``'s record is in the file of today or yesterday (UTC): where an article
        stored by a run whose Redis lost its last writes (the done record, the index entry) is."""
        today = time.time() if now is None else now
        return self.contains(url, [day_of(today), day_of(today - SECONDS_PER_DAY)])

    def record_of(self, url: str, indexed_day: int) -> dict[str, Any] | None:
        """``url``'s stored record, looked up as :meth:`already_stored` does (the files of the
        day its fingerprint was indexed and the day after); None if it is not there."""
        # a line that does not hold the URL as JSON writes it is not parsed
        needle = json.dumps(url, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")
        for n in (1, 0):
            try:
                fh = self.path_for(day_of((indexed_day + n) * SECONDS_PER_DAY)).open("rb")
            except OSError:
                continue
            with fh:
                for line in fh:
                    if not line.endswith(b"\n") or needle not in line:
                        continue
                    record = parse_record(line)
                    if record is not None and record.get(self.url_field) == url:
                        return record
        return None

    def _urls_of(self, day: str) -> set[str]:
        offset, line_no, urls = self._known.pop(day, (0, 0, set()))
        path = self.path_for(day)
        try:
            unchanged = os.stat(path).st_size == offset
            fh = None if unchanged else path.open("rb")
        except FileNotFoundError:
            return urls
        if fh is None:  # nothing appended since it was read (the usual case: one stat)
            self._known[day] = (offset, line_no, urls)
            return urls
        with fh:
            size = _complete_size(fh.fileno())
            if size < offset:  # replaced or truncated: start again
                offset, line_no, urls = 0, 0, set()
            fh.seek(offset)
            for line in fh:
                if offset + len(line) > size or not line.endswith(b"\n"):
                    break  # torn (set aside by the next write) or appended after we looked
                offset += len(line)
                line_no += 1
                record = parse_record(line)
                if record is None:
                    _warn_bad_line(path, line_no, line, True)
                    continue
                url = record.get(self.url_field)
                if isinstance(url, str):
                    urls.add(url)
        self._known[day] = (offset, line_no, urls)  # most recently used last
        while len(self._known) > KNOWN_DAYS:
            del self._known[next(iter(self._known))]
        return urls

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self._day = None


def _set_aside_torn_tail(fd: int, path: Path, size: int) -> int:
    """Move the incomplete last line of the file open at ``fd`` (``size`` bytes, not ending in
    a newline) to ``<path>.torn`` (fsynced first), cut the file back to the line's start, and
    return that (the new size). Called under the writer's exclusive lock."""
    start = 0
    pos = size
    while pos > 0:
        n = min(1 << 16, pos)
        pos -= n
        newline = os.pread(fd, n, pos).rfind(b"\n")
        if newline >= 0:
            start = pos + newline + 1
            break
    tail = os.pread(fd, size - start, start)
    torn = path.with_name(path.name + TORN_SUFFIX)
    with torn.open("ab") as out:
        out.write(tail + b"\n")
        out.flush()
        os.fsync(out.fileno())
    os.ftruncate(fd, start)
    line_no = 1 + sum(os.pread(fd, min(1 << 20, start - p), p).count(b"\n")
                      for p in range(0, start, 1 << 20))
    logger.warning("%s:%d: the last record was incomplete (%d bytes without a newline: a write "
                   "cut short by a crash or a full disk): moved to %s, so the next record is "
                   "not glued to it", path, line_no, len(tail), torn)
    return start


def _undo_append(fd: int, path: Path, size: int) -> None:
    """Cut the file back to ``size`` after a failed append (a partial record)."""
    try:
        if os.fstat(fd).st_size > size:
            os.ftruncate(fd, size)
    except OSError as exc:
        logger.error("%s: could not remove the partial record of a failed write (%s); the next "
                     "write moves it to %s", path, exc, path.name + TORN_SUFFIX)


def iter_articles(directory: str | os.PathLike[str], *, warn: bool = True
                  ) -> Iterator[dict[str, Any]]:
    """Every stored article, oldest day first; a bad line (an incomplete last line after a
    crash, a line that is not a JSON object) is skipped with a WARNING naming its file and
    line number (see :func:`read_records`)."""
    for path in sorted(Path(directory).glob("*.jsonl")):
        for _, record in read_records(path, warn=warn):
            yield record


def day_files(directory: str | os.PathLike[str], *, since_day: str | None = None
              ) -> list[tuple[str, Path]]:
    """``(day, path)`` of the day files (``YYYY-MM-DD.jsonl``) in ``directory``, oldest first,
    from ``since_day`` on when given (none when the directory does not exist)."""
    out = []
    for path in sorted(Path(directory).glob("*.jsonl")):
        day = path.stem
        if _DAY.fullmatch(day) and (since_day is None or day >= since_day):
            out.append((day, path))
    return out


def find_articles(
    directory: str | os.PathLike[str], urls: Iterable[str], *, until_day: str | None = None
) -> dict[str, dict[str, Any]]:
    """The stored records of ``urls`` found in the day files of ``directory`` (newest day first,
    from ``until_day`` (``YYYY-MM-DD``) back when given); reading stops once every URL is found.

    Only the URL at the start of each line is read until it is one of ``urls`` (see ``_url_of``),
    so a large store is scanned at disk speed. A URL stored more than once gives its newest record.
    A missing directory finds nothing.
    """
    wanted = set(urls)
    found: dict[str, dict[str, Any]] = {}
    if not wanted:
        return found
    paths = sorted(Path(directory).glob("*.jsonl"), reverse=True)
    for path in paths:
        if until_day is not None and path.stem > until_day:
            continue
        try:
            fh = path.open("rb")
        except OSError:
            continue
        in_file: dict[str, dict[str, Any]] = {}
        with fh:
            size = _complete_size(fh.fileno())
            read = 0
            for line_no, line in enumerate(fh, 1):
                if read >= size:
                    break  # appended after we looked
                read += len(line)
                if not line.endswith(b"\n"):
                    _warn_bad_line(path, line_no, line, False)
                    break
                url = _url_of(line)
                if url is None:  # without a URL, or not a record at all
                    if parse_record(line) is None:
                        _warn_bad_line(path, line_no, line, True)
                    continue
                if url not in wanted or url in found:
                    continue
                record = parse_record(line)
                if record is None:  # e.g. a torn record glued to the next one
                    _warn_bad_line(path, line_no, line, True)
                    continue
                in_file[url] = record  # a later line of the same day is newer
        found.update(in_file)
        if len(found) == len(wanted):
            break
    return found
