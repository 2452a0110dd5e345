"""Article extraction on small pages built here (no shared corpus)."""

from __future__ import annotations

import time

import pytest

from newscrawl.extract import (
    MAX_HTML_CHARS,
    Article,
    decode_html,
    extract_article,
    validate_selectors,
)

P1 = "国家统计局今天发布数据显示，一季度国内生产总值同比增长百分之五点三，经济运行开局良好。"
P2 = "分行业看，工业生产稳步回升，服务业持续恢复，消费市场保持活跃，就业形势总体稳定。"
P3 = "专家表示，随着一系列政策措施落地见效，经济回升向好的态势将进一步巩固和增强。"


TITLE = "一季度经济数据发布"


def zh_page(*, info: str = "", tail: str = "", head: str = "", title: str = TITLE) -> str:
    nav = "".join(f'<li><a href="/c{i}">频道{i}</a></li>' for i in range(12))
    return f"""<html><head><meta charset="gbk"><title>{title}_新闻中心_示例网</title>{head}</head>
<body><div class="nav"><ul>{nav}</ul></div>
<div class="main"><h1 class="headline">{title}</h1>
<div class="info">{info}</div>
<div class="content" id="article"><p>{P1}</p><p>{P2}</p><p>{P3}</p>{tail}</div></div>
<div class="footer"><p>版权所有 示例网 京ICP备00000000号</p><a href="/about">关于我们</a></div>
</body></html>"""


def test_gbk_page_with_wrong_charset_extracts_text_date_author() -> None:
    html = zh_page(info="2024年03月15日 10:20 来源：新华社 作者：张三")
    body = html.replace('charset="gbk"', 'charset="utf-8"').encode("gbk")
    text, _ = decode_html(body)
    art = extract_article(text, "http://news.example.cn/a/123.html")
    assert isinstance(art, Article)
    assert art.title == "一季度经济数据发布"
    assert art.text.split("\n") == [P1, P2, P3]
    assert art.published == "2024-03-15T10:20:00+08:00"
    assert art.author == "张三"


def test_reporter_byline_in_parentheses_and_editor_line() -> None:
    art = extract_article(zh_page(tail="<p>（记者 李四）</p>"), "http://x.example/n/1.html")
    assert art is not None
    assert art.author == "李四"
    # an editor is not an author
    art = extract_article(zh_page(tail="<p>责任编辑：王五</p>"), "http://x.example/n/1.html")
    assert art is not None
    assert art.author is None
    art = extract_article(zh_page(tail="<p>（责任编辑：王五）</p>"), "http://x.example/n/1.html")
    assert art is not None
    assert art.author is None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://news.example.cn/2024/0315/c1001-123.html", "2024-03-15"),
        ("http://news.example.cn/20240315/abc.shtml", "2024-03-15"),
        ("http://www.example.gov.cn/zhengce/202403/t20240315_123.html", "2024-03-15"),
        ("http://news.example.cn/a/123.html", None),
    ],
)
def test_date_from_url_when_page_has_none(url: str, expected: str | None) -> None:
    art = extract_article(zh_page(), url)
    assert art is not None
    assert art.published == expected


def test_metadata_date_with_offset_wins_over_url() -> None:
    head = '<meta property="article:published_time" content="2024-03-16T08:00:00+01:00">'
    art = extract_article(zh_page(head=head), "http://x.example/2024/0315/a.html")
    assert art is not None
    assert art.published == "2024-03-16T08:00:00+01:00"


def test_video_page_without_body_is_none() -> None:
    html = """<html><head><title>视频：现场画面</title></head><body>
    <div class="nav"><a href="/">首页</a> <a href="/v">视频</a></div>
    <h1>视频：现场画面</h1><div class="player"><video src="/v/1.mp4"></video></div>
    <div class="footer">版权所有</div></body></html>"""
    assert extract_article(html, "http://x.example/v/1.html") is None


