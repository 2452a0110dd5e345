"""``newscrawl dedup``: the crawl's near-duplicate decision over a stream of JSON Lines documents.

    newscrawl dedup [--jsonl FILE ...] [--dry-run] [--max-distance N] [--batch N]

Each object needs ``text`` and ``id`` (or ``url``, which then serves as the id: the daily article
files ``<data dir>/articles/YYYY-MM-DD.jsonl`` have ``url``, ``title`` and ``text``); ``url`` and
``title`` are optional. Each is fingerprinted and sketched (``newscrawl.simhash.Decision``, as the
crawl's pipeline) and checked and added, in input order, on the selected Redis; one JSON line per
object is printed, in input order::

    {"id": ..., "simhash": "<16 hex>" | null, "duplicate_of": <url or id> | null,
     "distance": int | null}

plus ``"reason"`` when there is no fingerprint (``too_short``, ``empty``) or when the document is
already in the index under its own key (``already_indexed``: a second run over the same files).
The index keys a document by its ``url`` when given, else by its ``id``. Near-duplicates go to the
duplicate log as in the crawl. ``--dry-run`` checks against the index as it is, adding and
recording nothing; its output is a real run's (``already_indexed`` included). Documents are sent
in pipelined batches: the server runs their scripts in order, so the decision for document k sees
documents < k, exactly as one call each.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from typing import IO, Any

from newscrawl import defaults
from newscrawl.cli._common import (
    CliError,
    JsonLines,
    Progress,
    file_error,
    hamming_distance,
    hex_or_none,
    open_redis,
    positive_int,
    print_json,
)
from newscrawl.exitcodes import ExitCode


class _Doc:
    __slots__ = ("id", "key", "text", "title", "fingerprint", "sketch", "reason")

    def __init__(self, ident: Any, key: str, text: str, title: Any) -> None:
        self.id = ident
        self.key = key
        self.text = text
        self.title = title
        self.fingerprint: int | None = None
        self.sketch: bytes | None = None
        self.reason: str | None = None


def _docs(lines: JsonLines) -> Iterator[_Doc]:
    for where, obj in lines:
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
            lines.reject(f"{where}: expected an object with a string 'text' and an 'id' or 'url'")
            continue
        url = obj.get("url")
        ident = obj["id"] if "id" in obj else url
        if url is not None and (not isinstance(url, str) or not url):
            lines.reject(f"{where}: 'url' must be a non-empty string")
            continue
        if ident is None or isinstance(ident, (dict, list, bool)) or ident == "":
            lines.reject(f"{where}: expected an 'id' (string or number) or a 'url'")
            continue
        key = url if url else str(ident)
        yield _Doc(ident, key, obj["text"], obj.get("title"))


def _open(path: str) -> IO[bytes]:
    try:
        return sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise file_error(path, exc) from None


def cmd_dedup(args: argparse.Namespace) -> int:
    from newscrawl.index import DuplicateLog, IncompatibleIndexError, SimhashIndex
    from newscrawl.simhash import get_decision

    try:
        decision = get_decision(idf_file=args.idf_file) if args.idf_file else get_decision()
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot load the fingerprinter: {exc}") from None
    paths = list(args.jsonl or ["-"])
    if paths.count("-") > 1:
        print("newscrawl: error: standard input ('-') can be read only once", file=sys.stderr)
        return ExitCode.USAGE
    if not args.dry_run:
        # a backfill may start a new index: the embedded Redis's data dir is created
        from newscrawl.redis import resolve_data_dir, resolve_redis_url

        if not resolve_redis_url(args.redis_url):
            try:
                resolve_data_dir(args.data_dir).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise CliError(f"cannot create the data directory: {exc}") from None
    bad = 0
    counts = {"documents": 0, "duplicates": 0, "no_fingerprint": 0}
    with (
        open_redis(args) as client,
        SimhashIndex(
            client,
            prefix=args.prefix,
            max_distance=args.max_distance,
            version=decision.version,
            retention_days=args.retention_days,
        ) as index,
    ):
        log = DuplicateLog(client, prefix=args.prefix)
        progress = Progress("dedup")

        def flush(batch: list[_Doc]) -> None:
            checked = [d for d in batch if d.fingerprint is not None]
            try:
                matches = index.check_many(
                    [(d.fingerprint, d.key, d.sketch) for d in checked],  # type: ignore[misc]
                    add=not args.dry_run,
                )
            except IncompatibleIndexError as exc:
                raise CliError(str(exc)) from None
            found = dict(zip(map(id, checked), matches, strict=True))
            for d in batch:
                out: dict[str, Any] = {
                    "id": d.id,
                    "simhash": hex_or_none(d.fingerprint),
                    "duplicate_of": None,
                    "distance": None,
                }
                match = found.get(id(d))
                if d.fingerprint is None:
                    out["reason"] = d.reason
                    counts["no_fingerprint"] += 1
                elif match is not None and match.doc_id == d.key:  # also with --dry-run
                    out["reason"] = "already_indexed"
                elif match is not None:
                    out["duplicate_of"] = match.doc_id
                    out["distance"] = match.distance
                    counts["duplicates"] += 1
                    if not args.dry_run:
                        extra = {"title": d.title} if d.title is not None else {}
                        log.record(
                            d.key,
                            match.doc_id,
                            match.distance,
                            d.fingerprint,
                            match.fingerprint,
                            seen_at=time.time(),
                            **extra,
                        )
                print_json(out)
                counts["documents"] += 1
            progress.update(len(batch))

        try:
            for path in paths:
                try:
                    fh = _open(path)
                except CliError as exc:  # this file cannot be read: go on with the others
                    print(f"newscrawl: error: {exc}", file=sys.stderr)
                    bad += 1
                    continue
                lines = JsonLines(fh, path)
                batch: list[_Doc] = []
                try:
                    for doc in _docs(lines):
                        analysis = decision.analyze(doc.text)
                        doc.fingerprint, doc.sketch = analysis.fingerprint, analysis.sketch
                        doc.reason = analysis.reason
                        doc.text = ""  # not kept in memory until the batch is sent
                        batch.append(doc)
                        if len(batch) >= args.batch:
                            flush(batch)
                            batch = []
                    if batch:
                        flush(batch)
                except OSError as exc:
                    print(f"newscrawl: error: {path}: {exc.strerror or exc}", file=sys.stderr)
                    bad += 1
                finally:
                    bad += lines.bad
                    if fh is not sys.stdin.buffer:
                        fh.close()
        finally:
            progress.close()
    if progress.enabled:
        print(
            f"{counts['documents']} documents: {counts['duplicates']} near-duplicates, "
            f"{counts['no_fingerprint']} without a fingerprint",
            file=sys.stderr,
        )
    if bad:
        print(
            f"newscrawl: error: {bad} malformed line(s) or unreadable file(s) skipped",
            file=sys.stderr,
        )
        return ExitCode.ERROR
    return ExitCode.OK


def add_dedup(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``dedup`` on the ``newscrawl`` command's subparsers."""
    p = sub.add_parser(
        "dedup",
        parents=[common],
        help="check and add JSON Lines documents, in order, as the crawl does",
    )
    p.add_argument(
        "--jsonl",
        metavar="FILE",
        action="append",
        help="JSON lines with 'text' and 'id' or 'url' ('-' = stdin, the default); repeatable",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="check against the index as it is; add and record nothing",
    )
    p.add_argument(
        "--max-distance",
        type=hamming_distance,
        default=defaults.MAX_DISTANCE,
        help="Hamming distance of the simhash search (as NEWSCRAWL_MAX_DISTANCE)",
    )
    p.add_argument(
        "--retention-days",
        type=positive_int,
        default=None,
        help="ignore fingerprints older than this many days",
    )
    p.add_argument(
        "--batch",
        type=positive_int,
        default=200,
        help="documents per pipelined round trip (default 200)",
    )
    p.add_argument("--idf-file", help="IDF table (default: the built-in one, as the crawl)")
    p.set_defaults(func=cmd_dedup)
