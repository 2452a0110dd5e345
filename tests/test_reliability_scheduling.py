"""Real ``scrapy crawl`` workers against a real redis-server and a local portal.

Each test measures one way scrapy-redis 0.9.1 loses work: killed worker, failed download,
Redis going away (briefly or for good), SIGTERM, a planted pickle, several workers.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redisserver import RedisServer
from scheduling_site import STORED_KEY, Portal, run_worker, start_worker, stats_of

QUEUE = "newscrawl:schedtest:requests"
INFLIGHT = "newscrawl:schedtest:inflight"


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(tmp_path / "redis") as srv:
        yield srv


def stored(srv: RedisServer) -> Counter[str]:
    from urllib.parse import urlsplit

    return Counter(urlsplit(u.decode()).path for u in srv.client().lrange(STORED_KEY, 0, -1))


def wait_for(cond: Callable[[], bool], timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def finish(proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> tuple[int, str]:
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"worker did not finish:\n{log.read_text()[-3000:]}") from None
    return code, log.read_text(errors="replace")


def test_second_run_fetches_no_article_but_revisits_lists(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    with Portal() as portal:
        code, log = run_worker(portal.base, redis_server.url, tmp_path / "w1.log")
        assert code == 0, log[-3000:]
        assert stored(redis_server) == Counter({p: 1 for p in portal.article_paths()})
        first = portal.article_hits()
        code, log = run_worker(portal.base, redis_server.url, tmp_path / "w2.log")
        assert code == 0, log[-3000:]
        assert portal.article_hits() == first  # no article fetched again
        assert portal.hits["/"] == 2 and portal.hits["/list/0"] == 2
        stats = stats_of(log)
        assert stats["dupefilter/filtered"] >= len(portal.article_paths())
        assert stats["newscrawl/scheduler/filtered/done"] == len(portal.article_paths())
        assert redis_server.client().zcard(INFLIGHT) == 0


def test_503_article_is_fetched_and_stored_on_the_next_run(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    with Portal() as portal:
        portal.fail_paths = {"/a/1-1"}
        code, log = run_worker(portal.base, redis_server.url, tmp_path / "w1.log")
        assert code == 0, log[-3000:]
        assert "/a/1-1" not in stored(redis_server)
        assert portal.hits["/a/1-1"] == 2  # first try + 1 retry (RETRY_TIMES=1)
        assert stats_of(log)["newscrawl/scheduler/failed"] == 1
        portal.fail_paths = set()
        code, log = run_worker(portal.base, redis_server.url, tmp_path / "w2.log")
        assert code == 0, log[-3000:]
        assert stored(redis_server) == Counter({p: 1 for p in portal.article_paths()})
        assert portal.hits["/a/1-1"] == 3


def test_gives_up_after_max_attempts(redis_server: RedisServer, tmp_path: Path) -> None:
    with Portal(lists=1, articles=1) as portal:
        portal.fail_paths = {"/a/0-0"}
        for run in range(3):
            code, log = run_worker(portal.base, redis_server.url, tmp_path / f"w{run}.log",
                                   "NEWSCRAWL_MAX_ATTEMPTS=2", "RETRY_TIMES=0")
            assert code == 0, log[-3000:]
            if run == 1:
                assert stats_of(log)["newscrawl/scheduler/gave_up"] == 1
        assert portal.hits["/a/0-0"] == 2  # not tried a third time


def test_killed_worker_loses_nothing(redis_server: RedisServer, tmp_path: Path) -> None:
    with Portal(lists=3, articles=5, article_delay=3.0) as portal:
        proc = start_worker(portal.base, redis_server.url, tmp_path / "killed.log")
        wait_for(lambda: sum(portal.article_hits().values()) >= 4, what="articles in flight")
        client = redis_server.client()
        in_flight = client.zcard(INFLIGHT)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert in_flight >= 4
        hit_before = set(portal.article_hits())
        portal.article_delay = 0.0
        code, log = run_worker(portal.base, redis_server.url, tmp_path / "rescuer.log")
        assert code == 0, log[-3000:]
        # every article stored exactly once; refetched only the ones killed mid-download
        assert stored(redis_server) == Counter({p: 1 for p in portal.article_paths()})
        refetched = {p for p, n in portal.article_hits().items() if n > 1}
        assert refetched <= hit_before
        assert stats_of(log)["newscrawl/scheduler/requeued_expired"] >= 4
        assert client.zcard(INFLIGHT) == 0 and client.zcard(QUEUE) == 0


def test_sigterm_finishes_in_flight_requests(redis_server: RedisServer, tmp_path: Path) -> None:
    with Portal(lists=3, articles=5, article_delay=1.0) as portal:
        log_path = tmp_path / "term.log"
        proc = start_worker(portal.base, redis_server.url, log_path)
        wait_for(lambda: sum(portal.article_hits().values()) >= 3, what="articles in flight")
        proc.send_signal(signal.SIGTERM)
        code, log = finish(proc, log_path)
        assert code == 0, log[-3000:]
        assert stats_of(log)["finish_reason"] == "shutdown"
        client = redis_server.client()
        assert client.zcard(INFLIGHT) == 0  # finished or requeued, none left leased
        done_first = stored(redis_server)
        assert done_first and all(n == 1 for n in done_first.values())
        code, log = run_worker(portal.base, redis_server.url, tmp_path / "w2.log")
        assert code == 0, log[-3000:]
        assert stored(redis_server) == Counter({p: 1 for p in portal.article_paths()})
        assert all(n == 1 for n in portal.article_hits().values())
        assert "Joined crawl run" in log  # the interrupted run goes on


def test_redis_restart_mid_crawl_loses_nothing(redis_server: RedisServer,
                                               tmp_path: Path) -> None:
    with Portal(lists=3, articles=5, article_delay=0.5) as portal:
        log_path = tmp_path / "w.log"
        proc = start_worker(portal.base, redis_server.url, log_path,
                            "NEWSCRAWL_REDIS_RETRY_SECONDS=30", "CONCURRENT_REQUESTS=2")
        wait_for(lambda: sum(portal.article_hits().values()) >= 3, what="articles fetched")
        redis_server.stop()
        time.sleep(2)
        redis_server.start()
        code, log = finish(proc, log_path, timeout=90)
        assert code == 0, log[-3000:]
        assert "Redis is back" in log
        assert stored(redis_server) == Counter({p: 1 for p in portal.article_paths()})


def test_redis_gone_for_good_exits_non_zero(redis_server: RedisServer, tmp_path: Path) -> None:
    with Portal(lists=3, articles=5, article_delay=0.5) as portal:
        log_path = tmp_path / "w.log"
        proc = start_worker(portal.base, redis_server.url, log_path,
                            "NEWSCRAWL_REDIS_RETRY_SECONDS=2", "CONCURRENT_REQUESTS=2")
        wait_for(lambda: sum(portal.article_hits().values()) >= 2, what="articles fetched")
        redis_server.kill()
        code, log = finish(proc, log_path, timeout=90)
        assert code == 3, log[-3000:]
        assert "Redis is unreachable" in log
        assert "redis_unavailable" in log


def test_pickle_in_queue_runs_no_code(redis_server: RedisServer, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self) -> Any:
            return (os.system, (f"touch {marker}",))

    client = redis_server.client()
    client.zadd(QUEUE, {pickle.dumps(Evil(), protocol=2): -1e15})
    with Portal(lists=1, articles=3) as portal:
        code, log = run_worker(portal.base, redis_server.url, tmp_path / "w.log")
        assert code == 0, log[-3000:]
        assert not marker.exists()
        assert stats_of(log)["newscrawl/scheduler/dead_letter"] == 1
        assert client.llen("newscrawl:schedtest:deadletter") == 1
        assert stored(redis_server) == Counter({p: 1 for p in portal.article_paths()})


def test_two_workers_fetch_every_article_once(redis_server: RedisServer,
                                              tmp_path: Path) -> None:
    with Portal(lists=2, articles=8, article_delay=0.6) as portal:
        settings = ("CONCURRENT_REQUESTS=3", "CONCURRENT_REQUESTS_PER_DOMAIN=3")
        procs = [start_worker(portal.base, redis_server.url, tmp_path / f"w{i}.log", *settings)
                 for i in range(2)]
        results = [finish(p, tmp_path / f"w{i}.log", timeout=90) for i, p in enumerate(procs)]
        for code, log in results:
            assert code == 0, log[-3000:]
            assert stats_of(log).get("item_scraped_count", 0) > 0  # both did part of the work
        assert portal.article_hits() == Counter({p: 1 for p in portal.article_paths()})
        assert stored(redis_server) == Counter({p: 1 for p in portal.article_paths()})
        assert portal.hits["/"] == 1  # start page scheduled once for the run
        assert sum("Joined crawl run" in log for _, log in results) == 1
