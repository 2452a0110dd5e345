"""Crawl throughput on a local mock portal: dedup pipeline on/off, memory vs Redis scheduler.

Builds a local portal (stdlib http.server on 127.0.0.1, port 0) with N generated Chinese article
pages (default 2,000; 5% of them reprints of others) behind list pages, then runs real
``scrapy crawl portal`` subprocesses on fresh data directories (embedded Redis) for each
configuration, alternating configurations over ``--repeat`` rounds, and prints a markdown table.

pages/s = article pages fetched / (time of the last article request - time of the first), measured
at the server, so process start-up and the idle wait at the end are not counted.

    python benchmarks/bench_crawl.py --articles 2000 --repeat 2
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from crawlrun import run_crawl  # noqa: E402
from mockportal import Article, MockPortal, Page, html_page, list_html  # noqa: E402

MEMORY_SCHEDULER = ("SCHEDULER=scrapy.core.scheduler.Scheduler",
                    "DUPEFILTER_CLASS=scrapy.dupefilters.RFPDupeFilter")
CONFIGS: dict[str, tuple[str, ...]] = {
    "redis scheduler, pipeline off": ("NEWSCRAWL_DEDUP_ENABLED=False",),
    "redis scheduler, pipeline on": (),
    "redis scheduler, pipeline on, fingerprints in-process": ("NEWSCRAWL_FINGERPRINT_WORKERS=0",),
    "memory scheduler, pipeline off": ("NEWSCRAWL_DEDUP_ENABLED=False", *MEMORY_SCHEDULER),
    "memory scheduler, pipeline on": MEMORY_SCHEDULER,
}
COMMON = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS=16",
          "CONCURRENT_REQUESTS_PER_DOMAIN=16", "LOG_LEVEL=INFO")


class TimedPortal(MockPortal):
    """Records when article pages were requested."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__(host)
        self.article_times: list[float] = []
        self._tlock = threading.Lock()
        handler = self.server.RequestHandlerClass
        original = handler.do_GET  # type: ignore[attr-defined]
        portal = self

        def do_get(h: object) -> None:
            if "/a/" in h.path:  # type: ignore[attr-defined]
                with portal._tlock:
                    portal.article_times.append(time.perf_counter())
            original(h)

        handler.do_GET = do_get  # type: ignore[attr-defined]

    def reset(self) -> None:
        with self._tlock:
            self.article_times.clear()
        with self._lock:
            self.hits.clear()


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--only", action="append", help="run only configs containing this text")
    args = parser.parse_args(argv)

    portal = TimedPortal()
    portal.start()
    t0 = time.perf_counter()
    n = build(portal, args.articles)
    print(f"built {n} article pages in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    configs = {k: v for k, v in CONFIGS.items()
               if not args.only or any(o in k for o in args.only)}
    results: dict[str, list[tuple[float, int, float]]] = {k: [] for k in configs}
    sites_dir = Path(tempfile.mkdtemp(prefix="bench-crawl-"))
    sites = sites_dir / "sites.toml"
    sites.write_text(
        '[[sites]]\nname = "bench"\n'
        f'start_urls = ["{portal.base}/"]\n'
        "article_url = '/a/\\d+\\.html$'\nfollow_url = '/list/\\d+\\.html$'\nmax_list_depth = 1\n",
        encoding="utf-8",
    )
    try:
        for round_ in range(args.repeat):
            for name, settings in configs.items():
                work = sites_dir / f"run-{round_}-{abs(hash(name))}"
                work.mkdir()
                portal.reset()
                result = run_crawl(work, sites, *COMMON, *settings, timeout=1800)
                if result.returncode != 0:
                    print(result.log[-3000:], file=sys.stderr)
                    raise SystemExit(f"{name}: exit code {result.returncode}")
                times = sorted(portal.article_times)
                span = times[-1] - times[0]
                pages = len(times)
                mem = float(result.stats.get("memusage/max", 0)) / 2**20
                results[name].append((pages / span, pages, mem))
                print(f"round {round_ + 1} {name}: {pages} pages in {span:.1f} s = "
                      f"{pages / span:.1f} pages/s, stored "
                      f"{result.stats.get('newscrawl/store/stored')}, dropped "
                      f"{result.stats.get('newscrawl/dedup/near_duplicate', 0)}, "
                      f"max RSS {mem:.0f} MiB", file=sys.stderr)
                shutil.rmtree(work, ignore_errors=True)
    finally:
        portal.stop()
        shutil.rmtree(sites_dir, ignore_errors=True)

    best = {k: max(r[0] for r in v) for k, v in results.items()}
    print(f"\n{args.articles} article pages, {args.repeat} round(s), best of rounds "
          f"(median in brackets), {os.cpu_count()} CPUs\n")
    print("| configuration | pages/s best (median) | vs redis+off | max RSS MiB |")
    print("|---|---:|---:|---:|")
    base = best.get("redis scheduler, pipeline off")
    for name, runs in results.items():
        median = statistics.median(r[0] for r in runs)
        ratio = f"{best[name] / base:.2f}" if base else "-"
        mem = max(r[2] for r in runs)
        print(f"| {name} | {best[name]:.1f} ({median:.1f}) | {ratio} | {mem:.0f} |")
    for name, on in best.items():
        sched = name.split(",")[0]
        off = best.get(f"{sched}, pipeline off")
        if "pipeline on" in name and off:
            print(f"\nnear-duplicate pipeline cost ({name}): "
                  f"{(1 - on / off) * 100:.1f}% of throughput (target <= 10%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