@pytest.mark.parametrize(
    "html",
    ["", "   ", '{"title": "新闻", "content": "' + P1 * 5 + '"}', "%PDF-1.4 \x00\x01 obj << >>",
     "just some plain text " * 20],
)
def test_non_html_and_empty_inputs_are_none(html: str) -> None:
    assert extract_article(html, "http://x.example/a") is None


def test_broken_html_does_not_crash() -> None:
    html = "<html><body><div><p>" + P1 + "<p>" + P2 + "<div><span>" + P3 + "</b></i></table>"
    art = extract_article(html, "http://x.example/a.html")
    assert art is not None
    assert P2 in art.text


def test_english_page() -> None:
    paras = [
        "The city council voted on Tuesday to expand the bike lane network across downtown.",
        "Supporters said the plan would make streets safer for cyclists and pedestrians alike.",
        "Opponents argued that the loss of parking would hurt small businesses on Main Street.",
    ]
    body = "".join(f"<p>{p}</p>" for p in paras)
    html = f"""<html lang="en"><head><title>Council backs bike lanes | Example Times</title>
    <meta name="author" content="Jane Doe">
    <meta property="article:published_time" content="2023-06-07T20:54:26Z"></head>
    <body><nav><a href="/">Home</a><a href="/news">News</a></nav><article>
    <h1>Council backs bike lanes</h1>{body}</article><footer>(c) Example Times</footer>
    </body></html>"""
    art = extract_article(html, "https://example.com/news/bike-lanes")
    assert art is not None
    assert art.title == "Council backs bike lanes"
    assert art.text.split("\n") == paras
    assert art.published == "2023-06-07T20:54:26+00:00"
    assert art.author == "Jane Doe"


def test_english_date_without_zone_stays_local() -> None:
    html = """<html><head><meta name="pubdate" content="2019-04-28 06:01:07"></head><body>
    <article><h1>Halibut season opens</h1><p>""" + "The boat left the harbour early. " * 10 + \
        "</p></article></body></html>"
    art = extract_article(html, "https://example.com/a")
    assert art is not None
    assert art.published == "2019-04-28T06:01:07"


def test_selector_overrides_css_and_xpath() -> None:
    info = '<span class="t">发布时间：2023-01-02 08:30</span><span class="a">赵六</span>'
    html = zh_page(info=info)
    sel = {
        "title": "h1.headline",
        "text": "//div[@id='article']/p[position() < 3]",
        "published": "div.info span.t::text",
        "author": "(//div[@class='info']/span[@class='a'])[1]/text()",
    }
    validate_selectors(sel)
    art = extract_article(html, "http://x.example/2020/0101/a.html", selectors=sel)
    assert art is not None
    assert art.title == "一季度经济数据发布"
    assert art.text == P1 + "\n" + P2
    assert art.published == "2023-01-02T08:30:00+08:00"
    assert art.author == "赵六"


def test_selector_that_matches_nothing_falls_back_to_library() -> None:
    art = extract_article(zh_page(), "http://x.example/a.html", selectors={"title": "h2.nothing"})
    assert art is not None
    assert art.title == "一季度经济数据发布"


@pytest.mark.parametrize(
    ("mapping", "key"),
    [({"body": "p"}, "body"), ({"text": "div[["}, "text"), ({"title": "//h1["}, "title"),
     ({"author": ""}, "author"), ({"published": 3}, "published")],
)
def test_bad_selectors_raise_value_error_naming_the_key(mapping: dict, key: str) -> None:
    with pytest.raises(ValueError, match=key):
        validate_selectors(mapping)
    with pytest.raises(ValueError, match=key):
        extract_article(zh_page(), "http://x.example/a.html", selectors=mapping)


def test_an_unknown_selector_key_names_the_field_it_may_mean() -> None:
    with pytest.raises(ValueError) as info:
        validate_selectors({"body": "div.article"})
    assert str(info.value) == ("selectors: unknown key 'body' (did you mean \"text\"? allowed:"
                               " author, published, text, title)")
    with pytest.raises(ValueError) as info:
        validate_selectors({"colour": "p"})
    assert str(info.value) == ("selectors: unknown key 'colour' (allowed: author, published,"
                               " text, title)")


