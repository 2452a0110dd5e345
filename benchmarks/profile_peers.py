"""Where newscrawl's CPU per article goes, against plain Scrapy + the same trafilatura call.

Crawls bench_peers.py's portal with its variants A and C under cProfile and sorts every
function's own time into stages. Stages, figures and commands: docs/benchmarks.md#profile_peerspy.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import sites_toml, table
from bench_crawl import TimedPortal
from bench_peers import COMMON, REPRINT_SHARE, PortalKind, Server, build, peer_command
from crawlrun import crawl_command, crawl_env, parse_stats

# Runs the command after "--" under cProfile with the main thread's CPU clock, then writes the
# profile and the process's CPU (all threads) next to it.
RUNNER = r"""
import cProfile, json, resource, runpy, sys, time
out, sys.argv = sys.argv[1], sys.argv[2:]
prof = cProfile.Profile(time.thread_time)
prof.enable()
try:
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
except SystemExit:
    pass
prof.disable()
prof.dump_stats(out)
ru = resource.getrusage(resource.RUSAGE_SELF)
json.dump({"cpu": ru.ru_utime + ru.ru_stime, "main": time.thread_time()}, open(out + ".json", "w"))
"""

STAGES = ["download", "decode", "parse", "trafilatura", "extraction rules", "fingerprint", "index",
          "scheduler", "redis client", "store", "spider", "engine/other"]  # fmt: skip
# A function's stage: the first of these (stage, substrings of "file:function") that matches.
_RULES = [(pattern, stage) for stage, patterns in (
    ("decode", "newscrawl/extract/decode.py w3lib/encoding scrapy/http/response/text.py"),
    ("parse", "trafilatura/utils.py:load_html lxml/html/__init__.py library.py:library_tree"
              " article.py:_library_tree extract/page.py:parse article.py:_parse"),
    ("trafilatura", "library.py:library_body article.py:_library trafilatura/ htmldate/ courlan/"
                    " justext/ dateparser/"),
    ("extraction rules", "newscrawl/extract/"),
    ("fingerprint", "newscrawl/simhash/"),
    ("index", "newscrawl/index/ newscrawl/pipelines/near_duplicates.py"),
    ("scheduler", "newscrawl/scheduling/"),
    ("redis client", "redis/"),
    ("store", "newscrawl/pipelines/store.py newscrawl/storage.py peers_spider.py:StorePipeline"),
    ("download", "scrapy/core/downloader scrapy/core/http2 twisted/web/ twisted/internet/tcp.py"),
    ("spider", "newscrawl/spiders/ peers_spider.py parsel/ scrapy/linkextractors"),
) for pattern in patterns.split()]


def _stage_of(key: tuple[str, int, str]) -> str | None:
    filename, _, name = key
    where = f"{filename}:{name}"
    for pattern, stage in _RULES:
        if pattern in where:
            return stage
    if filename == "~" or filename.startswith("<"):
        return None  # a C function (or generated code): its caller decides
    return "engine/other"


def stages(prof_path: Path) -> dict[str, float]:
    """Seconds of own time per stage (C functions go to their heaviest caller's stage)."""
    stats = pstats.Stats(str(prof_path)).stats  # type: ignore[attr-defined]
    memo: dict[Any, str] = {}

    def stage(key: Any, depth: int = 0) -> str:
        if key in memo:
            return memo[key]
        found = _stage_of(key)
        if found is None:
            callers = stats[key][4] if key in stats else {}
            heaviest = max(callers.items(), key=lambda kv: kv[1][2], default=None)
            found = stage(heaviest[0], depth + 1) if heaviest and depth < 20 else "engine/other"
        memo[key] = found
        return found

    out = dict.fromkeys(STAGES, 0.0)
    for key, (_, _, tottime, _, _) in stats.items():
        out[stage(key)] += tottime
    return out


def rules(prof_path: Path) -> dict[str, float]:
    """Cumulative seconds of each function of newscrawl/extract/ (what each rule costs with
    what it calls: a function called by another is inside the caller's figure too)."""
    stats = pstats.Stats(str(prof_path)).stats  # type: ignore[attr-defined]
    return {f"{Path(k[0]).name}:{k[2]}": v[3] for k, v in stats.items()
            if "newscrawl/extract/" in k[0]}  # fmt: skip


def run_profiled(variant: str, portal: TimedPortal, work: Path,
                 tree: Path | None) -> dict[str, Any]:
    work.mkdir(parents=True)
    prof = work / "run.prof"
    server = Server(work) if variant != "A" else None
    try:
        portal.reset()
        if server is None:
            cmd, env = peer_command(portal.base, work / "items.jsonl")
        else:
            sites = work / "sites.toml"
            sites.write_text(sites_toml({"peers": portal.base}, max_list_depth=1), encoding="utf-8")
            cmd = crawl_command(sites, (*COMMON, "NEWSCRAWL_FINGERPRINT_WORKERS=0"))[2:]
            env = crawl_env(work, server.url)
            if tree is not None:  # another checkout's newscrawl package first
                env["PYTHONPATH"] = f"{tree}{os.pathsep}{env['PYTHONPATH']}"
        rcpu0 = server.cpu() if server else 0.0
        proc = subprocess.run([sys.executable, "-c", RUNNER, str(prof), *cmd], cwd=work, env=env,
                              capture_output=True, text=True, timeout=3600)  # fmt: skip
        log = proc.stdout + proc.stderr
        if proc.returncode != 0 or not prof.exists():
            print(log[-3000:], file=sys.stderr)
            raise SystemExit(f"variant {variant}: exit code {proc.returncode}")
        redis_cpu = (server.cpu() - rcpu0) if server else 0.0
    finally:
        if server:
            server.stop()
    articles = len(portal.article_times)
    cpu = json.loads((work / "run.prof.json").read_text())
    by_stage = stages(prof)
    # other threads of the crawl process (the index's Redis calls): whole process less main thread
    by_stage["other threads"] = max(0.0, cpu["cpu"] - cpu["main"])
    by_stage["redis-server"] = redis_cpu
    return {"variant": variant, "articles": articles,
            "items": parse_stats(log).get("item_scraped_count", 0),
            "process_cpu_ms": cpu["cpu"] * 1000 / articles,
            "ms_per_article": {k: v * 1000 / articles for k, v in by_stage.items()},
            "extract_cumulative_ms": {k: v * 1000 / articles for k, v in rules(prof).items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--articles", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--portal", action="append",
                    help="byline=SHARE,editor=0|1 (default: the four of byline 0 / 1 x editor)")
    ap.add_argument("--json", type=Path, help="write every run's stages here")
    ap.add_argument("--before", type=Path, help="also variant C with DIR's newscrawl package")
    args = ap.parse_args(argv)
    portals = args.portal or ["byline=0,editor=0", "byline=0,editor=1", "byline=1,editor=0",
                              "byline=0.33,editor=1"]  # fmt: skip
    portal = TimedPortal()
    portal.start()
    variants: list[tuple[str, Path | None]] = [("A", None), ("C", None)]
    if args.before:
        variants.append(("C before", args.before))
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="profile-peers-") as tmp:
            for n, spec in enumerate(portals):
                opts = dict(kv.split("=") for kv in spec.split(","))
                build(portal, args.corpus, args.articles, REPRINT_SHARE, args.seed,
                      PortalKind(float(opts.get("byline", 0)), opts.get("editor", "0") == "1"))
                for v, (variant, tree) in enumerate(variants):
                    row = run_profiled(variant, portal, Path(tmp) / f"{n}-{v}", tree)
                    row["portal"] = spec
                    results.append(row)
                    print(f"  {spec} {variant}: {row['articles']} articles, "
                          f"{row['process_cpu_ms']:.1f} CPU ms/article", file=sys.stderr)
    finally:
        portal.stop()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    cols = [*STAGES, "other threads", "redis-server"]
    table(["portal", "variant", "CPU ms/article (process)", *cols],
          ([r["portal"], r["variant"], f"{r['process_cpu_ms']:.1f}",
            *(f"{r['ms_per_article'][c]:.2f}" for c in cols)] for r in results),
          "ll" + "r" * (len(cols) + 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
