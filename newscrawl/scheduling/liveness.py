"""Whether a registered worker's process still runs, told from this host.

Kept apart from :mod:`newscrawl.scheduling.run` so that the ``newscrawl`` commands reading the
workers hash (``status``, ``reset``) do not import the crawl's scheduling and extraction."""

from __future__ import annotations

import os
import socket


def gone_from_this_host(info: dict[str, object]) -> bool:
    """Whether a registered worker (its info: host, pid) ran on this host and its process is
    gone: dead now, though its heartbeat may live on for NEWSCRAWL_HEARTBEAT_SECONDS."""
    pid = info.get("pid")
    return info.get("host") == socket.gethostname() and isinstance(pid, int) \
        and pid != os.getpid() and not pid_alive(pid)


def pid_alive(pid: int) -> bool:
    """Whether a process of this id runs on this host (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
