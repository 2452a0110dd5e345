"""The embedded Redis's files are deleted while the article store keeps its records.

The index and the crawl state go with them: the next crawl fetches every article again. It must
not store them again: the near-duplicate pipeline rebuilds the index from the store before the
crawl, finds each article's own fingerprint there and its record in the store, and drops it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from crawlrun import IN_PROCESS, crawl_env, run_crawl, stored_urls
from mockportal import Layout, sites_toml

from newscrawl.storage import day_of, iter_articles

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "DOWNLOAD_MAXSIZE=200000",
            "CONCURRENT_REQUESTS_PER_DOMAIN=8", IN_PROCESS)


def stats_json(workdir: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "newscrawl.cli", "stats", "--json"],
                          cwd=workdir, env=crawl_env(workdir, None), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_deleted_redis_files_store_nothing_twice(tmp_path: Path, portals: Layout) -> None:
    data = tmp_path / "data"
    sites = tmp_path / "sites.toml"
    sites.write_text(sites_toml(portals.a, portals.b, max_list_depth=2), encoding="utf-8")
    r1 = run_crawl(tmp_path, sites, *SETTINGS)
    assert r1.returncode == 0, r1.log[-3000:]
    stored1 = stored_urls(tmp_path)
    assert stored1 and set(stored1.values()) == {1}
    with_text = sum(1 for a in iter_articles(data / "articles") if a.get("text"))
    # every line has the outlet the page names: null for a portal's own articles ("来源：甲网" on
    # 甲网), the original portal for a reprint ("来源：乙网（转自甲网）")
    records = list(iter_articles(data / "articles"))
    assert [r["source"] for r in records] == [
        "甲网" if (r["title"] or "").startswith("转载") else None for r in records]
    assert stats_json(tmp_path)["fingerprints"] == with_text

    # The articles were stored on an earlier day (a daily crawl): out of reach of the store's
    # own check of today's and yesterday's files, so only the rebuilt index can find them.
    (today_file,) = (data / "articles").glob("*.jsonl")
    earlier = data / "articles" / f"{day_of(time.time() - 3 * 86400)}.jsonl"
    today_file.rename(earlier)
    deleted = [p for p in data.iterdir() if p.name.startswith(("redis.db", "appendonly"))]
    assert {p.name for p in deleted} >= {"redis.db", "appendonly.aof"}
    for path in deleted:
        os.remove(path)
    assert stats_json(tmp_path)["fingerprints"] == 0

    r2 = run_crawl(tmp_path, sites, *SETTINGS)
    assert r2.returncode == 0, r2.log[-3000:]
    assert "rebuilding the index from the store" in r2.log
    # an absolute data directory too: its Redis is new while its store is not
    assert "Started a new, empty Redis in data directory" in r2.log, r2.log[-3000:]
    assert f"Index rebuilt from the article store: {with_text} fingerprints" in r2.log
    stored2 = stored_urls(tmp_path)
    assert stored2 == stored1, "an article was stored twice"
    assert sorted(p.name for p in (data / "articles").iterdir()) == [earlier.name]
    # every article was fetched again and found stored
    hits = Counter(p.hit_counts().get(path, 0) for p, path in portals.unique)
    assert set(hits) == {2}
    assert r2.stats["newscrawl/dedup/already_stored"] == with_text
    assert r2.stats.get("newscrawl/store/stored", 0) == 0
    assert stats_json(tmp_path)["fingerprints"] == with_text
