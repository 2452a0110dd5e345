"""The sites file: valid shapes load; every kind of mistake names the site and key; the real
``scrapy crawl portal`` stops at start with exit code 1."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from crawlrun import run_crawl

from newscrawl.sites import SitesError, load_sites, parse_sites, quote_regex

REPO = Path(__file__).resolve().parent.parent

GOOD = """
[[sites]]
name = "portal-a"
start_urls = ["http://127.0.0.1:8001/"]
article_url = '/a/\\d+\\.html$'      # regex on the URL (re.search): pages to extract as articles
follow_url = '/list/\\d+\\.html$'    # optional regex: list pages to follow for links
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sites.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_contract_shape_loads(tmp_path: Path) -> None:
    (site,) = load_sites(write(tmp_path, GOOD))
    assert site.name == "portal-a"
    assert site.start_urls == ("http://127.0.0.1:8001/",)
    assert site.allowed_domains == ("127.0.0.1",)
    assert site.is_article("http://127.0.0.1:8001/a/12.html")
    assert not site.is_article("http://127.0.0.1:8001/a/12.html?x=1")
    assert site.is_list("http://127.0.0.1:8001/list/3.html")
    assert site.allows("http://127.0.0.1:9999/x")
    assert not site.allows("http://127.0.0.2:8001/x")


def test_optional_keys(tmp_path: Path) -> None:
    text = GOOD + """
allowed_domains = ["example.com"]
max_list_depth = 1
encoding = "GBK"
"""
    (site,) = load_sites(write(tmp_path, text))
    assert site.allows("http://news.example.com/a/1.html")
    assert not site.allows("http://example.org/a/1.html")
    assert site.max_list_depth == 1
    assert site.encoding == "gbk"
    assert site.follow_url is not None


def test_pagination_keys_and_defaults(tmp_path: Path) -> None:
    (site,) = load_sites(write(tmp_path, GOOD))
    # no depth bound by default: max_list_pages and stop_after_known bound a walk
    assert (site.max_list_pages, site.stop_after_known, site.max_list_depth) == (100, 1, None)
    assert not site.too_deep(10_000)
    (site,) = load_sites(write(tmp_path, GOOD + "max_list_pages = 7\nstop_after_known = 2\n"))
    assert (site.max_list_pages, site.stop_after_known, site.max_list_depth) == (7, 2, None)
    (site,) = load_sites(write(tmp_path, GOOD + "max_list_pages = 7\nmax_list_depth = 2\n"))
    assert (site.max_list_pages, site.max_list_depth) == (7, 2)
    assert site.too_deep(3) and not site.too_deep(2)


def test_politeness_overrides(tmp_path: Path) -> None:
    (site,) = load_sites(write(tmp_path, GOOD))
    assert (site.concurrency, site.delay) == (None, None)  # the Scrapy settings apply
    (site,) = load_sites(write(tmp_path, GOOD + "concurrency = 3\ndelay = 0.25\n"))
    assert (site.concurrency, site.delay) == (3, 0.25)
    (site,) = load_sites(write(tmp_path, GOOD + "delay = 2\n"))
    assert site.delay == 2.0 and isinstance(site.delay, float)


def test_shipped_sites_files_are_valid() -> None:
    sites = load_sites(REPO / "sites.toml")
    assert len(sites) >= 3
    assert all(s.start_urls and s.article_url.pattern for s in sites)
    # A list walk is bounded by max_list_pages / stop_after_known; a depth bound would cut the
    # walks through older list pages short and lose articles.
    assert all(s.max_list_depth is None for s in sites)
    # The example file is all comments plus one example site.
    assert load_sites(REPO / "sites.example.toml")


