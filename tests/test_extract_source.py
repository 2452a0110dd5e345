"""The outlet a page names as its text's source (``来源：新华社``), on small pages built here."""

from __future__ import annotations

import pytest

from newscrawl.extract import decode_html, extract_article
from newscrawl.extract.source import clean_source

P1 = "国家统计局今天发布数据显示，一季度国内生产总值同比增长百分之五点三，经济运行开局良好。"
P2 = "分行业看，工业生产稳步回升，服务业持续恢复，消费市场保持活跃，就业形势总体稳定。"
P3 = "专家表示，随着一系列政策措施落地见效，经济回升向好的态势将进一步巩固和增强。"
URL = "http://news.example.cn/a/123.html"
TITLE = "一季度经济数据发布"


def page(*, info: str = "", tail: str = "", after: str = "", head: str = "",
         site: str = "示例网", charset: str = "utf-8") -> str:
    """A portal page: menu, headline, an info line above the body, three paragraphs, footer."""
    nav = "".join(f'<li><a href="/c{i}">频道{i}</a></li>' for i in range(12))
    return f"""<html><head><meta charset="{charset}"><title>{TITLE}_新闻中心_{site}</title>{head}
</head><body><div class="nav"><ul>{nav}</ul></div>
<div class="main"><h1>{TITLE}</h1>
<div class="info">{info}</div>
<div class="content"><p>{P1}</p><p>{P2}</p><p>{P3}</p>{tail}</div>{after}</div>
<div class="footer"><p>{site} 版权所有 京ICP备00000000号</p><a href="/about">关于我们</a></div>
</body></html>"""


def source_of(html: str, url: str = URL) -> str | None:
    art = extract_article(html, url)
    assert art is not None
    return art.source


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        ("2024年03月15日 10:20 来源：新华社 作者：张三", "新华社"),
        ("2024-03-15 10:20　来源: 人民网-人民日报", "人民网"),
        ("来源：新华网 | 2024-03-15", "新华网"),
        ("（来源：央视新闻客户端）", "央视新闻"),
        ('发布时间：2024-03-15 来源：<a href="http://www.bjnews.com.cn/">新京报</a>', "新京报"),
        ("2024-03-15 来源：<span>\n  中国新闻网\n</span> 编辑：李四", "中国新闻网"),
        ("来源：[<a href='/'>国际金融报</a>]", "国际金融报"),
        ("稿源：经济日报 责任编辑：王五", "经济日报"),
        ("本文转自：澎湃新闻", "澎湃新闻"),
        ("转载自《南方周末》", "南方周末"),
        ("来源：“21世纪经济报道”", "21世纪经济报道"),
        ("来源：微信公众号“侠客岛”", "侠客岛"),
        ("来源于：东区办事处", "东区办事处"),
        ("2024-03-15 08:00 Source: Reuters", "Reuters"),
        ("来源：示例网（转自新华社）", "新华社"),
        ("来源：澎湃新闻·澎湃号·政务", "澎湃新闻"),
        ("来源 光明日报", "光明日报"),
        ("来源：新华社记者张三", "新华社"),
        ("来源：人民日报（2024年03月15日 第04版）", "人民日报"),
        ("文章来源：@北京青年报", "北京青年报"),
        ("Source: AP/Reuters", "AP"),
    ],
)
def test_source_line_above_the_body(info: str, expected: str) -> None:
    assert source_of(page(info=info)) == expected


@pytest.mark.parametrize(
    "info",
    [
        "",
        "2024-03-15 10:20 作者：张三",
        "来源：",  # an empty field
        "来源： 作者： 发布时间：2024-03-15",
        '来源： size="20" 发布日期： 7/5/2005 9:23:57 PM',  # a template's leftovers
        "来源：转载",
        "来源:转载文章",
        "来源：网络",
        "来源：本网",
        "来源：本站原创",
        "来源：原创",
        "来源：未知",
        "数据来源：国家统计局",  # where figures come from, not the text
        "图片来源：视觉中国",
        "素材来源 江苏13个设区市党报及官方发布",
        "（资料来源：参考消息、海外网等）",
        "其收入来源：工资、奖金和理财收益，这几项构成了一个普通家庭的全部进账。",
        "Source: Supplied",
        "Source:",
        "来源：" + "啊" * 300,  # long garbage
        "来源：" + "x" * 500,
        "来源：我们的朋友们在这里说了很多话",  # running text, not a name
    ],
)
def test_no_source(info: str) -> None:
    assert source_of(page(info=info)) is None


