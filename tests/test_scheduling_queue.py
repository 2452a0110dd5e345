"""Leased queue, dupefilter records, serializer and retry helper against a real redis-server."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from crawlrun import wait_for
from redisserver import RedisServer
from scrapy import Request, Spider
from scrapy.http import FormRequest
from scrapy.utils.test import get_crawler

from newscrawl.connection import RedisRefused, RedisUnavailable, RetryPolicy
from newscrawl.defaults import DEADLETTER_MAX
from newscrawl.keys import Keys
from newscrawl.scheduling import queue as q
from newscrawl.scheduling import serializer
from newscrawl.scheduling.dupefilter import RedisDupeFilter, today
from newscrawl.scheduling.serializer import SerializationError


class MySpider(Spider):
    name = "unit"

    def parse_article(self, response: Any) -> None:
        pass

    def on_error(self, failure: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with RedisServer(tmp_path_factory.mktemp("redis"), persist=False) as srv:
        yield srv


@pytest.fixture
def client(server: RedisServer) -> redis.Redis:
    c = server.client()
    c.flushall()
    return c


@pytest.fixture
def spider() -> MySpider:
    return MySpider()


@pytest.fixture
def dupefilter(client: redis.Redis) -> RedisDupeFilter:
    crawler = get_crawler(MySpider)
    return RedisDupeFilter(client, keys=Keys("t", "unit"), retry=RetryPolicy(60),
                           fingerprinter=crawler.request_fingerprinter, run_ttl=60,
                           retention_days=10)


def make_queue(client: redis.Redis, spider: Spider, lease: float = 60,
               dead: list[str] | None = None) -> q.LeasedPriorityQueue:
    return q.LeasedPriorityQueue(
        client, spider, "t:unit:requests", inflight_key="t:unit:inflight",
        seq_key="t:unit:seq", deadletter_key="t:unit:dead", pending_key="t:unit:pending",
        failures_key="t:unit:failures", retry_key="t:unit:retry", lease_seconds=lease,
        retry=RetryPolicy(1),
        deadletter_max=DEADLETTER_MAX,
        on_dead_letter=(lambda raw, err: dead.append(err)) if dead is not None else None,
    )


def push(queue: q.LeasedPriorityQueue, df: RedisDupeFilter, request: Request,
         kind: str = "article", run: str = "r1") -> int:
    fp = df.fingerprint8(request)
    spec = df.spec(request, kind, fp, run)
    payload = queue.encode(request, kind=kind, fp=fp,
                           pending=spec.mode in (q.MODE_ONCE, q.MODE_FORCE_PENDING), origins=())
    return queue.push_entry(payload, request.priority, spec)


# --- serializer ------------------------------------------------------------------------------


def test_serializer_round_trip_keeps_fields(spider: MySpider) -> None:
    request = FormRequest(
        "http://example.com/a?x=1", formdata={"k": "v"}, callback=spider.parse_article,
        errback=spider.on_error, priority=7, dont_filter=True, flags=["f"],
        cb_kwargs={"n": 1}, headers={"X-Test": "yes"},
        meta={"newscrawl_kind": "article", "obj": object(), "depth": 2},
    )
    data, dropped = serializer.request_to_dict(request, spider)
    assert dropped == ["obj"]
    back = serializer.request_from_dict(serializer.loads(serializer.dumps(data)), spider)
    assert type(back) is FormRequest
    assert (back.url, back.method, back.body) == (request.url, "POST", request.body)
    assert back.callback == spider.parse_article and back.errback == spider.on_error
    assert back.priority == 7 and back.dont_filter and back.flags == ["f"]
    assert back.cb_kwargs == {"n": 1}
    assert back.headers.get("X-Test") == b"yes"
    assert back.meta == {"newscrawl_kind": "article", "depth": 2}


def test_serializer_binary_body(spider: MySpider) -> None:
    body = bytes(range(256))
    data, _ = serializer.request_to_dict(Request("http://e.com/", method="PUT", body=body), spider)
    back = serializer.request_from_dict(serializer.loads(serializer.dumps(data)), spider)
    assert back.body == body


@pytest.mark.parametrize(
    "patch",
    [
        {"_class": "os.system"},
        {"callback": "__init__"},
        {"callback": "nonexistent"},
        {"errback": "settings"},
        {"url": 5},
        {"body": "not base64!"},
        {"headers": {"a": "b"}},
        {"priority": True},
    ],
)
def test_serializer_rejects_bad_fields(spider: MySpider, patch: dict[str, Any]) -> None:
    data, _ = serializer.request_to_dict(Request("http://e.com/"), spider)
    data.update(patch)
    with pytest.raises(SerializationError):
        serializer.request_from_dict(data, spider)


def test_serializer_rejects_non_spider_callback(spider: MySpider) -> None:
    with pytest.raises(SerializationError):
        serializer.request_to_dict(Request("http://e.com/", callback=print), spider)


# --- queue -------------------------------------------------------------------------------------


def test_pop_is_leased_and_expired_leases_are_reaped(client: redis.Redis, spider: MySpider,
                                                     dupefilter: RedisDupeFilter) -> None:
    queue = make_queue(client, spider, lease=1)
    assert push(queue, dupefilter, Request("http://e.com/1", callback=spider.parse_article)) == 1
    popped = time.monotonic()
    entry = queue.pop()
    assert entry is not None and entry.request.url == "http://e.com/1"
    assert len(queue) == 0 and queue.inflight_count() == 1
    reaped = queue.reap()
    if time.monotonic() - popped < 1:  # its 1 s lease is still valid
        assert reaped == 0
        wait_for(lambda: queue.reap() == 1, timeout=30, what="the lease to expire")
        assert time.monotonic() - popped >= 1
    else:  # a stall on a loaded machine: the lease ran out already
        assert reaped == 1
    assert len(queue) == 1 and queue.inflight_count() == 0
    again = queue.pop()
    assert again is not None and again.raw == entry.raw
    # the first holder's ack is refused: the entry belongs to the new lease
    assert queue.ack(entry, q.OUTCOME_RELEASE, [], today(), 3) in (q.ACK_LOST, q.ACK_RELEASED)


def test_renew_keeps_lease(client: redis.Redis, spider: MySpider,
                           dupefilter: RedisDupeFilter) -> None:
    queue = make_queue(client, spider, lease=1)
    push(queue, dupefilter, Request("http://e.com/1"))
    last = time.monotonic()
    entry = queue.pop()
    assert entry is not None
    for _ in range(3):  # 1.5 s in all: past the 1 s lease only if the renewals keep it
        time.sleep(0.5)
        if time.monotonic() - last >= 1:
            pytest.skip("renewals further apart than the lease on this loaded machine")
        assert queue.renew([entry.raw]) == 1
        last = time.monotonic()
        assert queue.reap() == 0


def test_priority_then_fifo(client: redis.Redis, spider: MySpider,
                            dupefilter: RedisDupeFilter) -> None:
    queue = make_queue(client, spider)
    for i in range(3):
        push(queue, dupefilter, Request(f"http://e.com/a{i}"))
    push(queue, dupefilter, Request("http://e.com/list", priority=10), kind="list")
    urls = []
    while (entry := queue.pop()) is not None:
        urls.append(entry.request.url)
    assert urls == ["http://e.com/list", "http://e.com/a0", "http://e.com/a1", "http://e.com/a2"]


def test_article_pending_then_done_then_filtered(client: redis.Redis, spider: MySpider,
                                                 dupefilter: RedisDupeFilter) -> None:
    queue = make_queue(client, spider)
    req = Request("http://e.com/article")
    assert push(queue, dupefilter, req) == q.PUSHED
    assert push(queue, dupefilter, req) == q.FILTERED_PENDING
    assert dupefilter.request_seen(req)
    entry = queue.pop()
    assert entry is not None
    assert push(queue, dupefilter, req) == q.FILTERED_PENDING  # in flight counts as pending
    seen = [dupefilter.seen_target(entry.fp)]
    assert queue.ack(entry, q.OUTCOME_DONE, seen, today(), 3) == q.ACK_DONE
    assert queue.ack(entry, q.OUTCOME_DONE, seen, today(), 3) == q.ACK_LOST  # idempotent
    assert client.hlen("t:unit:pending") == 0
    assert dupefilter.is_done(req)
    assert push(queue, dupefilter, req) == q.FILTERED_DONE
    # list pages: once per run, again in the next run
    page = Request("http://e.com/list")
    assert push(queue, dupefilter, page, kind="list", run="r1") == q.PUSHED
    assert push(queue, dupefilter, page, kind="list", run="r1") == q.FILTERED_RUN
    assert push(queue, dupefilter, page, kind="list", run="r2") == q.PUSHED


def test_failed_article_is_retried_until_max_attempts(client: redis.Redis, spider: MySpider,
                                                      dupefilter: RedisDupeFilter) -> None:
    queue = make_queue(client, spider)
    req = Request("http://e.com/flaky")
    results = []
    # failed on three days, twice on the second (a rerun that day spends no attempt)
    for day in (today() - 2, today() - 1, today() - 1, today()):
        assert push(queue, dupefilter, req) == q.PUSHED  # not seen after a failure
        entry = queue.pop()
        assert entry is not None
        results.append(queue.ack(entry, q.OUTCOME_FAILED, [dupefilter.seen_target(entry.fp)],
                                 day, 3))
    assert results == [q.ACK_FAILED, q.ACK_FAILED, q.ACK_FAILED, q.ACK_GAVE_UP]
    assert push(queue, dupefilter, req) == q.FILTERED_DONE
    assert client.hlen("t:unit:failures") == 0


def test_failures_on_one_day_spend_one_attempt(client: redis.Redis, spider: MySpider,
                                               dupefilter: RedisDupeFilter) -> None:
    """Runs that fail a page on one day (a Ctrl-C and a rerun, an hourly cron) count one
    attempt: an outage shorter than NEWSCRAWL_MAX_ATTEMPTS days gives up on nothing."""
    queue = make_queue(client, spider)
    req = Request("http://e.com/down-all-day")
    for _ in range(24):
        assert push(queue, dupefilter, req) == q.PUSHED
        entry = queue.pop()
        assert entry is not None
        assert queue.ack(entry, q.OUTCOME_FAILED, [dupefilter.seen_target(entry.fp)],
                         today(), 2) == q.ACK_FAILED
    assert client.hget("t:unit:failures", entry.fp) == f"1:{today()}".encode()
    assert push(queue, dupefilter, req) == q.PUSHED
    entry = queue.pop()
    assert entry is not None
    assert queue.ack(entry, q.OUTCOME_DONE, [dupefilter.seen_target(entry.fp)], today(), 2) \
        == q.ACK_DONE  # back the next hour: stored, nothing lost
    assert client.hlen("t:unit:failures") == 0


def test_failed_article_waits_for_the_next_run(client: redis.Redis, spider: MySpider,
                                               dupefilter: RedisDupeFilter) -> None:
    queue = make_queue(client, spider)
    req = Request("http://e.com/flaky-once")
    assert push(queue, dupefilter, req, run="r1") == q.PUSHED
    entry = queue.pop()
    assert entry is not None
    result = queue.ack(entry, q.OUTCOME_FAILED, [dupefilter.seen_target(entry.fp)], today(), 3,
                       failed_key=dupefilter.listseen_key("r1"), failed_ttl=60)
    assert result == q.ACK_FAILED
    # another list page links it later in the same run: not queued (one attempt per run)
    assert push(queue, dupefilter, req, run="r1") == q.FILTERED_FAILED_THIS_RUN
    assert 0 < client.ttl(dupefilter.listseen_key("r1")) <= 60
    # the next run tries it again
    assert push(queue, dupefilter, req, run="r2") == q.PUSHED


def test_pickle_entry_runs_no_code_and_is_dead_lettered(
    client: redis.Redis, spider: MySpider, dupefilter: RedisDupeFilter, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self) -> Any:
            return (os.system, (f"touch {marker}",))

    client.zadd("t:unit:requests", {pickle.dumps(Evil()): -1e15})
    client.zadd("t:unit:requests", {b'{"v":1,"id":"x","r":{"url":1}}': -1e14})
    dead: list[str] = []
    push(queue := make_queue(client, spider, dead=dead), dupefilter,
         Request("http://e.com/good"))
    entry = queue.pop()
    assert entry is not None and entry.request.url == "http://e.com/good"
    assert not marker.exists()
    assert len(dead) == 2
    assert client.llen("t:unit:dead") == 2
    assert queue.inflight_count() == 1  # only the good entry


def test_prune_drops_records_older_than_retention(client: redis.Redis,
                                                  dupefilter: RedisDupeFilter) -> None:
    old_key, old_member = dupefilter.seen_target(b"\x00\x01" + b"o" * 6)
    new_key, new_member = dupefilter.seen_target(b"\xff\xfe" + b"n" * 6)
    client.zadd(old_key, {old_member: today() - 11})
    client.zadd(new_key, {new_member: today() - 9})
    client.hset(dupefilter.failures_key, mapping={b"a" * 8: f"1:{today() - 30}",
                                                  b"b" * 8: f"1:{today()}"})
    assert dupefilter.prune(force=True) == 2
    assert client.zscore(old_key, old_member) is None
    assert client.zscore(new_key, new_member) == today() - 9
    assert client.hkeys(dupefilter.failures_key) == [b"b" * 8]


# --- retry policy ------------------------------------------------------------------------------


def test_retry_policy_recovers_and_gives_up() -> None:
    calls = {"n": 0}
    sleeps: list[float] = []
    now = {"t": 0.0}

    def flaky() -> str:
        calls["n"] += 1
        if calls["n"] < 4:
            raise redis.ConnectionError("down")
        return "ok"

    def sleep(s: float) -> None:
        sleeps.append(s)
        now["t"] += s

    assert RetryPolicy(10, sleep=sleep, clock=lambda: now["t"]).call(flaky) == "ok"
    assert sleeps == [0.1, 0.2, 0.4]

    def down() -> None:
        raise redis.ConnectionError("down")

    with pytest.raises(RedisUnavailable):
        RetryPolicy(3, sleep=sleep, clock=lambda: now["t"]).call(down)
    sleeps.clear()
    with pytest.raises(redis.ResponseError):  # not transient: raised at once
        RetryPolicy(3, sleep=sleep, clock=lambda: now["t"]).call(
            lambda: (_ for _ in ()).throw(redis.ResponseError("ERR bad script")))
    # a refusal no retry fixes: raised at once as RedisRefused, with what to do
    with pytest.raises(RedisRefused) as refused:
        RetryPolicy(3, sleep=sleep, clock=lambda: now["t"]).call(
            lambda: (_ for _ in ()).throw(redis.ResponseError(
                "WRONGTYPE Operation against a key holding the wrong kind of value")), what="ack")
    assert "another type" in refused.value.advice and refused.value.what == "ack"
    # refused, not unreachable: its message does not speak of waiting
    assert str(refused.value) == ("Redis refused a command during ack: ResponseError: WRONGTYPE"
                                  " Operation against a key holding the wrong kind of value")
    assert not sleeps


def test_calls_meeting_one_outage_share_its_window() -> None:
    # After one call has waited out the window, the next ones give up at once (without even
    # trying, for up to max_delay after the last failure: a redis-py call on a dead server takes
    # seconds to fail) instead of each waiting the whole window again; a success or a long quiet
    # gap starts afresh.
    now = {"t": 100.0}
    tries = {"n": 0}
    sleeps: list[float] = []

    def sleep(s: float) -> None:
        sleeps.append(s)
        now["t"] += s

    def clock() -> float:
        return now["t"]

    def down() -> None:
        tries["n"] += 1
        raise redis.ConnectionError("down")

    policy = RetryPolicy(3, sleep=sleep, clock=clock, gap=30.0)
    with pytest.raises(RedisUnavailable):
        policy.call(down)
    assert now["t"] == pytest.approx(103.0)
    tried = tries["n"]
    for _ in range(10):  # the items still in the pipeline
        with pytest.raises(RedisUnavailable, match="down"):
            policy.call(down)
    assert tries["n"] == tried and now["t"] == pytest.approx(103.0)
    now["t"] = policy.last_failure + 4.9
    with pytest.raises(RedisUnavailable):
        policy.call(lambda: "ok")  # not tried yet
    now["t"] = policy.last_failure + 5.0  # max_delay after the last failure: one call tries
    assert policy.call(lambda: "ok") == "ok"  # back: the outage is over
    t0 = now["t"]
    with pytest.raises(RedisUnavailable):
        policy.call(down)
    assert now["t"] == pytest.approx(t0 + 3.0)  # a new outage gets the whole window
    now["t"] += 31  # nothing tried for longer than the gap
    t0 = now["t"]
    with pytest.raises(RedisUnavailable):
        policy.call(down)
    assert now["t"] == pytest.approx(t0 + 3.0)


def test_a_signal_ends_the_wait_for_redis_and_reaches_the_handler_in_place() -> None:
    # SIGINT (Ctrl-C) sent to this process 0.3 s into an outage of a 60 s window: the call gives
    # up at once, the handler in place (Scrapy's graceful stop in a crawl) still gets the signal
    # and is put back; the next call gives up without trying until one succeeds.
    received: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)

    tries = {"n": 0}

    def down() -> None:
        tries["n"] += 1
        raise redis.ConnectionError("down")

    old = signal.signal(signal.SIGINT, handler)
    try:
        policy = RetryPolicy(60)
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        started = time.monotonic()
        with pytest.raises(RedisUnavailable, match="cut short by SIGINT"):
            policy.call(down)
        assert time.monotonic() - started < 5
        assert received == [signal.SIGINT]
        assert signal.getsignal(signal.SIGINT) is handler
        tried = tries["n"]
        with pytest.raises(RedisUnavailable, match="cut short by SIGINT"):
            policy.call(down)
        assert tries["n"] == tried
        policy.last_failure -= policy.max_delay  # a while later: one call tries, and succeeds
        assert policy.call(lambda: "ok") == "ok"
        assert policy.stopped_by is None and policy.started is None
    finally:
        signal.signal(signal.SIGINT, old)


def test_the_wait_ends_when_the_crawl_is_being_stopped_in_any_thread() -> None:
    # the near-duplicate pipeline waits for Redis in a thread of its own, where no signal
    # arrives: Scrapy's graceful stop (crawler.crawling cleared) ends its wait too
    stopping = threading.Event()
    policy = RetryPolicy(60, stopping=stopping.is_set)

    def down() -> None:
        raise redis.ConnectionError("down")

    outcome: list[BaseException] = []

    def waiter() -> None:
        try:
            policy.call(down, what="near-duplicate check")
        except RedisUnavailable as exc:
            outcome.append(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.3)
    assert thread.is_alive()  # still waiting
    stopping.set()
    thread.join(5)
    assert not thread.is_alive()
    assert "cut short by the crawl stopping" in str(outcome[0])
    # the calls after it give up at once; a while later one tries, and Redis back ends the outage
    with pytest.raises(RedisUnavailable, match="the crawl stopping"):
        policy.call(lambda: "ok")
    policy.last_failure -= policy.max_delay
    assert policy.call(lambda: "ok") == "ok"


def test_outage_is_per_policy_not_per_process(tmp_path: Path) -> None:
    import fakeredis

    dead = redis.Redis(unix_socket_path=str(tmp_path / "nobody.sock"), socket_connect_timeout=1)
    healthy = fakeredis.FakeRedis()
    on_dead, on_healthy = RetryPolicy(0.5), RetryPolicy(0.5)  # one per crawl
    with pytest.raises(RedisUnavailable):
        on_dead.call(dead.ping)
    with pytest.raises(RedisUnavailable):  # the same crawl: given up, not tried again
        on_dead.call(redis.Redis(connection_pool=dead.connection_pool).ping)
    # another crawl's policy in the same process is not affected
    assert on_healthy.call(healthy.ping)
    assert RetryPolicy(0.5).call(healthy.ping)


def test_retry_policy_against_a_stopped_server(tmp_path: Path) -> None:
    srv = RedisServer(tmp_path / "r").start()
    client = srv.client(socket_timeout=2)
    client.set("k", "v")
    srv.stop()
    t0 = time.monotonic()
    with pytest.raises(RedisUnavailable):
        RetryPolicy(1).call(client.get, "k")
    # redis-py retries a few times inside one call too (~4 s on a refused connection); an
    # outage is waited out for the policy's 1 s, not for a default of minutes
    assert time.monotonic() - t0 < 30
    srv.start()
    try:
        assert RetryPolicy(5).call(client.get, "k") == b"v"
    finally:
        srv.kill()


def test_retry_policy_does_not_wait_out_a_refused_password(tmp_path: Path) -> None:
    srv = RedisServer(tmp_path / "auth").start()
    try:
        srv.client().config_set("requirepass", "right-password")
        wrong = redis.Redis.from_url(srv.url, password="wrong-password")
        t0 = time.monotonic()
        with pytest.raises(RedisUnavailable) as info:
            RetryPolicy(60).call(wrong.ping)
        assert isinstance(info.value.last_error, redis.AuthenticationError)
        assert time.monotonic() - t0 < 30  # not the 60 s an outage is waited out
    finally:
        srv.kill()


def test_a_retry_of_a_request_without_errback_can_be_queued() -> None:
    # Scrapy's RetryMiddleware copies the request the scheduler handed out, with the
    # scheduler's tracking errback around the spider's None: it is queued as no errback
    from newscrawl.scheduling.scheduler import _tracking_errback

    spider = Spider("unit")
    request = Request("http://example.com/a", errback=_tracking_errback(None, lambda f: None))
    data, _ = serializer.request_to_dict(request, spider)
    assert data["errback"] is None
    assert serializer.request_from_dict(data, spider).errback is None
