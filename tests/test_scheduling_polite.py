"""The cluster-wide grant of pop.lua: per-host concurrency (slot leases) and delay (next-allowed
time), on the embedded Redis (the scripts need a real Redis)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from crawlrun import wait_for
from scrapy import Request, Spider
from scrapy.utils.httpobj import urlparse_cached

from newscrawl.connection import RetryPolicy
from newscrawl.defaults import DEADLETTER_MAX
from newscrawl.keys import CrawlKeys
from newscrawl.scheduling import queue as q
from newscrawl.scheduling.run import RunMarker


class MySpider(Spider):
    name = "unit"


LIMITS = {"a.test": (2, 0), "b.test": (2, 0), "slow.test": (0, 150), "one.test": (1, 0),
          "late.test": (0, 60_000)}


def host_slot(request: Request) -> q.HostSlot:
    host = urlparse_cached(request).hostname or ""
    concurrency, delay_ms = LIMITS.get(host, (0, 0))
    return q.HostSlot(f"t:unit:slots:{host}", concurrency, delay_ms)


def make_queue(r: Any, *, lease: float = 60, window: int = 200, randomize: bool = False,
               worker: str = "", owners: str = "", throttle: q.Throttle | None = None
               ) -> q.LeasedPriorityQueue:
    return q.LeasedPriorityQueue(
        r, MySpider(), "t:unit:requests", inflight_key="t:unit:inflight",
        seq_key="t:unit:seq", deadletter_key="t:unit:dead", pending_key="t:unit:pending",
        failures_key="t:unit:failures", retry_key="t:unit:retry", lease_seconds=lease,
        owners_key=owners, worker_id=worker, retry=RetryPolicy(1),
        deadletter_max=DEADLETTER_MAX, host_slot=host_slot, polite_window=window,
        randomize_delay=randomize, throttle=throttle)


def push(queue: q.LeasedPriorityQueue, *urls: str, priority: int = 0) -> None:
    spec = q.DedupeSpec(q.MODE_FORCE, bytes(8), "t:unit:none", b"", "t:unit:none", 0, 1)
    for url in urls:
        payload = queue.encode(Request(url, priority=priority), kind="article", fp=bytes(8),
                               pending=False, origins=())
        queue.push_entry(payload, priority, spec)


def urls(queue: q.LeasedPriorityQueue, n: int) -> list[str | None]:
    out: list[str | None] = []
    for _ in range(n):
        entry = queue.pop()
        out.append(entry.request.url if entry is not None else None)
    return out


def ack(queue: q.LeasedPriorityQueue, entry: q.Entry) -> None:
    assert queue.ack(entry, q.OUTCOME_DONE, [], 1, 3) == q.ACK_DONE


def redis_ms(r: Any) -> int:
    """The Redis clock (what the scripts read), in ms."""
    seconds, micros = r.time()
    return int(seconds) * 1000 + int(micros) // 1000


def granted_after(r: Any, queue: q.LeasedPriorityQueue, timeout: float = 30) -> tuple[str, int]:
    """Pop until a request is granted: its URL and the Redis clock just after its grant.
    Timestamps, not the test's own sleeps, carry the timing assertions: a loaded machine can
    only make the waits longer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        entry = queue.pop()
        if entry is not None:
            return entry.request.url, redis_ms(r)
        time.sleep(0.01)
    raise AssertionError("nothing granted")


def test_a_busy_host_waits_in_order_while_others_go_ahead(r: Any) -> None:
    queue = make_queue(r)
    push(queue, "http://a.test/1", "http://a.test/2", "http://a.test/3", "http://a.test/4")
    push(queue, "http://b.test/1")
    # b.test's first request takes its turn with a.test's first (queued level with the head)
    first, second = queue.pop(), queue.pop()
    assert first is not None and second is not None
    assert sorted([first.request.url, second.request.url]) == ["http://a.test/1",
                                                               "http://b.test/1"]
    a_first = first if first.request.url == "http://a.test/1" else second
    # a.test has 2 slots: its third request waits, then nothing is granted
    assert urls(queue, 2) == ["http://a.test/2", None]
    assert queue.inflight_count() == 3 and len(queue) == 2
    ack(queue, a_first)
    # the freed slot goes to a.test's next request in its queue order
    assert urls(queue, 2) == ["http://a.test/3", None]