def test_huge_page_is_bounded() -> None:
    para = "<p>" + P1 * 3 + "</p>"
    script = "<script>var data = '" + "x" * (6 * 1024 * 1024) + "';</script>"
    html = "<html><head>" + script + "</head><body><article>" + para * 40 + \
        "</article>" + "<div>" + "填充内容。" * 1_000_000 + "</div></body></html>"
    assert len(html) > 3 * MAX_HTML_CHARS
    t0 = time.perf_counter()
    art = extract_article(html, "http://x.example/big.html")
    elapsed = time.perf_counter() - t0
    assert art is not None
    assert P1 in art.text
    assert elapsed < 60  # generous bound: catches unbounded parsing, not a speed target


# A portal that serves its article as a bare fragment: no <html>, no <body>, one root element
# with one child (the shape the extraction library rejects as "not HTML").
FRAGMENT = (
    '<div class="article"><div class="content">'
    + "".join(f"<p>{p}</p>" for p in (P1, P2, P3))
    + "</div></div>"
)


def test_fragment_without_html_and_body_extracts() -> None:
    art = extract_article(FRAGMENT, "http://x.example/a/1.html")
    assert art is not None
    assert art.text.split("\n") == [P1, P2, P3]


def test_fragment_with_head_elements_keeps_its_title() -> None:
    html = f'<meta charset="utf-8"><title>{TITLE}_示例网</title>{FRAGMENT}'
    art = extract_article(html, "http://x.example/a/1.html")
    assert art is not None
    assert art.title == TITLE
    assert art.text.split("\n") == [P1, P2, P3]


@pytest.mark.parametrize(
    "lead",
    [
        "",
        "<!-- saved from url=(0042)http://news.example.cn/a/123.html -->\n",
        '<?xml version="1.0" encoding="utf-8"?>\n',
        "\n\n  ",
        "<b>Notice</b>: Undefined index in /www/html/news.php on line 12<br />\n",
    ],
    ids=["document", "comment-first", "xml-declaration-first", "blank-lines-first", "php-notice"],
)
def test_page_not_starting_with_html_reads_like_one_that_does(lead: str) -> None:
    """The library parses a page with text before its ``<html>`` (a PHP notice) as a fragment
    (lxml renames its ``<body>``): the title, date and byline rules still read the document."""
    html = lead + zh_page(info="2024年03月15日 10:20 来源：新华社 作者：张三")
    art = extract_article(html, "http://news.example.cn/a/123.html")
    assert art is not None
    assert art.title == TITLE
    assert art.text.split("\n") == [P1, P2, P3]
    assert art.published == "2024-03-15T10:20:00+08:00"
    assert art.author == "张三"


def test_fragment_without_article_text_is_still_none() -> None:
    html = '<div class="player"><div><video src="/v/1.mp4"></video><a href="/">首页</a></div></div>'
    assert extract_article(html, "http://x.example/v/1.html") is None