@pytest.mark.parametrize(
    ("info", "site", "url"),
    [
        ("来源：示例网", "示例网", URL),  # the site part of the <title>
        ("来源：示例", "示例网", URL),
        ("来源：新华网", "新华网", "http://www.news.cn/politics/2024-03/15/c_1.htm"),
        ("来源：新华社", "新华网", URL),  # one outlet, two kinds of name
        ("来源：人民日报", "人民网", URL),
        ("来源：云南日报", "云南日报网", URL),
        ("来源：人民网-文化频道 原创稿", "人民网", URL),
        ("来源：澎湃新闻", "澎湃新闻-The Paper", URL),
        ("Source: Reuters", "示例网", "https://www.reuters.com/world/x-2024-03-15/"),
    ],
)
def test_a_page_naming_itself_has_no_source(info: str, site: str, url: str) -> None:
    assert source_of(page(info=info, site=site), url) is None


def test_own_name_from_og_site_name_and_copyright_line() -> None:
    head = '<meta property="og:site_name" content="南方网">'
    assert source_of(page(info="来源：南方网", head=head)) is None
    # only the footer names the site ("网易公司版权所有"); the title has a channel name only
    html = page(info="来源：网易商业报道", site="商业频道").replace(
        "商业频道 版权所有", "网易公司版权所有")
    assert source_of(html) is None


def test_a_place_name_shared_with_the_site_is_not_the_site() -> None:
    # a city's government site reprinting the city's daily
    html = page(tail="<p>来源：巴彦淖尔日报 \u2002\u2002编辑：苏亮</p>",
                site="巴彦淖尔市人民政府网")
    assert source_of(html) == "巴彦淖尔日报"
    # two outlets whose names start with a word many share
    assert source_of(page(info="来源：中国日报", site="中国青年网")) == "中国日报"


@pytest.mark.parametrize(
    ("tail", "after", "expected"),
    [
        ("<p>（来源：经济日报）</p>", "", "经济日报"),
        ("<p>本文来源：证券市场红周刊</p><p>责任编辑：杨倩</p>", "", "证券市场红周刊"),
        ("", "<div>来源：南方都市报</div><div>发表评论</div>", "南方都市报"),
        ("", "<p>免责声明：本文来自腾讯新闻客户端自媒体，不代表腾讯网的观点和立场。</p>", None),
        ("", "<p>特别声明：本文转自网络，版权归原作者所有，如有侵权请联系删除。</p>", None),
    ],
)
def test_source_line_below_the_body(tail: str, after: str, expected: str | None) -> None:
    assert source_of(page(tail=tail, after=after)) == expected


def test_the_first_cue_that_names_an_outlet_decides() -> None:
    # "来源：转载文章" above the body says nothing; the line below the body names the outlet
    html = page(info="2005-04-05 06:40更新 来源：转载文章", after="<p>来源：新闻晨报</p>")
    assert source_of(html) == "新闻晨报"
    # the page names itself first: that is the answer, whatever a later line credits
    html = page(info="来源：示例网", after="<p>来源|广州参考、羊城晚报</p>")
    assert source_of(html) is None


def test_source_element_above_the_body() -> None:
    # sina: the outlet in an element marked "source", no label
    info = ('2024年03月15日 09:58 <a href="http://www.bjd.com.cn/" class="source" '
            'rel="nofollow">北京日报</a>')
    assert source_of(page(info=info)) == "北京日报"
    info = '<span class="source ent-source">示例网-自媒体综合</span>'
    assert source_of(page(info=info)) is None
    # a photo credit marked "source" is the picture's
    info = ('<figure><img src="/a.jpg"><span class="caption">外景</span>'
            '<span class="source">新华社</span></figure>')
    assert source_of(page(info=info)) is None


