"""Which list links a walk follows: a numbered pagination bar read as a sequence."""

from __future__ import annotations

from newscrawl.spiders.portal.pagebar import ListLink, page_number, plan

BASE = "http://x"


def bar(*numbers: int, current: int | None = None) -> list[ListLink]:
    return [ListLink(f"{BASE}/list/{n}.html", str(n)) for n in numbers if n != current]


def test_page_numbers_are_read_from_the_anchor_text() -> None:
    assert [page_number(t) for t in ("2", " 3 ", "[4]", "第5页", "（6）", "下一页", "2024年",
                                     "Page 2", "")] == [2, 3, 4, 5, 6, None, None, None, None]


def test_a_page_outside_the_bar_follows_its_first_page_only() -> None:
    p = plan(bar(1, 2, 3, 4, 5), f"{BASE}/")
    assert p.follow == [f"{BASE}/list/1.html"]
    assert p.numbers == {f"{BASE}/list/1.html": 1}
    assert p.after == {f"{BASE}/list/1.html": (f"{BASE}/list/2.html", 2)}
    assert p.withheld == 4


def test_the_next_page_follows_the_current_one_whether_linked_or_carried() -> None:
    # the current page named by its own link in the bar
    links = bar(1, 2, 3, 4, 5)
    assert plan(links, f"{BASE}/list/2.html").follow == [f"{BASE}/list/3.html"]
    # shown as plain text: the number it was reached by, from the request meta
    assert plan(bar(2, 3, 4, 5, 6, current=4), f"{BASE}/list/4.html",
                current_number=4).follow == [f"{BASE}/list/5.html"]
    # the last page: nothing after it
    assert plan(bar(1, 2, 3, current=3), f"{BASE}/list/3.html", current_number=3).follow == []


def test_next_hints_are_followed_and_the_other_controls_are_not() -> None:
    links = [ListLink(f"{BASE}/list/1.html", "首页"), ListLink(f"{BASE}/list/2.html", "上一页"),
             ListLink(f"{BASE}/list/4.html", "下一页"), ListLink(f"{BASE}/list/9.html", "末页"),
             ListLink(f"{BASE}/more?cursor=abc", "more", rel="next")]
    p = plan(links, f"{BASE}/list/3.html", current_number=3)
    assert p.follow == [f"{BASE}/list/4.html", f"{BASE}/more?cursor=abc"]
    assert p.withheld == 3
    # a <link rel="next"> in the head is a hint too
    assert plan([ListLink(f"{BASE}/p/7", "7"), ListLink(f"{BASE}/p/8", "8")], f"{BASE}/p/5",
                current_number=5, next_urls=[f"{BASE}/p/8"]).follow == [f"{BASE}/p/7",
                                                                       f"{BASE}/p/8"]
    assert plan(bar(4, 6), f"{BASE}/list/5.html", current_number=5,
                next_urls=[f"{BASE}/list/6.html?x", f"{BASE}/list/5.html"]).follow == [
        f"{BASE}/list/6.html", f"{BASE}/list/6.html?x"]


def test_links_that_are_not_a_bar_are_all_followed_as_before() -> None:
    # sections, and prev/next links whose text is not a page number or a control
    links = [ListLink(f"{BASE}/world/", "国际"), ListLink(f"{BASE}/china/", "国内"),
             ListLink(f"{BASE}/list/1.html", "/list/1.html"),
             ListLink(f"{BASE}/list/3.html", "/list/3.html")]
    p = plan(links, f"{BASE}/list/2.html")
    assert p.follow == [link.url for link in links]
    assert p.withheld == 0
    # the page's own link is never followed again
    assert plan([ListLink(f"{BASE}/list/2.html", "2")], f"{BASE}/list/2.html").follow == []


def test_links_that_look_like_list_pages() -> None:
    from newscrawl.spiders.portal.pagebar import looks_like_list

    looks = [ListLink("u", text) for text in ("下一页", " 2 ", "[2]", "Next »", "next")]
    looks.append(ListLink("u", "", "next"))
    assert all(looks_like_list(link) for link in looks)
    others = [ListLink("u", text)
              for text in ("3", "首页", "上一页", "国际新闻", "", "1", "更多>>", "more")]
    assert not any(looks_like_list(link) for link in others)
