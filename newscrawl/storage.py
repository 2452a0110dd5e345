"""Article storage: daily JSON Lines files (``<dir>/YYYY-MM-DD.jsonl``, UTC days).

Each article is written with ONE ``write()`` on a file opened with ``O_APPEND``, so a process that
crashes loses nothing already handed to the store, and several workers on one machine can append
to the same daily file without interleaving lines.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from newscrawl.formats import SECONDS_PER_DAY

#: day files whose URLs contains() keeps in memory
KNOWN_DAYS = 4


def _url_first(field: str) -> re.Pattern[bytes]:
    """The start of a record as ArticleStore writes it: ``{"<field>": "<JSON string>", ...``"""
    name = re.escape(json.dumps(field, ensure_ascii=False).encode())
    return re.compile(rb'^\{' + name + rb': ("(?:[^"\\]|\\.)*")')


_URL_FIRST = _url_first("url")


def _url_of(line: bytes, field: str = "url",
            url_first: re.Pattern[bytes] = _URL_FIRST) -> str | None:
    match = url_first.match(line)
    try:
        if match:
            value = json.loads(match.group(1))
        else:  # written by something else: parse it all
            record = json.loads(line)
            value = record.get(field) if isinstance(record, dict) else None
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def day_of(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(timestamp))


class ArticleStore:
    """Append-only daily JSON Lines files under ``directory``; a record's URL is its
    ``url_field`` (written first, so :meth:`contains` reads only the start of each line)."""

    def __init__(self, directory: str | os.PathLike[str], *, fsync: bool = False,
                 url_field: str = "url") -> None:
        self.directory = Path(directory)
        self.fsync = fsync
        self.url_field = url_field
        self._url_first = _URL_FIRST if url_field == "url" else _url_first(url_field)
        self._fd: int | None = None
        self._day: str | None = None
        # day -> (bytes read, URLs recorded): see contains()
        self._known: dict[str, tuple[int, set[str]]] = {}

    def path_for(self, day: str) -> Path:
        return self.directory / f"{day}.jsonl"

    def _fd_for(self, day: str) -> int:
        if self._fd is None or self._day != day:
            self.close()
            self.directory.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(
                self.path_for(day), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
            )
            self._day = day
        return self._fd

    def write(self, record: Mapping[str, Any], *, now: float | None = None) -> Path:
        """Append one record (flushed to the OS before returning); the file written."""
        day = day_of(time.time() if now is None else now)
        line = (json.dumps(dict(record), ensure_ascii=False, sort_keys=False) + "\n").encode()
        fd = self._fd_for(day)
        written = os.write(fd, line)
        while written < len(line):  # pragma: no cover - short writes are rare on files
            written += os.write(fd, line[written:])
        if self.fsync:
            os.fsync(fd)
        return self.path_for(day)

    def contains(self, url: str, days: Iterable[str]) -> bool:
        """Whether a complete record of ``url`` is in the files of these days (``YYYY-MM-DD``).

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

    def record_of(self, url: str, indexed_day: int) -> dict[str, Any] | None:
        """``url``'s stored record, looked up as :meth:`already_stored` does (the files of the
        day its fingerprint was indexed and the day after); None if it is not there."""
        for n in (1, 0):
            try:
                fh = self.path_for(day_of((indexed_day + n) * SECONDS_PER_DAY)).open("rb")
            except OSError:
                continue
            with fh:
                for line in fh:
                    if not line.endswith(b"\n") or \
                            _url_of(line, self.url_field, self._url_first) != url:
                        continue
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict):
                        return record
        return None

    def _urls_of(self, day: str) -> set[str]:
        offset, urls = self._known.pop(day, (0, set()))
        try:
            fh = self.path_for(day).open("rb")
        except FileNotFoundError:
            return urls
        with fh:
            if os.fstat(fh.fileno()).st_size < offset:  # replaced or truncated: start again
                offset, urls = 0, set()
            fh.seek(offset)
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # a record still being written (or torn): read it again next time
                offset += len(line)
                url = _url_of(line, self.url_field, self._url_first)
                if url is not None:
                    urls.add(url)
        self._known[day] = (offset, urls)  # most recently used last
        while len(self._known) > KNOWN_DAYS:
            del self._known[next(iter(self._known))]
        return urls

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self._day = None


def iter_articles(directory: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Every stored article, oldest day first (skips a torn last line after a crash)."""
    for path in sorted(Path(directory).glob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.endswith("\n"):
                    break
                yield json.loads(line)


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
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # a torn last line (a crash while writing)
                url = _url_of(line)
                if url is None or url not in wanted or url in found:
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    in_file[url] = record  # a later line of the same day is newer
        found.update(in_file)
        if len(found) == len(wanted):
            break
    return found
