"""Article titles: the candidate a page's sources agree on (small pages built here)."""

from __future__ import annotations

import pytest

from newscrawl.extract import decode_html, extract_article

P1 = "国家统计局今天发布数据显示，一季度国内生产总值同比增长百分之五点三，经济运行开局良好。"
P2 = "分行业看，工业生产稳步回升，服务业持续恢复，消费市场保持活跃，就业形势总体稳定。"
P3 = "专家表示，随着一系列政策措施落地见效，经济回升向好的态势将进一步巩固和增强。"
URL = "http://news.example.cn/a/123.html"


def page(head: str = "", top: str = "", charset: str = "utf-8") -> str:
    """A portal page: a navigation menu, an optional block above the body, three paragraphs."""
    nav = "".join(f'<li><a href="/c{i}">频道{i}</a></li>' for i in range(12))
    return f"""<html><head><meta charset="{charset}">{head}</head>
<body><div class="nav"><ul>{nav}</ul></div>
<div class="main">{top}
<div class="content"><p>{P1}</p><p>{P2}</p><p>{P3}</p></div></div>
<div class="footer"><p>版权所有 示例网</p><a href="/about">关于我们</a></div>
</body></html>"""


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("投身外交(3)_读书频道_新浪网", "投身外交(3)"),
        ("长江大桥今日通车|澎湃新闻", "长江大桥今日通车"),
        ("长江大桥今日通车 - 示例新闻网 - 首页", "长江大桥今日通车"),
        ("Budget 2024: what it means for you | Money | The Guardian",
         "Budget 2024: what it means for you"),
    ],
)
def test_title_only_in_title_tag_loses_the_portal_suffix(title: str, expected: str) -> None:
    html = page(f"<title>{title}</title>", '<div class="info">2024-03-15 来源：新华社</div>')
    art = extract_article(html, URL)
    assert art is not None
    assert art.title == expected


def test_gbk_page_without_h1_gets_its_title_from_the_title_tag() -> None:
    html = page("<title>投身外交(3)_读书频道_新浪网</title>", charset="utf-8")  # wrong charset
    text, encoding = decode_html(html.encode("gbk"))
    assert encoding in ("gb18030", "gbk")
    art = extract_article(text, "http://book.sina.com.cn/1.shtml")
    assert art is not None
    assert art.title == "投身外交(3)"
    assert art.text.startswith(P1)


def test_og_title_with_suffix_beats_a_logo_h1() -> None:
    html = page(
        '<title>长江大桥今日通车 - 示例新闻网</title>'
        '<meta property="og:title" content="长江大桥今日通车 - 示例新闻网">'
        '<meta property="og:site_name" content="示例新闻网">',
        '<h1 class="logo"><a href="/">示例新闻网</a></h1>',
    )
    art = extract_article(html, URL)
    assert art is not None
    assert art.title == "长江大桥今日通车"


def test_jsonld_headline_agrees_with_the_og_title_not_with_a_channel_h1() -> None:
    html = page(
        '<meta property="og:title" content="长江大桥今日通车 - 示例新闻网">'
        '<script type="application/ld+json">'
        '{"@context": "https://schema.org", "@type": "NewsArticle", "headline": "长江大桥今日通车",'
        ' "publisher": {"@type": "Organization", "name": "示例网"}}</script>',
        "<h1>新闻中心</h1>",
    )
    art = extract_article(html, URL)
    assert art is not None
    assert art.title == "长江大桥今日通车"


def test_site_name_title_loses_to_the_heading_above_the_body() -> None:
    html = page(
        "<title>谢谢您访问〖关注中国中心〗</title>",
        '<p><b>茉莉：我是怎样卷入八九民运的</b></p><p>作者：茉莉</p>',
    )
    art = extract_article(html, URL)
    assert art is not None
    assert art.title == "茉莉：我是怎样卷入八九民运的"


def test_title_separators_inside_a_confirmed_headline_are_kept() -> None:
    headline = "棱镜|数据业大整顿：爬虫与现金贷共生共荣"
    html = page(f"<title>{headline}_财经_示例网</title>", f'<div class="title">{headline}</div>')
    art = extract_article(html, URL)
    assert art is not None
    assert art.title == headline


def test_selectors_still_win_and_a_selector_matching_nothing_falls_back() -> None:
    html = page("<title>投身外交(3)_读书频道_新浪网</title>", '<div class="kicker">连载</div>')
    art = extract_article(html, URL, selectors={"title": "div.kicker"})
    assert art is not None
    assert art.title == "连载"
    art = extract_article(html, URL, selectors={"title": "h2.nothing"})
    assert art is not None
    assert art.title == "投身外交(3)"


def test_meta_title_with_markup_and_broken_json_ld() -> None:
    headline = "为现代化建设凝聚强大智慧和力量——热烈祝贺市政协会议开幕"
    html = page(
        "<title>为现代化建设凝聚强大智慧和力量——热烈祝贺市政协会议开幕_示例市人民政府网</title>"
        '<meta name="ArticleTitle" content="为现代化建设凝聚强大智慧和力量&lt;div&gt;——热烈祝贺'
        '市政协会议开幕&lt;/div&gt;">'
        '<script type="application/ld+json">{"headline": "unterminated</script>',
    )
    art = extract_article(html, URL)
    assert art is not None
    assert art.title == headline


SUBJECT = "老城区改造该听谁的"


