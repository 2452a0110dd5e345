"""``newscrawl demo``: the command; the sample portal and its crawl are :mod:`newscrawl.demo`."""

from __future__ import annotations

import argparse
from typing import Any

from newscrawl.cli._common import CliError, common_options, non_negative_int


def cmd_demo(args: argparse.Namespace) -> int:
    from newscrawl.demo import DemoError, run_demo

    try:
        return run_demo(args.data_dir, port=args.port)
    except DemoError as exc:
        raise CliError(str(exc)) from None


def add_demo(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "demo",
        parents=[common_options(redis=False)],  # its own Redis, in its own --data-dir
        help="crawl a bundled sample portal on 127.0.0.1, offline, and show what happened",
        description="Serve a small sample portal (bundled with newscrawl) on 127.0.0.1, run "
        "`scrapy crawl portal` on it with an embedded Redis and show the stored articles and "
        "the near-duplicates dropped. Run it again with the same --data-dir to see the "
        "incremental crawl. Nothing but loopback is used.",
    )
    p.add_argument(
        "--data-dir",
        default=argparse.SUPPRESS,
        help="directory of the demo's data, kept for the next run (default: a new temporary "
        "directory)",
    )
    p.add_argument(
        "--port",
        type=non_negative_int,
        default=None,
        help="port of the sample portal (default: the one of the first run in --data-dir, "
        "else a free one)",
    )
    p.set_defaults(func=cmd_demo)


