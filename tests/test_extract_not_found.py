"""A portal's "page not found" answered with HTTP 200 (a soft 404) is no article.

Error pages in the shapes portals serve them (Chinese and English, the message in the title, in
a heading, under a bare ``404``) are recognised through the real extraction; articles are not,
even when their title speaks of a 404 or their text of a deleted page.
"""

from __future__ import annotations

import pytest

from newscrawl.extract import extract_article
from newscrawl.extract.not_found import MAX_NOT_FOUND_CHARS, not_found_phrase

CHROME_TOP = ('<div class="nav"><a href="/">首页</a> <a href="/news">新闻</a> '
              '<a href="/sports">体育</a> <a href="/finance">财经</a></div>')
CHROME_BOTTOM = '<div class="footer">版权所有 示例新闻网 京ICP备12345678号</div>'


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head>'
            f"<body>{CHROME_TOP}<div class=\"main\">{body}</div>{CHROME_BOTTOM}</body></html>")


ERROR_PAGES = {
    "zh-heading": page(
        "页面不存在 - 示例新闻网",
        "<h1>抱歉，您访问的页面不存在</h1><p>您访问的页面不存在或已被删除，可能是网址输入有误，"
        "或者该文章已经下线。请检查您输入的网址是否正确，或者返回首页继续浏览其他精彩内容。</p>"
        "<p>5秒后自动返回首页。</p>"),
    "zh-bare-404": page(
        "示例新闻网",
        '<div class="err"><h2>404</h2><p>很抱歉！您要查看的文章已被删除或不存在。</p>'
        "<p>您可以：返回首页，查看其他新闻，或者使用站内搜索寻找您需要的内容。感谢您对本站的支持！</p>"
        "</div>"),
    "zh-lost": page(
        "出错了",
        "<h1>页面走丢了</h1><p>您要找的页面可能已经被删除、更名或者暂时不可用。"
        "我们正在努力寻找它，请稍后再试，或者回到首页看看今天的头条新闻和热门评论吧。</p>"),
    "en": page(
        "Page not found | Example Times",
        "<h1>Sorry, we couldn't find that page</h1><p>The page you are looking for may have been"
        " removed, had its name changed, or is temporarily unavailable. Please check the address"
        " or go back to our home page to continue reading the latest news.</p>"),
}


@pytest.mark.parametrize("name", sorted(ERROR_PAGES))
def test_an_error_page_passes_as_a_body_and_is_found_out(name: str) -> None:
    article = extract_article(ERROR_PAGES[name], "http://news.example/a/1.html")
    # the extraction alone would take it for an article (what the check is for)
    assert article is not None and article.text
    assert not_found_phrase(article.title, article.text) is not None


PARAGRAPH = ("国家统计局今天发布数据显示，十月份全国规模以上工业增加值同比增长百分之五点三，"
             "增速比上月加快零点二个百分点，其中制造业增长百分之五点八，高技术制造业增长百分之九点一。")

ARTICLES = {
    # a long text is an article whatever its title says
    "title-404": page("“404页面”设计大赛揭晓", "<h1>“404页面”设计大赛揭晓</h1>"
                      + "".join(f"<p>第{n}段。{PARAGRAPH}</p>" for n in range(1, 7))),
    # a short brief that mentions a deleted post, not addressing the reader about this page
    "brief": page("涉事博主道歉", "<h1>涉事博主道歉</h1><p>记者今天获悉，涉事博主已就不实言论"
                  "公开道歉，相关微博已被删除。平台表示将依规处理。</p>"),
    "plain": page("十月工业数据发布", f"<h1>十月工业数据发布</h1><p>{PARAGRAPH}</p>"),
    "english": page("Council approves budget", "<h1>Council approves budget</h1><p>The city"
                    " council approved next year's budget on Tuesday after a debate that lasted"
                    " into the night; the page count of the plan rose to 400.</p>"),
}


@pytest.mark.parametrize("name", sorted(ARTICLES))
def test_an_article_is_not_taken_for_an_error_page(name: str) -> None:
    article = extract_article(ARTICLES[name], "http://news.example/a/1.html")
    assert article is not None
    assert not_found_phrase(article.title, article.text) is None


def test_a_long_text_is_an_article_whatever_its_first_line_says() -> None:
    text = "您访问的页面不存在\n请返回首页。" + "一" * MAX_NOT_FOUND_CHARS
    assert not_found_phrase(None, text) is None
    assert not_found_phrase(None, text[:MAX_NOT_FOUND_CHARS]) == "您访问的页面"


def test_the_message_is_read_in_the_first_lines_only() -> None:
    lines = ["第一段。", "第二段。", "第三段。", "您访问的页面不存在，请返回首页。"]
    assert not_found_phrase("标题", "\n".join(lines)) is None
    assert not_found_phrase("标题", "\n".join(lines[1:])) == "您访问的页面"


def test_without_advice_to_the_reader_it_is_no_error_page() -> None:
    # an error page tells its reader where to go instead; a news item about one does not
    assert not_found_phrase("页面不存在", "很抱歉！您要查看的文章已被删除或不存在。") is None
    assert not_found_phrase("页面不存在", "很抱歉！您要查看的文章已被删除。5秒后自动跳转。") \
        == "页面不存在"


# Short news items about websites, each one a trial took for an error page before the advice
# and quotation rules: none is one.
BRIEFS = [
    ("“404页面”变身寻人启事", "多家网站把网页的404页面改成了寻人启事，帮助走失儿童回家。网友可在"
     "各网站首页看到这些信息。"),
    ("12306页面出错？铁路部门回应", "昨日有旅客反映12306页面出错无法购票，"
     "铁路部门回应称系统已恢复，旅客可稍后再试。"),
    ("市民反映政务网站打不开", "“您访问的页面不存在”——不少市民昨天登录市政务服务网时"
     "看到这样的提示。市数据局表示，网站正在升级，请市民稍后再试。"),
    ('City tax portal shows "page not found"', 'Residents trying to file online on Monday saw'
     ' "page not found" messages; officials said they should try again later today.'),
    ("违规帖子被删除", "记者调查发现，目前相关页面已被删除，平台表示将严肃处理，"
     "市民可拨打热线反映问题。"),
]


@pytest.mark.parametrize("title,text", BRIEFS)
def test_a_short_news_item_about_a_missing_page_is_no_error_page(title: str, text: str) -> None:
    assert not_found_phrase(title, text) is None
