"""Sites-file keys for sources and URLs: ``sitemap_urls``, ``feed_urls``, ``drop_params``,
``keep_params``; bad values name file, site and key; the real crawl stops with exit code 1."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from crawlrun import run_crawl

from newscrawl.sites import SitesError, parse_sites

GOOD = """
[[sites]]
name = "portal-a"
start_urls = ["http://127.0.0.1:8001/", "http://127.0.0.1:8001/world/"]
article_url = '/a/\\d+\\.html$'
"""


def site_with(**changes: object) -> dict[str, object]:
    raw: dict[str, object] = dict(tomllib.loads(GOOD)["sites"][0])
    for key, value in changes.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return raw


def test_sources_and_params_load() -> None:
    (site,) = parse_sites({"sites": [site_with(
        sitemap_urls=["robots", "https://cdn.example.com/news.xml.gz"],
        feed_urls=["http://127.0.0.1:8001/rss.xml"],
        drop_params=["ref", "wx_*"],
        keep_params=["from"],
    )]})
    assert site.sitemap_urls == ("https://cdn.example.com/news.xml.gz",)
    assert site.sitemap_robots == ("http://127.0.0.1:8001/robots.txt",)
    assert site.feed_urls == ("http://127.0.0.1:8001/rss.xml",)
    # the default allowed_domains take in the sitemap and feed hosts
    assert site.allowed_domains == ("127.0.0.1", "cdn.example.com")
    assert site.url_rules.canonical("http://127.0.0.1:8001/a/1.html?ref=x&from=2&wx_fmt=1") == (
        "http://127.0.0.1:8001/a/1.html?from=2")
    (robots_only,) = parse_sites({"sites": [site_with(sitemap_urls="robots")]})
    assert robots_only.sitemap_urls == ()
    assert robots_only.sitemap_robots == ("http://127.0.0.1:8001/robots.txt",)


def test_article_url_on_the_link_and_its_canonical_form() -> None:
    (site,) = parse_sites({"sites": [site_with()]})
    # "$" after ".html": the tracking parameters would hide the article without canonicalization
    assert site.article_link("http://127.0.0.1:8001/a/1.html?utm_source=x#c") == (
        "http://127.0.0.1:8001/a/1.html")
    assert site.article_link("http://127.0.0.1:8001/list/1.html?utm_source=x") is None
    # a regex written for the raw link (non-ASCII path) still matches; the request is canonical
    (zh,) = parse_sites({"sites": [site_with(article_url="/新闻/\\d+\\.html$")]})
    assert zh.article_link("http://127.0.0.1:8001/新闻/1.html") == (
        "http://127.0.0.1:8001/%E6%96%B0%E9%97%BB/1.html")


def test_sitemap_or_feed_only_site() -> None:
    raw = {"name": "maps", "sitemap_urls": ["http://m.example.com/sitemap.xml"]}
    (site,) = parse_sites({"sites": [raw]})
    assert site.start_urls == () and site.article_url is None
    assert site.allowed_domains == ("m.example.com",)
    assert site.article_link("http://m.example.com/any/page", listed=True) == (
        "http://m.example.com/any/page")
    assert site.article_link("http://m.example.com/any/page") is None  # page links: never
    (feed_only,) = parse_sites({"sites": [{"name": "f", "feed_urls": ["http://f.example.com/r"],
                                           "sitemap_urls": "robots"}]})
    assert feed_only.sitemap_robots == ("http://f.example.com/robots.txt",)


SITEMAP_SHAPE = 'key "sitemap_urls" must be a non-empty list of URLs or "robots"'


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (site_with(start_urls=None), ['"start_urls"', "missing", "sitemap_urls"]),
        ({"name": "x", "start_urls": ["http://x/"]}, ['"article_url"', "missing"]),
        (site_with(sitemap_urls="http://x/sitemap.xml"), [SITEMAP_SHAPE]),
        (site_with(sitemap_urls=[]), [SITEMAP_SHAPE]),
        (site_with(sitemap_urls=["robot"]), ['"sitemap_urls"', "http(s) URL", "'robot'"]),
        (site_with(sitemap_urls=[1]), [SITEMAP_SHAPE]),
        (site_with(feed_urls=["feed.xml"]), ['"feed_urls"', "http(s) URL"]),
        (site_with(feed_urls="http://x/rss"), ['"feed_urls"', "list of strings"]),
        (site_with(feed_urls=["http://[::1/rss"]), ['"feed_urls"', "http(s) URL"]),
        ({"name": "x", "sitemap_urls": "robots"}, ['"sitemap_urls"', "robots", "start_urls"]),
        (site_with(drop_params="utm_*"), ['"drop_params"', "list of strings"]),
        (site_with(drop_params=["a=b"]), ['"drop_params"', "'a=b'"]),
        (site_with(drop_params=["two words"]), ['"drop_params"', "whitespace"]),
        (site_with(keep_params=[""]), ['"keep_params"', "list of strings"]),
        (site_with(keep_params=["id&x"]), ['"keep_params"', "'id&x'"]),
        (site_with(sitemap=["http://x/s.xml"]), ['unknown key "sitemap"']),
    ],
)
def test_bad_values_name_site_and_key(raw: dict[str, object], expected: list[str]) -> None:
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": [raw]}, "s.toml")
    message = str(info.value)
    assert "sites file s.toml" in message
    assert f'site "{raw["name"]}"' in message
    for part in expected:
        assert part in message, message


def test_real_crawl_stops_with_exit_code_1(tmp_path: Path) -> None:
    path = tmp_path / "sites.toml"
    path.write_text(GOOD + 'drop_params = ["utm source"]\n', encoding="utf-8")
    result = run_crawl(tmp_path, path, timeout=60)
    assert result.returncode == 1, result.log[-3000:]
    assert f'sites file {path}: site "portal-a": key "drop_params"' in result.log
    assert "Spider opened" not in result.log


def test_a_url_pushed_for_a_site_read_from_sitemaps_alone_is_an_article() -> None:
    """No article_url: any URL of its hosts is an article (as any URL its sitemap lists), so a
    late original or a given-up article of it can be pushed (with --again) like any other;
    its sitemap itself is refused (every run reads it)."""
    from newscrawl.sites import route_pushed

    sites = {s.name: s for s in parse_sites(tomllib.loads(
        '[[sites]]\nname = "sm"\nsitemap_urls = ["https://sm.example/sitemap.xml"]\n'
        '[[sites]]\nname = "ls"\nstart_urls = ["https://ls.example/"]\n'
        "article_url = '/a/\\d+\\.html$'\n"))}
    route = route_pushed(sites, "https://sm.example/s/2026/1126/1001.html?utm_source=rss", None)
    assert (route.kind, route.url) == ("article", "https://sm.example/s/2026/1126/1001.html")
    assert route.site is not None and route.site.name == "sm"
    assert route_pushed(sites, "https://sm.example/sitemap.xml", None).kind is None
    assert route_pushed(sites, "https://sm.example/sitemap.xml", "sm").short == \
        "a sitemap or feed"
    # a site with article_url still takes only what it matches
    assert route_pushed(sites, "https://ls.example/about.html", None).kind is None
    assert route_pushed(sites, "https://ls.example/a/7.html", None).kind == "article"
