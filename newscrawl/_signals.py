"""SIGTERM and SIGINT before Scrapy handles them and after the crawl has ended.

Scrapy installs its shutdown handlers (first signal: a graceful stop; second: at once) when its
reactor starts, and leaves them once it has stopped. Before that (imports, settings, the crawler
and the embedded Redis being set up) and after it (the embedded Redis saving and stopping at
exit), a signal would end the process with -15 or a ``KeyboardInterrupt`` traceback, and could
leave the embedded server running. In those windows :func:`hold` puts a handler that only
records the signal; the crawl command (newscrawl/commands/crawl.py) then does not start a crawl
that was asked to stop before it began, hands a signal that came while Scrapy was starting to
Scrapy's own handler once it is installed, and lets the end of the process (saving and stopping
the embedded Redis) run to its end.

``scrapy crawl`` gets here when it imports newscrawl's settings module (:func:`hold_if_crawl`),
after Scrapy's own imports; ``newscrawl crawl`` (newscrawl/_entry.py) calls :func:`hold` before
it imports anything else.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_received: list[int] = []


def _record(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)


def hold(*, force: bool = False) -> None:
    """Record SIGTERM and SIGINT from now on instead of dying of them (main thread only). Without
    ``force``, only where the handler is still Python's default (a handler someone installed,
    a debugger's, stays)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in SIGNALS:
        if force or signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(sig, _record)


def holding() -> bool:
    """Whether the recording handler is the one installed (Scrapy has not put its own)."""
    return signal.getsignal(signal.SIGTERM) is _record


def is_scrapy_crawl(argv: list[str]) -> bool:
    """Whether this process is ``scrapy crawl`` (the console script or ``python -m scrapy``)."""
    if len(argv) < 2 or argv[1] != "crawl":
        return False
    program = os.path.normpath(argv[0])
    return os.path.basename(program) == "scrapy" \
        or program.endswith(os.path.join("scrapy", "__main__.py"))


def hold_if_crawl() -> None:
    """:func:`hold` when this process is ``scrapy crawl`` (and only then: importing the settings
    elsewhere, in a test or a script, changes no handler)."""
    if is_scrapy_crawl(sys.argv):
        hold()


def received() -> int | None:
    """The first signal recorded, or None."""
    return _received[0] if _received else None


def name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)
