"""List pages fetched per new article over a simulated week: stop-at-known vs a fixed list depth.

A mock portal on 127.0.0.1 (tests/mockportal.py ``DailyPortal``: 8 articles a list page, newest
first, a pagination bar with first/previous/next links, the 5 newest on the home page) publishes
a backlog, then a seeded random number of articles each day (``--min``..``--max``). After each
day, one real ``scrapy crawl portal`` run per configuration (each with its own portal copy and
embedded Redis, the runs of a day interleaved) crawls it. Per configuration over the week:

* list pages fetched (server-side hits on ``/list/*``), per new article published and per
  article stored;
* articles missed: published but never stored (a fixed depth loses what a busy day pushes
  beyond it, for good).

Configurations: stop-at-known (the defaults: ``stop_after_known = 1``, ``max_list_pages = 100``);
the old fixed depth 3 (every list page up to depth 3 each run: ``max_list_depth = 3`` with
``stop_after_known`` too large to stop anything); a fixed depth of 20 (deep enough to miss
nothing in a week, at the price of re-reading the archive every day).

    python benchmarks/bench_pagination.py               # 7 days, 10..50 a day (~4-6 min)
    python benchmarks/bench_pagination.py --days 3 --min 30 --max 30
    python benchmarks/bench_pagination.py --bar numbered   # a "1 2 3 4 5 下一页" bar instead
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from crawlrun import run_crawl, stored_urls  # noqa: E402
from mockportal import DailyPortal, MockPortal  # noqa: E402

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS_PER_DOMAIN=8",
            "NEWSCRAWL_FINGERPRINT_WORKERS=0")
NO_STOP = 1_000_000
CONFIGS: dict[str, dict[str, int]] = {
    "stop-at-known (defaults)": {},
    "fixed depth 3 (old default)": {"max_list_depth": 3, "stop_after_known": NO_STOP},
    "fixed depth 20": {"max_list_depth": 20, "stop_after_known": NO_STOP},
}


def list_hits(daily: DailyPortal) -> int:
    return sum(n for path, n in daily.portal.hit_counts().items() if path.startswith("/list/"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--backlog", type=int, default=45, help="articles before day 1")
    parser.add_argument("--min", type=int, default=10, help="fewest articles a day")
    parser.add_argument("--max", type=int, default=50, help="most articles a day")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--bar", choices=("prevnext", "numbered"), default="prevnext",
                        help="the portal's pagination: first/previous/next links (default), or"
                        " a numbered bar of five pages with a 下一页 link")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    per_day = [args.backlog] + [rng.randint(args.min, args.max) for _ in range(args.days)]
    print(f"articles published: backlog {per_day[0]}, then per day {per_day[1:]}"
          f" (8 a list page, {args.bar} pagination)", flush=True)

    work = Path(tempfile.mkdtemp(prefix="bench-pagination-"))
    portals = {name: DailyPortal(MockPortal("127.0.0.1").start(), prefix="w", bar=args.bar)
               for name in CONFIGS}
    daily_pages: dict[str, list[int]] = {name: [] for name in CONFIGS}
    seconds: dict[str, float] = {name: 0.0 for name in CONFIGS}
    try:
        for day, count in enumerate(per_day):
            order = list(CONFIGS) if day % 2 == 0 else list(CONFIGS)[::-1]
            for name in order:
                daily = portals[name]
                daily.publish(count)
                workdir = work / name.split()[0].replace("-", "") / name.split()[-1].strip("()")
                workdir.mkdir(parents=True, exist_ok=True)
                sites = workdir / "sites.toml"
                sites.write_text(daily.sites_toml(**CONFIGS[name]), encoding="utf-8")
                before = list_hits(daily)
                started = time.monotonic()
                result = run_crawl(workdir, sites, *SETTINGS, timeout=600)
                seconds[name] += time.monotonic() - started
                if result.returncode != 0:
                    raise SystemExit(f"{name}, day {day}: exit {result.returncode}\n"
                                     + result.log[-3000:])
                daily_pages[name].append(list_hits(daily) - before)
            print(f"day {day}: list pages "
                  + ", ".join(f"{n}: {daily_pages[n][-1]}" for n in CONFIGS), flush=True)
        published = sum(per_day)
        new_after_day0 = sum(per_day[1:])
        print()
        print("| configuration | list pages fetched (week) | per new article | per article"
              " stored | list pages day 0 / later days (mean) | articles missed |"
              " crawl time (s) |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name in CONFIGS:
            daily = portals[name]
            workdir = work / name.split()[0].replace("-", "") / name.split()[-1].strip("()")
            stored = set(stored_urls(workdir))
            missed = sum(1 for p in daily.paths if daily.portal.url(p) not in stored)
            pages = daily_pages[name]
            total = sum(pages)
            later = sum(pages[1:]) / max(1, len(pages) - 1)
            kept = published - missed
            print(f"| {name} | {total} | {total / published:.3f} | {total / max(1, kept):.3f}"
                  f" | {pages[0]} / {later:.1f} | {missed} of {published} | {seconds[name]:.0f} |")
        print(f"\n(new articles: {published}, of which {new_after_day0} after the backlog)")
    finally:
        for daily in portals.values():
            daily.portal.stop()


if __name__ == "__main__":
    main()
