"""The near-duplicate index made to agree with the article store when a crawl opens.

The store is the record of what was stored; the index (in Redis) can lose what the store keeps:

* **Everything** (the embedded Redis's files deleted, a new Redis): an index that holds no
  fingerprints while the store holds day files is rebuilt from the store (each file within the
  fingerprint retention, INFO line per file). Otherwise every stored article whose done record
  went with the index would be fetched and stored again.
* **Its last writes** (Redis crashed within its fsync interval: ``appendfsync everysec`` may lose
  up to about two seconds): the records of today's and yesterday's files whose fingerprint the
  index does not hold under their URL are added again (one WARNING with how many), so a reprint
  of such an article is still dropped.

Each record is added as indexed at noon (UTC) of its file's day, so
:meth:`newscrawl.storage.ArticleStore.already_stored` finds it when the article comes round
again. The fingerprint is the record's ``simhash`` field when it has one (what the crawl indexed),
and the sketch is computed from its text.
"""

from __future__ import annotations

import calendar
import functools
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from newscrawl.formats import SECONDS_PER_DAY
from newscrawl.storage import day_files, day_of, read_records

if TYPE_CHECKING:
    from newscrawl.index import SimhashIndex

logger = logging.getLogger(__name__)

#: days of files whose records are checked against a non-empty index (today and yesterday, UTC)
RECENT_DAYS = 2

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
    from newscrawl.index import SimhashIndex
    from newscrawl.simhash.decision import get_decision

    now = time.time() if now is None else now
    rebuild = retry(index.count, what="index size") == 0
    if rebuild:
        since = (None if retention_days is None
                 else day_of(now - retention_days * SECONDS_PER_DAY))
    else:
        since = day_of(now - (RECENT_DAYS - 1) * SECONDS_PER_DAY)
    files = day_files(directory, since_day=since)
    if not files:
        return 0
    if rebuild:
        logger.warning("The near-duplicate index holds no fingerprints while the article store "
                       "%s holds %d day file(s): rebuilding the index from the store before "
                       "crawling", directory, len(files))
    started = time.monotonic()
    decision = get_decision(idf_file=idf_file)
    added = records = 0
    for n, (day, path) in enumerate(files, 1):
        # (fingerprint, url, text, sketch if computed): the fingerprint the crawl recorded, or
        # computed now for a record without one (another project's item)
        found: list[tuple[int, str, str, bytes | None]] = []
        for _, record in read_records(path):
            records += 1
            url, text = record.get(url_field), record.get(text_field)
            if not (isinstance(url, str) and url and isinstance(text, str) and text):
                continue
            recorded = _fingerprint_of(record)
            if recorded is not None:
                found.append((recorded, url, text, None))
                continue
            analysis = decision.analyze(text)
            if analysis.fingerprint is not None:
                found.append((analysis.fingerprint, url, text, analysis.sketch))
        if not rebuild:  # only what the index does not hold
            lost = retry(_missing, index, [(fp, url) for fp, url, _, _ in found],
                         what="index check of stored articles")
            found = [f for i, f in enumerate(found) if i in lost]
        items = [(fp, url, decision.analyze(text).sketch if sketch is None else sketch)
                 for fp, url, text, sketch in found]
        on_day = SimhashIndex(index.client, prefix=index.prefix,
                              max_distance=index.max_distance, version=decision.version,
                              clock=functools.partial(float, _noon(day)), tune_server=False)
        added += retry(on_day.add_many, items, what="index rebuild")
        if rebuild:
            logger.info("Index rebuild: %s done (%d of %d files), %d fingerprints from %d "
                        "records so far", path.name, n, len(files), added, records)
    if rebuild:
        logger.info("Index rebuilt from the article store: %d fingerprints from %d records in "
                    "%.1f s", added, records, time.monotonic() - started)
    elif added:
        logger.warning("The near-duplicate index had lost %d fingerprint(s) of articles stored "
                       "in %s since %s (Redis lost its last writes): added again",
                       added, directory, since)
    return added
