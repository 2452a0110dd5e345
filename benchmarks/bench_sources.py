"""CPU cost of reading sitemaps and feeds and of canonical article URLs (generated documents).

Figures: docs/benchmarks.md#bench_sourcespy.
"""

from __future__ import annotations

import argparse
import gzip
import time
from collections.abc import Callable

import _common  # noqa: F401  (tests/ and this tree on sys.path)
from sourcedocs import rss, urlset

from newscrawl.sources import parse_feed, parse_sitemap
from newscrawl.urls import DEFAULT_RULES

BASE = "https://news.example.com"


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    urls = [f"{BASE}/c/2024-03-15/doc-i{i:08d}.shtml" for i in range(2000)]
    tracked = [u + "?utm_source=wechat&spm=a2c4g.11186623&from=timeline" for u in urls]
    sitemap = urlset([f"{BASE}/a/{i}.html" for i in range(50000)])
    packed = gzip.compress(sitemap)
    small = rss([f"{BASE}/a/{i}.html" for i in range(100)])
    large = rss([f"{BASE}/a/{i}.html" for i in range(10000)])
    rows = [
        ("canonical URL, no query", len(urls),
         best(lambda: [DEFAULT_RULES.canonical(u) for u in urls], args.repeat), "us/URL"),
        ("canonical URL, 3 tracking parameters", len(tracked),
         best(lambda: [DEFAULT_RULES.canonical(u) for u in tracked], args.repeat), "us/URL"),
        (f"sitemap, 50,000 URLs ({len(sitemap) / 1e6:.1f} MB)", 1,
         best(lambda: parse_sitemap(sitemap, f"{BASE}/s.xml"), args.repeat), "s"),
        (f"sitemap .xml.gz, 50,000 URLs ({len(packed) / 1e6:.2f} MB)", 1,
         best(lambda: parse_sitemap(packed, f"{BASE}/s.xml.gz"), args.repeat), "s"),
        (f"RSS, 100 items ({len(small) / 1e3:.0f} kB)", 1,
         best(lambda: parse_feed(small, f"{BASE}/rss"), args.repeat), "ms"),
        (f"RSS, 10,000 items ({len(large) / 1e6:.1f} MB)", 1,
         best(lambda: parse_feed(large, f"{BASE}/rss"), args.repeat), "s"),
    ]
    print("| what | time |\n| --- | ---: |")
    for name, count, seconds, unit in rows:
        value = {"us/URL": seconds / count * 1e6, "ms": seconds * 1e3, "s": seconds}[unit]
        print(f"| {name} | {value:.1f} {unit} |" if unit != "s" else
              f"| {name} | {value:.2f} {unit} |")


if __name__ == "__main__":
    main()
