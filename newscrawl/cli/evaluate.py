"""``newscrawl eval``: precision and recall per Hamming distance on labelled pairs of one's own."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from newscrawl.cli._common import (
    CliError,
    JsonLines,
    add_idf_option,
    common_options,
    file_error,
    load_fingerprinter,
)
from newscrawl.exitcodes import ExitCode


def cmd_eval(args: argparse.Namespace) -> int:
    """The report of ``run_eval`` on the well-formed lines; bad lines named (the first few) and
    counted on stderr."""
    from newscrawl.evaluation import Pair, PairFormatError, evaluate, format_report, parse_pair

    good: list[Pair] = []
    try:
        with open(args.pairs, "rb") as fh:
            lines = JsonLines(fh, args.pairs)
            for where, obj in lines:
                try:
                    good.append(parse_pair(obj, where))
                except PairFormatError as exc:
                    lines.reject(str(exc))
            lines.close()
    except OSError as exc:
        raise file_error(args.pairs, exc) from None
    bad = lines.bad
    if not good:
        raise CliError(f"{args.pairs}: no pairs" + (f" ({bad} malformed line(s))" if bad else ""))
    sys.stdout.write(format_report(evaluate(good, load_fingerprinter(args))))
    if bad:
        print(f"newscrawl: error: {bad} malformed line(s) left out of the report", file=sys.stderr)
        return ExitCode.ERROR
    return ExitCode.OK


def add_eval(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "eval",
        parents=[common_options(redis=False)],
        help="precision/recall per Hamming distance from labelled pairs",
    )
    p.add_argument("pairs", metavar="PAIRS.jsonl", help='JSON lines {"a","b","duplicate","kind"}')
    add_idf_option(p)
    p.set_defaults(func=cmd_eval)


