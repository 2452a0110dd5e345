"""One URL per article, with a real ``scrapy crawl portal`` run on loopback.

The same article linked with tracking parameters, a fragment and without is fetched once and
stored once under its canonical URL; ``drop_params`` adds a site's own tracking parameter,
``keep_params`` protects a parameter that carries the article; a redirect to a URL with
tracking parameters is stored under the canonical URL; ``<link rel="canonical">`` is stored as
``canonical_url``. A second run fetches none of them again. An article link redirecting to what
its site does not take as an article is not stored.
"""

from __future__ import annotations

from pathlib import Path

from crawlrun import IN_PROCESS, CrawlResult, pass_a_day, run_crawl, stored_urls
from mockportal import Article, MockPortal, Page, html_page, list_html

from newscrawl.storage import iter_articles

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS_PER_DOMAIN=8", IN_PROCESS)


def ok(result: CrawlResult) -> CrawlResult:
    assert result.returncode == 0, result.log[-4000:]
    return result


def with_canonical(article: Article, href: str) -> Page:
    html = article.html().replace("</title>", f'</title><link rel="canonical" href="{href}">', 1)
    return html_page(html)


def test_tracking_parameters_fetched_and_stored_once(tmp_path: Path, portal: MockPortal) -> None:
    p = portal
    one, two, three = (Article.generate(f"urls-{i}") for i in (1, 2, 3))
    p.articles["/a/1.html"] = one
    p.set("/a/1.html", with_canonical(one, "/a/1.html"))  # relative: resolved
    p.add_article("/a/2.html", two)  # no <link rel=canonical>
    p.add_article("/a/3.html", three)
    # redirect to a URL with tracking parameters
    p.add_article("/a/5.html", Article.generate("urls-5"))
    p.set("/r/5.html", Page(b"", status=301,
                            headers={"Location": "/a/5.html?utm_source=redirect&spm=1.2"}))
    # an article per value of "from" (protected by keep_params)
    shows = {n: Article.generate(f"show-{n}") for n in (12, 13)}
    for n, article in shows.items():
        p.articles[f"/show?from={n}"] = article
        p.set(f"/show?from={n}", html_page(article.html()))
    p.set("/", html_page(list_html("首页", [
        "/a/1.html?utm_source=wechat&utm_medium=social&spm=a2c4g.11186623.0.0",
        "/a/1.html",
        "/a/1.html#comments",
        "/a/2.html?UTM_Campaign=spring&fbclid=IwAR0x",
        "/a/2.html?gclid=abc",
        "/a/3.html?ref=home&isappinstalled=0",  # this site's own tracking parameters
        "/r/5.html",
        "/show?from=12&utm_source=x",
        "/show?from=13",
    ])))
    sites = tmp_path / "sites.toml"
    sites.write_text(
        "[[sites]]\n"
        'name = "urls"\n'
        f'start_urls = ["{p.url("/")}"]\n'
        "article_url = '/(a|r)/\\d+\\.html$|/show\\?from=\\d+$'\n"
        'drop_params = ["ref", "isapp*"]\n'
        'keep_params = ["from"]\n',
        encoding="utf-8")
    r1 = ok(run_crawl(tmp_path, sites, *SETTINGS))
    hits = p.hit_counts()
    assert hits["/a/1.html"] == 1
    assert hits["/a/2.html"] == 1
    assert hits["/a/3.html"] == 1
    assert hits["/a/5.html"] == 1
    assert hits["/show?from=12"] == hits["/show?from=13"] == 1
    stored = stored_urls(tmp_path)
    expected = {p.url(path) for path in ("/a/1.html", "/a/2.html", "/a/3.html", "/a/5.html",
                                         "/show?from=12", "/show?from=13")}
    assert set(stored) == expected
    assert max(stored.values()) == 1
    assert "newscrawl/dedup/near_duplicate" not in r1.stats
    items = {str(i["url"]): i for i in iter_articles(tmp_path / "data" / "articles")}
    assert items[p.url("/a/1.html")]["canonical_url"] == p.url("/a/1.html")
    assert items[p.url("/a/2.html")]["canonical_url"] is None
    assert items[p.url("/show?from=13")]["title"] == shows[13].title

    # --- run 2: nothing changed, nothing fetched again -----------------------------------------
    before = p.hit_counts()
    ok(run_crawl(tmp_path, sites, *SETTINGS))
    after = p.hit_counts()
    assert {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)} == {
        "/": 1, "/robots.txt": 1}