def site_with(**changes: object) -> dict[str, object]:
    raw: dict[str, object] = dict(tomllib.loads(GOOD)["sites"][0])
    for key, value in changes.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return raw


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (site_with(article_url=None), ['site "portal-a"', '"article_url"', "missing"]),
        (site_with(start_urls=None), ['site "portal-a"', '"start_urls"', "missing"]),
        (site_with(name=None), ["site #1", '"name"', "missing"]),
        (site_with(article_url="/a/(\\d+.html"), ['site "portal-a"', '"article_url"', "regex"]),
        (site_with(follow_url="[z-a]"), ['site "portal-a"', '"follow_url"', "regex"]),
        (site_with(start_urls="http://x/"), ['"start_urls"', "list of strings"]),
        (site_with(start_urls=["ftp://x/"]), ['"start_urls"', "http"]),
        (site_with(max_list_depth="2"), ['"max_list_depth"', "integer"]),
        (site_with(max_list_depth=-1), ['"max_list_depth"', "integer"]),
        (site_with(max_list_pages=0), ['site "portal-a"', '"max_list_pages"', "integer >= 1"]),
        (site_with(max_list_pages="10"), ['site "portal-a"', '"max_list_pages"', "integer"]),
        (site_with(max_list_pages=True), ['site "portal-a"', '"max_list_pages"', "integer"]),
        (site_with(stop_after_known=0), ['site "portal-a"', '"stop_after_known"', ">= 1"]),
        (site_with(stop_after_known=1.5), ['site "portal-a"', '"stop_after_known"', "integer"]),
        (site_with(encoding="no-such-codec"), ['"encoding"', "unknown encoding"]),
        (site_with(encoding="rot13"), ['"encoding"', "'rot-13' is not a text encoding"]),
        (site_with(encoding="base64"), ['"encoding"', "not a text encoding"]),
        (site_with(allowed_domains=["http://x.com/"]), ['"allowed_domains"', "host names"]),
        (site_with(selectors="h1"), ['"selectors"', "table"]),
        (site_with(selectors={"titel": "h1"}), ['site "portal-a"', '"selectors"', "titel"]),
        (site_with(selectors={"text": "div[["}), ['site "portal-a"', '"selectors"', "text"]),
        (site_with(start_url=["http://x/"]), ['site "portal-a"', 'unknown key "start_url"']),
        (site_with(concurrency=0), ['site "portal-a"', '"concurrency"', "integer >= 1"]),
        (site_with(concurrency=1.5), ['site "portal-a"', '"concurrency"', "integer"]),
        (site_with(delay=-1), ['site "portal-a"', '"delay"', "seconds from 0 to 3600"]),
        (site_with(delay="1s"), ['site "portal-a"', '"delay"', "number of seconds"]),
        (site_with(delay=True), ['site "portal-a"', '"delay"', "number"]),
    ],
)
def test_bad_site_names_site_and_key(raw: dict[str, object], expected: list[str]) -> None:
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": [raw]}, "s.toml")
    message = str(info.value)
    assert "s.toml" in message
    for part in expected:
        assert part in message


def test_duplicate_name_and_empty_file() -> None:
    with pytest.raises(SitesError, match=r'site "portal-a": key "name": duplicate'):
        parse_sites({"sites": [site_with(), site_with()]})
    with pytest.raises(SitesError, match="no \\[\\[sites\\]\\]"):
        parse_sites({})
    with pytest.raises(SitesError, match='unknown top-level key "site"'):
        parse_sites({"site": []})


def test_regexes_are_echoed_as_written_and_double_quotes_get_a_hint(tmp_path: Path) -> None:
    bad = GOOD.replace("'/a/\\d+\\.html$'", "'/a/(\\d+\\.html$'")
    with pytest.raises(SitesError) as info:
        load_sites(write(tmp_path, bad))
    assert str(info.value).endswith(": '/a/(\\d+\\.html$'"), info.value  # one backslash each
    double = GOOD.replace("'/a/\\d+\\.html$'", '"/a/\\d+\\.html$"')
    with pytest.raises(SitesError) as info:
        load_sites(write(tmp_path, double))
    assert "invalid TOML" in str(info.value) and "write regexes in single quotes" in str(info.value)
    # valid TOML, but "\b" in double quotes is a backspace, not a word boundary
    backspace = GOOD.replace("'/a/\\d+\\.html$'", '"/a/\\bnews\\\\d+"')
    with pytest.raises(SitesError) as info:
        load_sites(write(tmp_path, backspace))
    assert 'key "article_url" holds \\b read by TOML as control character' in str(info.value)
    assert "write regexes in single quotes" in str(info.value)
    assert quote_regex("/a/\\d+'x") == "'''/a/\\d+'x'''"


