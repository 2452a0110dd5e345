"""Which copy a first crawl keeps when reprints are listed before their originals.

One portal over simulated days, or two portals (``--two-sites``). Figures:
docs/benchmarks.md#bench_originalspy.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (tests/ and this tree on sys.path)
from crawlrun import crawl_env, run_crawl, stored_urls
from mockportal import DailyPortal, MockPortal, TwoPortals

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS_PER_DOMAIN=8")


def clusters(workdir: Path) -> list[dict[str, object]]:
    script = Path(sys.executable).with_name("newscrawl")  # the installed console script
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "newscrawl.cli"]
    proc = subprocess.run([*cmd, "clusters", "--json", "--data-dir", str(workdir / "data")],
                          cwd=workdir,
                          env=crawl_env(workdir, None), capture_output=True, text=True,
                          timeout=120, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def one_round(args: argparse.Namespace, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    portal = MockPortal("127.0.0.1").start()
    try:
        daily = DailyPortal(portal, per_page=20, home=10, prefix=f"o{seed}-", bar=args.bar)
        days: list[list[str]] = []
        pairs: dict[str, str] = {}  # reprint -> original
        reprinted: set[str] = set()
        for day in range(1, args.days + 1):
            originals: list[str] = []
            if day >= 3:
                earlier = [p for d in days[max(0, day - 6):day - 2] for p in d
                           if p not in reprinted]
                originals = rng.sample(earlier, min(args.reprints, len(earlier)))
                reprinted.update(originals)
            new = daily.publish(args.per_day, reprints=originals)
            days.append(new[:args.per_day])
            pairs.update(zip(new[args.per_day:], originals, strict=True))
        work = Path(tempfile.mkdtemp(prefix="bench-originals-"))
        sites = work / "sites.toml"
        sites.write_text(daily.sites_toml(max_list_pages=1000), encoding="utf-8")
        started = time.monotonic()
        result = run_crawl(work, sites, *SETTINGS, timeout=900)
        seconds = time.monotonic() - started
        if result.returncode != 0:
            raise SystemExit(f"crawl failed: exit {result.returncode}\n{result.log[-3000:]}")
        stored = set(stored_urls(work))
        url = portal.url
        named: dict[str, set[str]] = {}
        for cluster in clusters(work):
            dups = cluster["duplicates"]
            assert isinstance(dups, list)
            named[str(cluster["original_url"])] = {str(d["url"]) for d in dups}
        right = sum(1 for r, o in pairs.items() if url(r) in named.get(url(o), set()))
        lists = sum(n for p, n in portal.hit_counts().items() if p.startswith("/list/"))
        return {
            "pairs": len(pairs),
            "originals": sum(1 for o in pairs.values() if url(o) in stored),
            "reprints": sum(1 for r in pairs if url(r) in stored),
            "named": right,
            "articles": len(daily.paths),
            "seconds": seconds,
            "lists": lists,
        }
    finally:
        portal.stop()


def two_sites(args: argparse.Namespace) -> None:
    print("| variant | reprinted stories | originals stored | reprints stored | late originals"
          " recorded | stored twice | crawl time (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    variants = (("dated URLs, times in list rows", True, True, None),
                ("day-only URL dates, reprinting site ranked first", True, False, None),
                ("undated URLs, source ranked first", False, False, 1))
    for name, dated, times, src_rank in variants:
        src, re = MockPortal("127.0.0.1").start(), MockPortal("127.0.0.2").start()
        try:
            two = TwoPortals(src, re, dated=dated, times=times).build()
            work = Path(tempfile.mkdtemp(prefix="bench-originals-"))
            sites = work / "sites.toml"
            sites.write_text(two.sites_toml(src_rank=src_rank), encoding="utf-8")
            started = time.monotonic()
            result = run_crawl(work, sites, *SETTINGS, "CONCURRENT_REQUESTS=16", timeout=900)
            seconds = time.monotonic() - started
            if result.returncode != 0:
                raise SystemExit(f"crawl failed: exit {result.returncode}\n{result.log[-3000:]}")
            counts = stored_urls(work)
            stored = set(counts)
            stories = two.reprinted()
            originals = sum(1 for s in stories if src.url(s.original) in stored)
            reprints = sum(1 for s in stories if re.url(str(s.reprint)) in stored)
            late = sum(1 for c in clusters(work) if c.get("original_stored") is False)
            twice = sum(1 for n in counts.values() if n > 1)
            print(f"| {name} | {len(stories)} | {originals} | {reprints} | {late} | {twice}"
                  f" | {seconds:.0f} |", flush=True)
        finally:
            src.stop()
            re.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--per-day", type=int, default=20)
    parser.add_argument("--reprints", type=int, default=3, help="reprints a day, from day 3")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--bar", choices=("prevnext", "numbered"), default="prevnext")
    parser.add_argument("--two-sites", action="store_true",
                        help="a source and a reprinting portal instead (three variants)")
    args = parser.parse_args()
    if args.two_sites:
        two_sites(args)
        return
    print("| round | articles | reprint pairs | originals stored | reprints stored | clusters"
          " naming the original | list pages | crawl time (s) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    totals = {"pairs": 0.0, "originals": 0.0, "reprints": 0.0, "named": 0.0}
    for n in range(args.rounds):
        r = one_round(args, args.seed + n)
        for key in totals:
            totals[key] += r[key]
        print(f"| {n + 1} | {r['articles']:.0f} | {r['pairs']:.0f} | {r['originals']:.0f}"
              f" ({r['originals'] / r['pairs']:.0%}) | {r['reprints']:.0f} | {r['named']:.0f}"
              f" | {r['lists']:.0f} | {r['seconds']:.0f} |", flush=True)
    p = totals["pairs"]
    print(f"\nall rounds: originals stored {totals['originals']:.0f} of {p:.0f}"
          f" ({totals['originals'] / p:.1%}), reprints stored {totals['reprints']:.0f},"
          f" clusters naming the original {totals['named']:.0f} of {p:.0f}")


if __name__ == "__main__":
    main()
