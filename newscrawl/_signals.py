"""SIGTERM and SIGINT in the windows Scrapy's own handlers do not cover: before its reactor starts
and after it stops (start-up, the embedded Redis saving at exit). :func:`hold` records the signal
and the crawl command acts on it. docs/operations.md.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_received: list[int] = []
_held: list[bool] = []  # the exit handler is registered


def _record(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)


def _ignore_at_exit() -> None:
    # the interpreter's finalization puts back the default action of every signal with a Python
    # handler, after the exit handlers: a signal then would kill a crawl that is already done
    for sig in SIGNALS:
        if signal.getsignal(sig) is _record:
            signal.signal(sig, signal.SIG_IGN)


def hold(*, force: bool = False) -> None:
    """Record SIGTERM and SIGINT from now on instead of dying of them (main thread only). Without
    ``force``, only where the handler is still Python's default (a handler someone installed,
    a debugger's, stays). Held to the end: the first hold registers the exit handler that runs
    last and ignores them from there on."""
    if threading.current_thread() is not threading.main_thread():
        return
    if not _held:
        _held.append(True)
        atexit.register(_ignore_at_exit)
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
