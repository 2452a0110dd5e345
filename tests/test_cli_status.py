"""``newscrawl status`` against a running crawl: a real worker on a real redis-server, the
status read from Redis alone, as from another machine."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from crawlrun import FAST, start_crawl, wait_for
from mockportal import DailyPortal, MockPortal
from redisserver import RedisServer

from newscrawl.cli import main


def status(capsys: pytest.CaptureFixture[str], url: str, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["--redis-url", url, "status", *extra])
    return code, capsys.readouterr().out


def test_status_shows_the_run_its_workers_and_the_sites_of_a_running_crawl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: list
) -> None:
    portal = MockPortal("127.0.0.1").start()
    try:
        daily = DailyPortal(portal, per_page=8, home=5)
        daily.publish(12)
        portal.delay(daily.paths, 1.0)
        sites = tmp_path / "sites.toml"
        sites.write_text(daily.sites_toml("daily"), encoding="utf-8")
        with RedisServer(tmp_path / "redis") as server:
            worker = start_crawl(tmp_path, sites, *FAST, "CONCURRENT_REQUESTS=2",
                                 redis_url=server.url, log_path=tmp_path / "w.log")
            workers.append(worker)
            wait_for(lambda: sum(portal.hit_counts().get(p, 0) for p in daily.paths) >= 3,
                     timeout=60, what="articles fetched")
            code, out = status(capsys, server.url, "--json")
            assert code == 0
            live = json.loads(out)
            assert live["run"] and live["run"] in worker.log()
            (w,) = live["workers"]
            assert w["alive"] and w["pid"] == worker.proc.pid and not w["idle"]
            site = live["sites"]["daily"]
            assert site["queued"] + site["in_flight"] > 0 and site["fetched"] >= 1
            assert site["pages_per_minute"] is not None
            (limit,) = site["limits"]  # the grant's limits at the portal's one host
            assert limit["host"] == "127.0.0.1" and limit["concurrency"] == 8
            assert limit["delay"] == 0 and limit["autothrottle_delay"] is None
            assert 0 <= limit["at_host_now"] <= 8
            code, text = status(capsys, server.url)
            assert code == 0 and f":{worker.proc.pid}  working" in text
            assert "daily" in text and "1 alive" in text
            assert "daily at 127.0.0.1: 8 at once, no delay;" in text
            worker.proc.send_signal(signal.SIGINT)
            worker.wait(60)
            code, out = status(capsys, server.url, "--json")
            stopped = json.loads(out)
            assert stopped["workers"] == []  # a stopped worker leaves the registry
            assert stopped["queued"] > 0 and stopped["in_flight"] == 0
    finally:
        portal.stop()
