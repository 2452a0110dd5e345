"""The run marker: one run of the crawl at a time, joined by extra workers.

The first worker of a run claims ``{prefix}:{spider}:run`` (``SET NX EX NEWSCRAWL_RUN_TTL``) and
schedules the start pages; the marker is refreshed while that worker lives and deleted when the
run is finished (queue drained and nothing in flight). A worker that finds a marker joins that
run: it drops its own start requests and helps with the queue. A run whose first worker crashed
blocks new runs for at most ``NEWSCRAWL_RUN_TTL`` seconds.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from newscrawl.scheduling.lua import load

if TYPE_CHECKING:
    import redis
    from scrapy.crawler import Crawler

    from newscrawl.redis import RetryPolicy

logger = logging.getLogger(__name__)

#: Close reason of the spider when Redis stayed unreachable (exit code 3).
REASON_REDIS_UNAVAILABLE = "redis_unavailable"
#: Close reason of the spider when a fault of the crawl's own machinery stopped it
#: (newscrawl.faults: a full disk, Redis refusing writes, an index of another version).
REASON_SYSTEM_FAULT = "system_fault"

_RUN_ATTR = "_newscrawl_run_id"

#: claim.lua's results
RUN_JOINED = 0
RUN_STARTED = 1

_CLAIM = load("claim.lua", constants=globals())
_REFRESH = load("refresh.lua", constants=globals())


@dataclass
class RunMarker:
    server: redis.Redis
    key: str
    queue_key: str
    inflight_key: str
    pending_key: str
    ttl: int
    retry: RetryPolicy
    run_id: str = ""
    claimed: bool = False

    def claim(self) -> bool:
        """Start a new run, or join the current one. True if this worker started it.

        Starting a run with an empty queue and nothing in flight also resets the pending
        records (nothing can be pending then; repairs counts left by a crash)."""
        new_id = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + os.urandom(4).hex()
        script = self.server.register_script(_CLAIM)
        started, run_id = self.retry.call(
            script,
            keys=[self.key, self.queue_key, self.inflight_key, self.pending_key],
            args=[new_id, self.ttl],
            what="claim run",
        )
        self.claimed = int(started) == RUN_STARTED
        self.run_id = run_id.decode() if isinstance(run_id, bytes) else str(run_id)
        return self.claimed

    def _refresh(self, ttl: str) -> bool:
        script = self.server.register_script(_REFRESH)
        return bool(self.retry.call(script, keys=[self.key], args=[self.run_id, ttl],
                                    what="refresh run"))

    def refresh(self) -> bool:
        """Extend the marker's TTL (only the worker that claimed it)."""
        return self.claimed and self._refresh(str(self.ttl))

    def release(self) -> bool:
        """Delete the marker if it is still ours: the run is finished."""
        if not self.claimed:
            return False
        released = self._refresh("")
        self.claimed = False
        return released


def set_current_run(crawler: Crawler, run_id: str) -> None:
    """Record the id of the run this worker started or joined (set by the scheduler)."""
    setattr(crawler, _RUN_ATTR, run_id)


def current_run(crawler: Crawler) -> str | None:
    """The id of the run this worker works for (None before the scheduler opened)."""
    run_id = getattr(crawler, _RUN_ATTR, None)
    return run_id if isinstance(run_id, str) and run_id else None

