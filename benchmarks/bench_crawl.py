"""Crawl throughput on a local mock portal: dedup pipeline on/off, memory vs Redis scheduler.

Whole ``scrapy crawl portal`` runs in interleaved rounds, paired ratios. Columns and figures:
docs/benchmarks.md#bench_crawlpy.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import children_cpu, round_order, sites_toml, spread, table
from crawlrun import run_crawl
from mockportal import Article, MockPortal, Page, html_page, list_html

MEMORY_SCHEDULER = ("SCHEDULER=scrapy.core.scheduler.Scheduler",
                    "DUPEFILTER_CLASS=scrapy.dupefilters.RFPDupeFilter")
OFF = ("NEWSCRAWL_DEDUP_ENABLED=False",)
# name -> (settings, the "pipeline off" configuration it is paired with, or None)
CONFIGS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "redis scheduler, pipeline off": (OFF, None),
    "redis scheduler, pipeline on, 1 fingerprint worker": (
        ("NEWSCRAWL_FINGERPRINT_WORKERS=1",), "redis scheduler, pipeline off"),
    "redis scheduler, pipeline on, fingerprints in-process": (
        ("NEWSCRAWL_FINGERPRINT_WORKERS=0",), "redis scheduler, pipeline off"),
    "memory scheduler, pipeline off": ((*OFF, *MEMORY_SCHEDULER), None),
    "memory scheduler, pipeline on (default workers)": (
        MEMORY_SCHEDULER, "memory scheduler, pipeline off"),
    # the embedded Redis's AOF fsynced once a second vs before every reply
    "embedded Redis appendfsync everysec": (
        ("NEWSCRAWL_EMBEDDED_APPENDFSYNC=everysec",), None),
    "embedded Redis appendfsync always": (
        ("NEWSCRAWL_EMBEDDED_APPENDFSYNC=always",), "embedded Redis appendfsync everysec"),
}
COMMON = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS=16",
          "CONCURRENT_REQUESTS_PER_DOMAIN=16", "LOG_LEVEL=INFO")


@dataclass
class Run:
    pages_per_s: float
    pages: int
    cpu_ms_per_page: float
    rss_mib: float


class TimedPortal(MockPortal):
    """A mock portal that answers every page ``latency`` seconds late (a remote portal) and
    tells when its article pages were requested."""

    def __init__(self, host: str = "127.0.0.1", latency: float = 0.0) -> None:
        super().__init__(host)
        self.latency = latency

    def set(self, path: str, page: Page) -> None:
        super().set(path, page)
        self.delay([path], self.latency)

    @property
    def article_times(self) -> list[float]:
        with self._lock:
            return [start for path, start, _ in self.answers if "/a/" in path]

    def reset(self) -> None:
        with self._lock:
            self.hits.clear()
            self.answers.clear()


def build(portal: MockPortal, n_articles: int, per_list: int = 50) -> int:
    portal.set("/robots.txt", Page(b"User-agent: *\nDisallow: /private/\n", "text/plain"))
    paths = []
    for i in range(n_articles):
        path = f"/a/{i}.html"
        if i % 20 == 19:  # 5% reprints of an earlier article
            portal.add_article(path, portal.articles[f"/a/{i - 19}.html"].reprint("乙网"))
        else:
            portal.add_article(path, Article.generate(f"bench-{i}"))
        paths.append(path)
    lists = []
    for n, start in enumerate(range(0, n_articles, per_list)):
        path = f"/list/{n}.html"
        portal.set(path, html_page(list_html(f"第{n}页", paths[start:start + per_list])))
        lists.append(path)
    portal.set("/", html_page(list_html("首页", lists)))
    return len(paths)


def crawl_once(portal: TimedPortal, sites: Path, work: Path, name: str,
               settings: tuple[str, ...]) -> Run:
    work.mkdir()
    portal.reset()
    cpu0 = children_cpu()
    result = run_crawl(work, sites, *COMMON, *settings, timeout=1800)
    cpu = children_cpu() - cpu0
    if result.returncode != 0:
        print(result.log[-3000:], file=sys.stderr)
        raise SystemExit(f"{name}: exit code {result.returncode}")
    times = sorted(portal.article_times)
    span = times[-1] - times[0]
    pages = len(times)
    run = Run(pages / span, pages, cpu * 1000 / pages,
              float(result.stats.get("memusage/max", 0)) / 2**20)
    print(f"  {name}: {pages} pages in {span:.1f} s = {run.pages_per_s:.1f} pages/s, "
          f"{run.cpu_ms_per_page:.1f} CPU ms/page, stored "
          f"{result.stats.get('newscrawl/store/stored')}, dropped "
          f"{result.stats.get('newscrawl/dedup/near_duplicate', 0)}, "
          f"max RSS {run.rss_mib:.0f} MiB", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--articles", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=4,
                        help="each round runs every configuration once (default 4)")
    parser.add_argument("--only", action="append", help="run only configs containing this text")
    parser.add_argument("--latency-ms", type=float, default=0.0,
                        help="the portal answers each page after this many ms, as a remote portal"
                             " does (default 0: loopback, the crawl is CPU-bound)")
    args = parser.parse_args(argv)

    portal = TimedPortal(latency=args.latency_ms / 1000)
    portal.start()
    t0 = time.perf_counter()
    n = build(portal, args.articles)
    print(f"built {n} article pages in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    names = [k for k in CONFIGS if not args.only or any(o in k for o in args.only)]
    runs: dict[str, list[Run]] = {k: [] for k in names}
    sites_dir = Path(tempfile.mkdtemp(prefix="bench-crawl-"))
    sites = sites_dir / "sites.toml"
    sites.write_text(sites_toml({"bench": portal.base}, max_list_depth=1), encoding="utf-8")
    started = time.perf_counter()
    try:
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}/{args.rounds}", file=sys.stderr)
            order = round_order(names, round_)
            for i, name in enumerate(order):
                work = sites_dir / f"run-{round_}-{i}"
                runs[name].append(crawl_once(portal, sites, work, name, CONFIGS[name][0]))
    finally:
        portal.stop()
        shutil.rmtree(sites_dir, ignore_errors=True)
    minutes = (time.perf_counter() - started) / 60

    print(f"\n{args.articles} article pages, {args.latency_ms:g} ms portal latency, "
          f"{args.rounds} round(s) in {minutes:.1f} min, "
          f"{os.cpu_count()} CPUs; median over rounds [min, max]\n")
    table(["configuration", "pages/s", "CPU ms/page", "max RSS MiB (crawl process)"],
          ([name, spread([r.pages_per_s for r in rs], "{:.1f}"),
            spread([r.cpu_ms_per_page for r in rs], "{:.1f}"), f"{max(r.rss_mib for r in rs):.0f}"]
           for name, rs in runs.items()))
    rows = []
    for name in names:
        off = CONFIGS[name][1]
        if off is None or off not in runs:
            continue
        pairs = list(zip(runs[name], runs[off], strict=True))
        ratios = [on.pages_per_s / base.pages_per_s for on, base in pairs]
        costs = [(1 - r) * 100 for r in ratios]
        cpu = [on.cpu_ms_per_page - base.cpu_ms_per_page for on, base in pairs]
        rows.append((name, ratios, costs, cpu))
    mem_off, redis_off = "memory scheduler, pipeline off", "redis scheduler, pipeline off"
    ratios = []
    if mem_off in runs and redis_off in runs:
        ratios = [m.pages_per_s / r.pages_per_s
                  for m, r in zip(runs[mem_off], runs[redis_off], strict=True)]
    if rows:
        print("\nCost, paired per round (configuration / its baseline of the same round):\n")
        table(["configuration", "baseline", "pages/s ratio", "cost % of throughput",
               "extra CPU ms/page", "rounds <= 10 %"],
              ([name, CONFIGS[name][1], spread(ratio), spread(costs, "{:.1f}"),
                spread(cpu, "{:.2f}"), f"{sum(c <= 10 for c in costs)}/{len(costs)}"]
               for name, ratio, costs, cpu in rows), "ll" + "r" * 4)
    if ratios:
        print(f"\nmemory / redis scheduler (pipeline off, paired): {spread(ratios)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