def test_a_sites_table_instead_of_an_array_of_tables_gets_a_hint(tmp_path: Path) -> None:
    one = GOOD.replace("[[sites]]", "[sites]", 1)
    assert "[sites]\n" in one
    with pytest.raises(SitesError) as info:
        load_sites(write(tmp_path, one))
    message = str(info.value)
    assert "no [[sites]] entries; each site starts with [[sites]] (two pairs of brackets), " \
        "not [sites]" in message and "\n" not in message
    two = one + "\n[sites]\nname = \"other\"\n"
    with pytest.raises(SitesError) as info:
        load_sites(write(tmp_path, two))
    assert "invalid TOML" in str(info.value) and "not [sites]" in str(info.value)
    with pytest.raises(SitesError) as info:
        parse_sites({})
    assert "not [sites]" not in str(info.value)  # an empty file: nothing to hint at


def test_missing_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(SitesError, match="no such file: "):
        load_sites(tmp_path / "nope.toml")
    with pytest.raises(SitesError, match="invalid TOML"):
        load_sites(write(tmp_path, "[[sites]]\nname = \n"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, "no such file: "),
        ("[[sites]]\nname = 'x'\nstart_urls = [\n", "invalid TOML"),
        (GOOD.replace("'/a/\\d+\\.html$'", "'/a/(\\d+'"), 'site "portal-a": key "article_url"'),
        (GOOD + GOOD, 'site "portal-a": key "name": duplicate name'),
        (GOOD + "stop_after_known = 0\n", 'site "portal-a": key "stop_after_known"'),
    ],
)
def test_real_crawl_stops_with_exit_code_1(tmp_path: Path, text: str | None,
                                           expected: str) -> None:
    path = tmp_path / "sites.toml"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    result = run_crawl(tmp_path, path, timeout=60)
    assert result.returncode == 1, result.log[-3000:]
    assert expected in result.log
    assert "Spider opened" not in result.log
    # the one message, not followed by asyncio's "Task exception was never retrieved" traceback
    assert result.log.count(expected) == 1, result.log[-3000:]
    assert "Traceback" not in result.log and "never retrieved" not in result.log


KNOWN_KEYS = (
    "name, start_urls, article_url, follow_url, allowed_domains, max_list_depth, max_list_pages,"
    " stop_after_known, selectors, encoding, concurrency, delay, rank, sitemap_urls, feed_urls,"
    " drop_params, keep_params"
)


def test_every_mistake_of_every_entry_is_listed_at_once() -> None:
    first = site_with(article_url=None, artcle_url="/a/", sitemap="robots", proxy="http://p/")
    first["max_list_pages"] = 0  # a bad value besides the bad keys
    second = site_with(name="portal-b", stop_after_known=0, delay=-1)  # two bad values: both
    nameless: dict[str, object] = {"article_url": "/a/"}  # no name, no source
    duplicate = site_with()
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": [first, second, site_with(name="ok"), nameless, duplicate]},
                    "s.toml")
    # (entry #5 shares the first one's name: the first entry's mistakes say which it is)
    lines = [
        'sites file s.toml: site "portal-a" (#1): unknown key "artcle_url" (did you mean'
        ' "article_url"?)',
        'sites file s.toml: site "portal-a" (#1): unknown key "sitemap" (did you mean'
        ' "sitemap_urls"?)',
        f'sites file s.toml: site "portal-a" (#1): unknown key "proxy" (known keys: {KNOWN_KEYS})',
        'sites file s.toml: site "portal-a" (#1): key "max_list_pages" must be an integer >= 1',
        'sites file s.toml: site "portal-b": key "stop_after_known" must be an integer >= 1',
        'sites file s.toml: site "portal-b": key "delay" must be a number of seconds from 0 to'
        ' 3600',
        'sites file s.toml: site #4: missing required key "name"',
        'sites file s.toml: site #4: missing required key "start_urls" (or give "sitemap_urls"'
        ' or "feed_urls")',
        'sites file s.toml: site "portal-a": key "name": duplicate name (entries #1 and #5 of'
        ' [[sites]])',
    ]
    assert info.value.mistakes == tuple(lines)
    assert str(info.value) == "\n  ".join(["sites file s.toml: 9 mistakes", *lines])


