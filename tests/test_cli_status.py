"""``newscrawl status`` against a running crawl: a real worker on a real redis-server, the
status read from Redis alone, as from another machine; after a crawl, how the last run went;
the rate and time left from a queue and rate buckets written directly."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from crawlrun import FAST, IN_PROCESS, Worker, run_crawl, start_crawl, stored_urls, wait_for
from mockportal import DailyPortal, MockPortal
from redisserver import RedisServer

from newscrawl.cli import main
from newscrawl.cli.status import crawl_status
from newscrawl.sitestats import RATE_BUCKET_SECONDS


def status(capsys: pytest.CaptureFixture[str], url: str, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["--redis-url", url, "status", *extra])
    return code, capsys.readouterr().out


@contextlib.contextmanager
def crawling(tmp_path: Path, workers: list, *, delay: float, requested: int
             ) -> Iterator[tuple[MockPortal, DailyPortal, RedisServer, Worker]]:
    """A crawl of a daily portal (12 articles answered ``delay`` s late) on a real
    redis-server, once ``requested`` of its articles were asked for."""
    portal = MockPortal("127.0.0.1").start()
    try:
        daily = DailyPortal(portal, per_page=8, home=5)
        daily.publish(12)
        portal.delay(daily.paths, delay)
        sites = tmp_path / "sites.toml"
        sites.write_text(daily.sites_toml("daily"), encoding="utf-8")
        with RedisServer(tmp_path / "redis") as server:
            worker = start_crawl(tmp_path, sites, *FAST, IN_PROCESS, "CONCURRENT_REQUESTS=2",
                                 redis_url=server.url, log_path=tmp_path / "w.log")
            workers.append(worker)
            wait_for(lambda: sum(portal.hit_counts().get(p, 0) for p in daily.paths)
                     >= requested, timeout=60, what="articles requested")
            yield portal, daily, server, worker
    finally:
        portal.stop()


def test_status_shows_the_run_its_workers_and_the_sites_of_a_running_crawl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: list
) -> None:
    with crawling(tmp_path, workers, delay=1.0, requested=3) as (_, _, server, worker):
        code, out = status(capsys, server.url, "--json")
        assert code == 0
        live = json.loads(out)
        assert live["run"] and live["run"] in worker.log()
        (w,) = live["workers"]
        assert w["alive"] and w["pid"] == worker.proc.pid and not w["idle"]
        site = live["sites"]["daily"]
        assert site["queued"] + site["in_flight"] > 0 and site["fetched"] >= 1
        assert site["pages_per_minute"] is not None
        # how far, how long
        assert live["running"] and site["list_pages"] >= 1
        assert set(site["articles"]) == {"queued", "in_flight", "fetched", "stored",
                                         "dropped", "late_originals", "already_stored",
                                         "not_html", "failed"}
        assert site["articles"]["queued"] + site["articles"]["in_flight"] > 0
        assert live["pages_last_minute"] > 0 and site["pages_last_minute"] > 0
        assert live["time_left_seconds"] is None or live["time_left_seconds"] > 0
        if live["discovering"]:
            assert live["time_left_unknown"] == "still finding links"
        assert w["pages"] == site["fetched"]  # one worker, one site: the same count
        (limit,) = site["limits"]  # the grant's limits at the portal's one host
        assert limit["host"] == "127.0.0.1" and limit["concurrency"] == 8
        assert limit["delay"] == 0 and limit["autothrottle_delay"] is None
        assert 0 <= limit["at_host_now"] <= 8
        code, text = status(capsys, server.url)
        assert code == 0 and f":{worker.proc.pid}  working" in text
        assert "daily" in text and "1 alive" in text
        assert "pages a minute (the last minute); time left: " in text
        assert "daily at 127.0.0.1: 8 at once, no delay;" in text
        worker.proc.send_signal(signal.SIGINT)
        worker.wait(60)
        code, out = status(capsys, server.url, "--json")
        stopped = json.loads(out)
        assert stopped["workers"] == []  # a stopped worker leaves the registry
        assert stopped["queued"] > 0 and stopped["in_flight"] == 0
        # stopped with Ctrl-C: not running; the last run is that run, ended by a shutdown
        assert not stopped["running"] and stopped["time_left_seconds"] is None
        last = stopped["last_run"]
        assert last["id"] == live["run"] and last["reason"] == "shutdown"
        assert last["exit_code"] == 0 and last["ended"] and last["workers_ended"] == 1
        code, text = status(capsys, server.url)
        assert "stopped: no worker alive (the next crawl takes it over)" in text
        assert f"last run:   {live['run']}" in text and "(shutdown)" in text


def test_status_says_whose_requests_are_in_flight_after_a_forced_stop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: list
) -> None:
    """Ctrl-C twice: the worker leaves at once, the requests it had in flight stay leased in
    Redis until the next crawl puts them back; status says so rather than "in flight"."""
    with crawling(tmp_path, workers, delay=30.0, requested=2) as (_, _, server, worker):
        worker.proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        worker.proc.send_signal(signal.SIGINT)
        worker.wait(60)
        code, out = status(capsys, server.url, "--json")
        stopped = json.loads(out)
        assert not stopped["running"] and stopped["in_flight"] >= 1, stopped
        code, text = status(capsys, server.url)
        assert (f"{stopped['in_flight']} in flight (held by workers that stopped: the next"
                " crawl puts them back)") in text, text
        (limit,) = stopped["sites"]["daily"]["limits"]
        if limit["at_host_now"]:
            assert f"; {limit['at_host_now']} held by workers that stopped" in text, text
        assert "there now" not in text


def test_status_after_a_crawl_tells_how_the_last_run_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: list
) -> None:
    portal = MockPortal("127.0.0.1").start()
    try:
        daily = DailyPortal(portal, per_page=4, home=3)
        daily.publish(10)
        sites = tmp_path / "sites.toml"
        sites.write_text(daily.sites_toml("daily") + (
            '\n[[sites]]\nname = "dead"\nstart_urls = ["http://127.0.0.1:9/"]\n'
            "article_url = '/a/\\d+\\.html$'\n"), encoding="utf-8")
        data = tmp_path / "data"
        # a run stopped with Ctrl-C after a few articles, then one that takes it over
        portal.delay(daily.paths, 0.5)
        worker = start_crawl(tmp_path, sites, *FAST, IN_PROCESS, "RETRY_TIMES=0",
                             "CONCURRENT_REQUESTS=1", log_path=tmp_path / "w.log")
        workers.append(worker)
        wait_for(lambda: len(stored_urls(tmp_path)) >= 2, timeout=60, what="articles stored")
        capsys.readouterr()
        assert main(["--data-dir", str(data), "status", "--json"]) == 0
        first = json.loads(capsys.readouterr().out)
        worker.proc.send_signal(signal.SIGINT)
        worker.wait(60)
        portal.delay(daily.paths, 0)
        result = run_crawl(tmp_path, sites, *FAST, IN_PROCESS, "RETRY_TIMES=0")
        assert result.returncode == 0, result.log[-2000:]
        capsys.readouterr()
        assert main(["--data-dir", str(data), "status", "--json"]) == 0
        after = json.loads(capsys.readouterr().out)
        assert after["run"] is None and not after["running"]
        last = after["last_run"]
        assert last["id"] in result.log and last["took_over"] == first["run"]
        assert last["exit_code"] == 0 and last["reason"] == "finished"
        assert last["ended"] and last["duration_seconds"] is not None
        assert last["fetched_nothing"] == ["dead"]
        stored_first = first["sites"]["daily"]["articles"]["stored"]
        assert last["sites"]["daily"]["stored"] + stored_first <= 10
        assert len(stored_urls(tmp_path)) == 10 and last["sites"]["daily"]["list_pages"] >= 1
        assert any(line.startswith("Site daily: pages fetched") for line in last["summary"])
        assert main(["--data-dir", str(data), "status"]) == 0
        text = capsys.readouterr().out
        assert "run:        (none: no crawl is running)" in text
        assert f"last run:   {last['id']}" in text and "exit code 0 (finished)" in text
        assert f"it took over run {first['run']}" in text
        assert "  Site daily: pages fetched" in text and "fetched nothing: dead" in text
        # the embedded Redis has no memory limit: nothing to warn of
        assert after["redis"]["maxmemory"] == 0 and after["redis"]["used_memory"] > 0
        assert not after["redis"]["full"] and "used (no maxmemory)" in text, text
        # --watch, not on a terminal: one plain line a refresh
        import newscrawl.cli.status as status_module

        sleeps = []
        original_sleep = status_module.time.sleep

        def stop_after_two(seconds: float) -> None:
            if seconds != 5:  # another sleep (the embedded Redis starting)
                original_sleep(seconds)
                return
            sleeps.append(seconds)
            if len(sleeps) == 2:
                raise KeyboardInterrupt

        status_module.time.sleep = stop_after_two  # type: ignore[assignment]
        try:
            assert main(["--data-dir", str(data), "status", "--watch", "--interval", "5"]) == 130
        finally:
            status_module.time.sleep = original_sleep  # type: ignore[assignment]
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 2 and sleeps == [5, 5]
        assert all("no crawl is running" in line and "\033" not in line for line in lines)
        assert f"last run {last['id']} ended" in lines[0]
    finally:
        portal.stop()


def _entry(site: str, kind: str, n: int) -> str:
    return json.dumps({"v": 1, "id": f"{kind}{n}", "k": kind, "fp": f"{n:016x}",
                       "r": {"url": f"http://x/{kind}/{n}", "meta": {"newscrawl_site": site}}})


def test_time_left_is_unknown_while_discovery_finds_links(r: Any) -> None:
    now = time.time()
    run = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now - 300)) + "-abcd"
    r.set("newscrawl:portal:run", run)
    r.hset("newscrawl:portal:workers", "h:1:x", json.dumps({"host": "elsewhere", "pid": 1,
                                                            "run": run, "beat": now}))
    r.set("newscrawl:portal:worker:h:1:x", run)
    bucket = int(now // RATE_BUCKET_SECONDS)
    stats = f"newscrawl:portal:runstats:{run}"
    # 30 pages of site a in the last minute, 100 more five minutes ago (not counted)
    r.hset(stats, mapping={f"rate:a:{bucket}": 20, f"rate:a:{bucket - 2}": 10,
                           f"rate:a:{bucket - 30}": 100, "a/pages/article": 130,
                           "a/pages/list": 3, "worker:h:1:x": 133})
    for n in range(60):
        r.zadd("newscrawl:portal:requests", {_entry("a", "article", n): n})
    r.zadd("newscrawl:portal:requests", {_entry("a", "list", 99): 100})
    status = crawl_status(r, "newscrawl", "portal", now=now)
    site = status["sites"]["a"]
    assert site["articles"]["queued"] == 60 and site["source_pages_left"] == 1
    assert site["discovering"] and site["time_left_seconds"] is None
    assert status["time_left_unknown"] == "still finding links"
    assert status["workers"][0]["pages"] == 133
    span = now - (int((now - 60) // RATE_BUCKET_SECONDS) + 1) * RATE_BUCKET_SECONDS
    assert site["pages_last_minute"] == round(30 * 60 / span, 1)
    # the list page read: time left = queue / rate
    r.zremrangebyscore("newscrawl:portal:requests", 100, 100)
    status = crawl_status(r, "newscrawl", "portal", now=now)
    site = status["sites"]["a"]
    assert not site["discovering"]
    assert site["time_left_seconds"] == round(60 / site["pages_last_minute"] * 60)
    assert status["time_left_seconds"] == site["time_left_seconds"]
    # no page in the last minute: unknown, and said why
    r.hdel(stats, f"rate:a:{bucket}", f"rate:a:{bucket - 2}")
    status = crawl_status(r, "newscrawl", "portal", now=now)
    assert status["time_left_seconds"] is None
    assert status["time_left_unknown"] == "no page fetched in the last minute"


def test_a_worker_counts_its_pages_and_rate_buckets_and_deletes_old_buckets(
    r: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from newscrawl import sitestats
    from newscrawl.sitestats import SiteStats, split_run_hash

    class Stats:
        def __init__(self) -> None:
            self.values: dict[str, int] = {}

        def inc_value(self, key: str, n: int) -> None:
            self.values[key] = self.values.get(key, 0) + n

        def get_stats(self) -> dict[str, int]:
            return dict(self.values)

    class Crawler:
        stats = Stats()

    clock = [1_000_000.0]
    monkeypatch.setattr(sitestats.time, "time", lambda: clock[0])
    stats = SiteStats(Crawler())  # type: ignore[arg-type]
    stats.start_run(r, "newscrawl:portal:runstats:r1", took_over="r0", worker="h:1:x")
    stats.inc("a", "pages", "list")  # sent at once
    stats.inc("a", "stored")
    clock[0] += 200  # past RATE_KEEP_SECONDS: the first bucket goes with the next flush
    stats.inc("a", "pages", "start")
    stats.end_run(exit_code=4, reason="finished", sites=["a", "b"])
    figures, other = split_run_hash(r.hgetall("newscrawl:portal:runstats:r1"))
    assert figures == {"a": {"pages/list": 1, "pages/start": 1, "stored": 1}}
    bucket = int(clock[0] // RATE_BUCKET_SECONDS)
    assert {n: v for n, v in other.items() if n.startswith("rate:")} == {f"rate:a:{bucket}": "1"}
    assert other["worker:h:1:x"] == "2" and stats.pages_fetched() == 2
    assert other["run:took_over"] == "r0" and other["run:exit_code"] == "4"
    assert other["run:reason"] == "finished" and json.loads(other["run:sites"]) == ["a", "b"]
    assert float(other["run:ended"]) == clock[0] and other["run:workers_ended"] == "1"
    # a finished worker records the run's site warnings; a worker stopped later, which judged
    # none, leaves them
    stats.end_run(exit_code=0, reason="finished", sites=["a"], warnings={"a": ["follow_url"]})
    stats.end_run(exit_code=0, reason="shutdown", sites=["a"])
    _, other = split_run_hash(r.hgetall("newscrawl:portal:runstats:r1"))
    assert json.loads(other["run:warnings"]) == {"a": ["follow_url"]}
    assert other["run:reason"] == "shutdown" and other["run:workers_ended"] == "3"


def test_status_warns_when_redis_nears_its_maxmemory(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with RedisServer(tmp_path / "redis") as server:
        client = server.client()
        # 20 MB of data in 100 KB values: the server's own buffers (tens of KB, varying) move the
        # share little. One 20 MB SET would leave a 20 MB query buffer that Redis frees a moment
        # later, halving the share between two readings.
        for n in range(200):
            client.set(f"ballast:{n}", "x" * 100_000)
        used = int(client.info("memory")["used_memory"])
        client.config_set("maxmemory", str(used * 100))
        assert main(["--redis-url", server.url, "status"]) == 0
        line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("redis:"))
        assert "used of maxmemory" in line and "near" not in line and "FULL" not in line, line
        used = int(client.info("memory")["used_memory"])
        client.config_set("maxmemory", str(int(used / 0.95)))  # 95 %
        assert main(["--redis-url", server.url, "status", "--json"]) == 0
        memory = json.loads(capsys.readouterr().out)["redis"]
        assert memory["near_full"] and not memory["full"], memory
        assert main(["--redis-url", server.url, "status"]) == 0
        line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("redis:"))
        assert "near its limit" in line and "newscrawl prune" in line, line
        # an evicting policy: keys go, writes are not refused
        client.config_set("maxmemory-policy", "allkeys-lru")
        assert main(["--redis-url", server.url, "status", "--json"]) == 0
        memory = json.loads(capsys.readouterr().out)["redis"]
        assert memory["evicts"] and not memory["near_full"] and not memory["full"], memory
        assert main(["--redis-url", server.url, "status"]) == 0
        line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("redis:"))
        assert "allkeys-lru deletes keys" in line and "noeviction" in line, line


def test_status_says_so_when_redis_does_not_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A paused redis-server (SIGSTOP): the command ends with a message naming the likely
    causes, not after the 60 s its commands may take."""
    import os

    with RedisServer(tmp_path / "redis") as server:
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            capsys.readouterr()
            code = main(["--redis-url", server.url, "status"])
            err = capsys.readouterr().err
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
    assert code == 1
    assert "did not answer within 10 s" in err and "is it paused, overloaded or loading" in err