def test_hosts_take_turns_and_each_keeps_its_order(r: Any) -> None:
    queue = make_queue(r)
    # three hosts without limits, queued one after the other (a site's list page at a time)
    for host in ("x.test", "y.test", "z.test"):
        push(queue, *(f"http://{host}/{i}" for i in range(4)))
    got = [u for u in urls(queue, 12) if u is not None]
    # every round has one request of each host: the hosts' queues drain together
    for n in range(4):
        assert sorted(got[3 * n:3 * n + 3]) == [f"http://{h}/{n}"
                                                for h in ("x.test", "y.test", "z.test")], got
    # a host queued later starts level with the queue's head, not behind every queued entry
    push(queue, *(f"http://x.test/{i}" for i in range(4, 8)))
    push(queue, "http://w.test/0")
    assert sorted(urls(queue, 2)) == ["http://w.test/0", "http://x.test/4"]
    assert urls(queue, 4) == ["http://x.test/5", "http://x.test/6", "http://x.test/7", None]
    queue.clear()
    assert not r.exists("t:unit:requests:hosts")


def test_priorities_come_before_the_hosts_turns(r: Any) -> None:
    queue = make_queue(r)
    push(queue, *(f"http://x.test/{i}" for i in range(3)), "http://y.test/0")
    push(queue, "http://x.test/high", priority=5)
    assert urls(queue, 1) == ["http://x.test/high"]
    assert sorted(urls(queue, 2)) == ["http://x.test/0", "http://y.test/0"]


def test_the_delay_holds_a_host_until_its_next_allowed_time(r: Any) -> None:
    queue = make_queue(r)
    # a delay of a minute: held whatever the machine's load
    push(queue, "http://late.test/1", "http://late.test/2", "http://b.test/1")
    assert sorted(urls(queue, 2)) == ["http://b.test/1", "http://late.test/1"]  # level
    assert urls(queue, 1) == [None]
    assert 0 < r.pttl("t:unit:slots:late.test:next") <= 60_000
    # 150 ms: the next request is granted once they have passed on the Redis clock, not before
    push(queue, "http://slow.test/1", "http://slow.test/2")
    before = redis_ms(r)
    assert urls(queue, 1) == ["http://slow.test/1"]
    url, granted = granted_after(r, queue)
    assert url == "http://slow.test/2" and granted - before >= 150


def test_the_delay_is_jittered_like_scrapy(r: Any) -> None:
    queue = make_queue(r, randomize=True)
    delays = []
    for i in range(30):
        push(queue, f"http://late.test/{i}")
        before = redis_ms(r)
        assert queue.pop() is not None
        after = redis_ms(r)
        # the key holds the next allowed time (grant time + delay), the grant between the clocks
        next_allowed = int(r.get("t:unit:slots:late.test:next"))
        delays.append((next_allowed - after, next_allowed - before))
        r.delete("t:unit:slots:late.test:next")
    # each delay lies in [low, high]: within 0.5-1.5 x the host's delay
    assert all(30_000 - 1 <= high and low <= 90_000 for low, high in delays), delays
    # spread over the range: 30 uniform draws all above 44 s or all below 76 s: p < 0.001
    assert min(high for _, high in delays) < 44_000 and max(low for low, _ in delays) > 76_000


def test_a_dead_workers_slot_frees_itself_when_its_lease_expires(r: Any) -> None:
    queue = make_queue(r, lease=0.1)
    push(queue, "http://one.test/1", "http://one.test/2")
    before = redis_ms(r)
    assert urls(queue, 1) == ["http://one.test/1"]
    # nobody acks, reaps or renews: the slot's lease alone runs out, not before its 100 ms
    url, granted = granted_after(r, queue)
    assert url == "http://one.test/2" and granted - before >= 100


def test_renewing_a_lease_keeps_its_slot(r: Any) -> None:
    queue = make_queue(r, lease=1.0)
    push(queue, "http://one.test/1", "http://one.test/2")
    entry = queue.pop()
    assert entry is not None
    renewed = last = redis_ms(r)
    start = last
    while renewed - start < 2_000:  # twice the lease, renewed well within it
        time.sleep(0.1)
        now = redis_ms(r)
        if now - last >= 1_000:  # the machine stalled past the lease: start again
            pytest.skip("renewals further apart than the lease on this loaded machine")
        assert queue.renew([entry.raw]) == 1
        renewed = last = redis_ms(r)
        assert urls(queue, 1) == [None]


@pytest.mark.parametrize("how", ["ack", "requeue", "reap", "dead worker"])
def test_every_way_out_of_flight_frees_the_slot(r: Any, how: str) -> None:
    queue = make_queue(r, lease=60 if how != "reap" else 0.05, worker="w-dead",
                       owners="t:unit:inflight:owners")
    push(queue, "http://one.test/1", "http://one.test/2")
    entry = queue.pop()
    assert entry is not None and queue.pop() is None
    if how == "ack":
        ack(queue, entry)
    elif how == "requeue":
        assert queue.requeue(entry.raw)
    elif how == "reap":
        wait_for(lambda: queue.reap() == 1, timeout=30, what="the lease to expire")
    else:
        r.hset("t:unit:workers", "w-dead", "{}")  # registered, its heartbeat key gone
        marker = RunMarker(r, CrawlKeys("t", "unit"), ttl=60, retry=RetryPolicy(1),
                           worker_id="w-me")
        marker.claim()
        assert marker.rescued == 1
    assert r.zcard("t:unit:slots:one.test") == 0
    assert queue.pop() is not None  # one of the two requests, now granted


