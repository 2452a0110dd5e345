"""Control run: kill -9 a worker mid-crawl, then run a second worker; count stored articles.

    python benchmarks/control_kill_worker.py            # newscrawl scheduler
    python benchmarks/control_kill_worker.py --scrapy-redis   # scrapy-redis 0.9.1 (baseline)

Uses the test portal/spider of benchmarks/control_site.py (15 articles, 3 s per article while the
first worker runs) and its own redis-server. Prints a markdown row.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # redisserver
sys.path.insert(0, str(Path(__file__).resolve().parent))  # control_site

from control_site import STORED_KEY, Portal, run_worker, start_worker  # noqa: E402
from redisserver import RedisServer  # noqa: E402

SCRAPY_REDIS = (
    "SCHEDULER=scrapy_redis.scheduler.Scheduler",
    "DUPEFILTER_CLASS=scrapy_redis.dupefilter.RFPDupeFilter",
    "SCHEDULER_QUEUE_CLASS=scrapy_redis.queue.PriorityQueue",
    "SCHEDULER_IDLE_BEFORE_CLOSE=1",
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scrapy-redis", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        with RedisServer(tmp / "redis") as rs, Portal(article_delay=3.0) as portal:
            extra = (*SCRAPY_REDIS, f"REDIS_URL={rs.url}") if args.scrapy_redis else ()
            proc = start_worker(portal.base, rs.url, tmp / "a.log", *extra)
            while sum(portal.article_hits().values()) < 4:
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            portal.article_delay = 0
            code, _ = run_worker(portal.base, rs.url, tmp / "b.log", *extra)
            stored = rs.client().lrange(STORED_KEY, 0, -1)
            name = "scrapy-redis 0.9.1" if args.scrapy_redis else "newscrawl"
            print("| scheduler | exit | articles stored | distinct | expected |")
            print("|---|---:|---:|---:|---:|")
            print(f"| {name} | {code} | {len(stored)} | {len(set(stored))} |"
                  f" {len(portal.article_paths())} |")


if __name__ == "__main__":
    main()
