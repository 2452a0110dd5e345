"""The near-duplicate index made to agree with the article store when a crawl opens: rebuilt from
the store when Redis lost everything, the newest records added again when it lost its last writes.
docs/operations.md.
"""

from __future__ import annotations

import calendar
import functools
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from newscrawl.formats import SECONDS_PER_DAY
from newscrawl.storage import day_files, day_of, read_records

if TYPE_CHECKING:
    from newscrawl.index import SimhashIndex
    from newscrawl.simhash.decision import Analysis

logger = logging.getLogger(__name__)

#: days of files whose records are checked against a non-empty index (today and yesterday, UTC)
RECENT_DAYS = 2
#: of those, the newest records checked (Redis loses ~2 s of writes: a few dozen articles)
RECENT_RECORDS = 1000

Retry = Callable[..., Any]  # RetryPolicy.call: (fn, *args, what=...) -> fn's result


def _noon(day: str) -> float:
    return float(calendar.timegm(time.strptime(day, "%Y-%m-%d")) + SECONDS_PER_DAY // 2)


def _fingerprint_of(record: dict[str, Any]) -> int | None:
    value = record.get("simhash")
    if isinstance(value, str) and len(value) == 16:
        try:
            return int(value, 16)
        except ValueError:
            return None
    return None


def _missing(index: SimhashIndex, items: list[tuple[int, str]]) -> set[int]:
    """Positions in ``items`` (``(fingerprint, url)``) not stored in the index under that URL:
    one pipelined HGET of each block-0 value (what ``SimhashIndex.stored_day`` reads)."""
    from newscrawl.index.simhash_index import field_of, parse_record, split_records

    pipe = index.client.pipeline(transaction=False)
    for fp, _ in items:
        pipe.hget(index.bucket_keys(fp)[0], field_of(fp, 0))
    missing = set()
    for i, raw in enumerate(pipe.execute()):
        url = items[i][1]
        if raw is None or not any(
            (rec := parse_record(part)) is not None and rec[1] == url
            for part in split_records(raw)
        ):
            missing.add(i)
    return missing


def _on_day(index: SimhashIndex, version: str, day: str) -> SimhashIndex:
    """``index`` adding as of noon (UTC) of ``day``."""
    from newscrawl.index import SimhashIndex

    return SimhashIndex(index.client, prefix=index.prefix, max_distance=index.max_distance,
                        version=version, clock=functools.partial(float, _noon(day)),
                        tune_server=False)


def _articles(path: Path, url_field: str, text_field: str) -> Iterator[tuple[str, str, int | None]]:
    """``(url, text, recorded fingerprint or None)`` of the records of one file with a URL and
    a text."""
    for _, record in read_records(path):
        url, text = record.get(url_field), record.get(text_field)
        if isinstance(url, str) and url and isinstance(text, str) and text:
            yield url, text, _fingerprint_of(record)


def sync_index_with_store(
    index: SimhashIndex,
    directory: Path,
    *,
    idf_file: str | None,
    url_field: str,
    text_field: str,
    retention_days: int | None,
    retry: Retry,
    now: float | None = None,
) -> int:
    """Rebuild an empty ``index`` from the store in ``directory``, or add again the recent
    records it lost (see the module docstring); the number of fingerprints added."""
    now = time.time() if now is None else now
    if retry(index.count, what="index size") == 0:
        return _rebuild(index, directory, idf_file=idf_file, url_field=url_field,
                        text_field=text_field, retention_days=retention_days, retry=retry,
                        now=now)
    since = day_of(now - (RECENT_DAYS - 1) * SECONDS_PER_DAY)
    # the newest records: Redis loses only its last writes, so only the store's tail can miss
    recent: deque[tuple[str, str, str, int | None]] = deque(maxlen=RECENT_RECORDS)
    for day, path in day_files(directory, since_day=since):
        recent.extend((day, url, text, fp) for url, text, fp in
                      _articles(path, url_field, text_field))
    if not recent:
        return 0
    from newscrawl.simhash.decision import get_decision

    decision = get_decision(idf_file=idf_file)
    analyses: dict[int, Analysis] = {}
    known: list[tuple[int, int, str]] = []  # (position, fingerprint, url)
    for pos, (_, url, text, recorded) in enumerate(recent):
        if recorded is None:  # another project's item: no fingerprint in the record
            analyses[pos] = decision.analyze(text)
            recorded = analyses[pos].fingerprint
        if recorded is not None:
            known.append((pos, recorded, url))
    missing = retry(_missing, index, [(fp, url) for _, fp, url in known],
                    what="index check of stored articles")
    by_day: dict[str, list[tuple[int, str, bytes | None]]] = {}
    for k in sorted(missing):
        pos, _, url = known[k]
        day, _, text, _ = recent[pos]
        analysis = analyses.get(pos) or decision.analyze(text)
        if analysis.fingerprint is not None:
            by_day.setdefault(day, []).append((analysis.fingerprint, url, analysis.sketch))
    added = sum(retry(_on_day(index, decision.version, day).add_many, items,
                      what="index entries of stored articles")
                for day, items in by_day.items())
    if added:
        logger.warning("The near-duplicate index had lost %d fingerprint(s) of the %d newest "
                       "articles stored in %s (Redis lost its last writes): added again",
                       added, len(recent), directory)
    return added


def _rebuild(index: SimhashIndex, directory: Path, *, idf_file: str | None, url_field: str,
             text_field: str, retention_days: int | None, retry: Retry, now: float) -> int:
    since = None if retention_days is None else day_of(now - retention_days * SECONDS_PER_DAY)
    pruned = retry(index.pruned_before, what="index prune day")
    if pruned is not None:  # `newscrawl prune --days N` emptied it: the older days stay out
        since = max(since or "", day_of(pruned * SECONDS_PER_DAY))
    files = day_files(directory, since_day=since)
    if not files:
        return 0
    logger.warning("The near-duplicate index holds no fingerprints while the article store "
                   "%s holds %d day file(s): rebuilding the index from the store before "
                   "crawling", directory, len(files))
    from newscrawl.simhash.decision import get_decision

    started = time.monotonic()
    decision = get_decision(idf_file=idf_file)
    added = articles = 0
    for n, (day, path) in enumerate(files, 1):
        items = []
        for url, text, _ in _articles(path, url_field, text_field):
            # fingerprinted again: the index may be rebuilt for a new decision version
            articles += 1
            analysis = decision.analyze(text)
            if analysis.fingerprint is not None:
                items.append((analysis.fingerprint, url, analysis.sketch))
        added += retry(_on_day(index, decision.version, day).add_many, items,
                       what="index rebuild")
        logger.info("Index rebuild: %s done (%d of %d files), %d fingerprints from %d "
                    "articles so far", path.name, n, len(files), added, articles)
    logger.info("Index rebuilt from the article store: %d fingerprints from %d articles in "
                "%.1f s", added, articles, time.monotonic() - started)
    return added