def test_the_window_bounds_how_far_a_pop_looks(r: Any) -> None:
    queue = make_queue(r, window=2)
    # the entries of a higher priority come first whatever the host
    push(queue, "http://one.test/1", "http://one.test/2", "http://one.test/3", priority=1)
    push(queue, "http://b.test/1")
    assert urls(queue, 2) == ["http://one.test/1", None]
    assert len(queue) == 3


def test_window_0_pops_the_first_entry_without_limits(r: Any) -> None:
    queue = make_queue(r, window=0)
    push(queue, "http://one.test/1", "http://one.test/2")
    assert urls(queue, 3) == ["http://one.test/1", "http://one.test/2", None]


def test_an_unreadable_entry_is_still_handed_out_to_be_dead_lettered(r: Any) -> None:
    dead: list[str] = []
    queue = make_queue(r)
    queue.on_dead_letter = lambda raw, error: dead.append(error)
    push(queue, "http://one.test/1", "http://one.test/2")
    assert queue.pop() is not None
    r.zadd("t:unit:requests", {b"\x80garbage": 1})
    assert queue.pop() is None and len(dead) == 1 and len(queue) == 1


# --- AutoThrottle shared by the cluster (throttle.lua) -----------------------------------------

THROTTLE = q.Throttle(target_concurrency=2.0, start_ms=1000.0, max_ms=3000.0, ttl_ms=60_000)


def scrapy_delays(start: float, steps: list[tuple[float, int]], *, mindelay: float = 0.0,
                  maxdelay: float = 3.0, target: float = 2.0) -> list[float]:
    """The delays Scrapy's own AutoThrottle gives one downloader slot after each (latency,
    status) response: the reference the shared delay must follow."""
    from scrapy.core.downloader import Slot
    from scrapy.extensions.throttle import AutoThrottle
    from scrapy.http import Response
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(settings_dict={"AUTOTHROTTLE_ENABLED": True,
                                         "AUTOTHROTTLE_TARGET_CONCURRENCY": target})
    throttle = AutoThrottle(crawler)
    throttle.mindelay, throttle.maxdelay = mindelay, maxdelay
    slot = Slot(1, max(mindelay, start), 0.0)
    out = []
    for latency, status in steps:
        throttle._adjust_delay(slot, latency, Response("http://x.test/", status=status))
        out.append(slot.delay)
    return out


def test_the_shared_delay_moves_as_scrapys_autothrottle_moves_a_slot(r: Any) -> None:
    # two workers' queues on one Redis: their responses move one delay per host
    workers = [make_queue(r, worker=f"w{i}", throttle=THROTTLE) for i in range(2)]
    steps = [(0.4, 200)] * 6 + [(0.1, 404), (0.1, 200), (2.0, 500), (9.0, 200), (0.4, 301)]
    slot = q.HostSlot("t:unit:slots:slow2.test", 0, 0)
    shared = [workers[i % 2].adapt_delay(slot, latency, status == 200)[1]
              for i, (latency, status) in enumerate(steps)]
    assert shared == pytest.approx(scrapy_delays(1.0, steps), abs=1e-3)
    # from the start delay (1 s) down towards latency / target (0.4 s / 2)
    assert shared[5] == pytest.approx(0.2, abs=0.02)
    assert float(r.get("t:unit:slots:slow2.test:throttle")) == pytest.approx(shared[-1] * 1000)
    assert 0 < r.pttl("t:unit:slots:slow2.test:throttle") <= THROTTLE.ttl_ms


def test_the_site_delay_is_the_shared_delays_minimum(r: Any) -> None:
    queue = make_queue(r, throttle=THROTTLE)
    slot = q.HostSlot("t:unit:slots:slow.test", 0, 1500)
    steps = [(0.2, 200)] * 3
    shared = [queue.adapt_delay(slot, latency, True)[1] for latency, _ in steps]
    assert shared == pytest.approx(scrapy_delays(1.0, steps, mindelay=1.5), abs=1e-3)
    assert shared[-1] == pytest.approx(1.5)