def test_of_two_runs_started_in_the_same_second_the_last_run_is_the_one_that_ended_last() -> None:
    """Run ids sort by their start to the second, then by a random suffix: two workers started
    together, one finishing before the other joins, make two runs of one second."""
    import fakeredis

    from newscrawl.cli.report import read_runs
    from newscrawl.cli.status import last_run

    client = fakeredis.FakeRedis()
    for run_id, ended in (("20261129T105330-00aa", 1_790_000_200), ("20261129T105330-ffee",
                          1_790_000_100), ("20261129T105329-0000", 1_790_000_300)):
        client.hset(f"newscrawl:portal:runstats:{run_id}",
                    mapping={"run:ended": ended, "run:exit_code": 0, "run:reason": "finished"})
    last = last_run(client, "newscrawl", "portal", None)
    assert last is not None and last["id"] == "20261129T105330-00aa"
    assert [run["id"] for run in read_runs(client, "newscrawl", "portal")] == [
        "20261129T105329-0000", "20261129T105330-ffee", "20261129T105330-00aa"]  # report's order
    client.hdel("newscrawl:portal:runstats:20261129T105330-ffee", "run:ended")  # still running
    last = last_run(client, "newscrawl", "portal", None)
    assert last is not None and last["id"] == "20261129T105330-ffee"
