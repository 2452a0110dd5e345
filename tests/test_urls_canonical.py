"""The canonical form of article URLs and ``<link rel="canonical">`` (newscrawl.urls)."""

from __future__ import annotations

import pytest

from newscrawl.urls import DEFAULT_DROP_PARAMS, DEFAULT_RULES, UrlRules, canonical_link


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        # fragment dropped, query sorted, tracking parameters removed
        ("http://x.com/a/1.html#comments", "http://x.com/a/1.html"),
        ("http://x.com/a/1.html?utm_source=wx&utm_medium=social&spm=a2c4g.1#top",
         "http://x.com/a/1.html"),
        ("http://x.com/a?p=2&id=5&from=timeline", "http://x.com/a?id=5&p=2"),
        ("http://x.com/a?UTM_Campaign=x&FBCLID=y&gclid=z&share_token=t&b=1",
         "http://x.com/a?b=1"),
        ("http://x.com/a?utm%5Fsource=1&b=2", "http://x.com/a?b=2"),  # encoded name
        # what canonicalize_url normalizes besides: scheme/host case, IDNA, percent-encoding,
        # blank values written as "k=", spaces as "+", repeated keys sorted by value
        ("HTTP://News.Example.COM/a/%7euser/新闻.html?b=2&a=1&a=0", "http://news.example.com/a/~user/"
         "%E6%96%B0%E9%97%BB.html?a=0&a=1&b=2"),
        ("http://x.com/a?q=a%20b&flag", "http://x.com/a?flag=&q=a+b"),
        ("https://例子.中国/a", "https://xn--fsqu00a.xn--fiqs8s/a"),
        ("http://x.com/a?", "http://x.com/a"),
        # parameters that carry the article are never default tracking parameters
        ("http://x.com/show?id=7&p=3&aid=9&f=1&tj=2&source=rss",
         "http://x.com/show?aid=9&f=1&id=7&p=3&source=rss&tj=2"),
    ],
)
def test_default_canonical_form(url: str, canonical: str) -> None:
    assert DEFAULT_RULES.canonical(url) == canonical
    assert DEFAULT_RULES.canonical(canonical) == canonical  # idempotent


def test_drop_and_keep_params() -> None:
    rules = UrlRules(drop_params=("ref", "wx_*"), keep_params=("from",))
    assert rules.canonical("http://x.com/a?ref=home&wx_fmt=1&from=12&utm_source=x") == (
        "http://x.com/a?from=12")
    # allow-list mode: drop everything but the article id
    only_id = UrlRules(drop_params=("*",), keep_params=("id",))
    assert only_id.canonical("http://x.com/a?z=1&id=5&y") == "http://x.com/a?id=5"
    # keep_params = ["*"]: no parameter is ever dropped
    assert UrlRules(keep_params=("*",)).canonical("http://x.com/a?utm_source=x") == (
        "http://x.com/a?utm_source=x")


def test_default_list_is_conservative() -> None:
    assert not any(DEFAULT_RULES.drops(name) for name in ("id", "p", "page", "aid", "docid", "f",
                                                          "article", "ref", "source", "tj"))
    assert all(DEFAULT_RULES.drops(name.replace("*", "x")) for name in DEFAULT_DROP_PARAMS)


def test_unparsable_url_raises_value_error() -> None:
    with pytest.raises(ValueError):
        DEFAULT_RULES.canonical("http://[::1/a/9.html")


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ('<link rel="canonical" href="/a/1.html">', "http://x.com/a/1.html"),
        ('<LINK REL="Canonical" HREF=" https://m.x.com/a/1.html ">', "https://m.x.com/a/1.html"),
        ('<link rel="alternate canonical" href="a/2.html">', "http://x.com/news/a/2.html"),
        ('<base href="http://y.com/b/"><link rel="canonical" href="c.html">', "http://y.com/b/c.html"),
        ('<link rel="canonical" href="">', None),
        ('<link rel="canonical" href="javascript:void(0)">', None),
        ('<link rel="stylesheet" href="/canonical.css">', None),
        ("", None),
    ],
)
def test_canonical_link(head: str, expected: str | None) -> None:
    html = f"<html><head><title>t</title>{head}</head><body><p>x</p></body></html>"
    assert canonical_link(html, "http://x.com/news/1.html") == expected


def test_canonical_link_only_in_head() -> None:
    html = ('<html><head><title>t</title></head><body>'
            '<link rel="canonical" href="/elsewhere"></body></html>')
    assert canonical_link(html, "http://x.com/") is None