@pytest.mark.parametrize(
    ("where", "markup", "expected"),
    [
        # running text after 记者/作者 is not a byline
        ("tail", "<p>记者证实，该项目将于年底前全面完工并投入使用，届时可惠及周边居民。</p>", None),
        ("tail", "<p>据记者采访了解，多数受访企业对下半年的市场前景持乐观态度。</p>", None),
        ("tail", "<p>记者获悉，相关部门正在研究制定配套措施。</p>", None),
        ("tail", "<p>【免责声明】本文仅代表作者本人观点，与本网无关。</p>", None),
        ("tail", "<p>以上内容为作者个人观点，不代表本站立场。</p>", None),
        ("tail", "<p>【作者单位：某某大学经济学院】</p>", None),
        ("info", '<a href="/blog">记者博客</a> <a href="/bbs">论坛</a>', None),
        # a forum page's navigation after the label
        ("info", "作者：首页 论坛 帖子 回复", None),
        # the name stops at the next label or a non-name word
        ("tail", "<p>作者：吕峥 来源：新华网</p>", "吕峥"),
        ("tail", "<p>责任编辑：吕峥 来源：新华网</p>", None),
        # a bare editor line is the last resort; a 责任编辑 sign-off never names the author
        ("tail", "<p>来源：巴彦淖尔日报 编辑：苏亮</p>", "苏亮"),
        ("tail", "<p>编辑：苏亮</p><p>（责任编辑：王明）</p>", "苏亮"),
        ("tail", "<p>[责任编辑：alonliu]</p>", None),
        ("tail", "<p>（记者陈智 整合）</p>", "陈智"),
        # a name glued to 记者 is taken when it starts with a surname
        ("info", "本报记者王五", "王五"),
        ("info", "作者：记者王明", "王明"),
        ("info", "作者：本报记者王五 通讯员李四", "王五; 李四"),
        ("info", "来源：记者站", None),
        ("info", "澎湃新闻记者 段彦超 廖艳", "段彦超; 廖艳"),
        # one byline naming reporters, interns and correspondents
        ("info", "记者 张三 通讯员 李四", "张三; 李四"),
        ("info", "本报实习生 刘国栋 周炜本报记者 王燕平", "刘国栋; 周炜; 王燕平"),
        ("tail", "<p>本报记者王五报道</p>", "王五"),
        # an empty label does not take the next line's label for a name, nor the editor
        ("info", "作者：<br>责任编辑：肖春芳", None),
        # a transliteration printed with the name stays with it
        ("info", "作者：周思博 (Joel Spolsky) 译：陈斌", "周思博 (Joel Spolsky)"),
        # an agency is an author
        ("info", "作者：新华社", "新华社"),
    ],
)
def test_byline_precision(where: str, markup: str, expected: str | None) -> None:
    html = zh_page(**{where: markup})
    art = extract_article(html, "http://x.example/n/1.html")
    assert art is not None
    assert art.author == expected


@pytest.mark.parametrize(
    ("meta_author", "expected"),
    [
        ("作者：记者 刘洋", "刘洋"),
        ("扬眼 企鹅号", "扬眼"),
        ("我已授权", None),
        ("Jane Doe is a staff reporter", "Jane Doe"),
        ("Analysis by Jane Doe; CNN Editor-at-large", "Jane Doe"),
        ("JOHN ROE; AP National Political Writer", "JOHN ROE"),
        ("Name; Email Com", None),
        ("Jane Doe; John Roe", "Jane Doe; John Roe"),
    ],
)
def test_metadata_author_is_cleaned_to_names(meta_author: str, expected: str | None) -> None:
    html = zh_page(head=f'<meta name="author" content="{meta_author}">')
    art = extract_article(html, "http://x.example/n/1.html")
    assert art is not None
    assert art.author == expected


@pytest.mark.parametrize(
    "tail",
    [
        "<p>特别声明：以上内容(如有图片或视频亦包括在内)为自媒体平台用户上传并发布，"
        "本平台仅提供信息存储服务。</p>"
        "<p>Notice: The content above (including the pictures and videos if any) is uploaded and "
        "posted by a user of the platform, which is a social media platform and only provides "
        "information storage services.</p>",
        "<p>Copyright © 2024 示例网 All Rights Reserved</p>"
        "<p>京ICP备12345678号 京公网安备1101号</p>",
        "<p>违法和不良信息举报电话：010-12345678</p><p>举报邮箱：report@example.cn</p>",
        "<p>相关阅读</p><p>春季农业生产全面展开</p><p>多地出台稳就业新举措</p>",
        "<p>【打印本页】【关闭窗口】</p>",
    ],
)
def test_boilerplate_that_ends_a_body_is_cut(tail: str) -> None:
    art = extract_article(zh_page(tail=tail), "http://x.example/n/1.html")
    assert art is not None
    assert art.text.split("\n") == [P1, P2, P3]


