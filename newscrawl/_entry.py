"""The ``newscrawl`` console script: ``newscrawl crawl ...`` is ``scrapy crawl portal ...`` with
SIGTERM and SIGINT handled from the first instant (newscrawl/_signals.py), before Scrapy's
imports; every other command is the ``newscrawl`` command of newscrawl/cli."""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["crawl"]:
        from newscrawl import _signals

        _signals.hold()
        import os

        from scrapy.cmdline import execute
        from scrapy.utils.conf import get_config

        if not get_config().has_option("settings", "default"):  # a scrapy.cfg names its own
            os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "newscrawl.settings")

        from newscrawl.commands import crawl

        args = sys.argv[2:]
        if args[:1] == ["portal"]:  # `newscrawl crawl portal ...`, as one writes `scrapy crawl`
            args = args[1:]
        if crawl.wants_help(args):  # newscrawl's usage, not `scrapy crawl [options] <spider>`
            try:
                sys.stdout.write(crawl.help_text())
                sys.stdout.flush()
            except OSError as exc:  # standard output closed or full
                sys.stderr.write(f"newscrawl crawl: error: cannot write the help: {exc}\n")
                return 1
            return 0
        execute(["scrapy", "crawl", "portal", *args])  # exits with the crawl's code
        return 0
    from newscrawl.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