def test_every_bad_value_of_an_entry_is_listed_not_only_the_first() -> None:
    """Every bad value is listed (not a fix-and-rerun cycle each)."""
    raw = site_with(start_urls="http://news.example.com/", max_list_pages="5", encoding="gbk2",
                    follow_url="(", allowed_domains=["http://news.example.com"])
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": [raw]}, "s.toml")
    keys = [re.search(r'key "(\w+)"', line).group(1)  # type: ignore[union-attr]
            for line in info.value.mistakes]
    assert keys == ["start_urls", "follow_url", "allowed_domains", "max_list_pages", "encoding"]
    assert "5 mistakes" in str(info.value) and "unknown encoding 'gbk2'" in str(info.value)
    # every bad URL of a key, and how to write a list given as a string
    raw = site_with(start_urls=["http://ok.example/", "ftp://x/", "news.example.com"],
                    feed_urls="http://ok.example/feed")
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": [raw]}, "s.toml")
    assert info.value.mistakes == (
        'sites file s.toml: site "portal-a": key "start_urls": not http(s) URLs: \'ftp://x/\','
        " 'news.example.com'",
        'sites file s.toml: site "portal-a": key "feed_urls" must be a non-empty list of strings'
        ' (write it in brackets: ["http://ok.example/feed"])')
    raw = site_with(selectors={"text": "div[[", "author": "//[", "title": "h1"})
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": [raw]}, "s.toml")
    assert [m.split('"selectors": ')[1].split(":")[0] for m in info.value.mistakes] == [
        "selectors.text", "selectors.author"], info.value.mistakes
    # a URL urlsplit cannot read, sitemaps read from the robots.txt of bad start URLs, bad
    # source keys: each listed once, no spurious "no start_urls", no other exception
    for start in ("http://[bad", ["http://[bad"], [], 5):
        raw = site_with(start_urls=start, sitemap_urls="robots", feed_urls=["ftp://x/feed"],
                        drop_params=["a b"], keep_params=5)
        with pytest.raises(SitesError) as info:
            parse_sites({"sites": [raw]}, "s.toml")
        keys = [re.search(r'key "(\w+)"', line).group(1)  # type: ignore[union-attr]
                for line in info.value.mistakes]
        assert keys == ["start_urls", "feed_urls", "drop_params", "keep_params"], (start, keys)


@pytest.mark.parametrize(
    ("sites", "message"),
    [
        ([site_with(article_url=None)],
         'sites file s.toml: site "portal-a": missing required key "article_url" (required with'
         ' "start_urls": it tells article links from others)'),
        ([site_with(max_list_pages=0)],
         'sites file s.toml: site "portal-a": key "max_list_pages" must be an integer >= 1'),
        ([site_with(proxy="x")],
         f'sites file s.toml: site "portal-a": unknown key "proxy" (known keys: {KNOWN_KEYS})'),
        ([site_with(name=None)], 'sites file s.toml: site #1: missing required key "name"'),
        ([site_with(), site_with(name="b"), site_with()],
         'sites file s.toml: site "portal-a": key "name": duplicate name (entries #1 and #3 of'
         ' [[sites]])'),
        ([site_with(max_list_pages="5")],
         'sites file s.toml: site "portal-a": key "max_list_pages" must be an integer >= 1,'
         " not the string '5' (write it without quotes)"),
        ([site_with(delay="two")],
         'sites file s.toml: site "portal-a": key "delay" must be a number of seconds from 0 to'
         " 3600, not the string 'two'"),
        ([site_with(encoding="nope")],
         "sites file s.toml: site \"portal-a\": key \"encoding\": unknown encoding 'nope'"),
        ([site_with(), "x"], "sites file s.toml: site #2: each [[sites]] entry must be a table"),
    ],
)
def test_a_single_mistake_reads_as_it_always_did(sites: list[object], message: str) -> None:
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": sites}, "s.toml")
    assert str(info.value) == message
    assert info.value.mistakes == (message,)
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": [site_with()], "foo": 1}, "s.toml")
    assert str(info.value) == (
        'sites file s.toml: unknown top-level key "foo" (expected only [[sites]] tables)')


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("artcle_url", "article_url"),
        ("start_url", "start_urls"),
        ("follow_urls", "follow_url"),
        ("max_list_page", "max_list_pages"),
        ("max_pages", "max_list_pages"),
        ("Article_URL", "article_url"),
        ("sitemaps", "sitemap_urls"),
        ("feeds", "feed_urls"),
        ("selector", "selectors"),
        ("concurrent", "concurrency"),
        ("allowed_domain", "allowed_domains"),
    ],
)
def test_a_mistyped_key_gets_a_did_you_mean(typo: str, meant: str) -> None:
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": [site_with(**{typo: "x"})]}, "s.toml")
    assert str(info.value) == (
        f'sites file s.toml: site "portal-a": unknown key "{typo}" (did you mean "{meant}"?)')


