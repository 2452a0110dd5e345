"""The extraction library's author search alone (``newscrawl.extract.library``) against its whole
metadata pass, on small pages built here."""

from __future__ import annotations

import copy
import re

import lxml.html
import pytest
from trafilatura.metadata import extract_metadata
from trafilatura.xpaths import AUTHOR_XPATHS

from newscrawl.extract.library import LibraryMetadata, library_author, library_tree

BODY = "<p>" + "国家统计局今天发布数据显示，一季度国内生产总值同比增长。" * 4 + "</p>"


def page(head: str = "", info: str = "") -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>标题_示例网</title>{head}"
            f"</head><body><div class='nav'><a href='/'>首页</a></div><div class='main'>"
            f"<h1>标题</h1>{info}<div class='content'>{BODY}</div></div></body></html>")


PAGES = {
    "nothing": page(),
    "meta author, two words": page(head='<meta name="author" content="Jane Doe">'),
    "meta author, one word": page(head='<meta name="author" content="张三">'),
    "og author": page(head='<meta property="article:author" content="John Smith">'),
    "json-ld author": page(head='<script type="application/ld+json">{"@context": '
                                '"https://schema.org", "@type": "NewsArticle", "author": '
                                '{"@type": "Person", "name": "Li Hua"}}</script>'),
    "broken json-ld": page(head='<script type="application/ld+json">{"author": </script>'),
    "class author": page(info="<span class='author'>王明华</span>"),
    "class byline": page(info="<div class='byline'>By Ann Lee</div>"),
    "id zuozhe": page(info="<p id='zuozhe'>作者 李强</p>"),
    "class Writer-box": page(info="<div class='Writer-box'>刘洋</div>"),
    "data-component": page(info="<div data-component='ArticleByline'>Tom Wu</div>"),
    "rel author": page(info="<a rel='author' href='/u/1'>Max Mustermann</a>"),
    "author element": page(info="<author>Anna Berg</author>"),
    "rel child": page(info="<p>Kim Park<rel>me</rel></p>"),
    "date line only": page(info="<div class='info'>2024-03-15 来源：新华社</div>"),
}


def whole_pass_author(tree: lxml.html.HtmlElement, url: str) -> str | None:
    document = extract_metadata(copy.deepcopy(tree), url,
                                {"original_date": True, "extensive_search": False}, False, set())
    return str(document.author) if document.author else None


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_author_search_alone_gives_the_whole_passs_author(name: str) -> None:
    url = "http://news.example.cn/a/1.html"
    tree = library_tree(PAGES[name], url)
    assert tree is not None
    before = lxml.html.tostring(tree)
    assert library_author(tree) == whole_pass_author(tree, url)
    assert lxml.html.tostring(tree) == before  # the tree our rules read is left as it was
    assert LibraryMetadata(tree, url, False).author() == whole_pass_author(tree, url)


def test_the_pages_above_cover_found_and_not_found() -> None:
    url = "http://news.example.cn/a/1.html"
    found = {name for name, html in PAGES.items()
             if library_author(library_tree(html, url)) is not None}  # type: ignore[arg-type]
    assert {"meta author, two words", "json-ld author", "class author", "class byline",
            "id zuozhe", "rel author", "author element"} <= found
    assert {"nothing", "meta author, one word", "date line only"}.isdisjoint(found)


def test_every_name_the_librarys_author_paths_test_is_one_the_search_looks_for() -> None:
    """A page is skipped when none of its attribute values holds a word of ``_AUTHOR_WORDS``:
    every value the library's author paths compare or match must hold one (a library upgrade
    that adds a name fails here)."""
    from newscrawl.extract.library import _AUTHOR_ATTRIBUTES, _AUTHOR_WORDS

    tested = set()
    for xpath in AUTHOR_XPATHS:
        for attribute, literal in re.findall(r"@([\w-]+)\s*[,=]\s*'([^']*)'", xpath.path):
            tested.add(attribute)
            for alternative in literal.split("|"):
                word = re.sub(r"\[(\w)\w\]|-\?", r"\1", alternative)  # [Aa]uthor, author-?name
                assert _AUTHOR_WORDS.search(word), (attribute, alternative)
    assert tested == {"rel", "id", "class", "itemprop", "data-testid", "data-component"}
    assert all(f"@{a}" in _AUTHOR_ATTRIBUTES.path for a in tested)
    assert re.findall(r"//(\w+)\b(?!\[)", " ".join(x.path for x in AUTHOR_XPATHS)) == ["author"]
