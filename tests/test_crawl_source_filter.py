"""The caps of sitemaps and feeds count only wanted articles: the site's rules (``article_url``,
allowed domains, canonical form) and its done records are applied to a sitemap's entries before
``NEWSCRAWL_SITEMAP_MAX_ENTRIES`` is; what a cap still cuts is logged at WARNING, counted in the
run's summary, and taken by the next run. Each article request carries the date its sitemap
gives it (meta ``newscrawl_listed_date``)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from crawlrun import IN_PROCESS, run_crawl, stored_urls
from mockportal import Article, MockPortal, Page

from newscrawl.sources import parse_sitemap

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "ROBOTSTXT_OBEY=False",
            "CONCURRENT_REQUESTS_PER_DOMAIN=8", IN_PROCESS)
SM_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def sitemap(portal: MockPortal, entries: list[tuple[str, str]]) -> Page:
    body = "".join(f"<url><loc>{portal.url(path)}</loc><lastmod>{when}</lastmod></url>"
                   for path, when in entries)
    return Page(f'<?xml version="1.0"?>\n<urlset xmlns="{SM_NS}">{body}</urlset>'.encode(),
                "application/xml")


def sites_file(tmp_path: Path, portal: MockPortal) -> Path:
    sites = tmp_path / "sites.toml"
    sites.write_text(f'[[sites]]\nname = "s"\nsitemap_urls = ["{portal.url("/sitemap.xml")}"]\n'
                     "article_url = '/a/\\d+\\.html$'\n", encoding="utf-8")
    return sites


def test_tag_pages_do_not_crowd_articles_out_of_the_cap(tmp_path: Path,
                                                        portal: MockPortal) -> None:
    articles = [(f"/a/{i}.html", "2026-11-20T08:00:00+00:00") for i in range(20)]
    tags = [(f"/tag/{i}/", "2026-11-26T08:00:00+00:00") for i in range(6000)]
    for path, _ in articles:
        portal.add_article(path, Article.generate(path))
    portal.set("/sitemap.xml", sitemap(portal, tags[:3000] + articles + tags[3000:]))
    result = run_crawl(tmp_path, sites_file(tmp_path, portal), *SETTINGS,
                       "NEWSCRAWL_SITEMAP_MAX_ENTRIES=5000")
    assert result.returncode == 0, result.log[-3000:]
    assert set(stored_urls(tmp_path)) == {portal.url(path) for path, _ in articles}
    assert result.stats.get("newscrawl/sitemaps/not_article") == 6000
    assert not result.stats.get("newscrawl/sitemaps/entries_capped")
    assert "left for the next run" not in result.log
    assert not any(path.startswith("/tag/") for path in portal.hit_counts())


def test_a_cap_that_cuts_articles_warns_counts_and_leaves_them_to_the_next_run(
        tmp_path: Path, portal: MockPortal) -> None:
    # 12 articles, 8 of them (the oldest) done by a first run with a sitemap listing only them
    dated = [(f"/a/{i}.html", f"2026-11-{10 + i:02d}T08:00:00+00:00") for i in range(12)]
    for path, _ in dated:
        portal.add_article(path, Article.generate(path))
    sites = sites_file(tmp_path, portal)
    portal.set("/sitemap.xml", sitemap(portal, dated[:8]))
    first = run_crawl(tmp_path, sites, *SETTINGS)
    assert first.returncode == 0, first.log[-3000:]
    assert len(stored_urls(tmp_path)) == 8
    # now all 12 are listed, with 300 tag pages; a cap of 3: the 8 done ones and the tags do
    # not count, 3 of the 4 new ones are taken (the newest), 1 is left for the next run
    tags = [(f"/tag/{i}/", "2026-11-26T08:00:00+00:00") for i in range(300)]
    portal.set("/sitemap.xml", sitemap(portal, dated + tags))
    second = run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_SITEMAP_MAX_ENTRIES=3")
    assert second.returncode == 0, second.log[-3000:]
    stored = set(stored_urls(tmp_path))
    assert stored == {portal.url(path) for path, _ in dated[:8] + dated[9:]}
    assert second.stats.get("newscrawl/sitemaps/done") == 8
    assert second.stats.get("newscrawl/sitemaps/entries_capped") == 1
    assert second.stats.get("newscrawl/sites/s/links/capped") == 1
    warnings = [line for line in second.log.splitlines()
                if "WARNING" in line and "left for the next run" in line]
    assert len(warnings) == 1 and "lists 4 article URLs not fetched yet; taking the 3 newest, 1" \
        in warnings[0], warnings
    assert "(1 left for the next run by the sitemap/feed caps)" in second.log  # the summary
    third = run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_SITEMAP_MAX_ENTRIES=3")
    assert third.returncode == 0, third.log[-3000:]
    assert set(stored_urls(tmp_path)) == {portal.url(path) for path, _ in dated}
    assert sum(stored_urls(tmp_path).values()) == 12


def test_entries_carry_the_date_their_source_gives() -> None:
    body = (f'<?xml version="1.0"?>\n<urlset xmlns="{SM_NS}" xmlns:news='
            '"http://www.google.com/schemas/sitemap-news/0.9">'
            "<url><loc>http://x.test/a/1.html</loc><lastmod>2026-11-21</lastmod><news:news>"
            "<news:publication_date>2026-11-20T09:30:00+08:00</news:publication_date>"
            "</news:news></url>"
            "<url><loc>http://x.test/a/2.html</loc><lastmod>2026-11-22T10:00:00Z</lastmod></url>"
            "<url><loc>http://x.test/a/3.html</loc></url></urlset>").encode()
    doc = parse_sitemap(body, "http://x.test/sitemap.xml")
    assert doc.urls == [url for url, _ in doc.entries]
    dates = dict(doc.entries)
    assert dates["http://x.test/a/1.html"] == datetime(2026, 11, 20, 1, 30, tzinfo=UTC)
    assert dates["http://x.test/a/2.html"] == datetime(2026, 11, 22, 10, tzinfo=UTC)
    assert dates["http://x.test/a/3.html"] is None
    assert all(when is None or when.tzinfo is not None for _, when in doc.entries)


def test_listed_requests_carry_the_listed_date(tmp_path: Path) -> None:
    from newscrawl.meta import LISTED_DATE
    from newscrawl.sites import load_sites
    from newscrawl.spiders.portal import PortalSpider

    sites = tmp_path / "sites.toml"
    sites.write_text('[[sites]]\nname = "s"\nsitemap_urls = ["http://x.test/sitemap.xml"]\n',
                     encoding="utf-8")
    spider = PortalSpider()
    spider.sites = {site.name: site for site in load_sites(sites)}
    when = datetime(2026, 11, 20, 1, 30, tzinfo=UTC)
    requests = list(spider._listed(spider.sites["s"], "sitemap",
                                   [("http://x.test/a/1.html", when),
                                    ("http://x.test/a/2.html", None)]))
    assert [r.url for r in requests] == ["http://x.test/a/1.html", "http://x.test/a/2.html"]
    assert datetime.fromisoformat(requests[0].meta[LISTED_DATE]) == when
    assert LISTED_DATE not in requests[1].meta
