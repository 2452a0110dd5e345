"""The article store's checks: what the store pipeline and the index reconciliation cost.

* **write**: ``ArticleStore.write`` alone, against the store pipeline's path (``stored_recently``,
  then ``write``), N records of ~3 KB in one day file; microseconds per record, paired per round
  (both on fresh directories, alternating order).
* **open**: what a crawl pays when its near-duplicate pipeline opens
  (``newscrawl.pipelines.reconcile.sync_index_with_store``) with N records in today's file, on an
  embedded Redis: every fingerprint in the index (the everyday case: one pipelined check), and
  the index emptied (the rebuild: every text fingerprinted and sketched again).

    python benchmarks/bench_store.py                 # 5,000 records, 3 rounds
    python benchmarks/bench_store.py --records 20000 --rounds 1
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_crawl import spread  # noqa: E402

from newscrawl.index import SimhashIndex  # noqa: E402
from newscrawl.redis import RetryPolicy, close_embedded, open_embedded  # noqa: E402
from newscrawl.simhash.decision import get_decision  # noqa: E402
from newscrawl.storage import ArticleStore  # noqa: E402

WORDS = ("经济", "发展", "记者", "报道", "城市", "市场", "政府", "企业", "项目", "投资", "会议",
         "表示", "今年", "增长", "服务", "建设", "合作", "技术", "创新", "地区", "工作", "居民")


def texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return ["\n".join("".join(rng.choice(WORDS) for _ in range(60)) + "。" for _ in range(8))
            for _ in range(n)]


def bench_write(records: list[dict[str, object]], work: Path, *, check: bool) -> float:
    """Microseconds per record."""
    if work.exists():
        shutil.rmtree(work)
    store = ArticleStore(work)
    started = time.perf_counter()
    for record in records:
        if check and store.stored_recently(str(record["url"])):
            raise AssertionError("a new record found stored")
        store.write(record)
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed * 1e6 / len(records)


def main(argv: list[str] | None = None) -> int:
    from newscrawl.pipelines.reconcile import sync_index_with_store

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    decision = get_decision()
    corpus = texts(args.records)
    analyses = [decision.analyze(t) for t in corpus]
    records: list[dict[str, object]] = [
        {"url": f"https://news.example.cn/a/{i}.html", "title": f"标题{i}", "text": text,
         "site": "bench", "simhash": f"{a.fingerprint:016x}" if a.fingerprint is not None else None}
        for i, (text, a) in enumerate(zip(corpus, analyses, strict=True))
    ]
    size = sum(len(str(r["text"]).encode()) for r in records) / len(records)
    root = Path(tempfile.mkdtemp(prefix="bench-store-"))
    plain: list[float] = []
    checked: list[float] = []
    synced: list[float] = []
    rebuilt: list[float] = []
    try:
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}/{args.rounds}", file=sys.stderr)
            order = (False, True) if round_ % 2 == 0 else (True, False)
            for check in order:
                us = bench_write(records, root / "write", check=check)
                (checked if check else plain).append(us)

            data = root / f"open-{round_}"
            store = ArticleStore(data / "articles")
            for record in records:
                store.write(record)
            store.close()
            client = open_embedded(data)
            try:
                index = SimhashIndex(client, version=decision.version)
                index.add_many((a.fingerprint, str(r["url"]), a.sketch)
                               for r, a in zip(records, analyses, strict=True)
                               if a.fingerprint is not None)
                retry = RetryPolicy(10).call
                options = {"idf_file": None, "url_field": "url", "text_field": "text",
                           "retention_days": 365, "retry": retry}
                started = time.perf_counter()
                added = sync_index_with_store(index, data / "articles", **options)
                synced.append(time.perf_counter() - started)
                assert added == 0, added
                client.flushdb()
                started = time.perf_counter()
                added = sync_index_with_store(index, data / "articles", **options)
                rebuilt.append(time.perf_counter() - started)
                assert added == index.count() > 0
            finally:
                close_embedded(client)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    n = args.records
    print(f"\n{n} records of {size / 1000:.1f} KB text each, {args.rounds} round(s); "
          "median [min, max]\n")
    print("| what | µs per record | total for the records |")
    print("|---|---:|---:|")
    print(f"| `ArticleStore.write` | {spread(plain, '{:.1f}')} | "
          f"{statistics.median(plain) * n / 1e6:.2f} s |")
    print(f"| `stored_recently` + `write` (store pipeline) | {spread(checked, '{:.1f}')} | "
          f"{statistics.median(checked) * n / 1e6:.2f} s |")
    extra = [c - p for c, p in zip(checked, plain, strict=True)]
    print(f"| the check's share (paired) | {spread(extra, '{:.1f}')} | |")
    print(f"| pipeline open, index complete (check only) | "
          f"{spread([t * 1e6 / n for t in synced], '{:.1f}')} | "
          f"{statistics.median(synced):.2f} s |")
    print(f"| pipeline open, index empty (rebuild) | "
          f"{spread([t * 1e6 / n for t in rebuilt], '{:.0f}')} | "
          f"{statistics.median(rebuilt):.1f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
