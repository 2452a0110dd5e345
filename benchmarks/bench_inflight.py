"""Does one worker keep its requests in flight? newscrawl's grant against plain Scrapy at latency.

    python benchmarks/bench_inflight.py [--latency-ms 200] [--rounds 3] [--scenario one]
        [--scenario many] [--articles 480] [--only A --only C] [--baseline-src DIR] [--json OUT]

Scenarios (``CONCURRENT_REQUESTS=16``, AutoThrottle off, every page answered ``--latency-ms``
late by a threaded mock portal on loopback):

* **one**: one host, ``CONCURRENT_REQUESTS_PER_DOMAIN=16`` (N = 16 at once);
* **many**: 20 hosts (127.0.0.2 to 127.0.0.21), ``CONCURRENT_REQUESTS_PER_DOMAIN=2``: 40 slots,
  of which the worker's 16 may be busy (N = 16).

The article pages are the mock portal's generated articles (4-6 KB), so the crawl's CPU is not
what bounds it: what this measures is how full the worker keeps the pipe. Variants, each a real
crawl in its own process:

* **A** plain Scrapy + the same trafilatura call, memory scheduler (``benchmarks/peers_spider.py``);
* **C** newscrawl with ``REDIS_URL`` (a fresh ``redis-server`` each run), near-duplicates on;
* **C0** (with ``--baseline-src DIR``): the same crawl with the newscrawl package of another
  checkout (``git archive COMMIT newscrawl | tar -x -C DIR``), to measure a change against its
  parent, paired.

Per run, measured at the portals: pages/s (article pages / (last article request - first)),
**in flight / N** (the time-weighted mean of requests being answered at once, over all hosts,
from the first article request to the end of the last, divided by N), the same per host over its
limit (the least of the hosts: a host the worker left idle shows here) and the most requests any
one host answered at once (its limit holds); the CPU of the crawl's processes (with C's
redis-server) per article page; and the crawl's wall time, start to exit (a crawl whose
downloads run ahead of its processing shows here, not in pages/s). Every round runs each variant
once, in alternating order; prints medians [min, max], the paired ratios to A and, with C0, C's
paired ratios to C0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from _common import children_cpu, spread  # noqa: E402
from bench_peers import Server as RedisServer  # noqa: E402
from crawlrun import run_crawl  # noqa: E402
from mockportal import Article, MockPortal, html_page, list_html  # noqa: E402

ARTICLE_RE, LIST_RE = r"/a/\d+\.html$", r"/list/\d+\.html$"
CONCURRENCY = 16
SCENARIOS = {"one": (1, 16), "many": (20, 2)}  # hosts, requests at once per host
VARIANTS = {"A": "plain Scrapy + trafilatura, memory scheduler",
            "C": "newscrawl, REDIS_URL"}  # fmt: skip


@dataclass
class Run:
    variant: str
    pages_per_s: float
    pages: int
    in_flight: float  # time-weighted mean in flight / N
    host_in_flight: float  # the least host's time-weighted mean in flight / its limit
    most_per_host: int
    cpu_ms: float  # CPU of the crawl's processes (and its redis-server) per article page
    wall_s: float  # the crawl process, start to exit


def portals(n_hosts: int, articles: int, latency: float) -> list[MockPortal]:
    """``n_hosts`` portals on 127.0.0.2.. sharing ``articles`` article pages, 24 per list page."""
    out = []
    per_host = articles // n_hosts
    for h in range(n_hosts):
        portal = MockPortal(f"127.0.0.{h + 2}")
        paths = []
        for i in range(per_host):
            path = f"/a/{i}.html"
            portal.add_article(path, Article.generate(f"inflight-{h}-{i}"))
            paths.append(path)
        lists = []
        for n, start in enumerate(range(0, per_host, 24)):
            path = f"/list/{n}.html"
            portal.set(path, html_page(list_html(f"第{n}页", paths[start:start + 24])))
            lists.append(path)
        portal.set("/", html_page(list_html("首页", lists)))
        portal.set("/robots.txt", html_page("User-agent: *\nDisallow: /private/\n"))
        portal.delay(list(portal.pages), latency)
        out.append(portal.start())
    return out


def reset(ps: list[MockPortal]) -> None:
    for p in ps:
        p.forget_requests()


def measure(ps: list[MockPortal], n: int, per_host: int
            ) -> tuple[float, int, float, float, int]:
    """(pages/s, article pages, mean in flight / n, the least host's mean in flight / per_host,
    most at once at one host), from the first article request to the end of the last."""
    answers = [p.answered() for p in ps]
    arts = [(s, e) for host in answers for path, s, e in host if path.startswith("/a/")]
    first, last = min(s for s, _ in arts), max(e for _, e in arts)
    last_start = max(s for s, _ in arts)
    busy = [sum(max(0.0, min(e, last) - max(s, first)) for _, s, e in host) for host in answers]
    most = max(p.most_at_once() for p in ps)
    return (len(arts) / (last_start - first), len(arts), sum(busy) / (last - first) / n,
            min(busy) / (last - first) / per_host, most)


def run_once(variant: str, ps: list[MockPortal], per_host: int, work: Path,
             baseline_src: Path | None = None) -> Run:
    work.mkdir(parents=True)
    reset(ps)
    cpu0 = children_cpu()
    started = time.perf_counter()
    redis_cpu = 0.0
    settings = ["AUTOTHROTTLE_ENABLED=False", f"CONCURRENT_REQUESTS={CONCURRENCY}",
                f"CONCURRENT_REQUESTS_PER_DOMAIN={per_host}", "LOG_LEVEL=INFO",
                "TELNETCONSOLE_ENABLED=False"]  # fmt: skip
    if variant == "A":
        out = work / "items.jsonl"
        cmd = [sys.executable, "-m", "scrapy", "runspider", str(HERE / "peers_spider.py"),
               "-a", "start=" + ",".join(p.base + "/" for p in ps),
               "-s", f"PEERS_OUT={out}", "-s", f"PEERS_ARTICLE={ARTICLE_RE}",
               "-s", f"PEERS_LIST={LIST_RE}", "-s", "ROBOTSTXT_OBEY=True",
               "-s", 'ITEM_PIPELINES={"peers_spider.StorePipeline": 300}']  # fmt: skip
        for s in settings:
            cmd += ["-s", s]
        env = {k: v for k, v in os.environ.items()
               if k not in ("SCRAPY_SETTINGS_MODULE", "REDIS_URL")}  # fmt: skip
        env["PYTHONPATH"] = str(HERE)
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                              timeout=1800)  # fmt: skip
        if proc.returncode != 0:
            print((proc.stdout + proc.stderr)[-3000:], file=sys.stderr)
            raise SystemExit(f"variant A: exit code {proc.returncode}")
    else:
        sites = work / "sites.toml"
        sites.write_text("".join(
            f'[[sites]]\nname = "host{n}"\nstart_urls = ["{p.base}/"]\n'
            f"article_url = '{ARTICLE_RE}'\nfollow_url = '{LIST_RE}'\nmax_list_depth = 1\n\n"
            for n, p in enumerate(ps)), encoding="utf-8")  # fmt: skip
        server = RedisServer(work)
        try:
            env = {"PYTHONPATH": str(baseline_src)} if variant == "C0" and baseline_src else None
            result = run_crawl(work, sites, *settings, timeout=1800, redis_url=server.url,
                               env=env)  # fmt: skip
            redis_cpu = server.cpu()
        finally:
            server.stop()
        if result.returncode != 0:
            print(result.log[-3000:], file=sys.stderr)
            raise SystemExit(f"variant {variant}: exit code {result.returncode}")
    wall = time.perf_counter() - started
    cpu = children_cpu() - cpu0 + redis_cpu
    rate, pages, in_flight, host_in_flight, most = measure(
        ps, min(CONCURRENCY, per_host * len(ps)), per_host)
    shutil.rmtree(work, ignore_errors=True)
    print(f"  {variant}: {pages} pages, {rate:.1f} pages/s, in flight / N {in_flight:.2f},"
          f" least host {host_in_flight:.2f}, most at once per host {most},"
          f" {cpu * 1000 / pages:.1f} CPU ms / page, {wall:.1f} s", file=sys.stderr)  # fmt: skip
    return Run(variant, rate, pages, in_flight, host_in_flight, most, cpu * 1000 / pages, wall)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--articles", type=int, default=480, help="article pages over all hosts")
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    ap.add_argument("--only", action="append", choices=sorted(VARIANTS))
    ap.add_argument("--baseline-src", type=Path,
                    help="a checkout whose newscrawl package variant C0 runs")
    ap.add_argument("--json", type=Path, help="write every run here")
    args = ap.parse_args(argv)
    names = [v for v in VARIANTS if not args.only or v in args.only]
    if args.baseline_src:
        VARIANTS["C0"] = f"newscrawl of {args.baseline_src}"
        names.insert(names.index("C") if "C" in names else len(names), "C0")
    tmp = Path(tempfile.mkdtemp(prefix="bench-inflight-"))
    results: dict[str, dict[str, list[Run]]] = {}
    started = time.perf_counter()
    try:
        for scenario in args.scenario or list(SCENARIOS):
            n_hosts, per_host = SCENARIOS[scenario]
            ps = portals(n_hosts, args.articles, args.latency_ms / 1000)
            runs: dict[str, list[Run]] = {v: [] for v in names}
            try:
                for r in range(args.rounds):
                    print(f"{scenario}: round {r + 1}/{args.rounds}", file=sys.stderr)
                    for i, v in enumerate(names if r % 2 == 0 else names[::-1]):
                        runs[v].append(run_once(v, ps, per_host, tmp / f"{scenario}-{r}-{i}",
                                                args.baseline_src))  # fmt: skip
            finally:
                for p in ps:
                    p.stop()
            results[scenario] = runs
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    minutes = (time.perf_counter() - started) / 60
    print(f"\n{args.latency_ms:g} ms latency, CONCURRENT_REQUESTS={CONCURRENCY}, {args.rounds}"
          f" round(s) in {minutes:.1f} min; median [min, max]\n")  # fmt: skip
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print("| scenario | variant | pages/s | in flight / N | least host's in flight / limit |"
          " most at once per host | CPU ms / page | crawl s | pages/s / A (paired) |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for scenario, runs in results.items():
        n_hosts, per_host = SCENARIOS[scenario]
        label = f"{n_hosts} host{'s' if n_hosts > 1 else ''}, {per_host} at once each"
        for v, rs in runs.items():
            ratio = ("–" if v == "A" or "A" not in runs else
                     spread([x.pages_per_s / a.pages_per_s
                             for x, a in zip(rs, runs["A"], strict=True)]))  # fmt: skip
            rate = spread([r.pages_per_s for r in rs], "{:.1f}")
            print(f"| {label} | {v}. {VARIANTS[v]} | {rate}"
                  f" | {spread([r.in_flight for r in rs])}"
                  f" | {spread([r.host_in_flight for r in rs])}"
                  f" | {max(r.most_per_host for r in rs)}"
                  f" | {spread([r.cpu_ms for r in rs], '{:.1f}')}"
                  f" | {spread([r.wall_s for r in rs], '{:.1f}')} | {ratio} |")  # fmt: skip
    for scenario, runs in results.items():
        if "C" in runs and "C0" in runs:
            pairs = list(zip(runs["C"], runs["C0"], strict=True))
            print(f"\n{scenario}: C / C0 (paired): pages/s "
                  f"{spread([c.pages_per_s / b.pages_per_s for c, b in pairs])}, in flight "
                  f"{spread([c.in_flight / b.in_flight for c, b in pairs])}, CPU ms / page "
                  f"{spread([c.cpu_ms / b.cpu_ms for c, b in pairs])}, crawl s "
                  f"{spread([c.wall_s / b.wall_s for c, b in pairs])}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({s: {v: [asdict(r) for r in rs] for v, rs in runs.items()}
                                         for s, runs in results.items()}, indent=1),
                             encoding="utf-8")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