@pytest.mark.parametrize(
    "dateline",
    ["<p>2026-11-25 09:00</p>", "<p>发布时间：2026-11-21 09:15 来源：本地新闻网 作者：王明</p>",
     "<p>2026年11月25日 来源：新华社</p>"],
)
def test_a_date_line_that_starts_the_body_is_cut(dateline: str) -> None:
    # a page whose date line is the body's first paragraph (no info <div> of its own), and its
    # reprint posted at another time: both texts must be the story alone, or the near-duplicate
    # check compares the two times and stores the reprint too
    def page(line: str) -> str:
        return (f"<html><head><meta charset='utf-8'><title>标题</title></head><body><article>"
                f"<h1>消防安全宣传走进中小学</h1>{line}<p>{P1}</p><p>{P2}</p><p>{P3}</p>"
                "</article></body></html>")

    original = extract_article(page(dateline), "http://x.example/n/1.html")
    reprint = extract_article(page("<p>2026-11-26 15:00</p>"), "http://y.example/n/2.html")
    assert original is not None and reprint is not None
    assert original.text.split("\n") == [P1, P2, P3] == reprint.text.split("\n")


def _info_page(info: str, tail: str = "") -> str:
    return ("<html><head><meta charset='utf-8'><title>标题</title></head><body><nav>首页 新闻</nav>"
            f"<article><h1>消防安全宣传走进中小学</h1><div class='info'>{info}</div>"
            f"<p>{P1}</p><p>{P2}</p><p>{P3}</p>{tail}</article><footer>版权所有</footer>"
            "</body></html>")


def test_an_info_element_split_by_a_paragraph_stays_out_of_the_body() -> None:
    # an info <div> holding a <p>: the library keeps its parts as the body's first lines and
    # repeats them after the body; a short reprint then differed from its original by the
    # byline and source lines, 9 bits apart, and both were stored
    original = extract_article(_info_page("2026年11月28日 10:00 作者：记者王明"),
                               "http://x.example/n/1.html")
    reprint = extract_article(
        _info_page("2026年11月28日 10:00 <p>来源：A市新闻网</p> 作者：记者王明"),
        "http://y.example/n/2.html")
    assert original is not None and reprint is not None
    assert original.text.split("\n") == [P1, P2, P3] == reprint.text.split("\n")
    assert reprint.source == "A市新闻网" and reprint.author == original.author == "王明"


def test_a_source_line_that_opens_the_body_is_cut_and_read() -> None:
    art = extract_article(_info_page("2026-11-28", tail="").replace(
        f"<p>{P1}</p>", f"<p>（来源：新华网）</p><p>{P1}</p>"), "http://x.example/n/1.html")
    assert art is not None
    assert art.text.split("\n") == [P1, P2, P3]
    assert art.source == "新华网"


@pytest.mark.parametrize(("first", "author"), [
    ("本报记者 王明 通讯员 李华", "王明; 李华"), ("（记者 张强）", "张强"),
    ("本报讯（记者 王明）", "王明"), ("记者 王明 报道", "王明"),
])
def test_a_byline_that_opens_the_body_is_read_and_cut(first: str, author: str) -> None:
    art = extract_article(_info_page("2026-11-28").replace(f"<p>{P1}</p>",
                                                           f"<p>{first}</p><p>{P1}</p>"),
                          "http://x.example/n/1.html")
    assert art is not None
    assert art.author == author
    assert art.text.split("\n") == [P1, P2, P3]


def test_the_page_date_line_kept_in_the_body_beats_the_date_in_the_url() -> None:
    # the library kept the info element's date line as the body's first line: it is the page's
    # own date (with its time), not the URL's day
    html = (_info_page("", tail="").replace("<div class='info'></div>", "")
            .replace(f"<p>{P1}</p>", f"<p>2026年11月21日 10:00 作者：记者王明</p><p>{P1}</p>"))
    for url in ("http://x.example/news/20261121/1.html", "http://x.example/news/20261101/1.html"):
        art = extract_article(html, url)
        assert art is not None
        assert art.published == "2026-11-21T10:00:00+08:00", url
        assert art.text.split("\n") == [P1, P2, P3]


