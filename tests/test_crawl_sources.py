"""Sitemaps and feeds as article sources, with real ``scrapy crawl portal`` runs on loopback.

1. A portal whose home page shows only the newest three articles: everything else is reachable
   only through its sitemaps (robots.txt ``Sitemap:`` line -> index -> a gzip sitemap and a
   Google News sitemap) and its RSS and Atom feeds. Every article is fetched once and stored; the
   next run reads the sitemaps and feeds again and fetches only the new article.
2. A site with only a sitemap (no start page, no ``article_url``).
3. Broken sources (malformed, HTML, non-XML, oversize, gzip bomb, 404, too deep, too wide) are
   counted and logged, and the articles of the good ones are still stored.
4. A worker that joins a running run leaves the configured sitemaps and feeds to the worker that
   claimed it, as it does with start pages.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from crawlrun import (
    FAST,
    IN_PROCESS,
    CrawlResult,
    Worker,
    join_late,
    run_crawl,
    start_crawl,
    stored_urls,
    wait_for,
)
from mockportal import Article, MockPortal, Page, html_page, list_html
from redisserver import RedisServer
from sourcedocs import atom, gzip_page, rss, sitemap_index, urlset, xml_page

from newscrawl.storage import iter_articles

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "DOWNLOAD_MAXSIZE=200000",
            "CONCURRENT_REQUESTS_PER_DOMAIN=8", IN_PROCESS)
ARTICLE_URL = "'/news/\\d{4}/\\d+\\.html$'"


def ok(result: CrawlResult) -> CrawlResult:
    assert result.returncode == 0, result.log[-4000:]
    assert "Spider closed (finished)" in result.log
    return result


def art(i: int) -> str:
    return f"/news/2024/{i}.html"


def add_articles(portal: MockPortal, numbers: range | list[int]) -> None:
    for i in numbers:
        portal.add_article(art(i), Article.generate(f"archive-{i}"))


def rss_links(portal: MockPortal, numbers: list[int]) -> list[str]:
    return [portal.url(art(i)) for i in numbers]


def test_portal_reachable_only_through_sitemaps_and_feeds(tmp_path: Path,
                                                          portal: MockPortal) -> None:
    p = portal
    add_articles(p, range(1, 31))
    # the home page lists the newest three; no pagination
    p.set("/", html_page(list_html("首页", [art(i) for i in (30, 29, 28)] + ["/about.html"])))
    p.set("/about.html", html_page(list_html("关于", [])))
    p.set("/robots.txt", Page(f"User-agent: *\nDisallow: /private/\n"
                              f"Sitemap: {p.url('/sitemap_index.xml')}\n"
                              # another host, not in allowed_domains: not read, and said so
                              "Sitemap: http://127.0.0.9:9/sitemap.xml\n".encode(), "text/plain"))
    p.set("/sitemap_index.xml", xml_page(sitemap_index([
        (p.url("/sitemaps/2024-01.xml.gz"), "2024-01-31"),
        ("/sitemaps/news.xml", "2024-03-15T08:00:00+08:00"),  # relative: resolved
    ])))
    p.set("/sitemaps/2024-01.xml.gz", gzip_page(urlset(
        [p.url(art(i)) for i in range(1, 11)]
        + [p.url("/about.html"), "http://example.invalid/news/2024/99.html"])))
    # a Google News sitemap sent gzip-compressed on the fly (Content-Encoding: gzip)
    p.set("/sitemaps/news.xml", Page(gzip.compress(urlset([p.url(art(i)) for i in range(11, 21)],
                                                          news=True)),
                                     "application/xml", headers={"Content-Encoding": "gzip"}))
    # RSS: 21..25, and article 5 again with tracking parameters and a fragment
    p.set("/rss.xml", xml_page(rss(rss_links(p, [21, 22, 23, 24, 25])
                                   + [p.url(art(5)) + "?utm_source=rss&spm=a2c4g.1#top"]),
                               "application/rss+xml"))
    # Atom with xml:base and relative links: 26..30 (28..30 are on the home page too)
    p.set("/atom.xml", xml_page(atom([f"{i}.html" for i in range(26, 31)],
                                     base=p.url("/news/2024/")), "application/atom+xml"))
    sites = tmp_path / "sites.toml"
    sites.write_text(
        "[[sites]]\n"
        'name = "archive"\n'
        f'start_urls = ["{p.url("/")}"]\n'
        f"article_url = {ARTICLE_URL}\n"
        'sitemap_urls = "robots"\n'
        f'feed_urls = ["{p.url("/rss.xml")}", "{p.url("/atom.xml")}"]\n',
        encoding="utf-8")

    r1 = ok(run_crawl(tmp_path, sites, *SETTINGS))
    stored = stored_urls(tmp_path)
    expected = {p.url(art(i)) for i in range(1, 31)}
    assert set(stored) == expected, sorted(expected - set(stored))
    assert max(stored.values()) == 1
    hits = p.hit_counts()
    assert {i: hits.get(art(i)) for i in range(1, 31)} == dict.fromkeys(range(1, 31), 1)
    assert hits.get("/about.html") is None  # listed, but not an article page
    stats = r1.stats
    assert stats["newscrawl/sites/archive/pages/sitemap"] == 3  # index + its two sitemaps
    assert stats["newscrawl/sites/archive/pages/feed"] == 2
    # the home page's 3 newest, then the two sitemaps and the two feeds
    assert stats["newscrawl/sites/archive/links/seen"] == 3 + 10 + 10 + 6 + 5
    assert stats["newscrawl/sitemaps/not_article"] == 1  # /about.html
    assert stats["newscrawl/sitemaps/offsite"] == 2  # a listed article, a robots.txt sitemap
    assert "lists the sitemap http://127.0.0.9:9/sitemap.xml outside allowed_domains" in r1.log
    assert stats["newscrawl/sitemaps/robots_txt"] == 1
    # once: the robots middleware's download answers the spider's request for the Sitemap: lines
    assert hits.get("/robots.txt") == 1
    assert "newscrawl/sites/archive/failed/sitemap" not in stats
    assert stats["newscrawl/store/stored"] == 30

    # --- run 2: one new article, listed in the RSS feed only ----------------------------------
    add_articles(p, [31])
    p.set("/rss.xml", xml_page(rss(rss_links(p, [31, 21, 22, 23, 24, 25])),
                               "application/rss+xml"))
    sources = ["/sitemap_index.xml", "/sitemaps/2024-01.xml.gz", "/sitemaps/news.xml",
               "/rss.xml", "/atom.xml"]
    before = {path: hits[path] for path in sources}
    r2 = ok(run_crawl(tmp_path, sites, *SETTINGS))
    hits2 = p.hit_counts()
    assert {path: hits2[path] for path in sources} == {k: v + 1 for k, v in before.items()}
    fetched = {i for i in range(1, 32) if hits2.get(art(i), 0) != hits.get(art(i), 0)}
    assert fetched == {31}
    assert stored_urls(tmp_path)[p.url(art(31))] == 1
    assert r2.stats["newscrawl/store/stored"] == 1


def test_sitemap_only_site(tmp_path: Path, portal: MockPortal) -> None:
    """No start page and no ``article_url``: every URL the sitemap lists (on the site's hosts)
    is an article page."""
    p = portal
    add_articles(p, [1, 2])
    p.add_article("/story/x.shtml", Article.generate("story-x"))
    p.set("/sitemap.xml", xml_page(urlset([p.url(art(1)), p.url(art(2)),
                                           p.url("/story/x.shtml"),
                                           "http://127.0.0.9/elsewhere.html"])))
    sites = tmp_path / "sites.toml"
    sites.write_text(f'[[sites]]\nname = "maponly"\nsitemap_urls = ["{p.url("/sitemap.xml")}"]\n',
                     encoding="utf-8")
    result = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert set(stored_urls(tmp_path)) == {p.url(art(1)), p.url(art(2)),
                                          p.url("/story/x.shtml")}
    assert result.stats["newscrawl/sitemaps/offsite"] == 1
    assert p.hit_counts().get("/") is None
    # a quiet day: the links it lists are done, seen all the same (no "yielded no article link")
    quiet = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert quiet.stats["newscrawl/sites/maponly/links/seen"] == 3, quiet.log[-3000:]
    assert "yielded no article link" not in quiet.log
    assert "article links seen 3, new 0; stored 0" in quiet.log


def test_broken_sources_are_counted_and_the_crawl_goes_on(tmp_path: Path,
                                                          portal: MockPortal) -> None:
    p = portal
    add_articles(p, range(1, 20))
    u = p.url
    # a sitemap cut off in its third entry: the first two are read
    full = urlset([u(art(1)), u(art(2)), u(art(3))]).decode()
    p.set("/sm/truncated.xml", xml_page(full[: full.index(art(3)) - 3].encode()))
    p.set("/sm/garbage.xml", xml_page(b'<?xml version="1.0"?>\n<urlset xmlns="x"><url><lo'))
    p.set("/sm/page.xml", html_page("<!DOCTYPE html><html><body>找不到页面</body></html>"))
    p.set("/sm/huge.xml", xml_page(urlset([u(f"/news/2024/{i}0000.html") for i in range(6000)])))
    bomb = b'<?xml version="1.0"?><urlset>' + b" " * 3_000_000 + b"</urlset>"
    p.set("/sm/bomb.xml.gz", Page(gzip.compress(bomb), "application/x-gzip"))
    # /sm/missing.xml is not served (404)
    # an index chain deeper than NEWSCRAWL_SITEMAP_MAX_DEPTH = 2
    for depth in range(3):
        p.set(f"/sm/deep{depth}.xml", xml_page(sitemap_index([(u(f"/sm/deep{depth + 1}.xml"),
                                                                None)])))
    p.set("/sm/deep3.xml", xml_page(urlset([u(art(4))])))
    # an index with five sitemaps, NEWSCRAWL_SITEMAP_MAX_CHILDREN = 2: the two newest are read
    p.set("/sm/wide.xml", xml_page(sitemap_index(
        [(u(f"/sm/w{i}.xml"), f"2024-0{i}-01") for i in (1, 5, 2, 4, 3)])))
    for i in range(1, 6):
        p.set(f"/sm/w{i}.xml", xml_page(urlset([u(art(10 + i))])))
    p.set("/feed/page.html", html_page(list_html("订阅", [art(5)])))
    p.set("/feed/data.json", Page(b'{"items": []}', "application/json"))
    # unescaped "&" in links: read anyway (recovered), the query kept whole
    p.set("/feed/broken.xml", xml_page(rss([u(art(6)) + "?utm_source=rss&utm_medium=x",
                                            u(art(7))], raw=True)))
    p.set("/feed/good.xml", xml_page(rss([u(art(8))])))
    sitemaps = ["truncated", "garbage", "page", "huge", "bomb.xml.gz", "missing", "deep0",
                "wide"]
    sitemap_urls = ", ".join(
        f'"{u("/sm/" + (s if s.endswith(".gz") else s + ".xml"))}"' for s in sitemaps)
    feeds = ", ".join(f'"{u("/feed/" + f)}"' for f in ("page.html", "data.json", "broken.xml",
                                                          "missing.xml", "good.xml"))
    sites = tmp_path / "sites.toml"
    sites.write_text(
        "[[sites]]\n"
        'name = "broken"\n'
        f"article_url = {ARTICLE_URL}\n"
        f"sitemap_urls = [{sitemap_urls}]\n"
        f"feed_urls = [{feeds}]\n",
        encoding="utf-8")
    result = ok(run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_SITEMAP_MAX_BYTES=1000000",
                          "NEWSCRAWL_SITEMAP_MAX_DEPTH=2", "NEWSCRAWL_SITEMAP_MAX_CHILDREN=2"))
    stats = result.stats
    sitemap_outcomes = {k.rsplit("/", 1)[1]: v for k, v in stats.items()
                        if k.startswith("newscrawl/sitemaps/")}
    assert sitemap_outcomes == {
        "recovered": 1, "malformed": 1, "not_xml": 1, "too_large": 2, "http_404": 1,
        "index_too_deep": 1, "children_capped": 3, "not_article": 1,  # the cut-off third URL
    }
    feed_outcomes = {k.rsplit("/", 1)[1]: v for k, v in stats.items()
                     if k.startswith("newscrawl/feeds/")}
    assert feed_outcomes == {"not_xml": 2, "recovered": 1, "http_404": 1}
    assert stats["newscrawl/sites/broken/failed/sitemap"] == 5
    assert stats["newscrawl/sites/broken/failed/feed"] == 3
    # truncated + deep0..2 + wide + its two newest sitemaps; broken + good feeds
    assert stats["newscrawl/sites/broken/pages/sitemap"] == 7
    assert stats["newscrawl/sites/broken/pages/feed"] == 2
    stored = stored_urls(tmp_path)
    assert set(stored) == {u(art(i)) for i in (1, 2, 14, 15, 6, 7, 8)}
    hits = p.hit_counts()
    assert hits.get("/sm/deep3.xml") is None
    assert [hits.get(f"/sm/w{i}.xml") for i in range(1, 6)] == [None, None, None, 1, 1]
    for line in ("sitemap", "feed"):
        assert f"Site broken: {line} " in result.log
    assert "cannot be read (too_large)" in result.log
    assert "nested 2 deep" in result.log
    # the article listed with a bare "&" was stored under its canonical URL, text and all
    items = {str(i["url"]): i for i in iter_articles(tmp_path / "data" / "articles")}
    assert items[u(art(6))]["title"] == p.articles[art(6)].title
    # the next day the broken feed's two entries are done: still read, and counted so
    again = ok(run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_SITEMAP_MAX_BYTES=1000000",
                         "NEWSCRAWL_SITEMAP_MAX_DEPTH=2", "NEWSCRAWL_SITEMAP_MAX_CHILDREN=2"))
    assert f"feed {u('/feed/broken.xml')} has XML errors; read 2 entries anyway" in again.log


def test_joining_worker_leaves_sitemaps_and_feeds_to_the_run(
    tmp_path: Path, portal: MockPortal, redis_server: RedisServer, workers: list[Worker],
) -> None:
    p = portal
    add_articles(p, range(1, 9))
    p.set("/sitemap.xml", xml_page(urlset([p.url(art(i)) for i in range(1, 5)])))
    p.set("/rss.xml", xml_page(rss(rss_links(p, [5, 6, 7, 8]))))
    p.delay([art(i) for i in range(1, 9)], 0.5)
    sites = tmp_path / "sites.toml"
    sites.write_text(
        f'[[sites]]\nname = "maps"\narticle_url = {ARTICLE_URL}\n'
        f'sitemap_urls = ["{p.url("/sitemap.xml")}"]\nfeed_urls = ["{p.url("/rss.xml")}"]\n',
        encoding="utf-8")
    settings = (*FAST, IN_PROCESS, "CONCURRENT_REQUESTS=2", "NEWSCRAWL_IDLE_EXIT_SECONDS=2")
    first = start_crawl(tmp_path, sites, *settings, redis_url=redis_server.url,
                        log_path=tmp_path / "first.log")
    workers.append(first)
    wait_for(lambda: sum(p.hit_counts().get(art(i), 0) for i in range(1, 9)) >= 2, timeout=60,
             what="the first worker fetching articles")
    p.hold(art(i) for i in range(1, 9))  # the run stays open however slow the late start is
    try:
        late = join_late(tmp_path, sites, settings, redis_url=redis_server.url,
                         workers=workers)
    finally:
        p.release()
    r_first, r_late = first.wait(), late.wait()
    assert r_first.returncode == 0 and r_late.returncode == 0, r_late.log[-3000:]
    assert "Joined crawl run" in r_late.log
    assert r_late.stats.get("newscrawl/scheduler/start_skipped", 0) == 2  # sitemap and feed
    hits = p.hit_counts()
    assert hits["/sitemap.xml"] == hits["/rss.xml"] == 1
    assert {i: hits[art(i)] for i in range(1, 9)} == dict.fromkeys(range(1, 9), 1)
    assert set(stored_urls(tmp_path)) == {p.url(art(i)) for i in range(1, 9)}
