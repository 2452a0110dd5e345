"""Scale-out: one crawl run by 1, 2 and 4 workers on many slow portals, each portal's limits held.

Pages/s, each portal's requests at once and gaps, Redis calls and CPU per page, and where one Redis
stops scaling. Every column and the figures: docs/benchmarks.md#bench_scaleoutpy.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from _common import children_cpu, round_order, sites_toml, spread
from crawlrun import Worker, start_crawl
from mockportal import Article, MockPortal, Page, html_page, list_html, make_paragraphs, make_title
from redisserver import RedisServer
from scrapy import Request, Spider
from scrapy.utils.httpobj import urlparse_cached

from newscrawl import defaults
from newscrawl.connection import RetryPolicy
from newscrawl.scheduling import queue as q

ROBOTS = "/robots.txt"
IDLE_S = 3.0
TARGET = 2.5


@dataclass
class Run:
    workers: int
    pages_per_s: float
    articles: int
    pages: int
    max_at_once: int
    at_limit: float  # mean over portals of the share of the span at the limit
    min_gap: float | None
    short_gaps: float  # share of the gaps under delay x 0.5
    redis_calls: float  # per page
    evalsha: float  # per page
    redis_cpu_us: float  # per page
    worker_cpu_ms: float  # per page
    window_cpu_us: float | None  # Redis CPU per page between the first and last article request
    marginal_cpu_us: float | None  # the same less the idle server's CPU over that time
    idle_core: float  # the idle server's CPU, share of a core (timers, the sampler's INFO)
    fetched_once: bool
    exit_codes: list[int]


def build_portals(n_hosts: int, per_host: int, latency: float) -> list[MockPortal]:
    portals = []
    for h in range(n_hosts):
        portal = MockPortal(f"127.0.0.{h + 2}").start()
        portal.set(ROBOTS, Page(b"User-agent: *\nDisallow: /private/\n", "text/plain"))
        paths = []
        for i in range(per_host):
            rng = random.Random(f"scaleout-{h}-{i}")
            path = f"/a/{i}.html"
            portal.add_article(path, Article(make_title(rng), make_paragraphs(rng, 3)))
            paths.append(path)
        half = (per_host + 1) // 2
        lists = ["/list/1.html", "/list/2.html"]
        portal.set(lists[0], html_page(list_html("新闻 第1页", paths[:half])))
        portal.set(lists[1], html_page(list_html("新闻 第2页", paths[half:])))
        portal.set("/", html_page(list_html("首页", lists)))
        portal.delay([ROBOTS, "/", *lists, *paths], latency)
        portals.append(portal)
    return portals


def reset(portal: MockPortal) -> None:
    with portal._lock:
        portal.hits.clear()
        portal.answers.clear()


def time_at(portal: MockPortal, limit: int, t0: float, t1: float) -> float:
    """Seconds within [t0, t1] during which ``portal`` answered ``limit`` or more requests at once
    (robots.txt left out)."""
    with portal._lock:
        spans = [(s, e) for path, s, e in portal.answers if path != ROBOTS and e is not None]
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans],
                    key=lambda ev: (ev[0], ev[1]))
    now, since, total = 0, 0.0, 0.0
    for t, step in events:
        if now >= limit:
            total += max(0.0, min(t, t1) - max(since, t0))
        now += step
        since = t
    return total


def redis_counters(client: redis.Redis) -> tuple[int, int, float]:
    """(command calls but INFO's, EVALSHA + EVAL calls, server CPU seconds)."""
    stats: dict[str, Any] = client.info("commandstats")
    calls = sum(int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info")
    scripts = sum(int(stats.get(k, {}).get("calls", 0))
                  for k in ("cmdstat_evalsha", "cmdstat_eval"))
    cpu: dict[str, Any] = client.info("cpu")
    return calls, scripts, float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


class Sampler(threading.Thread):
    """Reads the server's counters every 0.5 s: (time.monotonic(), calls, scripts, CPU s)."""

    def __init__(self, client: redis.Redis) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.samples: list[tuple[float, int, int, float]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            try:
                self.samples.append((time.monotonic(), *redis_counters(self.client)))
            except redis.RedisError:
                return

    def stop(self) -> None:
        self.done.set()
        self.join()


def setting(settings: tuple[str, ...], name: str) -> str:
    return next(s.split("=", 1)[1] for s in settings if s.startswith(name + "="))


def run_once(n_workers: int, portals: list[MockPortal], sites: Path, work: Path,
             settings: tuple[str, ...], per_host: int) -> Run:
    work.mkdir(parents=True)
    for p in portals:
        reset(p)
    with RedisServer(work / "redis", persist=False) as server:
        client = server.client()
        calls0, scripts0, rcpu0 = redis_counters(client)
        cpu0 = children_cpu()
        sampler = Sampler(server.client())
        sampler.start()
        # the idle server's own CPU (its timers, the sampler's INFO calls) for IDLE_S
        time.sleep(IDLE_S)
        idle = sampler.samples[-1][3] - sampler.samples[0][3]
        idle_rate = idle / (sampler.samples[-1][0] - sampler.samples[0][0])
        workers: list[Worker] = []
        try:
            for i in range(n_workers):
                workers.append(start_crawl(work, sites, *settings, redis_url=server.url,
                                           log_path=work / f"w{i}.log"))
            codes = [w.proc.wait(timeout=1800) for w in workers]
        finally:
            for w in workers:
                w.kill()
            sampler.stop()
            sampler.client.close()
        worker_cpu = children_cpu() - cpu0
        calls1, scripts1, rcpu1 = redis_counters(client)
        client.close()
    for code, w in zip(codes, workers, strict=True):
        if code != 0:
            print(w.log()[-3000:], file=sys.stderr)
    answers = [(p, path, s, e) for p in portals for path, s, e in p.answers]
    starts = sorted(s for _, path, s, _ in answers if path.startswith("/a/"))
    t0, t1 = starts[0], starts[-1]
    pages = len(answers)
    limit = int(setting(settings, "CONCURRENT_REQUESTS_PER_DOMAIN"))
    delay = float(setting(settings, "DOWNLOAD_DELAY"))
    gaps = [g for p in portals for g in p.arrival_gaps(exclude=(ROBOTS,))]
    inside = [x for x in sampler.samples if t0 <= x[0] <= t1]
    window_cpu = marginal = None
    if len(inside) >= 2:
        (ta, _, _, ca), (tb, _, _, cb) = inside[0], inside[-1]
        n = sum(1 for _, _, s, _ in answers if ta <= s < tb)
        if n:
            window_cpu = (cb - ca) / n * 1e6
            marginal = (cb - ca - idle_rate * (tb - ta)) / n * 1e6
    hits = [n for p in portals for path, n in p.hit_counts().items() if path.startswith("/a/")]
    return Run(
        workers=n_workers,
        pages_per_s=(len(starts) - 1) / (t1 - t0),
        articles=len(starts),
        pages=pages,
        max_at_once=max(p.most_at_once(exclude=(ROBOTS,)) for p in portals),
        at_limit=statistics.mean(time_at(p, limit, t0, t1) / (t1 - t0) for p in portals),
        min_gap=min(gaps) if gaps else None,
        short_gaps=sum(g < delay * 0.5 for g in gaps) / len(gaps) if gaps else 0.0,
        redis_calls=(calls1 - calls0) / pages,
        evalsha=(scripts1 - scripts0) / pages,
        redis_cpu_us=(rcpu1 - rcpu0) / pages * 1e6,
        worker_cpu_ms=worker_cpu / pages * 1e3,
        window_cpu_us=window_cpu,
        marginal_cpu_us=marginal,
        idle_core=idle_rate,
        fetched_once=len(hits) == len(portals) * per_host and set(hits) == {1},
        exit_codes=codes,
    )


class BenchSpider(Spider):
    name = "bench"


def busy_pop_us(window: int, pops: int = 500) -> float:
    """Server CPU µs of a dequeue that looks at ``window`` entries of hosts at their limit and
    grants nothing (the worst case of the cluster-wide grant), on its own redis-server."""
    busy = {f"busy{i}.test": 1 for i in range(10)}

    def host_slot(request: Request) -> q.HostSlot:
        host = urlparse_cached(request).hostname or ""
        return q.HostSlot(f"b:bench:slots:{host}", busy.get(host, 2), 0)

    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp), persist=False) as srv:
        client = srv.client()
        queue = q.LeasedPriorityQueue(
            client, BenchSpider(), "b:bench:requests", inflight_key="b:bench:inflight",
            seq_key="b:bench:seq", deadletter_key="b:bench:dead", pending_key="b:bench:pending",
            failures_key="b:bench:failures", retry_key="b:bench:retry", lease_seconds=600,
            retry=RetryPolicy(10), deadletter_max=defaults.DEADLETTER_MAX, host_slot=host_slot,
            polite_window=window)
        spec = q.DedupeSpec(q.MODE_FORCE, bytes(8), "b:none", b"", "b:none", 0, 1)
        for i in range(window + 10):
            request = Request(f"http://busy{i % 10}.test/a/{i}.html",
                              meta={"newscrawl_site": "bench"})
            queue.push_entry(queue.encode(request, kind="article", fp=bytes(8), pending=False,
                                          origins=()), 0, spec)
        for _ in range(10):
            queue.pop_raw()  # one per host: every host is now at its limit
        cpu0 = redis_counters(client)[2]
        for _ in range(pops):
            queue.pop_raw()
        return (redis_counters(client)[2] - cpu0) / pops * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--workers", type=int, action="append",
                    help="worker counts to run (repeat; default 1, 2 and 4); the first is the "
                         "baseline of the ratios")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--articles-per-host", type=int, default=12)
    ap.add_argument("--latency", type=float, default=1.0, help="seconds before every answer")
    ap.add_argument("--concurrency", type=int, default=6, help="CONCURRENT_REQUESTS per worker")
    ap.add_argument("--per-host", type=int, default=2, help="CONCURRENT_REQUESTS_PER_DOMAIN")
    ap.add_argument("--delay", type=float, default=0.25, help="DOWNLOAD_DELAY (s)")
    ap.add_argument("--window", type=int, action="append",
                    help="NEWSCRAWL_POLITE_WINDOW (repeat to compare; default: the crawl's)")
    ap.add_argument("--dedup", action="store_true", help="near-duplicate pipeline on")
    ap.add_argument("--index-us", type=float, default=195.0,
                    help="server CPU µs per article of the index (bench_index.py --sketch)")
    args = ap.parse_args(argv)
    counts = args.workers or [1, 2, 4]
    if args.hosts > 250:
        ap.error("--hosts: at most 250 loopback addresses")
    windows: list[int] = args.window or [defaults.POLITE_WINDOW]
    # configurations: (workers, window), the first one the baseline of the ratios
    configs = [(n, w) for w in windows for n in counts]
    settings = (
        "AUTOTHROTTLE_ENABLED=False", "LOG_LEVEL=INFO", "TELNETCONSOLE_ENABLED=False",
        f"CONCURRENT_REQUESTS={args.concurrency}",
        f"CONCURRENT_REQUESTS_PER_DOMAIN={args.per_host}", f"DOWNLOAD_DELAY={args.delay}",
        "NEWSCRAWL_IDLE_EXIT_SECONDS=3",
        *(() if args.dedup else ("NEWSCRAWL_DEDUP_ENABLED=False",)),
    )
    started = time.perf_counter()
    portals = build_portals(args.hosts, args.articles_per_host, args.latency)
    runs: dict[tuple[int, int], list[Run]] = {c: [] for c in configs}
    tmp = Path(tempfile.mkdtemp(prefix="bench-scaleout-"))
    try:
        sites = tmp / "sites.toml"
        sites.write_text(sites_toml({f"portal-{n}": p.base for n, p in enumerate(portals)}),
                         encoding="utf-8")
        for r in range(args.rounds):
            order = round_order(configs, r)
            for n, w in order:
                run = run_once(n, portals, sites, tmp / f"r{r}-n{n}-w{w}",
                               (*settings, f"NEWSCRAWL_POLITE_WINDOW={w}"),
                               args.articles_per_host)
                runs[n, w].append(run)
                print(f"round {r + 1}, {n} worker(s), window {w}: {run.pages_per_s:.1f} pages/s,"
                      f" max at once {run.max_at_once}, exit {run.exit_codes}", file=sys.stderr)
        top = max(counts), windows[0]
        busy_us = busy_pop_us(top[1])
    finally:
        for p in portals:
            p.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    minutes = (time.perf_counter() - started) / 60

    n_articles = args.hosts * args.articles_per_host
    print(f"\n{args.hosts} portals x {args.articles_per_host} articles ({n_articles}), "
          f"every answer after {args.latency:g} s; "
          f"per worker CONCURRENT_REQUESTS={args.concurrency}; "
          f"CONCURRENT_REQUESTS_PER_DOMAIN={args.per_host}, DOWNLOAD_DELAY={args.delay:g} "
          f"(portals' total limit {args.hosts * args.per_host} at once); "
          f"dedup {'on' if args.dedup else 'off'}; AutoThrottle off; {args.rounds} round(s) in "
          f"{minutes:.1f} min; median over rounds [min, max]\n")
    print(f"| workers | window | pages/s | vs {configs[0][0]} worker(s) | "
          "max at once per portal (limit) | at limit | "
          f"min gap s | gaps < {args.delay * 0.5:g} s | Redis calls / page | EVALSHA / page | "
          "Redis CPU µs / page (run) | Redis CPU µs / page (steady) | less idle | "
          "worker CPU ms / page |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = runs[configs[0]]
    for n, w in configs:
        rs = runs[n, w]
        ratio = [x.pages_per_s / y.pages_per_s for x, y in zip(rs, base, strict=True)]
        gaps = [r.min_gap for r in rs if r.min_gap is not None]
        steady = [r.window_cpu_us for r in rs if r.window_cpu_us is not None]
        marginal = [r.marginal_cpu_us for r in rs if r.marginal_cpu_us is not None]
        print(f"| {n} | {w} | {spread([r.pages_per_s for r in rs], '{:.1f}')} | {spread(ratio)} | "
              f"{max(r.max_at_once for r in rs)} ({args.per_host}) | "
              f"{spread([r.at_limit * 100 for r in rs], '{:.0f}')} % | "
              f"{min(gaps):.2f} | {spread([r.short_gaps * 100 for r in rs], '{:.1f}')} % | "
              f"{spread([r.redis_calls for r in rs], '{:.1f}')} | "
              f"{spread([r.evalsha for r in rs], '{:.1f}')} | "
              f"{spread([r.redis_cpu_us for r in rs], '{:.0f}')} | "
              f"{spread(steady, '{:.0f}') if steady else '–'} | "
              f"{spread(marginal, '{:.0f}') if marginal else '–'} | "
              f"{spread([r.worker_cpu_ms for r in rs], '{:.1f}')} |")
    held = all(r.max_at_once <= args.per_host for rs in runs.values() for r in rs)
    once = all(r.fetched_once and not any(r.exit_codes) for rs in runs.values() for r in rs)
    print(f"\nconcurrency limit held (at once <= {args.per_host} at every portal, every run): "
          f"{held}; every article fetched once, every worker exit 0: {once}")
    if (1, windows[0]) in runs and (4, windows[0]) in runs:
        ratio4 = statistics.median(x.pages_per_s / y.pages_per_s for x, y in zip(
            runs[4, windows[0]], runs[1, windows[0]], strict=True))
        met = ratio4 >= TARGET and held
        print(f"target 4 workers >= {TARGET}x one worker with the limits held: "
              f"{'met' if met else 'NOT met'} ({ratio4:.2f}x)")

    # where one Redis stops scaling: its one core busy
    steady_top = [r.marginal_cpu_us for r in runs[top] if r.marginal_cpu_us is not None]
    cpu = statistics.median(steady_top or [r.redis_cpu_us for r in runs[top]])
    idle = statistics.median(r.idle_core for rs in runs.values() for r in rs)
    share = n_articles / statistics.median(r.pages for r in runs[top])
    per_worker = statistics.median(r.pages_per_s for r in base) / configs[0][0]
    per_host = args.per_host / args.latency
    print(f"\nOne Redis core, from the {top[0]}-worker runs' (window {top[1]}) {cpu:.0f} µs of "
          "Redis CPU per page "
          f"({'steady, less idle' if steady_top else 'whole run'}; idle server "
          f"{idle:.1%} of a core; "
          f"{share:.0%} of pages are articles); a worker here does {per_worker:.1f} pages/s, "
          f"a portal at its limit {per_host:.1f} pages/s:\n")
    print("| Redis CPU per page | µs | pages/s at one busy core | workers |"
          " portals at their limit |")
    print("|---|---:|---:|---:|---:|")
    cases = [("measured (scheduler only)" if not args.dedup else "measured", cpu)]
    if not args.dedup:
        cases.append((f"+ index check per article ({args.index_us:.0f} µs)",
                      cpu + args.index_us * share))
    cases.append((f"+ one pop per page finding {top[1]} busy entries ({busy_us:.0f} µs)",
                  cases[-1][1] + busy_us))
    for name, us in cases:
        ceiling = 1e6 / us
        print(f"| {name} | {us:.0f} | {ceiling:,.0f} | {ceiling / per_worker:,.0f} | "
              f"{ceiling / per_host:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
