"""A large gzip RSS feed in a real crawl: peak RSS, the longest reactor stall, requests queued,
and how long the crawl takes to stop after SIGTERM.

A mock portal on 127.0.0.1 serves one gzip RSS feed of ``--entries`` items (article pages answer
404 at once; ``--broken``: a bare "&" in every link, so newscrawl reads it with feedparser in
batches instead of lxml); a site reads only that feed. Each row is one ``scrapy crawl portal``
process with an embedded Redis in a fresh directory and the extension
``benchmarks/stallmeter.py`` (a 20 ms timer on the reactor; the longest gap is the stall):

* ``SIGTERM at N s``: SIGTERM N seconds after the feed was served (``--term-after``, default 2 s:
  while the feed is parsed; and ``--term-late``, default 30 s: once its article requests are
  queued and being fetched); the time from the signal to the process' exit (killed after
  ``--timeout`` s: shown as ``>``).

``--baseline REF`` runs the same rows on the newscrawl of a git ref (exported with ``git archive``
to a temporary directory and put first on PYTHONPATH), e.g. the commit before the feed caps.
Peak RSS is the crawl process' own (``wait4``), without the fingerprint worker.

    python benchmarks/bench_sources_large.py
    python benchmarks/bench_sources_large.py --entries 580000 --baseline <ref>
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO / "tests"))

from crawlrun import crawl_command, crawl_env, parse_stats  # noqa: E402
from mockportal import MockPortal, Page  # noqa: E402


def feed(portal: MockPortal, entries: int, broken: bool) -> bytes:
    """RSS 2.0; ``broken``: a bare "&" in every link (not well-formed XML, as portals write it)."""
    start = datetime(2026, 11, 25, tzinfo=UTC)
    query = "?a=1&b=2" if broken else ""
    items = "".join(
        f"<item><title>t{i}</title><link>{portal.base}/a/{i}.html{query}</link>"
        f"<pubDate>{format_datetime(start - timedelta(seconds=i))}</pubDate></item>"
        for i in range(entries))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>big'
            f"</title><link>{portal.base}/</link>{items}</channel></rss>").encode()


def run(workdir: Path, sites: Path, portal: MockPortal, python_path: str, *,
        term_after: float, timeout: float) -> dict[str, object]:
    settings = ("AUTOTHROTTLE_ENABLED=False", "ROBOTSTXT_OBEY=False",
                "EXTENSIONS=" + json.dumps({"stallmeter.StallMeter": 0}))
    env = crawl_env(workdir, None, {"PYTHONPATH": python_path})
    log_path = workdir / "crawl.log"
    hits_before = portal.hit_counts().get("/feed.xml.gz", 0)
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(crawl_command(sites, settings), cwd=workdir, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    started = time.monotonic()
    while portal.hit_counts().get("/feed.xml.gz", 0) == hits_before:
        time.sleep(0.02)
    time.sleep(term_after)
    proc.send_signal(signal.SIGTERM)
    termed = time.monotonic()
    deadline = time.monotonic() + timeout
    status, rusage = 0, None
    while True:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            _, status, rusage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    ended = time.monotonic()
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the fingerprint worker, if left
    except ProcessLookupError:
        pass
    stop_s = ended - termed
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    if killed:  # its embedded Redis (a daemon of its own) is left running: stop it
        from newscrawl.redis import close_embedded, open_embedded

        close_embedded(open_embedded(workdir / "data"))
    stats = parse_stats(log_path.read_text(encoding="utf-8", errors="replace"))
    return {
        "rss_mb": rusage.ru_maxrss / 1024 if rusage else float("nan"),
        "stall_ms": stats.get("bench/reactor_stall_max_ms"),
        "queued": stats.get("newscrawl/links/article"),
        "capped": (stats.get("newscrawl/feeds/entries_capped", 0) or 0)
        + (stats.get("newscrawl/feeds/run_capped", 0) or 0),
        "stop_s": stop_s,
        "killed": killed,
        "wall_s": ended - started,
    }


def export(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], check=True,
                             capture_output=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--term-after", type=float, default=2.0)
    parser.add_argument("--term-late", type=float, default=30.0)
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--baseline", help="git ref of the newscrawl to compare with")
    parser.add_argument("--broken", action="store_true",
                        help='a bare "&" in every link: read by feedparser, not lxml')
    args = parser.parse_args()
    portal = MockPortal("127.0.0.1").start()
    try:
        body = gzip.compress(feed(portal, args.entries, args.broken))
        unpacked = len(gzip.decompress(body))
        portal.set("/feed.xml.gz", Page(body, "application/x-gzip"))
        with tempfile.TemporaryDirectory(prefix="bench-sources-large-") as tmp:
            root = Path(tmp)
            sites = root / "sites.toml"
            feed_url = portal.url("/feed.xml.gz")
            sites.write_text(f'[[sites]]\nname = "big"\nfeed_urls = ["{feed_url}"]\n',
                             encoding="utf-8")
            trees = [("this tree", str(REPO))]
            if args.baseline:
                trees.insert(0, (args.baseline, str(export(args.baseline, root / "baseline"))))
            rows = []
            for name, tree in trees:
                path = os.pathsep.join([tree, str(BENCH)])
                scenarios = [args.term_after]
                if name == "this tree":
                    scenarios.append(args.term_late)
                for term in scenarios:
                    workdir = root / f"w{len(rows)}"
                    workdir.mkdir()
                    rows.append((name, f"SIGTERM at {term:g} s",
                                 run(workdir, sites, portal, path, term_after=term,
                                     timeout=args.timeout)))
    finally:
        portal.stop()
    print(f"gzip RSS feed{' (bare &: not well-formed)' if args.broken else ''}:"
          f" {args.entries:,} items, {len(body) / 1e6:.1f} MB gzip,"
          f" {unpacked / 2**20:.0f} MiB unpacked\n")
    print("| newscrawl | run | peak RSS (MB) | longest reactor stall (s) | article requests queued"
          " | entries left out | stop after SIGTERM (s) | wall (s) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, scenario, r in rows:
        stop = f">{r['stop_s']:.0f} (killed)" if r["killed"] else f"{r['stop_s']:.1f}"
        stall = "?" if r["stall_ms"] is None else f"{int(r['stall_ms']) / 1000:.2f}"  # type: ignore[call-overload]
        print(f"| {name} | {scenario} | {r['rss_mb']:.0f} | {stall} | {r['queued'] or 0:,}"
              f" | {r['capped']:,} | {stop} | {r['wall_s']:.1f} |")


if __name__ == "__main__":
    main()