@pytest.mark.parametrize("line", ["（责任编辑：李华）", "来源：本地新闻网 编辑：张三"])
def test_a_sign_off_that_ends_the_body_is_kept(line: str) -> None:
    # only a copy of a line printed above the body is cut at its end: the labelled pages keep a
    # sign-off of their own as part of the text
    art = extract_article(_info_page("2026-11-28 作者：王明", tail=f"<p>{line}</p>"),
                          "http://x.example/n/1.html")
    assert art is not None
    assert art.text.split("\n") == [P1, P2, P3, line]


def _editor_outside_page(paragraphs: list[str], sign_off: str = "责任编辑：李明") -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"""<html><head><meta charset="utf-8"><title>{TITLE}_示例网</title></head><body>
<div class="topnav"><a href="/">首页</a> | <a href="/c">国内</a> | <a href="/i">国际</a></div>
<div class="main"><h1>{TITLE}</h1><div class="info">2026-11-30 12:05 来源：示例网</div>
<div class="content" id="article">{body}</div>
<p class="editor">{sign_off}</p>
<div class="related"><h3>相关新闻</h3><ul><li><a href="/1">本周天气：冷空气来袭</a></li>
<li><a href="/2">全市中小学开展消防安全演练</a></li></ul></div></div>
<div class="footer">示例网 版权所有</div></body></html>"""


@pytest.mark.parametrize("sign_off", ["责任编辑：李明", "[责任编辑：alonliu]",
                                      "编辑：王强 审核：刘洋", "（责任编辑：张伟）"])
@pytest.mark.parametrize("paragraphs", [[P1, P2], [P1, P2, P3] * 4])
def test_a_sign_off_printed_after_the_body_container_is_left_out(
        paragraphs: list[str], sign_off: str) -> None:
    # the library takes the editor line printed after the container into a short text (not into
    # a long one of the same template): each text of a portal now ends alike, without it
    from newscrawl.extract.library import library_body, library_tree

    html = _editor_outside_page(paragraphs, sign_off)
    url = "http://x.example/n/1.html"
    if len(paragraphs) == 2:
        doc = library_body(library_tree(html, url), url, True)
        assert doc is not None and sign_off in doc.text
    art = extract_article(html, url)
    assert art is not None
    assert sign_off not in art.text, art.text
    assert art.text.split("\n")[:2] == [P1, P2]


@pytest.mark.parametrize("first", ["记者从市教育局获悉", "记者：您怎么看今年的就业形势？",
                                   "记者：请介绍一下这个项目"])
def test_a_first_line_of_running_text_after_a_label_word_is_kept(first: str) -> None:
    # running text, and an interview's first question: "记者：" is who asks
    art = extract_article(_info_page("2026-11-28").replace(f"<p>{P1}</p>",
                                                           f"<p>{first}</p><p>{P1}</p>"),
                          "http://x.example/n/1.html")
    assert art is not None
    assert art.text.split("\n") == [first, P1, P2, P3]


def test_a_body_that_opens_with_a_date_keeps_its_sentence() -> None:
    first = "2026年11月25日，市消防救援支队在全市中小学开展冬季消防安全宣传活动。"
    html = zh_page().replace(f"<p>{P1}</p>", f"<p>{first}</p><p>{P1}</p>")
    art = extract_article(html, "http://x.example/n/1.html")
    assert art is not None
    assert art.text.split("\n")[0] == first


def test_english_related_list_at_the_end_is_cut() -> None:
    paras = [f"The council met on Tuesday to discuss the budget for item {i}, and the members "
             "agreed to publish the figures before the next session of the assembly."
             for i in range(4)]
    related = "<p>Related:</p><p>Budget vote delayed again</p><p>Mayor names new treasurer</p>"
    html = ("<html><head><title>Council budget</title></head><body><article><h1>Council budget"
            "</h1>" + "".join(f"<p>{p}</p>" for p in paras) + related + "</article></body></html>")
    art = extract_article(html, "https://example.com/news/budget")
    assert art is not None
    assert art.text.split("\n") == paras


def test_boilerplate_words_inside_a_body_are_kept() -> None:
    middle = "<p>相关阅读材料显示，版权所有人的权利受到法律保护，举报邮箱已经公布。</p>"
    html = zh_page().replace(f"<p>{P2}</p>", f"<p>{P2}</p>{middle}")
    art = extract_article(html, "http://x.example/n/1.html")
    assert art is not None
    assert "相关阅读材料显示" in art.text and art.text.endswith(P3)


