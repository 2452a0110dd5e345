"""A page whose item fails in a pipeline is not "done": it is fetched again and stored next run.

Run 1 stores into a path that is a regular file: the store cannot be written, a fault of the
crawl's own machinery, so the run stops at once with exit code 5. Nothing may be recorded as done:
run 2 (storage fixed) fetches those article pages again and stores each once.
"""

from __future__ import annotations

from pathlib import Path

from crawlrun import IN_PROCESS, run_crawl
from mockportal import Layout, sites_toml

from newscrawl.storage import iter_articles

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "DOWNLOAD_MAXSIZE=200000",
            "CONCURRENT_REQUESTS_PER_DOMAIN=8", IN_PROCESS)


def test_failed_item_is_fetched_and_stored_next_run(tmp_path: Path, portals: Layout) -> None:
    a, b = portals.a, portals.b
    sites = tmp_path / "sites.toml"
    sites.write_text(sites_toml(a, b, max_list_depth=2), encoding="utf-8")
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("storage cannot create a directory here", encoding="utf-8")
    unique = {p.url(path): (p, path) for p, path in portals.unique}

    r1 = run_crawl(tmp_path, sites, *SETTINGS, f"NEWSCRAWL_STORE_DIR={blocked}")
    # a store that cannot be written is the crawl's own fault: the run stops at once (exit 5)
    assert r1.returncode == 5, r1.log[-3000:]
    criticals = [line for line in r1.log.splitlines() if " CRITICAL: " in line]
    assert len(criticals) == 1 and "NEWSCRAWL_STORE_DIR" in criticals[0], criticals
    # the cause again as the last line, after Scrapy's closing lines and stats
    last = r1.log.strip().splitlines()[-1]
    assert " ERROR: The crawl failed: " in last and last.endswith("(exit code 5)"), last
    assert "NEWSCRAWL_STORE_DIR" in last, last
    assert r1.stats.get("newscrawl/store/stored", 0) == 0
    assert r1.stats.get("newscrawl/scheduler/item_failed", 0) == 0  # not acknowledged at all
    hits1 = {url: p.hit_counts().get(path, 0) for url, (p, path) in unique.items()}

    r2 = run_crawl(tmp_path, sites, *SETTINGS)
    assert r2.returncode == 0, r2.log[-3000:]
    hits2 = {url: p.hit_counts().get(path, 0) for url, (p, path) in unique.items()}
    # every page whose item was not stored is fetched again; none twice in run 2
    assert all(hits2[u] - hits1[u] == 1 for u in unique), (hits1, hits2)
    urls = [str(item["url"]) for item in iter_articles(tmp_path / "data" / "articles")]
    assert len(urls) == len(set(urls)), "an article was stored twice"
    assert set(unique) <= set(urls)
    # Fingerprints that went into the index in run 1 are found with their own URL in run 2 and
    # stored then (none of their items reached the store in run 1).
    assert r2.stats.get("newscrawl/dedup/already_stored", 0) == 0


def test_articles_stored_by_a_run_that_lost_its_done_records_are_not_stored_again(
    tmp_path: Path, portals: Layout
) -> None:
    # A run stored its articles, then stopped before recording them as done (kill -9 or a Redis
    # outage between the store and the acknowledgement): here, every done record is deleted
    # while the index keeps the fingerprints. The next run fetches the articles again, finds
    # each one's own fingerprint in the index and its record in the store: none stored twice.
    from newscrawl.connection import close_embedded, get_client

    sites = tmp_path / "sites.toml"
    sites.write_text(sites_toml(portals.a, portals.b, max_list_depth=2), encoding="utf-8")
    r1 = run_crawl(tmp_path, sites, *SETTINGS)
    assert r1.returncode == 0, r1.log[-3000:]
    stored1 = [str(a["url"]) for a in iter_articles(tmp_path / "data" / "articles")]
    assert stored1 and len(stored1) == len(set(stored1))

    client = get_client(data_dir=tmp_path / "data")
    try:
        crawl_keys = list(client.scan_iter(match="newscrawl:portal:*"))
        assert crawl_keys and client.delete(*crawl_keys) == len(crawl_keys)
    finally:
        close_embedded(client)

    r2 = run_crawl(tmp_path, sites, *SETTINGS)
    assert r2.returncode == 0, r2.log[-3000:]
    stored2 = [str(a["url"]) for a in iter_articles(tmp_path / "data" / "articles")]
    assert stored2 == stored1, "an article was stored twice"
    assert r2.stats["newscrawl/dedup/already_stored"] == len(stored1) - r2.stats.get(
        "newscrawl/dedup/no_text", 0
    )
    assert r2.stats.get("newscrawl/dedup/reprocessed", 0) == 0