def test_source_element_in_a_list_of_other_articles_is_not_the_pages() -> None:
    related = "".join(
        f'<li><a href="/a/{i}.html">其他新闻{i}</a>'
        '<a class="footer-bar-action source">新京报</a></li>'
        for i in range(5)
    )
    assert source_of(page(after=f'<ul class="related">{related}</ul>')) is None


def test_meta_source_and_jsonld() -> None:
    assert source_of(page(head='<meta name="source" content="人民日报海外版">')) == "人民日报海外版"
    assert source_of(page(head='<meta name="source" content="来源：示例网">')) is None
    jsonld = ('<script type="application/ld+json">{"@type": "NewsArticle", "headline": "x",'
              ' "sourceOrganization": {"@type": "Organization", "name": "Xinhua"}}</script>')
    assert source_of(page(head=jsonld)) == "Xinhua"
    jsonld = ('<script type="application/ld+json">{"@graph": [{"@type": "NewsArticle",'
              ' "isBasedOn": {"@type": "NewsArticle", "url": "https://apnews.com/x",'
              ' "publisher": {"@type": "Organization", "name": "Associated Press"}}}]}</script>')
    assert source_of(page(head=jsonld)) == "Associated Press"
    broken = '<script type="application/ld+json">{"sourceOrganization": </script>'
    assert source_of(page(head=broken)) is None


def test_the_visible_line_comes_before_the_meta_field() -> None:
    html = page(info="来源：经济日报", head='<meta name="source" content="光明日报">')
    assert source_of(html) == "经济日报"


@pytest.mark.parametrize("declared", ["utf-8", "gb2312", None])
def test_gbk_page(declared: str | None) -> None:
    html = page(info="2024年03月15日 10:20 来源：中国青年报 作者：张三", site="新浪网",
                charset=declared or "")
    if declared is None:
        html = html.replace('<meta charset="">', "")
    text, encoding = decode_html(html.encode("gbk"))
    assert encoding in ("gb18030", "gbk")
    art = extract_article(text, "http://news.sina.com.cn/c/2024-03-15/doc-1.shtml")
    assert art is not None
    assert art.source == "中国青年报"
    assert art.author == "张三"
    assert art.text.split("\n") == [P1, P2, P3]


def test_self_naming_gbk_page() -> None:
    html = page(info="来源：新浪网 作者：张三", site="新浪网", charset="gbk")
    text, _ = decode_html(html.encode("gbk"))
    assert extract_article(text, "http://news.sina.com.cn/c/1.shtml").source is None  # type: ignore[union-attr]


def test_host_names_the_site_for_latin_sources() -> None:
    html = page(info="Source: Xinhua", site="示例网")
    assert source_of(html, "http://english.xinhua.example.org/2024/a.htm") is None
    assert source_of(html, "http://127.0.0.1:8080/a/1.html") == "Xinhua"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("新华社 作者：张三", "新华社"),
        ("人民网-人民日报", "人民网"),
        ("新华网 | 2024-03-15", "新华网"),
        ("  \n[\n国际金融报\n]", "国际金融报"),
        ("乙网（转自甲网）", "甲网"),
        ("央视新闻客户端", "央视新闻"),
        ("《人民日报》", "人民日报"),
        ("新京报   编辑：张三", "新京报"),
        ("Reuters", "Reuters"),
        ("The Associated Press", "The Associated Press"),
        ("本网", ""),
        ("原创", ""),
        ("转载", None),
        ("", None),
        (None, None),
        ("\n分享到：", None),
        ("2024-03-15 10:20", None),
        ("size=\"20\"", None),
        ("http://www.example.com/", None),
        ("the agency said", None),
    ],
)
def test_clean_source(value: str | None, expected: str | None) -> None:
    assert clean_source(value) == expected