EN_PARAS = "".join(
    f"<p>The harbour board said on Monday that the new ferry terminal would open in stages, with "
    f"the first berth ready for passengers by the summer season, part {i}.</p>" for i in range(3))


def en_page(head: str = "", byline: str = "", first: str = "") -> str:
    return (f"<html><head><title>Ferry terminal to open in stages</title>{head}</head><body>"
            f"<article><h1>Ferry terminal to open in stages</h1>{byline}{first}{EN_PARAS}"
            "</article></body></html>")


@pytest.mark.parametrize(
    ("head", "byline"),
    [
        ('<meta name="pubdate" content="2019-04-28 06:01:07">',
         '<p class="byline">Published 28 April 2019, 06:01 UTC</p>'),
        ('<script type="application/ld+json">{"@type": "NewsArticle", '
         '"datePublished": "2019-04-28T06:01:07"}</script>',
         '<div class="meta"><time datetime="2019-04-28T06:01:07">28 April 2019 06:01 GMT</time>'
         "</div>"),
    ],
)
def test_time_without_offset_takes_the_zone_the_page_states(head: str, byline: str) -> None:
    art = extract_article(en_page(head, byline), "https://example.com/news/ferry")
    assert art is not None
    assert art.published == "2019-04-28T06:01:07+00:00"


def test_time_element_beats_a_date_in_the_first_sentence() -> None:
    byline = ('<div class="meta">By Jane Doe '
              '<time datetime="2024-03-15T10:20:00Z">15 March</time></div>')
    first = "<p>2019-11-05: the harbour board first proposed the terminal on that day.</p>"
    art = extract_article(en_page(byline=byline, first=first), "https://example.com/news/ferry")
    assert art is not None
    assert art.published == "2024-03-15T10:20:00+00:00"


def test_url_date_beats_a_date_in_the_first_sentence() -> None:
    html = zh_page().replace(f"<p>{P1}</p>", f"<p>2019年11月5日，{P1}</p>")
    art = extract_article(html, "http://news.example.cn/2024/0315/c1001-123.html")
    assert art is not None
    assert art.published == "2024-03-15"


def test_fact_check_page_gives_its_own_date_not_the_checked_statement() -> None:
    ld = ('{"@context": "https://schema.org", "@type": "ClaimReview", '
          '"itemReviewed": {"@type": "Claim", "datePublished": "2019-05-01", '
          '"appearance": {"@type": "CreativeWork", "datePublished": "2019-05-02"}}, '
          '"claimReviewed": "The terminal was approved in 2019.", '
          '"datePublished": "2024-03-15T09:00:00+00:00"}')
    html = en_page(f'<script type="application/ld+json">{ld}</script>')
    art = extract_article(html, "https://example.com/fact-check/ferry")
    assert art is not None
    assert art.published == "2024-03-15T09:00:00+00:00"


LONG_PARAS = [f"Part {i}: the harbour board said the new terminal would open in stages, and "
              "that the first berth would be ready for passengers by the summer season next year."
              for i in range(16)]


@pytest.mark.parametrize(
    "ad",
    [
        '<div class="ad-slot full-width"><div class="advertisement">Advertisement</div></div>',
        '<figure class="embed"><iframe src="https://video.example/v/1"></iframe>'
        "<figcaption>Video: the terminal site</figcaption></figure>",
    ],
)
@pytest.mark.parametrize("split", [5, 11])
def test_paragraphs_after_a_full_width_ad_in_the_same_article_are_kept(ad: str, split: int) -> None:
    def part(paras: list[str]) -> str:
        return '<div class="article-body">' + "".join(f"<p>{p}</p>" for p in paras) + "</div>"

    html = ("<html><head><title>Terminal to open in stages</title></head><body>"
            "<nav><a href='/'>Home</a></nav><article><h1>Terminal to open in stages</h1>"
            f"{part(LONG_PARAS[:split])}{ad}{part(LONG_PARAS[split:])}</article>"
            "<footer>(c) Example</footer></body></html>")
    art = extract_article(html, "https://example.com/news/terminal")
    assert art is not None
    assert art.text.split("\n") == LONG_PARAS