@pytest.mark.parametrize("key", ["urls", "deny", "proxy", "headers", "user_agent", "timeout",
                                 "depth", "domains", "title", "comment"])
def test_an_unrelated_key_gets_the_list_of_keys_not_a_guess(key: str) -> None:
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": [site_with(**{key: "x"})]}, "s.toml")
    assert str(info.value) == (
        f'sites file s.toml: site "portal-a": unknown key "{key}" (known keys: {KNOWN_KEYS})')


@pytest.mark.parametrize(
    ("typo", "missing", "message"),
    [
        ("artcle_url", "article_url", 'site "portal-a": unknown key "artcle_url" (did you mean'
                                      ' "article_url"?)'),
        ("start_url", "start_urls", 'site "portal-a": unknown key "start_url" (did you mean'
                                    ' "start_urls"?)'),
        ("nme", "name", 'site #1: unknown key "nme" (did you mean "name"?)'),
        ("sitemap", "start_urls", 'site "portal-a": unknown key "sitemap" (did you mean'
                                  ' "sitemap_urls"?)'),
    ],
)
def test_a_mistyped_required_key_is_one_mistake_not_two(typo: str, missing: str,
                                                         message: str) -> None:
    """The typo is reported; the key it stands for is not reported missing as well."""
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": [site_with(**{missing: None, typo: "x"})]}, "s.toml")
    assert str(info.value) == f"sites file s.toml: {message}"


def test_an_unrelated_key_does_not_stand_for_a_missing_one() -> None:
    with pytest.raises(SitesError) as info:
        parse_sites({"sites": [site_with(article_url=None, proxy="x")]}, "s.toml")
    assert len(info.value.mistakes) == 2
    assert info.value.mistakes[1].startswith(
        'sites file s.toml: site "portal-a": missing required key "article_url"')


@pytest.mark.parametrize(("key", "hint"), [("site", '(did you mean "sites"?)'),
                                           ("Sites", '(did you mean "sites"?)'),
                                           ("portal", "(expected only [[sites]] tables)")])
def test_a_mistyped_top_level_key(tmp_path: Path, key: str, hint: str) -> None:
    path = write(tmp_path, GOOD.replace("[[sites]]", f"[[{key}]]"))
    with pytest.raises(SitesError) as info:
        load_sites(path)
    # the one mistake: not also "no [[sites]] entries"
    assert str(info.value) == f'sites file {path}: unknown top-level key "{key}" {hint}'


def test_real_crawl_lists_every_mistake(tmp_path: Path) -> None:
    path = tmp_path / "sites.toml"
    text = (GOOD.replace("article_url", "artcle_url")
            + GOOD.replace("portal-a", "portal-b") + "max_list_pages = 0\n")
    path.write_text(text, encoding="utf-8")
    result = run_crawl(tmp_path, path, timeout=60)
    assert result.returncode == 1, result.log[-3000:]
    assert f"Cannot start the crawl: sites file {path}: 2 mistakes\n" in result.log
    assert (f'\n  sites file {path}: site "portal-a": unknown key "artcle_url" (did you mean'
            f' "article_url"?)\n  sites file {path}: site "portal-b": key "max_list_pages" must'
            " be an integer >= 1\n") in result.log, result.log[-3000:]
    assert "Spider opened" not in result.log and "Traceback" not in result.log
    assert result.log.count("2 mistakes") == 1
