"""Three real ``scrapy crawl portal`` runs against the mock portals, embedded Redis, temp data dir.

1. First crawl: every distinct article stored once, reprints/exact copies dropped and recorded,
   every troublesome page a counted outcome, robots.txt and list depth respected.
2. Unchanged second run: start pages and the first list page (nothing new on it: the walk stops,
   ``stop_after_known = 1``) visited again, no article page fetched.
3. After adding two articles: exactly those two article pages fetched and stored.
"""

from __future__ import annotations

from pathlib import Path

from crawlrun import CrawlResult, run_crawl
from mockportal import INVALID_LINKS, Article, Layout, MockPortal, sites_toml
from redisserver import embedded_servers

from newscrawl.index import DuplicateLog
from newscrawl.redis import get_client
from newscrawl.storage import iter_articles

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "DOWNLOAD_MAXSIZE=200000",
            "CONCURRENT_REQUESTS_PER_DOMAIN=8")


def key(portal: MockPortal, path: str) -> str:
    return portal.url(path)


def stored(tmp_path: Path) -> list[dict[str, object]]:
    return list(iter_articles(tmp_path / "data" / "articles"))


def article_hits(layout: Layout, paths: list[tuple[MockPortal, str]]) -> dict[str, int]:
    return {key(p, path): p.hit_counts().get(path, 0) for p, path in paths}


def ok(result: CrawlResult) -> CrawlResult:
    assert result.returncode == 0, result.log[-4000:]
    assert "Spider closed (finished)" in result.log
    return result


