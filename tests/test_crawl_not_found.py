"""A "page not found" a portal answers with HTTP 200 is not stored, and is tried again.

A real ``scrapy crawl portal`` on loopback: error pages (tests/test_extract_not_found.py) at
article URLs are counted (``newscrawl/extract/not_found``), logged, not stored and not put in the
near-duplicate index (else the first would drop the next as its copy); an article whose page
said "not found" on the first day and has its text the next is stored then; a page that says
so on its last attempt is stored as served (it may be a short article about a missing page).
"""

from __future__ import annotations

from pathlib import Path

from crawlrun import IN_PROCESS, pass_a_day, run_crawl, stored_urls
from mockportal import Article, MockPortal, html_page, list_html
from test_extract_not_found import ERROR_PAGES

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS_PER_DOMAIN=8", IN_PROCESS)


def test_error_pages_at_article_urls_are_not_stored_and_a_late_article_is(
        tmp_path: Path, portal: MockPortal) -> None:
    p = portal
    real = {f"/a/{n}.html": Article.generate(f"not-found-{n}") for n in (1, 2)}
    for path, article in real.items():
        p.add_article(path, article)
    errors = {f"/a/{10 + n}.html": html for n, html in enumerate(ERROR_PAGES.values())}
    for path, html in errors.items():
        p.set(path, html_page(html))
    late = "/a/20.html"  # linked before it is published: the portal's error page first
    p.set(late, html_page(ERROR_PAGES["zh-heading"]))
    p.set("/", html_page(list_html("首页", [*real, *errors, late])))
    sites = tmp_path / "sites.toml"
    sites.write_text(
        "[[sites]]\n"
        'name = "soft404"\n'
        f'start_urls = ["{p.url("/")}"]\n'
        "article_url = '/a/\\d+\\.html$'\n",
        encoding="utf-8")

    first = run_crawl(tmp_path, sites, *SETTINGS)
    assert first.returncode == 0, first.log[-4000:]
    assert set(stored_urls(tmp_path)) == {p.url(path) for path in real}
    assert first.stats["newscrawl/extract/not_found"] == len(errors) + 1
    assert "newscrawl/dedup/near_duplicate" not in first.stats
    said = [line for line in first.log.splitlines() if "Page not found on" in line]
    assert len(said) == len(errors) + 1, said
    assert any(p.url(late) in line and "'您访问的页面'" in line for line in said), said

    pass_a_day(tmp_path)
    p.add_article(late, Article.generate("not-found-late"))
    before = p.hit_counts()
    second = run_crawl(tmp_path, sites, *SETTINGS)
    assert second.returncode == 0, second.log[-4000:]
    stored = stored_urls(tmp_path)
    assert set(stored) == {p.url(path) for path in [*real, late]}
    assert max(stored.values()) == 1
    hits = p.hit_counts()
    again = {path for path in hits if hits[path] != before.get(path, 0)}
    # the error pages and the late article are tried again; the stored articles are not
    assert again == {"/", "/robots.txt", late, *errors}
    assert second.stats["newscrawl/extract/not_found"] == len(errors)

    # the last attempt (NEWSCRAWL_MAX_ATTEMPTS=3): stored as served rather than lost, in case
    # it is an article about a missing page; done then
    pass_a_day(tmp_path)
    third = run_crawl(tmp_path, sites, *SETTINGS)
    assert third.returncode == 0, third.log[-4000:]
    assert third.stats["newscrawl/extract/not_found_read"] == len(errors)
    assert third.log.count("on its last attempt (NEWSCRAWL_MAX_ATTEMPTS): stored as served") \
        == len(errors)
    stored = stored_urls(tmp_path)
    assert set(stored) == {p.url(path) for path in [*real, late, *errors]}
    assert max(stored.values()) == 1
