"""``newscrawl dedup``: the crawl's near-duplicate decision over a stream of JSON Lines documents,
one output line per input line, in order, on the selected Redis. Input, output and what a Redis
error leaves: docs/cli.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from typing import IO, Any

import redis

from newscrawl import defaults
from newscrawl.cli._common import (
    CliError,
    JsonLines,
    Progress,
    encodable,
    file_error,
    hamming_distance,
    hex_or_none,
    open_redis,
    positive_int,
    print_json,
)
from newscrawl.exitcodes import ExitCode


class _Doc:
    __slots__ = ("id", "key", "text", "title", "fingerprint", "sketch", "reason", "where")

    def __init__(self, ident: Any, key: str, text: str, title: Any, where: str) -> None:
        self.where = where  # FILE:LINE
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
        field = next((name for name in ("id", "url", "title", "text")
                      if not encodable(obj.get(name))), None)
        if field is not None:
            lines.reject(f"{where}: unencodable: {field!r} holds text that cannot be encoded as"
                         " UTF-8 (a lone surrogate, e.g. from a \\udfff escape)")
            unusable = _Doc(ident, key, "", None, where)
            unusable.reason = UNENCODABLE
            yield unusable
            continue
        yield _Doc(ident, key, obj["text"], obj.get("title"), where)


#: The reason of a document with text that cannot be encoded: not analysed, never sent to Redis.
UNENCODABLE = "unencodable"


class _Stopped(Exception):
    """Redis failed on a document: the command stops there (message: what and what to do)."""


def _stop_message(d: _Doc, error: Exception, printed: int, undo: str) -> str:
    return (
        f"Redis failed on {d.where} (id {json.dumps(d.id, ensure_ascii=False)}): "
        f"{type(error).__name__}: {error}. Stopped there: the {printed} document(s) before it "
        f"are checked, added and printed, nothing from it on is indexed{undo}. Fix Redis (e.g. "
        "free memory or raise maxmemory) and run the same command over the same input again: "
        "the documents already added then say already_indexed, and the index ends as after one "
        "uninterrupted run"
    )


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
        from newscrawl.connection import resolve_data_dir, resolve_redis_url

        if not resolve_redis_url(args.redis_url):
            from newscrawl._datadirs import check_new_data_dir_for_a_command

            try:
                check_new_data_dir_for_a_command(resolve_data_dir(args.data_dir),
                                                 what="this command")
            except ValueError as exc:
                raise CliError(str(exc)) from None
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
        unrecorded: list[str] = []  # near-duplicates whose duplicate record Redis refused

        def undo(later: list[_Doc], results: dict[int, Any]) -> str:
            """Remove what the pipeline added after the failed document (Redis ran those too):
            the index then holds exactly the documents before it. '' if done, else why not."""
            if args.dry_run:
                return ""
            failed = 0
            for d in later:
                if id(d) in results and results[id(d)] is None:  # no match: it was added
                    try:
                        index.remove(d.fingerprint, d.key)  # type: ignore[arg-type]
                    except redis.RedisError:
                        failed += 1
            if failed:
                return (
                    f" (except {failed} later document(s) of its batch that Redis added and "
                    "refused to remove again: a rerun finds them already indexed)"
                )
            return ""

        def flush(batch: list[_Doc]) -> None:
            checked = [d for d in batch if d.fingerprint is not None]
            try:
                each = index.check_each(
                    [(d.fingerprint, d.key, d.sketch) for d in checked],  # type: ignore[misc]
                    add=not args.dry_run,
                )
            except IncompatibleIndexError as exc:
                raise CliError(str(exc)) from None
            except redis.RedisError as exc:
                # the connection was lost: Redis ran a first part of the batch, in input order,
                # so a rerun over the same input still ends as an uninterrupted run
                first = checked[0] if checked else batch[0]
                raise _Stopped(
                    _stop_message(first, exc, counts["documents"], " unless Redis ran part "
                                  "of its batch before the connection broke (in input order)")
                ) from None
            found = dict(zip(map(id, checked), each, strict=True))
            # the first document Redis could not check and add; the later ones of the batch
            # that Redis ran anyway (another key of a wrong type...) are removed again
            failed = next(
                (n for n, d in enumerate(batch) if isinstance(found.get(id(d)), Exception)), None
            )
            undone = "" if failed is None else undo(batch[failed + 1 :], found)
            for d in batch[:failed]:
                out: dict[str, Any] = {
                    "id": d.id,
                    "simhash": hex_or_none(d.fingerprint),
                    "duplicate_of": None,
                    "distance": None,
                }
                match = found.get(id(d))
                assert not isinstance(match, Exception)
                if d.fingerprint is None:
                    out["reason"] = d.reason
                    counts["no_fingerprint"] += d.reason != UNENCODABLE
                elif match is not None and match.doc_id == d.key:  # also with --dry-run
                    out["reason"] = "already_indexed"
                elif match is not None:
                    out["duplicate_of"] = match.doc_id
                    out["distance"] = match.distance
                    counts["duplicates"] += 1
                    if not args.dry_run:
                        extra = {"title": d.title} if d.title is not None else {}
                        try:
                            log.record(
                                d.key,
                                match.doc_id,
                                match.distance,
                                d.fingerprint,
                                match.fingerprint,
                                seen_at=time.time(),
                                **extra,
                            )
                        except redis.RedisError as exc:
                            # the decision stands (it changed nothing in the index); a rerun
                            # over the same input decides it again and records it then
                            unrecorded.append(f"{d.where}: {type(exc).__name__}: {exc}")
                print_json(out)
                counts["documents"] += 1
            progress.update(len(batch) if failed is None else failed)
            if failed is not None:
                d = batch[failed]
                error = found[id(d)]
                assert isinstance(error, Exception)
                raise _Stopped(_stop_message(d, error, counts["documents"], undone))

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
                        if doc.reason is None:  # (unencodable: not analysed)
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
                    lines.close()
                    bad += lines.bad
                    if fh is not sys.stdin.buffer:
                        fh.close()
        except _Stopped as exc:
            stopped: str | None = str(exc)
        else:
            stopped = None
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
    sys.stdout.flush()  # what was decided is printed before an error
    if unrecorded:
        print(
            f"newscrawl: error: the duplicate records of {len(unrecorded)} near-duplicate(s) "
            f"could not be written (first: {unrecorded[0]}); their decisions above stand, and "
            "running the same command over the same input again records them",
            file=sys.stderr,
        )
    if stopped is not None:
        print(f"newscrawl: error: {stopped}", file=sys.stderr)
    if bad or unrecorded or stopped is not None:
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
