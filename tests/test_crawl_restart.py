"""A crawl can always be started again: a stopped run is taken over with the sites file of the
new crawl, and a live run is not joined by a worker with other sites (real ``scrapy crawl portal``
processes on one redis-server, portals on loopback)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from crawlrun import FAST, IN_PROCESS, run_crawl, start_crawl, stored_urls, wait_for
from mockportal import DailyPortal, MockPortal
from redisserver import RedisServer


@pytest.fixture
def three() -> Iterator[dict[str, DailyPortal]]:
    portals = {name: MockPortal(host).start()
               for name, host in (("x", "127.0.0.1"), ("y", "127.0.0.2"), ("z", "127.0.0.3"))}
    try:
        yield {name: DailyPortal(p, per_page=8, home=5, prefix=name) for name, p in portals.items()}
    finally:
        for p in portals.values():
            p.stop()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(tmp_path / "redis") as server:
        yield server


def sites_file(path: Path, portals: dict[str, DailyPortal], names: str) -> Path:
    path.write_text("".join(portals[n].sites_toml(n) for n in names), encoding="utf-8")
    return path


def article_hits(daily: DailyPortal) -> int:
    hits = daily.portal.hit_counts()
    return sum(hits.get(p, 0) for p in daily.paths)


def test_after_ctrl_c_a_crawl_with_another_sites_file_crawls_that_file(
    tmp_path: Path, three: dict[str, DailyPortal], redis_server: RedisServer, workers: list
) -> None:
    x, y, z = three["x"], three["y"], three["z"]
    for daily in (x, y, z):
        daily.publish(20)
    x.portal.delay(x.paths, 1.0)
    y.portal.delay(y.paths, 1.0)
    first = start_crawl(tmp_path, sites_file(tmp_path / "xy.toml", three, "xy"), *FAST, IN_PROCESS,
                        "CONCURRENT_REQUESTS=2", redis_url=redis_server.url,
                        log_path=tmp_path / "first.log")
    workers.append(first)
    wait_for(lambda: article_hits(x) + article_hits(y) >= 3, timeout=60,
             what="articles of x and y fetched")
    first.proc.send_signal(signal.SIGINT)
    stopped = first.wait(60)
    assert stopped.stats["finish_reason"] == "shutdown", stopped.log[-3000:]
    assert redis_server.client().zcard("newscrawl:portal:requests") > 0  # x's and y's queue
    # the summary says the worker was stopped; no site is blamed for what it did not fetch
    assert "stopped before the run's end: shutdown (Ctrl-C or SIGTERM)" in stopped.log
    assert "check the network" not in stopped.log and "yielded no article" not in stopped.log
    x_hits = article_hits(x)
    for daily in (x, y):
        daily.portal.delay(daily.paths, 0)
    again = run_crawl(tmp_path, sites_file(tmp_path / "yz.toml", three, "yz"), *FAST, IN_PROCESS,
                      redis_url=redis_server.url, timeout=90)
    assert again.returncode == 0, again.log[-4000:]
    assert "Took over crawl run" in again.log
    assert "Dropped " in again.log and "of sites not in this sites file: x (" in again.log
    assert article_hits(x) == x_hits, "a removed site was fetched"
    stored = stored_urls(tmp_path)
    for daily in (y, z):
        assert {daily.portal.url(p) for p in daily.paths} <= set(stored)
    assert max(stored.values()) == 1


def test_a_live_run_of_other_sites_is_not_joined(
    tmp_path: Path, three: dict[str, DailyPortal], redis_server: RedisServer, workers: list
) -> None:
    x = three["x"]
    x.publish(10)
    x.portal.delay(x.paths, 2.0)
    first = start_crawl(tmp_path, sites_file(tmp_path / "x.toml", three, "x"), *FAST, IN_PROCESS,
                        "CONCURRENT_REQUESTS=1", redis_url=redis_server.url,
                        log_path=tmp_path / "first.log")
    workers.append(first)
    wait_for(lambda: article_hits(x) >= 1, timeout=60, what="the first worker working")
    other = run_crawl(tmp_path, sites_file(tmp_path / "z.toml", three, "z"), *FAST, IN_PROCESS,
                      redis_url=redis_server.url, timeout=60)
    assert other.returncode == 1, other.log[-4000:]
    criticals = [line for line in other.log.splitlines() if " CRITICAL: " in line]
    assert len(criticals) == 1, criticals
    assert "is live with another sites file" in criticals[0]
    assert f":{first.proc.pid}" in criticals[0]  # names the live run's workers
    assert "Traceback" not in other.log
    assert article_hits(three["z"]) == 0
    first.proc.send_signal(signal.SIGINT)
    first.wait(60)
