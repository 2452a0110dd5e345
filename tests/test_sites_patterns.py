"""Sites-file URL patterns (``article_url``, ``follow_url``) are matched in linear time (RE2) with
Python's meaning; what RE2 cannot match is rejected when the sites file is loaded."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from crawlrun import REPO, run_crawl
from mockportal import Article, MockPortal, html_page, list_html

from newscrawl.sites import SitesError, load_sites, parse_sites, quote_regex
from newscrawl.urls import UrlPattern

BACKTRACKING = r"/news/(\w+/?)+\.html$"
NEAR_MISS = "/news/" + "a1b2c3d4e5" * 4 + ".htm"  # 40 word characters, then no ".html"

URLS = [
    "http://news.example.com/2026/11/16/1001.html",
    "https://news.example.com/news/2026-11-16/doc-abc123.shtml",
    "http://127.0.0.1:8001/a/12.html?x=1",
    "http://example.com/新闻/中文_标题-1.html",
    "http://example.com/新闻/中文/",
    "http://example.com/news/٣٤٥.html",  # Arabic-Indic digits: \d in Python
    "http://example.com/NEWS/INDEX_2.HTML",
    "http://example.com/list/index_12.html",
    "http://example.com/a b/c.html",
    "http://example.com/]x/[y].html",
    "http://example.com" + NEAR_MISS,
]
PATTERNS = [
    r"/\d{4}/\d{2}/\d{2}/[\w-]+\.html$",
    r"/news/\d{4}-\d{2}-\d{2}/doc-\w+\.s?html$",
    r"/新闻/\w+",
    r"/新闻/[\w/]+/$",
    r"/news/\d+\.html$",
    r"\D\d{3}\.html",
    r"[^\w/]",
    r"\W",
    r"(?i)/news/index_\d+\.html$",
    r"/list/index_\d+\.html\Z",
    r"/list/index_\d+\.html$",
    r"[]x]",
    r"[^]a-z:/.0-9]",
    r"\s",
    BACKTRACKING,
]


def shipped_patterns() -> list[str]:
    patterns = []
    for name in ("sites.toml", "sites.example.toml"):
        for site in load_sites(REPO / name):
            patterns += [p.pattern for p in (site.article_url, site.follow_url) if p is not None]
    return patterns


@pytest.mark.parametrize("pattern", PATTERNS + shipped_patterns())
def test_a_pattern_matches_what_python_re_matches(pattern: str) -> None:
    compiled = UrlPattern(pattern)
    for url in URLS:
        if pattern == BACKTRACKING and url.endswith(NEAR_MISS):
            continue  # Python's re would take hours: see the test below
        assert (compiled.search(url) is not None) == (re.search(pattern, url) is not None), url


def test_a_backtracking_pattern_on_a_near_miss_returns_at_once() -> None:
    """Python's re needs 2^39 steps here; the check runs in a child so that a hang fails."""
    code = ("from newscrawl.sites import parse_sites\n"
            "(site,) = parse_sites({'sites': [{'name': 'x', 'start_urls': ['http://e.com/'],"
            f" 'article_url': {BACKTRACKING!r}}}]}})\n"
            f"print(site.is_article('http://e.com' + {NEAR_MISS!r}),"
            " site.is_article('http://e.com/news/a/b/c.html'))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("key", ["article_url", "follow_url"])
@pytest.mark.parametrize("pattern", [
    r"/(\d+)/\1\.html$",  # backreference
    r"/(?P<d>\d+)/(?P=d)\.html$",
    r"/news/(?=\d)\w+\.html$",  # lookahead
    r"/news/(?!video)\w+\.html$",
    r"(?<=/news/)\d+\.html$",  # lookbehind
    r"/news/(?>\d+)\.html$",  # atomic group
    r"/news/\d++\.html$",  # possessive
    r"(?x) /news/ \d+",  # verbose flag
    r"[\W]",  # \W inside a class
])
def test_what_re2_lacks_is_refused_at_load_naming_site_and_key(pattern: str, key: str) -> None:
    raw = {"name": "portal-a", "start_urls": ["http://e.com/"], "article_url": "/a/",
           key: pattern}
    with pytest.raises(SitesError) as exc:
        parse_sites({"sites": [raw]})
    message = str(exc.value)
    assert 'site "portal-a"' in message and f'key "{key}"' in message
    assert quote_regex(pattern) in message  # echoed as written in the sites file
    assert "RE2" in message or "[^...]" in message


def test_a_backtracking_pattern_and_a_near_miss_link_do_not_hang_the_crawl(
        tmp_path: Path, portal: MockPortal) -> None:
    portal.add_article("/news/2026/a1.html", Article.generate("re2-1"))
    portal.set(NEAR_MISS, html_page("<html><body>not an article</body></html>"))
    portal.set("/", html_page(list_html("首页", [NEAR_MISS, "/news/2026/a1.html"])))
    sites = tmp_path / "sites.toml"
    sites.write_text("[[sites]]\n"
                     'name = "backtrack"\n'
                     f'start_urls = ["{portal.url("/")}"]\n'
                     f"article_url = '{BACKTRACKING}'\n", encoding="utf-8")
    result = run_crawl(tmp_path, sites, "AUTOTHROTTLE_ENABLED=False", timeout=90)
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats.get("newscrawl/pages/article") == 1
    assert portal.hit_counts().get("/news/2026/a1.html") == 1
    assert NEAR_MISS not in portal.hit_counts()
