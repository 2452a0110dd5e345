"""The ``newscrawl`` command: the parser and :func:`main`; :mod:`newscrawl.cli._common` holds what
the commands share, one module per command or small group. Commands, options and exit codes:
docs/cli.md (adding a command: its last section).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from newscrawl.cli._common import CliError, Parser, common_options
from newscrawl.cli.clusters import add_clusters
from newscrawl.cli.dedup import add_dedup
from newscrawl.cli.demo import add_demo
from newscrawl.cli.evaluate import add_eval
from newscrawl.cli.fingerprint import add_check, add_fingerprint
from newscrawl.cli.index import add_duplicates, add_prune, add_stats
from newscrawl.cli.push import add_push
from newscrawl.cli.redis_cli import add_redis_cli
from newscrawl.cli.report import add_report
from newscrawl.cli.reset import add_reset
from newscrawl.cli.status import add_status
from newscrawl.exitcodes import ExitCode
from newscrawl.simhash.core import speedups_status

__all__ = ["COMMANDS", "CliError", "build_parser", "main"]

#: The commands, in the order ``newscrawl --help`` lists them. A new command is one function
#: ``add_<name>(sub, common)`` in its module that adds its parser (``parents=[common]``, or
#: ``parents=[common_options(...)]`` with only the shared options it uses), gives it a one-line
#: ``help`` (also its description unless it has a longer one) and sets ``func``;
#: ``pass_unknown=True`` lets the command take options it does not declare (in ``args.args``).
COMMANDS: list[Callable[[Any, argparse.ArgumentParser], None]] = [
    add_demo,
    add_status,
    add_report,
    add_push,
    add_fingerprint,
    add_check,
    add_dedup,
    add_duplicates,
    add_clusters,
    add_stats,
    add_prune,
    add_reset,
    add_eval,
    add_redis_cli,
]


class _Version(argparse.Action):
    """``--version``: the version and the fingerprint path, found only when asked for (loading
    the C speedups is no part of every command's start)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from newscrawl import __version__

        print(f"newscrawl {__version__}, fingerprint path: {speedups_status()}")
        parser.exit()


def _build() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    common = common_options()
    parser = Parser(
        prog="newscrawl",
        description="Look at what newscrawl crawled: fingerprints, the near-duplicate index, "
        "recorded duplicates, the crawl's Redis; and a demo crawl.",
        epilog="`newscrawl crawl [OPTIONS]` runs the crawl: `scrapy crawl portal [OPTIONS]` "
        "(-a sites=FILE, -s NAME=VALUE, -O FILE), with Ctrl-C and SIGTERM handled from its "
        "start; it exits as the crawl does (0 also when Ctrl-C or SIGTERM stopped it "
        "gracefully: docs/operations.md#exit-codes). The other commands exit 0 ok, 1 error, "
        "2 usage, 130 interrupted (Ctrl-C). "
        "`newscrawl COMMAND --help` for the options of a command.",
        parents=[common],
    )
    parser.add_argument("--version", action=_Version, nargs=0, default=argparse.SUPPRESS,
                        help="show the version and which code computes fingerprints, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # listed for the help; `newscrawl crawl` itself is run by newscrawl/_entry.py
    crawl = sub.add_parser("crawl", add_help=False,
                           help="run the crawl (scrapy crawl portal with newscrawl's exit codes;"
                           " newscrawl crawl --help)")
    crawl.set_defaults(func=_crawl_elsewhere)
    for add in COMMANDS:
        add(sub, common)
    return parser, dict(sub.choices)


def _crawl_elsewhere(args: argparse.Namespace) -> int:
    raise CliError("the crawl runs from the newscrawl console script (`newscrawl crawl`) or as"
                   " `scrapy crawl portal`, not from newscrawl.cli.main")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``newscrawl`` and its commands."""
    return _build()[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser, commands = _build()
    args, unknown = parser.parse_known_args(argv)
    if getattr(args, "func", None) is None:  # no command: the list of commands, not only usage
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    command_parser = commands[args.command]
    taken = {action.dest for action in command_parser._actions}
    for action in parser._actions:  # given before the command name, to one that does not take it
        if action.option_strings and action.dest in vars(args) and action.dest not in taken:
            command_parser.error(f"{args.command} takes no {action.option_strings[-1]}")
    if unknown:
        if not getattr(args, "pass_unknown", False):
            # the usage of the command the flag was given to, not the list of commands
            command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        args.args = [*unknown, *args.args]  # redis-cli options such as --no-raw
    for name, default in (("redis_url", None), ("data_dir", None), ("verbose", False)):
        if not hasattr(args, name):
            setattr(args, name, default)
    if not hasattr(args, "prefix") or not args.prefix:
        from newscrawl.connection import resolve_prefix

        args.prefix = resolve_prefix()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.command == "fingerprint":
        stdin_uses = list(args.files).count("-") + list(args.jsonl or ()).count("-")
        if stdin_uses > 1:
            command_parser.error("standard input ('-') can be read only once")
    if sys.stdout is None:  # started with stdout closed: every result would be lost
        if sys.stderr is not None:
            print("newscrawl: error: standard output is closed", file=sys.stderr)
        return ExitCode.ERROR
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a write error (disk full) surfaces here, not at exit
        return code
    except CliError as exc:
        print(f"newscrawl: error: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    except KeyboardInterrupt:
        print("newscrawl: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # e.g. `newscrawl duplicates | head`: stop quietly
        sys.stderr.close()
        return ExitCode.OK
    except OSError as exc:  # writing the output failed (e.g. disk full)
        print(f"newscrawl: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        try:  # what is still buffered goes nowhere at exit instead of failing again there
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        return ExitCode.ERROR