def test_the_grant_keeps_a_host_at_the_shared_delay_for_every_worker(r: Any) -> None:
    fast = q.Throttle(target_concurrency=2.0, start_ms=50.0, max_ms=3000.0, ttl_ms=60_000)
    one, two = (make_queue(r, worker=f"w{i}", throttle=fast) for i in range(2))
    slot = q.HostSlot("t:unit:slots:b.test", 2, 0)  # b.test: 2 slots, no delay of its own
    for _ in range(8):  # both workers' responses: 0.6 s each, 2 wanted in flight
        for queue in (one, two):
            queue.adapt_delay(slot, 0.6, True)
    push(one, "http://b.test/1", "http://b.test/2", "http://b.test/3")
    before = redis_ms(r)
    assert urls(one, 1) == ["http://b.test/1"]
    after = redis_ms(r)
    # the next turn is ~300 ms (0.6 s / 2) after the grant, for the other worker too
    next_allowed = int(r.get("t:unit:slots:b.test:next") or 0)
    assert next_allowed - after <= 300 and 250 <= next_allowed - before
    url, granted = granted_after(r, two)
    assert url == "http://b.test/2" and granted >= next_allowed
    assert urls(two, 1) == [None]


def test_the_start_delay_holds_a_host_with_no_response_yet(r: Any) -> None:
    slow_start = q.Throttle(target_concurrency=1.0, start_ms=150.0, max_ms=3000.0, ttl_ms=60_000)
    one, two = (make_queue(r, worker=f"w{i}", throttle=slow_start) for i in range(2))
    push(one, "http://b.test/1", "http://b.test/2")
    before = redis_ms(r)
    assert urls(one, 1) == ["http://b.test/1"]
    after = redis_ms(r)
    next_allowed = int(r.get("t:unit:slots:b.test:next") or 0)
    assert next_allowed - after <= 150 <= next_allowed - before  # the delay: grant + 150 ms
    url, granted = granted_after(r, two)
    assert url == "http://b.test/2" and granted >= next_allowed


def test_a_pop_that_grants_nothing_says_when_a_delayed_host_is_free(r: Any) -> None:
    queue = make_queue(r)
    push(queue, "http://late.test/1", "http://late.test/2", "http://late.test/3",
         "http://one.test/1", "http://one.test/2")
    assert sorted(urls(queue, 2)) == ["http://late.test/1", "http://one.test/1"]  # level
    assert urls(queue, 1) == [None]
    # late.test waits for its delay (a minute), one.test for a slot: the scheduler asks again
    # when the delay ends (the key's time to live when the pop looked, so no less than now)
    ttl = r.pttl("t:unit:slots:late.test:next")
    assert queue.next_turn_ms is not None and 0 < ttl <= queue.next_turn_ms <= 60_000
    r.delete("t:unit:slots:late.test:next")  # its delay is over
    assert urls(queue, 2) == ["http://late.test/2", None]
    assert queue.next_turn_ms is not None  # late.test's delay again
    r.delete("t:unit:slots:late.test:next")
    assert urls(queue, 2) == ["http://late.test/3", None]
    r.delete("t:unit:slots:late.test:next")
    assert urls(queue, 1) == [None]
    assert queue.next_turn_ms is None  # only one.test's slot holds its request back


def test_a_downloaded_request_frees_its_slot_for_the_next_grant(r: Any) -> None:
    queue = make_queue(r, worker="w-1", owners="t:unit:inflight:owners")
    push(queue, "http://one.test/1", "http://one.test/2", "http://one.test/3")
    first = queue.pop()
    assert first is not None and queue.pop() is None
    queue.downloaded(first)  # its response is in; it is still being processed (in flight)
    second = queue.pop()
    assert second is not None and second.request.url == "http://one.test/2"
    assert queue.inflight_count() == 2  # the first is still leased until its ack
    # the host's one slot is the second request's now: the third waits for it
    assert queue.pop() is None
    ack(queue, first)  # the ack of a request whose slot was freed frees nothing more
    assert queue.pop() is None
    assert r.zrange("t:unit:slots:one.test", 0, -1) == [second.id.encode()]


def test_a_downloaded_request_taken_over_by_another_worker_keeps_its_slot(r: Any) -> None:
    owners = "t:unit:inflight:owners"
    mine = make_queue(r, worker="w-1", owners=owners)
    other = make_queue(r, worker="w-2", owners=owners)
    push(mine, "http://one.test/1")
    entry = mine.pop()
    assert entry is not None
    assert mine.requeue(entry.raw)  # e.g. its lease expired: another worker holds it now
    again = other.pop()
    assert again is not None and again.raw == entry.raw
    push(mine, "http://one.test/2")
    mine.downloaded(entry)  # a late response of the first worker
    assert mine.pop() is None  # the other worker's slot is not freed
    assert r.zcard("t:unit:slots:one.test") == 1