def test_an_article_redirecting_off_its_site_is_not_stored_and_a_link_to_a_queued_one_is_done(
        tmp_path: Path, portal: MockPortal) -> None:
    """An article link that redirects (3xx or meta refresh) to a login page (article_url does
    not match it) or to another host (outside allowed_domains) is a failed attempt, not an
    article: not stored, tried again by later runs, then given up on under the URL as linked;
    so is a loop. A redirect to an article with tracking parameters goes to its canonical URL;
    a page refreshing to itself is read as it is. A link redirecting to an article this run is
    fetching anyway, or fetched under its canonical URL, is done with it: the next run does not
    fetch it."""
    p = portal
    p.add_article("/a/1.html", Article.generate("redirect-target-in-flight"))
    p.delay(["/a/1.html"], 1.5)  # still in flight when /r/1.html's redirect to it comes
    p.set("/r/1.html", Page(b"", status=301, headers={"Location": "/a/1.html"}))
    login = "/login?return=%2Fr%2F2.html"
    p.set(login, html_page("<html><head><title>用户登录</title></head><body><form><p>"
                           + "请输入用户名和密码登录后继续阅读本站的全部新闻内容。" * 3
                           + "</p></form></body></html>"))
    p.set("/r/2.html", Page(b"", status=302, headers={"Location": login}))
    p.add_article("/a/3.html", Article.generate("offsite-target"))
    offsite = p.url("/a/3.html").replace("127.0.0.1", "localhost")
    p.set("/r/3.html", Page(b"", status=301, headers={"Location": offsite}))
    p.set("/r/4.html", Page(b"", status=302, headers={"Location": "/r/5.html"}))
    p.set("/r/5.html", Page(b"", status=302, headers={"Location": "/r/4.html"}))
    # a meta refresh to the login page, as Scrapy's MetaRefreshMiddleware would follow it
    p.set("/r/6.html", html_page('<html><head><meta http-equiv="refresh" content="0;url='
                                 + login + '"></head><body></body></html>'))
    # a redirect to an article with tracking parameters: followed to its canonical URL
    p.add_article("/a/7.html", Article.generate("redirect-target-tracked"))
    p.set("/r/7.html", Page(b"", status=302, headers={"Location": "/a/7.html?utm_source=r"}))
    # a meta refresh loop; one to an article with tracking parameters; an article reloading
    # itself (read as it is: following it, the dupefilter dropped the article)
    def refresh(to: str, seconds: int = 0) -> Page:
        return html_page(f'<html><head><meta http-equiv="refresh" content="{seconds};url={to}">'
                         "</head><body></body></html>")

    p.set("/r/8.html", refresh("/r/9.html"))
    p.set("/r/9.html", refresh("/r/8.html"))
    p.add_article("/a/10.html", Article.generate("refresh-target-tracked"))
    p.set("/r/10.html", refresh("/a/10.html?utm_source=m"))
    reloading = Article.generate("reloads-itself")
    p.articles["/a/11.html"] = reloading
    p.set("/a/11.html", html_page(reloading.html().replace(
        "</title>", f'</title><meta http-equiv="refresh" content="60;url={p.url("/a/11.html")}">',
        1)))
    links = ["/a/1.html", "/r/1.html", "/r/2.html", "/r/3.html", "/r/4.html", "/r/6.html",
             "/r/7.html", "/r/8.html", "/r/10.html", "/a/11.html"]
    p.set("/", html_page(list_html("首页", links)))
    sites = tmp_path / "sites.toml"
    sites.write_text(
        f'[[sites]]\nname = "moves"\nstart_urls = ["{p.url("/")}"]\n'
        "article_url = '/(a|r)/\\d+\\.html$'\n", encoding="utf-8")
    settings = (*SETTINGS, "NEWSCRAWL_MAX_ATTEMPTS=2")
    first = ok(run_crawl(tmp_path, sites, *settings))
    assert set(stored_urls(tmp_path)) == {p.url(f"/a/{n}.html") for n in (1, 7, 10, 11)}, \
        first.log[-3000:]
    assert first.stats["newscrawl/download/failed/redirected_away"] == 3, first.log[-3000:]
    assert first.stats["newscrawl/download/failed/redirect_loop"] == 2, first.log[-3000:]
    assert (f"Download of article page {p.url('/r/6.html')} failed: redirected_away (refreshes"
            f" to {p.url(login)}, which the site's article_url does not match") in first.log
    assert (f"Download of article page {p.url('/r/2.html')} failed: redirected_away (redirected"
            f" to {p.url(login)}, which the site's article_url does not match") in first.log
    assert (f"Download of article page {p.url('/r/3.html')} failed: redirected_away (redirected"
            f" to {offsite}, outside the site's allowed_domains (127.0.0.1;") in first.log
    hits = p.hit_counts()
    assert hits.get(login) is None and hits["/a/1.html"] == hits["/r/1.html"] == 1
    assert hits["/a/7.html"] == 1 and "/a/7.html?utm_source=r" not in hits
    assert hits["/a/10.html"] == 1 and "/a/10.html?utm_source=m" not in hits
    assert hits["/r/8.html"] == hits["/r/9.html"] == 1
    # the next day a page links the articles the redirects led to: done, not fetched again
    p.set("/", html_page(list_html("首页", [*links, "/a/7.html", "/a/10.html"])))
    pass_a_day(tmp_path)
    second = ok(run_crawl(tmp_path, sites, *settings))
    after = p.hit_counts()
    assert {path: after[path] - hits.get(path, 0) for path in after
            if after[path] != hits.get(path, 0)} == {
        "/": 1, "/robots.txt": 1, "/r/2.html": 1, "/r/3.html": 1, "/r/4.html": 1,
        "/r/5.html": 1, "/r/6.html": 1, "/r/8.html": 1, "/r/9.html": 1}, second.log[-3000:]
    for linked, why in (("/r/2.html", ""), ("/r/3.html", ""), ("/r/6.html", ""),
                        ("/r/8.html", f" (redirected to {p.url('/r/9.html')})"),
                        ("/r/4.html", f" (redirected to {p.url('/r/5.html')})")):
        assert f"Giving up on {p.url(linked)}{why} after failed attempts on 2 days" \
            in second.log, second.log[-3000:]
    pass_a_day(tmp_path)
    before = p.hit_counts()
    ok(run_crawl(tmp_path, sites, *settings))
    after = p.hit_counts()
    assert {path: after[path] - before.get(path, 0) for path in after
            if after[path] != before.get(path, 0)} == {"/": 1, "/robots.txt": 1}
    assert stored_urls(tmp_path) == {p.url(f"/a/{n}.html"): 1 for n in (1, 7, 10, 11)}
