"""Heartbeats after Redis was away: a worker whose heartbeat ran out in a pause of Redis is late,
not dead, until the others had time to beat again; a worker that does not beat again is rescued
after that (real embedded Redis, its clock; heartbeats of 1 s)."""

from __future__ import annotations

import json
import time
from typing import Any

from test_scheduling_polite import make_queue, push

from newscrawl.connection import RetryPolicy
from newscrawl.keys import CrawlKeys
from newscrawl.scheduling.run import RunMarker


def marker(r: Any, worker: str) -> RunMarker:
    return RunMarker(r, CrawlKeys("t", "unit"), ttl=60, retry=RetryPolicy(1),
                     heartbeat_seconds=1.0, worker_id=worker)


def two_workers(r: Any) -> tuple[RunMarker, RunMarker]:
    """a starts the run, b joins it (a registered as on another host: a claim ends the
    heartbeats of this host's workers whose process is gone, or is its own)."""
    a, b = marker(r, "w-a"), marker(r, "w-b")
    assert a.claim()
    r.hset("t:unit:workers", "w-a", json.dumps({"host": "elsewhere", "pid": 1}))
    assert not b.claim()
    return a, b


def test_a_gap_in_every_workers_beats_declares_no_one_dead_until_they_could_beat_again(
    r: Any,
) -> None:
    a, b = two_workers(r)
    queue = make_queue(r, worker="w-b", owners="t:unit:inflight:owners")
    push(queue, "http://one.test/1")
    assert queue.pop() is not None  # in flight, held by b
    b.heartbeat()
    time.sleep(0.5)
    a.heartbeat()
    # Redis away 0.9 s (here: no worker beats): b's heartbeat has run out, a's not yet. No
    # beat for 3/4 of a heartbeat while a worker may still wait for Redis: b is late, not dead.
    time.sleep(0.9)
    assert not r.exists("t:unit:worker:w-b") and r.exists("t:unit:worker:w-a")
    assert a.heartbeat() == 1 and a.rescued == 0
    assert r.zcard("t:unit:inflight") == 1
    # b never beats again: once the grace (two heartbeats) is over, its request goes back
    rescued = 0
    deadline = time.monotonic() + 10
    while not rescued and time.monotonic() < deadline:
        time.sleep(0.25)  # a beats every quarter of a heartbeat, as a worker does
        a.heartbeat()
        rescued = a.rescued
    assert rescued == 1 and r.zcard("t:unit:inflight") == 0 and len(queue) == 1
    assert r.hkeys("t:unit:workers") == [b"w-a"]


def test_a_worker_that_finds_its_own_heartbeat_gone_holds_the_others_late(r: Any) -> None:
    a, b = two_workers(r)
    queue = make_queue(r, worker="w-b", owners="t:unit:inflight:owners")
    push(queue, "http://one.test/1")
    assert queue.pop() is not None
    time.sleep(1.3)  # both heartbeats run out (Redis paused longer than them)
    assert a.heartbeat() == 1 and a.rescued == 0
    assert r.pttl("t:unit:beats-resumed") > 0
    b.heartbeat()  # b comes back: nothing of it was put back
    assert r.zcard("t:unit:inflight") == 1 and len(queue) == 0