def test_three_incremental_runs(tmp_path: Path, portals: Layout) -> None:
    layout = portals
    a, b = layout.a, layout.b
    sites = tmp_path / "sites.toml"
    sites.write_text(sites_toml(a, b, max_list_depth=2), encoding="utf-8")

    # --- run 1 ----------------------------------------------------------------------------
    # Every warning shown (Python hides DeprecationWarning outside __main__ by default).
    r1 = ok(run_crawl(tmp_path, sites, *SETTINGS, env={"PYTHONWARNINGS": "default"}))
    deprecations = [line for line in r1.log.splitlines()
                    if "DeprecationWarning" in line
                    and ("/newscrawl/" in line or "ScrapyDeprecationWarning" in line)]
    assert not deprecations, deprecations
    # the crawl stopped its embedded Redis (the index's connection did not keep it running)
    assert embedded_servers(tmp_path / "data") == []
    items = stored(tmp_path)
    urls = [str(item["url"]) for item in items]
    assert len(urls) == len(set(urls)), "an article was stored twice"
    # the start page's unparsable links were skipped and counted, the links after them followed
    assert r1.stats["newscrawl/links/invalid"] == len(INVALID_LINKS)
    by_url = {str(item["url"]): item for item in items}
    for portal, path in layout.unique:
        item = by_url[key(portal, path)]
        article = portal.articles[path]
        assert item["title"] == article.title
        assert article.paragraphs[1] in str(item["text"])  # decoded right (GBK pages too)
        assert isinstance(item["simhash"], str) and len(item["simhash"]) == 16
        assert item["site"] == ("portal-a" if portal is a else "portal-b")
    client = get_client(data_dir=tmp_path / "data")
    try:
        records = {rec.url: rec for rec in DuplicateLog(client).list()}
    finally:
        client.connection_pool.disconnect()
    for group in layout.reprint_groups:
        group_urls = [key(p, path) for p, path in group]
        kept = [u for u in group_urls if u in by_url]
        assert len(kept) == 1, (group_urls, kept)
        (dropped,) = set(group_urls) - set(kept)
        assert records[dropped].original_url == kept[0]
        assert records[dropped].distance <= 3
    assert len(records) == len(layout.reprint_groups)
    expected = {key(p, path) for p, path in layout.unique} | {
        u for g in layout.reprint_groups for u in (key(p, path) for p, path in g) if u in by_url
    }
    assert set(by_url) == expected  # nothing else stored (no_body, PDF, 404, loop, oversize)
    hits = a.hit_counts()
    assert all(hits.get(path, 0) == 0 for _, path in layout.disallowed)
    assert all(hits.get(path, 0) == 0 for _, path in layout.too_deep)
    stats = r1.stats
    assert stats["newscrawl/dedup/near_duplicate"] == len(layout.reprint_groups)
    assert stats["newscrawl/dedup/unique"] == len(expected)
    assert stats["newscrawl/store/stored"] == len(expected)
    assert stats["newscrawl/extract/no_body"] == len(layout.no_body)
    assert stats["newscrawl/extract/not_html"] == 1
    assert stats["newscrawl/extract/mojibake"] == len(layout.mojibake)
    assert key(a, "/a/205.html") not in by_url  # no encoding reads it: not stored as mojibake
    assert stats["newscrawl/download/failed/http_404"] == 1
    assert stats["newscrawl/download/failed/redirect_loop"] == 1
    assert stats["newscrawl/download/failed/too_large"] == 1
    assert stats["newscrawl/download/robots_forbidden"] == len(layout.disallowed)
    # per-site figures, and the summary line with the same figures
    site_a = {k.removeprefix("newscrawl/sites/portal-a/"): v for k, v in stats.items()
              if k.startswith("newscrawl/sites/portal-a/")}
    a_stored = sum(1 for u in expected if u.startswith(a.base))
    assert site_a["pages/start"] == 1 and site_a["pages/list"] == 2
    assert site_a["stored"] == a_stored
    # which copy of a cross-portal reprint is kept depends on the fetch order
    a_dropped = sum(1 for u in records if u.startswith(a.base))
    assert site_a["near_duplicate"] == a_dropped >= 1  # at least the exact copy /a/104.html
    assert stats.get("newscrawl/sites/portal-b/near_duplicate", 0) == len(records) - a_dropped
    # 404, redirect loop, oversize; the video page without a body (retried by later runs)
    assert site_a["failed"] == site_a["failed/article"] == 4
    assert site_a["failed_by/download"] == 3 and site_a["failed_by/extraction"] == 1
    assert (f"Site portal-a: pages fetched start 1, list 2, sitemap 0, feed 0,"
            f" article {site_a['pages/article']}; article links seen {site_a['links/seen']},"
            f" new {site_a['links/new']}; stored {a_stored}, near-duplicates dropped"
            f" (not stored) {a_dropped}") in r1.log
    # no DEBUG lines by default, no embedded Redis configuration, near-duplicates at INFO
    assert " DEBUG: " not in r1.log
    assert "Using configuration" not in r1.log
    dropped = [line for line in r1.log.splitlines() if "Dropped " in line]
    assert len(dropped) == len(layout.reprint_groups)
    assert all("INFO: Dropped http" in line and "near-duplicate of" in line for line in dropped)

    # --- run 2: nothing changed --------------------------------------------------------------
    good = layout.all_good_articles()
    before = article_hits(layout, good)
    lists_before = {p: a.hit_counts()[p] for p in layout.a_lists}
    r2 = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert article_hits(layout, good) == before, "an article page was fetched again"
    # /list/1.html showed nothing new: its link to /list/2.html is not followed
    assert {p: a.hit_counts()[p] for p in layout.a_lists} == {
        "/": lists_before["/"] + 1, "/list/1.html": lists_before["/list/1.html"] + 1,
        "/list/2.html": lists_before["/list/2.html"],
    }
    assert r2.stats["newscrawl/lists/stopped_at_known"] >= 1
    # the pages that failed in run 1 are tried again, wherever they sit: the 404, the oversize
    # page and the video page without a body (the redirect loop's URLs were given up at once)
    assert "Queued 3 requests that failed in earlier runs" in r2.log
    assert ("Site portal-a: pages fetched start 1, list 1, sitemap 0, feed 0, article 1;"
            in r2.log)
    assert "failed 3 (article 3; download 2, extraction 1)" in r2.log
    assert len(stored(tmp_path)) == len(expected)

    # --- run 3: two new articles -------------------------------------------------------------
    new = [(a, "/a/501.html"), (b, "/a/502.html")]
    a.add_article("/a/501.html", Article.generate("new-501"))
    a.add_link("/list/1.html", "/a/501.html")
    b.add_article("/a/502.html", Article.generate("new-502"))
    b.add_link("/", "/a/502.html")
    r3 = ok(run_crawl(tmp_path, sites, *SETTINGS))
    after = article_hits(layout, good + new)
    fetched = {u for u, n in after.items() if n != before.get(u, 0)}
    assert fetched == {key(p, path) for p, path in new}
    assert all(after[key(p, path)] == 1 for p, path in new)
    urls3 = [str(item["url"]) for item in stored(tmp_path)]
    assert len(urls3) == len(set(urls3)) == len(expected) + 2
    assert r3.stats["newscrawl/dedup/unique"] == 2
