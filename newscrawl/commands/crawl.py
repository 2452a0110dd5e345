"""``scrapy crawl`` with newscrawl's exit codes (:class:`newscrawl.exitcodes.ExitCode`) and the
cause of a failed crawl as its last line; a spider's ``check_config`` runs before the crawl. Also
the help of ``newscrawl crawl -h``. docs/operations.md ("Exit codes"), docs/cli.md.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Sequence
from typing import Any

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError
from scrapy.utils.project import get_project_settings

from newscrawl import _signals
from newscrawl.exitcodes import ExitCode, exit_code, exit_reason

logger = logging.getLogger(__name__)

#: ``newscrawl crawl -h``: what the command is, then the options it shares with ``scrapy crawl``
USAGE = "newscrawl crawl [portal] [OPTIONS]"
DESCRIPTION = (
    "The crawl: `scrapy crawl portal` run in-process, with SIGTERM and SIGINT (Ctrl-C) handled"
    " from its first instant, so a stop at any moment, also while it starts, ends it gracefully"
    " (exit code 0, no traceback). Run it where scrapy.cfg is or anywhere else"
    " (SCRAPY_SETTINGS_MODULE defaults to newscrawl.settings, unless a scrapy.cfg names another)."
    " Most used: -a sites=FILE (the sites file; default sites.toml in the working directory) and"
    " -s NAME=VALUE (a setting, e.g. -s LOG_LEVEL=DEBUG). Exit codes, cron and faults:"
    " docs/operations.md; the other commands: newscrawl --help."
)


def wants_help(args: Sequence[str]) -> bool:
    """Whether ``newscrawl crawl`` ``args`` ask for help (``-h``, ``--help`` or an abbreviation
    of it, as Scrapy's parser reads them)."""
    for arg in args:
        if arg == "--":
            return False
        if arg == "-h" or (len(arg) > 2 and "--help".startswith(arg)):
            return True
    return False


def help_text() -> str:
    """``newscrawl crawl -h``: :data:`USAGE`, :data:`DESCRIPTION` and the options of
    ``scrapy crawl`` (the same parser options, with the project's defaults)."""
    parser = argparse.ArgumentParser(prog="newscrawl crawl", usage=USAGE,
                                     description=DESCRIPTION, conflict_handler="resolve")
    command = Command()
    command.settings = get_project_settings()
    command.add_options(parser)
    return parser.format_help()


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) < 1:
            raise UsageError
        if len(args) > 1:  # Scrapy's parser leaves an unknown option here too
            raise UsageError(
                f"unexpected argument {' '.join(args[1:])!r}: the crawl takes one spider (portal)"
                " and options: -a NAME=VALUE (e.g. -a sites=FILE), -s NAME=VALUE (a setting),"
                " and those of `newscrawl crawl --help`")
        assert self.crawler_process
        crawler = self._create_crawler(args[0])
        check = getattr(crawler.spidercls, "check_config", None)
        if check is not None:
            try:
                check(crawler.settings, dict(opts.spargs))
            except ValueError as exc:
                logger.error("Cannot start the crawl: %s", exc)
                self.exitcode = ExitCode.ERROR
                return
        early = _signals.received()
        if early is not None:
            logger.info("Received %s while starting: the crawl is not started (nothing was read"
                        " or queued; exit code 0)", _signals.name(early))
            return
        held = self._embedded_redis(crawler) if check is not None else None
        if held is False:
            return
        try:
            self.crawler_process.crawl(crawler, **opts.spargs)
            self._hand_over_signals()
            self.crawler_process.start()
        finally:
            # the rest (the embedded Redis saving and stopping at exit) is not cut short by a
            # signal
            _signals.hold(force=True)
            if held is not None:
                from newscrawl.connection import close_embedded

                close_embedded(held)
        if self.crawler_process.bootstrap_failed:
            self.exitcode = ExitCode.ERROR
        code = exit_code(crawler)
        if code:
            self.exitcode = code
            # the cause again, after Scrapy's closing lines and the stats dump: the last line of
            # a failed crawl says why it failed, whatever was logged before it
            logger.error("The crawl failed: %s (exit code %d)", exit_reason(crawler), code)

    def _embedded_redis(self, crawler: Any) -> Any:
        """The crawl's embedded Redis, started (or joined) before the crawl, so a server that
        cannot start (its data directory's disk full, a damaged append-only file) is one
        CRITICAL line and exit code 3 instead of a traceback in Scrapy's start-up. Returns the
        client to close after the crawl, None with REDIS_URL, False when it failed."""
        import redis

        from newscrawl.connection import RedisConfig, open_embedded

        try:
            config = RedisConfig.from_settings(crawler.settings)
        except ValueError:
            return None  # a bad setting: the crawl says which when it starts
        if config.url:
            return None
        try:
            return open_embedded(config.data_dir, appendfsync=config.appendfsync)
        except (redis.ConnectionError, OSError) as exc:
            logger.critical("Cannot start the crawl: %s", exc)
            self.exitcode = ExitCode.REDIS_UNAVAILABLE
            return False

    def _hand_over_signals(self) -> None:
        """A SIGTERM/SIGINT held while Scrapy was starting is sent again once Scrapy's handlers
        are in place (they are installed when the reactor has started): the crawl then stops
        gracefully, as for a signal that came a moment later."""
        from twisted.internet import reactor

        def deliver() -> None:
            held = _signals.received()
            if held is None:
                return
            if _signals.holding():  # Scrapy installed no handler (install_signal_handlers off)
                stop = getattr(self.crawler_process, "stop", None)  # CrawlerRunner.stop
                if stop is not None:
                    stop()
                return
            os.kill(os.getpid(), held)

        # after the startup triggers (Scrapy's installs its handlers), on the first turn
        reactor.callWhenRunning(reactor.callLater, 0, deliver)