@pytest.mark.parametrize(
    ("title", "top"),
    [
        # a forum: the site and board in <title>, the thread subject in a Discuz-style span
        ("CCTV.example- 央视论坛",
         f'<table><tr><td><span id="thread_subject">{SUBJECT}</span></td></tr></table>'),
        ("bbs.example.com - 城建论坛", f'<div class="post-subject"><b>{SUBJECT}</b></div>'),
        # a breadcrumb for a title: site > channel
        ("示例艺网>艺术教育", f'<div class="subject">{SUBJECT}</div>'),
        ("示例艺网 › 城市 › 艺术教育", f'<div class="subject">{SUBJECT}</div>'),
    ],
)
def test_thread_or_post_subject_beats_a_site_or_channel_title(title: str, top: str) -> None:
    art = extract_article(page(f"<title>{title}</title>", top), URL)
    assert art is not None
    assert art.title == SUBJECT


def test_a_short_title_holding_a_domain_is_a_site_name() -> None:
    # <title> and og:title agree on the site's name; the subject is the heading above the body
    site = "CCTV.com- 央视论坛"
    head = f'<title>{site}</title><meta property="og:title" content="{site}">'
    art = extract_article(page(head, f"<h2>{SUBJECT}</h2>"), URL)
    assert art is not None
    assert art.title == SUBJECT


@pytest.mark.parametrize("site", ["网易娱乐", "央视论坛"])
def test_a_site_name_title_loses_to_the_subject_line_above_the_body(site: str) -> None:
    # no heading element anywhere: the subject is a plain table cell above the post
    html = (f"<html><head><title>{site}</title></head><body>"
            + "".join(f'<a href="/f{i}">版块{i}</a> ' for i in range(8))
            + f"<table><tr><td>{SUBJECT}</td></tr><tr><td>{P1}<br>{P2}<br>{P3}</td></tr></table>"
            "</body></html>")
    art = extract_article(html, URL)
    assert art is not None
    assert art.title == SUBJECT
    assert SUBJECT not in art.text and P1 in art.text and P3 in art.text


# A private-use character ending a title: GB18030 decodes some characters (its user-defined area,
# a few ideographs) to the PUA; the title keeps it.
PUA_TITLE = "投身外交(3)\ue004"


@pytest.mark.parametrize(
    ("head", "top"),
    [
        (f"<title>{PUA_TITLE}_读书频道_新浪网</title>", ""),
        (f"<title>{PUA_TITLE}_读书频道_新浪网</title>", f"<h1>{PUA_TITLE}</h1>"),
        # a CMS that drops the character from its og:title and h1: the sources still agree
        (f"<title>{PUA_TITLE}_读书频道_新浪网</title>"
         '<meta property="og:title" content="投身外交(3)">', "<h1>投身外交(3)</h1>"),
    ],
)
def test_title_ending_in_a_private_use_character_keeps_it(head: str, top: str) -> None:
    art = extract_article(page(head, top), URL)
    assert art is not None
    assert art.title == PUA_TITLE
    assert art.text.startswith(P1)


def test_gb18030_page_title_with_a_private_use_character() -> None:
    html = page(f"<title>{PUA_TITLE}_读书频道_新浪网</title>", charset="gb2312")
    text, encoding = decode_html(html.encode("gb18030"))
    assert encoding == "gb18030" and PUA_TITLE in text
    art = extract_article(text, "http://book.sina.com.cn/1.shtml")
    assert art is not None
    assert art.title == PUA_TITLE


def test_headline_at_the_top_of_the_body_is_dropped_despite_a_private_use_character() -> None:
    # the extraction library drops the character from the body's first line, not the title
    html = f"""<html><head><meta charset="utf-8"><title>{PUA_TITLE}_新浪网</title></head>
<body><div class="content"><h2>{PUA_TITLE}</h2>
<p>{P1}</p><p>{P2}</p><p>{P3}</p></div></body></html>"""
    art = extract_article(html, URL)
    assert art is not None
    assert art.title == PUA_TITLE
    assert art.text.split("\n") == [P1, P2, P3]


@pytest.mark.parametrize("placeholder", ["null", "NULL", " undefined ", "Undefined", "Null"])
def test_a_placeholder_title_is_no_title(placeholder: str) -> None:
    missing = extract_article(page(), URL)
    assert missing is not None
    art = extract_article(page(f"<title>{placeholder}</title>"), URL)
    assert art is not None
    assert art.title == missing.title  # as for a page without a title
    art = extract_article(page(f"<title>{placeholder}</title>", "<h1>长江大桥今日通车</h1>"), URL)
    assert art is not None
    assert art.title == "长江大桥今日通车"
    head = (f"<title>{placeholder}_示例新闻网</title>"
            f'<meta property="og:title" content="{placeholder}">')
    art = extract_article(page(head, '<h2 class="title">长江大桥今日通车</h2>'), URL)
    assert art is not None
    assert art.title == "长江大桥今日通车"


def test_a_placeholder_from_a_title_selector_falls_back() -> None:
    html = page("<title>长江大桥今日通车_示例新闻网</title>", '<div class="hd">null</div>')
    art = extract_article(html, URL, selectors={"title": "div.hd"})
    assert art is not None
    assert art.title == "长江大桥今日通车"


def test_a_title_that_merely_contains_null_is_kept() -> None:
    art = extract_article(page("<title>Null hypothesis rejected_示例新闻网</title>"), URL)
    assert art is not None
    assert art.title == "Null hypothesis rejected"