def test_a_link_list_beside_the_body_is_not_taken_for_its_continuation() -> None:
    links = "".join(f'<p><a href="/n/{i}">Other story number {i}</a></p>' for i in range(8))
    html = ("<html><head><title>Terminal to open in stages</title></head><body><article>"
            "<h1>Terminal to open in stages</h1>"
            '<div class="article-body">' + "".join(f"<p>{p}</p>" for p in LONG_PARAS[:6])
            + '</div><div class="ad">Advertisement</div>'
            f'<div class="article-body">{links}</div></article></body></html>')
    art = extract_article(html, "https://example.com/news/terminal")
    assert art is not None
    assert art.text.split("\n") == LONG_PARAS[:6]


def test_reporter_byline_beats_the_metadata_account() -> None:
    # the page's metadata names the account that uploaded it; the article names its reporter
    html = zh_page(info='<span class="author">扬眼 企鹅号</span>', tail="<p>扬子晚报记者 张楠</p>")
    art = extract_article(html, "http://x.example/n/1.html")
    assert art is not None
    assert art.author == "张楠"


def test_the_library_metadata_fills_what_our_rules_leave_empty() -> None:
    """No date line, URL date or byline: the extraction library's date and author (read only when
    our own rules find nothing) are used."""
    head = '<meta name="date" content="2024-03-15"><meta name="author" content="Jane Smith">'
    art = extract_article(zh_page(head=head), "http://news.example.cn/a/123.html")
    assert art is not None
    assert (art.published, art.author) == ("2024-03-15", "Jane Smith")


def test_our_rules_win_over_the_library_metadata() -> None:
    head = '<meta name="date" content="2024-03-10"><meta name="author" content="Jane Smith">'
    art = extract_article(zh_page(head=head, info="2024年03月15日 10:20 作者：张三"),
                          "http://news.example.cn/a/123.html")
    assert art is not None
    assert (art.published, art.author) == ("2024-03-15T10:20:00+08:00", "张三")


def test_character_counts_follow_their_definitions() -> None:
    """The counts extraction decides by (non-space characters, the share of ideographs) as
    their definitions say, for any text: spaces of every kind, ideographs at the range's ends."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from newscrawl.extract.article import _chars
    from newscrawl.extract.zh import cjk_share

    edges = "\u4e00\u9fff\u4dff\ua000 \u3000\u00a0\u2028\x1c\t\n中文a1"

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80)
           | st.text(alphabet=edges, max_size=80))
    def check(text: str) -> None:
        non_space = [c for c in text if not c.isspace()]
        assert _chars(text) == len(non_space)
        head = [c for c in text[:5000] if not c.isspace()]
        expected = sum("\u4e00" <= c <= "\u9fff" for c in head) / len(head) if head else 0.0
        assert cjk_share(text) == expected

    check()


def test_info_line_byline_when_the_headline_runs_into_the_body() -> None:
    """A page whose first paragraph starts with the headline (the text source ran them together):
    the byline of the info line between the printed headline and the body is the author, and the
    editor line that ends the body is not."""
    title = "统计局发布一季度经济数据国内生产总值同比增长"
    html = (
        f"<html><head><title>{title}_示例网</title></head><body>"
        "<div class='nav'><a href='/'>首页</a> <a href='/n'>新闻</a></div>"
        f"<div class='article'><h1>{title}</h1>"
        "<div class='info'>2024-03-15 来源：本网 作者：王芳</div>"
        f"<div class='content'><p>{title}国家统计局今天发布数据显示，一季度经济平稳。</p>"
        f"<p>{P2}</p><p>{P3}</p><p>（责任编辑：王明）</p></div></div></body></html>"
    )
    art = extract_article(html, "http://x.example/n/1.html")
    assert art is not None
    assert art.author == "王芳"
