"""The run marker and worker liveness: one run of the crawl at a time, joined by extra workers,
taken over at once when none of its workers is alive.

The first worker of a run claims ``{prefix}:{spider}:run`` and schedules the start pages. Every
worker keeps a heartbeat, ``{prefix}:{spider}:worker:{id}`` with a TTL of
``NEWSCRAWL_HEARTBEAT_SECONDS`` refreshed every quarter of it, and the requests it holds are
listed with its id in ``{prefix}:{spider}:inflight:owners``. A worker that finds a run with a live
worker joins it: it drops its own start requests and helps with the queue, unless its sites file
differs from the run's (refused: :class:`RunRefused`). A run none of whose workers is alive
(killed, stopped with Ctrl-C, crashed) is taken over at once: its in-flight requests go back to
the queue and the new worker starts a run of its own, with the start pages. While a run goes on,
each heartbeat also moves the requests of workers whose heartbeat is gone back to the queue,
within seconds. The marker lives while any worker of the run lives (``NEWSCRAWL_RUN_TTL`` after
the last heartbeat) and is deleted when the run is finished (queue drained and nothing in flight).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from newscrawl.context import CrawlContext
from newscrawl.faults import RunRefused
from newscrawl.scheduling.lua import load
from newscrawl.scheduling.queue import MAX_PRIORITY, PRIORITY_SPAN

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


#: claim.lua's results
RUN_JOINED = 0
RUN_STARTED = 1
RUN_TOOK_OVER = 2
RUN_REFUSED = 3

# lib.lua's constants are the queue's
_LIB = {"PRIORITY_SPAN": PRIORITY_SPAN, "MAX_PRIORITY": MAX_PRIORITY}
_CLAIM = load("lib.lua", "workers.lua", "claim.lua", constants={**globals(), **_LIB})
_HEARTBEAT = load("lib.lua", "workers.lua", "heartbeat.lua", constants={**globals(), **_LIB})
_LEAVE = load("leave.lua", constants=globals())
_REFRESH = load("refresh.lua", constants=globals())


def sites_fingerprint(sites: object) -> str:
    """A short fingerprint of the sites a crawl was started with (names and their keys)."""
    text = json.dumps(sites, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def worker_name() -> str:
    """A new worker id: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


