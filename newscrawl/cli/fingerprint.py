"""``newscrawl fingerprint`` (the simhash of texts) and ``newscrawl check`` (their near-duplicates
in the index, adding nothing)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import IO, Any

from newscrawl import defaults
from newscrawl.cli._common import (
    CliError,
    JsonLines,
    Progress,
    add_encoding_option,
    add_idf_option,
    common_options,
    file_error,
    hamming_distance,
    hex_or_none,
    load_fingerprinter,
    open_redis,
    positive_int,
    print_json,
    read_text,
)
from newscrawl.exitcodes import ExitCode
from newscrawl.formats import fingerprint_hex


def cmd_fingerprint(args: argparse.Namespace) -> int:
    fingerprinter = load_fingerprinter(args)
    errors = 0
    files: list[str] = list(args.files)
    if not files and not args.jsonl:
        files = ["-"]
    progress = Progress("fingerprint", total=len(files) if len(files) > 1 else None)
    for name in files:
        try:
            text = read_text(name, fingerprinter.config.max_chars, args.encoding)
        except CliError as exc:
            print(f"newscrawl: error: {exc}", file=sys.stderr)
            errors += 1
            continue
        result = fingerprinter.analyze(text)
        if args.json:
            out: dict[str, Any] = {"file": name, "simhash": hex_or_none(result.value)}
            if result.value is None:
                out["reason"] = result.reason
            print_json(out)
        elif result.value is None:
            print(f"{'-' * 16}  {name}  (no fingerprint: {result.reason})")
        else:
            print(f"{fingerprint_hex(result.value)}  {name}")
        progress.update()
    progress.close()
    for path in args.jsonl or ():
        try:
            errors += _fingerprint_jsonl(fingerprinter, path)
        except CliError as exc:  # this file cannot be read: go on with the others
            print(f"newscrawl: error: {exc}", file=sys.stderr)
            errors += 1
    if errors:
        print(f"newscrawl: error: {errors} input(s) could not be fingerprinted", file=sys.stderr)
        return ExitCode.ERROR
    return ExitCode.OK


def _fingerprint_jsonl(fingerprinter: Any, path: str) -> int:
    """One ``{"id", "simhash"}`` line per object; bad lines reported on stderr and counted."""
    try:
        fh: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise file_error(path, exc) from None
    progress = Progress("fingerprint")
    lines = JsonLines(fh, path)
    try:
        for where, obj in lines:
            if not isinstance(obj, dict) or "id" not in obj or not isinstance(obj.get("text"), str):
                lines.reject(f"{where}: expected an object with 'id' and a string 'text'")
                continue
            result = fingerprinter.analyze(obj["text"])
            out: dict[str, Any] = {"id": obj["id"], "simhash": hex_or_none(result.value)}
            if result.value is None:
                out["reason"] = result.reason
            print_json(out)
            progress.update()
    finally:
        progress.close()
        lines.close()
        if fh is not sys.stdin.buffer:
            fh.close()
    return lines.bad


def _percent(share: float) -> int:
    """A share in percent, rounded down (74.7 is not the 75 of a rule it fails; 29/50, 57.99...
    in floating point, is 58)."""
    return math.floor(share + 1e-9)


def why_rejected(query: bytes, stored: bytes | None, thresholds: Any) -> str:
    """Why the text sketch says two texts with close fingerprints are not one article (the
    rule of ``newscrawl.simhash.sketch.confirms``, its figures named)."""
    from newscrawl.simhash.sketch import TextSketch, number_containment, text_containment

    if stored is None:
        return "stored without a text sketch"
    a, b = TextSketch.from_bytes(query), TextSketch.from_bytes(stored)
    if a.shingles == 0 or b.shingles == 0:
        return "a text too short for the sketch"
    text = text_containment(a, b) * 100
    if text < thresholds.text:
        return (
            f"texts differ: about {_percent(text)}% of the shorter text is in the other "
            f"(one article: {thresholds.text}% or more)"
        )
    numbers = number_containment(a, b) * 100
    if numbers < thresholds.numbers:
        return (
            f"numbers differ: {_percent(numbers)}% of the numbers of one text are in the other "
            f"(one article: {thresholds.numbers}%), e.g. a daily report of other figures"
        )
    return "the text sketch does not confirm it"


def cmd_check(args: argparse.Namespace) -> int:
    from newscrawl.index import IncompatibleIndexError, SimhashIndex
    from newscrawl.simhash import Decision

    fingerprinter = load_fingerprinter(args)
    decision = Decision(fingerprinter)  # the crawl's decision: fingerprint and text sketch
    text = read_text(args.file, fingerprinter.config.max_chars, args.encoding)
    result = fingerprinter.analyze(text)
    if result.value is None:
        if args.json:
            print_json(
                {"file": args.file, "simhash": None, "reason": result.reason, "matches": []}
            )
        else:
            print(f"{args.file}: no fingerprint ({result.reason}); nothing to check")
        return ExitCode.OK
    sketch = decision.analyze(text).sketch
    assert sketch is not None  # a text with a fingerprint has a sketch
    with open_redis(args) as client, SimhashIndex(
        client,
        prefix=args.prefix,
        max_distance=args.max_distance,
        version=decision.version,
        retention_days=args.retention_days,
    ) as index:
        try:
            matches = index.query(result.value, sketch)
            # beyond the crawl's default distance a match is found only through a shared band
            crawl_finds: set[str] | None = None
            if args.max_distance > defaults.MAX_DISTANCE and matches:
                crawl_index = SimhashIndex(client, prefix=args.prefix,
                                           max_distance=defaults.MAX_DISTANCE,
                                           version=decision.version,
                                           retention_days=args.retention_days)
                crawl_finds = {m.doc_id for m in crawl_index.query(result.value, sketch)}
            # the fingerprint's candidates the sketch turned down, and why
            confirmed = {m.doc_id for m in matches}
            rejected = [
                (m, why_rejected(sketch, index.stored_sketch(m.fingerprint, m.doc_id),
                                 decision.thresholds))
                for m in index.query(result.value)
                if m.doc_id not in confirmed
            ]
        except IncompatibleIndexError as exc:
            raise CliError(str(exc)) from None
        stored = index.count()
    if args.json:
        out: dict[str, Any] = {
            "file": args.file,
            "simhash": hex_or_none(result.value),
            "matches": [
                {"doc_id": m.doc_id, "simhash": hex_or_none(m.fingerprint), "distance": m.distance}
                | ({} if crawl_finds is None else {"crawl_finds": m.doc_id in crawl_finds})
                for m in matches
            ],
        }
        if rejected:  # only then: the shape scripts know stays as it was
            out["rejected"] = [
                {
                    "doc_id": m.doc_id,
                    "simhash": hex_or_none(m.fingerprint),
                    "distance": m.distance,
                    "reason": why,
                }
                for m, why in rejected
            ]
        print_json(out)
        return ExitCode.OK
    print(f"{args.file}: simhash {fingerprint_hex(result.value)}")
    if not matches:
        print(
            f"no near-duplicate within distance {args.max_distance} "
            f"among {stored} stored fingerprints"
            + (f"; {len(rejected)} candidate(s) rejected by the text sketch:" if rejected else "")
        )
    for m in matches:
        beyond = crawl_finds is not None and m.doc_id not in crawl_finds
        print(f"distance {m.distance}  {fingerprint_hex(m.fingerprint)}  {m.doc_id}"
              + (f"  (found at --max-distance {args.max_distance} only: a crawl with the default"
                 f" NEWSCRAWL_MAX_DISTANCE={defaults.MAX_DISTANCE} does not find it, the two"
                 " texts share no minhash band)" if beyond else ""))
    if rejected and matches:
        print(f"{len(rejected)} other candidate(s) rejected by the text sketch:")
    for m, why in rejected:
        print(f"  rejected: distance {m.distance}  {fingerprint_hex(m.fingerprint)}  {m.doc_id}"
              f"  ({why})")
    return ExitCode.OK


def add_fingerprint(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "fingerprint",
        parents=[common_options(redis=False)],
        help="64-bit simhash of text files or JSONL records",
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="text files ('-' = stdin)")
    p.add_argument(
        "--jsonl",
        metavar="FILE",
        action="append",
        help="JSON lines (UTF-8) with 'id' and 'text' ('-' = stdin); may be given more than once",
    )
    p.add_argument("--json", action="store_true", help="JSON lines for FILE arguments too")
    add_encoding_option(p)
    add_idf_option(p)
    p.set_defaults(func=cmd_fingerprint)


def add_check(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "check", parents=[common], help="near-duplicates of a text in the index (adds nothing)"
    )
    p.add_argument("file", metavar="FILE", help="text file ('-' = stdin)")
    p.add_argument(
        "--max-distance",
        type=hamming_distance,
        default=defaults.MAX_DISTANCE,
        help="Hamming distance (0-7; 4-7 read 68 buckets instead of 4, 7-10x slower)",
    )
    p.add_argument(
        "--retention-days",
        type=positive_int,
        default=None,
        help="ignore fingerprints older than this many days (N >= 1)",
    )
    add_encoding_option(p)
    add_idf_option(p)
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=cmd_check)


