"""A first crawl of many sites: wall time and memory of ``scrapy crawl portal`` on N mock portals.

    python benchmarks/bench_many_sites.py [--sites 120] [--articles 30] [--slow 20]
        [--rounds 2] [--variant NAME=SETTING,...]

N portals (127.0.0.2 and up, threaded mock portals on loopback), each a home page and list pages
of 15 undated links (a ``下一页`` link to the next), ``--articles`` article pages of 4-6 KB;
``--slow`` of them answer 100-300 ms late. The sites file lists them in order, so their
articles are checked in rank order (docs/design/pagination.md): the first site's articles
first, and every other site's wait at the near-duplicate check for the ones before them. Each
crawl starts on a fresh embedded Redis, with the crawl's defaults (AutoThrottle on).

Variants, each a real crawl in its own process, every round running each once in alternating
order: ``default`` (this tree's settings) and ``slot-counted``
(``NEWSCRAWL_CHECK_ORDER_MEMORY=0``: waiting articles' responses counted in Scrapy's scraper
slot, as before the setting); more with ``--variant NAME=SETTING,SETTING``.

Per run: wall time (start to exit), articles stored a second, the crawl process's peak RSS,
articles stored, and the articles checked out of their turn (``order_wait_expired``,
``order_wait_full``). Prints medians [min, max]. Figures: docs/benchmarks.md#bench_many_sitespy.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _common import round_order, spread, table
from crawlrun import crawl_command, crawl_env, parse_stats, stored_urls
from mockportal import Article, MockPortal, html_page, list_html

PER_PAGE = 15


@dataclass
class Run:
    variant: str
    wall_s: float
    stored: int
    rss_mib: float
    expired: int
    full: int


def portals(n: int, articles: int, slow: int, seed: int = 7) -> list[MockPortal]:
    rng = random.Random(seed)
    slow_ones = set(rng.sample(range(n), min(slow, n)))
    out = []
    for h in range(n):
        portal = MockPortal(f"127.0.0.{h + 2}")
        paths = [f"/news/{i}.html" for i in range(articles)]
        for i, path in enumerate(paths):
            portal.add_article(path, Article.generate(f"many-{h}-{i}"))
        pages = [paths[i:i + PER_PAGE] for i in range(0, len(paths), PER_PAGE)]
        for k, links in enumerate(pages):
            more = [f"/list/{k + 2}.html"] if k + 1 < len(pages) else []
            portal.set("/" if k == 0 else f"/list/{k + 1}.html",
                       html_page(list_html(f"站点{h} 第{k + 1}页", links,
                                           "".join(f'<a href="{m}">下一页</a>' for m in more))))
        portal.set("/robots.txt", html_page("User-agent: *\nAllow: /\n"))
        if h in slow_ones:
            portal.delay(list(portal.pages), rng.uniform(0.1, 0.3))
        out.append(portal.start())
    return out


def sites_file(ps: list[MockPortal], path: Path) -> Path:
    path.write_text("".join(
        f'[[sites]]\nname = "site{h:03d}"\nstart_urls = ["{p.base}/"]\n'
        "article_url = '/news/\\d+\\.html$'\nfollow_url = '/list/\\d+\\.html$'\n\n"
        for h, p in enumerate(ps)), encoding="utf-8")
    return path


def run_once(name: str, settings: list[str], sites: Path, work: Path) -> Run:
    work.mkdir(parents=True)
    env = crawl_env(work, None)
    env.pop("PYTHONPATH", None)  # this tree's package, as installed
    cmd = crawl_command(sites, ("TELNETCONSOLE_ENABLED=False", *settings))
    started = time.perf_counter()
    with open(work / "crawl.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = (work / "crawl.log").read_text(encoding="utf-8", errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{name}: the crawl exited {proc.returncode}:\n{text[-3000:]}")
    stats = parse_stats(text)
    return Run(name, wall, len(stored_urls(work)), usage.ru_maxrss / 1024,
               int(stats.get("newscrawl/dedup/order_wait_expired", 0)),
               int(stats.get("newscrawl/dedup/order_wait_full", 0)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=120)
    parser.add_argument("--articles", type=int, default=30, help="article pages per site")
    parser.add_argument("--slow", type=int, default=20, help="sites answering 100-300 ms late")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=SETTINGS",
                        help="another variant: comma-separated Scrapy settings")
    args = parser.parse_args()
    if not 1 <= args.sites <= 250:
        raise SystemExit("--sites: 1 to 250 (one loopback address each)")
    variants: dict[str, list[str]] = {"default": [],
                                      "slot-counted": ["NEWSCRAWL_CHECK_ORDER_MEMORY=0"]}
    for spec in args.variant:
        name, _, settings = spec.partition("=")
        variants[name] = [s for s in settings.split(",") if s]
    ps = portals(args.sites, args.articles, args.slow)
    root = Path(tempfile.mkdtemp(prefix="bench-many-"))
    try:
        sites = sites_file(ps, root / "sites.toml")
        runs: list[Run] = []
        for r in range(args.rounds):
            for name in round_order(list(variants), r):
                run = run_once(name, variants[name], sites, root / f"{name}-{r}")
                runs.append(run)
                print(f"round {r + 1} {name}: {run.wall_s:.1f} s, {run.stored} stored,"
                      f" {run.rss_mib:.0f} MiB, out of turn {run.expired} + {run.full}",
                      flush=True)
    finally:
        for p in ps:
            p.stop()
        shutil.rmtree(root, ignore_errors=True)
    rows = []
    for name in variants:
        mine = [r for r in runs if r.variant == name]
        rows.append((name, " ".join(variants[name]) or "(defaults)",
                     spread([r.wall_s for r in mine], "{:.1f}"),
                     spread([r.stored / r.wall_s for r in mine], "{:.1f}"),
                     spread([r.rss_mib for r in mine], "{:.0f}"),
                     spread([float(r.stored) for r in mine], "{:.0f}"),
                     spread([float(r.expired + r.full) for r in mine], "{:.0f}")))
    table(["variant", "settings", "wall s", "articles stored/s", "peak RSS MiB", "stored",
           "checked out of turn"], rows)


if __name__ == "__main__":
    main()
