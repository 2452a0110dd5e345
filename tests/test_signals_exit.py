"""A signal while a finished crawl's interpreter shuts down leaves its exit code (_signals.py).

Python's finalization gives every signal with a Python handler back its default action after the
exit handlers have run: a SIGINT then ended a finished crawl with "killed by SIGINT" instead of its
exit code.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

CHILD = r"""
import sys
from newscrawl import _signals
_signals.hold()
junk = [dict(a=i, b=[i] * 5) for i in range(300_000)]  # a finalization that takes a while
print("ready", flush=True)
sys.exit(7)
"""


def test_a_signal_during_the_interpreters_shutdown_leaves_the_exit_code() -> None:
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        sent = 0
        while proc.poll() is None:  # SIGINT through every moment of its exit
            try:
                proc.send_signal(signal.SIGINT)
            except ProcessLookupError:
                break
            sent += 1
            time.sleep(0.0005)
        assert proc.wait(30) == 7, f"return code {proc.returncode} after {sent} SIGINTs"
        assert sent > 0