def gone_from_this_host(info: dict[str, object]) -> bool:
    """Whether a registered worker (its info: host, pid) ran on this host and its process is
    gone: dead now, though its heartbeat may live on for NEWSCRAWL_HEARTBEAT_SECONDS."""
    pid = info.get("pid")
    return info.get("host") == socket.gethostname() and isinstance(pid, int) \
        and pid != os.getpid() and not _pid_alive(pid)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class RunMarker:
    server: redis.Redis
    key: str
    queue_key: str
    inflight_key: str
    pending_key: str
    ttl: int
    retry: RetryPolicy
    seq_key: str = ""
    registry_key: str = ""
    worker_prefix: str = ""  # + worker id: its heartbeat key
    owners_key: str = ""  # in-flight entry -> the worker holding it
    heartbeat_seconds: float = 10.0
    sites: str = ""  # fingerprint of this worker's sites (sites_fingerprint)
    run_id: str = ""
    claimed: bool = False
    took_over: str = ""  # the id of the dead run this worker took over
    rescued: int = 0  # requests of dead workers put back in the queue by the last call
    previous_sites: str = ""  # the sites fingerprint of the run taken over ('' if unknown)
    pages: int = 0  # pages this worker fetched (told with its heartbeat, for newscrawl status)
    idle: bool = False  # this worker has nothing to do (told to the others with its heartbeat)
    busy_others: int = 0  # other live workers not idle at the last heartbeat
    worker_id: str = field(default_factory=lambda: worker_name())

    @property
    def sites_key(self) -> str:
        return self.key + ":sites"

    @property
    def heartbeat_key(self) -> str:
        return self.worker_prefix + self.worker_id

    def _info(self) -> str:
        return json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                           "run": self.run_id, "beat": round(time.time(), 1),
                           "idle": self.idle, "pages": self.pages})

    def claim(self) -> bool:
        """Start a new run, take over a dead one, or join the current one. True if this worker
        started (or took over) the run; raises :class:`RunRefused` for a live run of other
        sites. Dead workers' leases go back to the queue on the way (:attr:`rescued`)."""
        new_id = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + os.urandom(4).hex()
        self._forget_dead_local_workers()
        script = self.server.register_script(_CLAIM)
        code, run_id, other, rescued, sites = self.retry.call(
            script,
            keys=[self.key, self.sites_key, self.queue_key, self.inflight_key, self.pending_key,
                  self.seq_key, self.registry_key, self.heartbeat_key, self.owners_key],
            args=[new_id, self.ttl, self.worker_id, int(self.heartbeat_seconds * 1000),
                  self._info(), self.worker_prefix, self.sites],
            what="claim run",
        )
        self.rescued = int(rescued)
        if int(code) == RUN_REFUSED:
            raise RunRefused(_text(run_id), self.workers())
        self.claimed = int(code) in (RUN_STARTED, RUN_TOOK_OVER)
        self.took_over = _text(other) if int(code) == RUN_TOOK_OVER else ""
        self.previous_sites = _text(sites)
        self.run_id = _text(run_id)
        return self.claimed

    def _forget_dead_local_workers(self) -> None:
        """End the heartbeat of registered workers of this host whose process is gone (killed:
        its heartbeat would otherwise live up to NEWSCRAWL_HEARTBEAT_SECONDS), so a crawl
        started right after a kill -9 takes the run over at once."""
        host = socket.gethostname()
        raw = self.retry.call(self.server.hgetall, self.registry_key, what="read workers")
        for worker, info in raw.items():
            try:
                data = json.loads(info)
                pid = int(data["pid"])
            except (ValueError, KeyError, TypeError):
                continue
            if data.get("host") == host and (pid == os.getpid() or not _pid_alive(pid)):
                self.retry.call(self.server.delete, self.worker_prefix + _text(worker),
                                what="forget a dead worker")

    def heartbeat(self) -> int:
        """Refresh this worker's heartbeat (and the run marker while the run is ours); move the
        leases of dead workers back to the queue. Returns the number of other live workers."""
        script = self.server.register_script(_HEARTBEAT)
        live, rescued, busy = self.retry.call(
            script,
            keys=[self.registry_key, self.heartbeat_key, self.key, self.sites_key,
                  self.inflight_key, self.queue_key, self.seq_key, self.owners_key],
            args=[self.worker_id, int(self.heartbeat_seconds * 1000), self.run_id, self._info(),
                  self.worker_prefix, self.ttl],
            what="heartbeat",
        )
        self.rescued = int(rescued)
        self.busy_others = int(busy)
        return int(live)

    def workers(self) -> list[dict[str, object]]:
        """The registered workers that are alive (their info: host, pid, run, last beat)."""
        raw = self.retry.call(self.server.hgetall, self.registry_key, what="read workers")
        alive = []
        for worker, info in raw.items():
            if self.retry.call(self.server.exists, self.worker_prefix + _text(worker),
                               what="read workers"):
                try:
                    alive.append(dict(json.loads(info), id=_text(worker)))
                except ValueError:
                    alive.append({"id": _text(worker)})
        return alive

    def leave(self) -> None:
        """This worker stops: its heartbeat and registry entry go."""
        script = self.server.register_script(_LEAVE)
        self.retry.call(script, keys=[self.registry_key, self.heartbeat_key],
                        args=[self.worker_id], what="leave run")

    def _refresh(self, ttl: str) -> bool:
        script = self.server.register_script(_REFRESH)
        return bool(self.retry.call(script, keys=[self.key], args=[self.run_id, ttl],
                                    what="refresh run"))

    def release(self) -> bool:
        """Delete the marker if it is still ours: the run is finished."""
        if not self.claimed:
            return False
        released = self._refresh("")
        self.claimed = False
        return released


def set_current_run(crawler: Crawler, run_id: str) -> None:
    """Record the id of the run this worker started or joined (set by the scheduler)."""
    CrawlContext.of(crawler).run_id = run_id


def current_run(crawler: Crawler) -> str | None:
    """The id of the run this worker works for (None before the scheduler opened)."""
    return CrawlContext.of(crawler).run_id or None
