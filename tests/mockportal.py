"""A local mock news portal for crawl tests and the crawl benchmark (stdlib only, loopback only).

:class:`MockPortal` serves pages from a dict ``path -> Page`` that a test can change between runs,
counts hits per path (without the query; a page set for a path with a query also counts under
that full path) and the most requests it answered at once (``peak_in_flight``), and binds port 0 on
the host it is given (127.0.0.1, 127.0.0.2, ...).
For the reliability tests a path can be slowed down (:meth:`MockPortal.delay`, so requests are in
flight when a worker is killed) or made to answer 503 for a number of requests
(:meth:`MockPortal.fail`).
:func:`build_portals` lays out two portals with everything the crawl must cope with; the article
texts are generated here from a seeded RNG (Chinese news-like prose), never read from shared data.
"""

from __future__ import annotations

import datetime
import random
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# --- text generation -----------------------------------------------------------------------------

_PLACES = ["北京", "上海", "广州", "深圳", "杭州", "成都", "武汉", "西安", "南京", "重庆", "天津",
           "苏州", "长沙", "郑州", "青岛", "厦门", "昆明", "沈阳", "哈尔滨", "兰州", "贵阳", "福州"]
_ACTORS = ["市政府", "交通运输部", "教育部门", "科技企业", "研究团队", "消防部门", "气象台",
           "铁路部门", "环保组织", "医疗机构", "商务局", "文旅局", "农业农村局", "体育总局",
           "银行业协会", "海关总署", "统计局", "志愿者团队", "高校实验室", "电力公司"]
_VERBS = ["发布", "启动", "完成", "推进", "宣布", "调整", "召开", "开展", "部署", "公布", "签署",
          "实施", "通报", "优化", "加强", "建设", "升级", "试点", "投入", "审议"]
_OBJECTS = ["新能源汽车充电网络", "城市轨道交通规划", "义务教育改革方案", "人工智能创新平台",
            "夏季防汛应急预案", "跨境电商综合试验区", "乡村振兴重点项目", "冬季供暖保障措施",
            "文化遗产保护工程", "全民健身公共服务", "养老服务体系", "医保支付方式改革",
            "老旧小区改造计划", "数字政务服务平台", "生态环境监测网络", "粮食安全保障体系",
            "中小企业纾困政策", "高速铁路建设项目", "空气质量改善行动", "科技成果转化机制",
            "海洋生态修复工程", "职业技能培训计划", "社区医疗服务网络", "城市更新试点项目"]
_DETAILS = ["据介绍，该项目总投资约{n}亿元，预计明年年底前全部完工。",
            "相关负责人表示，下一步将继续加大投入力度，确保各项任务按期落实。",
            "数据显示，今年前{m}个月相关指标同比增长{p}%，增速高于全国平均水平。",
            "专家认为，这一举措有助于提升公共服务水平，增强群众的获得感和幸福感。",
            "记者在现场看到，施工人员正在紧张作业，多台大型机械同时运转。",
            "据了解，目前已有{n}家单位参与其中，覆盖全市{m}个区县。",
            "不少市民表示，希望有关部门进一步完善配套设施，方便日常出行。",
            "会议强调，要坚持问题导向，细化工作措施，压实各方责任。",
            "截至目前，已累计完成投资{n}亿元，占年度计划的{p}%。",
            "业内人士指出，行业竞争日趋激烈，企业需要加快技术创新步伐。",
            "该负责人还透露，明年将在更多地区推广这一做法。",
            "与此同时，相关部门还将加强监督检查，对违规行为依法严肃处理。",
            "调查显示，超过{p}%的受访者对此表示满意。",
            "据悉，这是该地区首次开展此类活动，吸引了众多市民参与。",
            "下一阶段，各地将结合实际情况，因地制宜制定具体实施细则。",
            "有关部门提醒，广大市民要提高安全意识，注意防范各类风险。"]
_CONNECTORS = ["围绕", "针对", "就", "聚焦", "结合", "依托", "立足", "面向", "对照", "瞄准",
               "按照", "根据"]
_NAMES = ["张伟", "王芳", "李娜", "刘洋", "陈静", "杨帆", "赵磊", "黄敏", "周杰", "吴琳"]


def make_title(rng: random.Random) -> str:
    return (f"{rng.choice(_PLACES)}{rng.choice(_ACTORS)}{rng.choice(_VERBS)}"
            f"{rng.choice(_OBJECTS)}")


_VOCAB: list[str] | None = None


def vocabulary() -> list[str]:
    """~14,000 common nouns/verbs/adjectives from jieba's own dictionary (a package file)."""
    global _VOCAB
    if _VOCAB is None:
        import os

        import jieba

        words = []
        with open(os.path.join(os.path.dirname(jieba.__file__), "dict.txt"),
                  encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if (len(parts) == 3 and 2 <= len(parts[0]) <= 4 and int(parts[1]) >= 200
                        and parts[2] in ("n", "v", "vn", "nz", "ns", "nt", "a")):
                    words.append(parts[0])
        _VOCAB = words
    return _VOCAB


def make_paragraphs(rng: random.Random, n_paragraphs: int = 8) -> list[str]:
    """News-like Chinese paragraphs, ~1,000-1,500 characters in all.

    Each article draws its own topic words from a large vocabulary, so different articles have
    unrelated fingerprints while the sentence frames still read like news.
    """
    vocab = vocabulary()
    topic = rng.sample(vocab, 40)
    paragraphs = []
    for _ in range(n_paragraphs):
        sentences = []
        for _ in range(rng.randint(3, 5)):
            roll = rng.random()
            if roll < 0.4:
                # Varied frames: one fixed connector word in 40% of all sentences would
                # dominate every article's fingerprint (as no real newsroom's prose does).
                when = (f"{rng.randint(1, 12)}月{rng.randint(1, 28)}日，"
                        if rng.random() < 0.3 else "")
                sentences.append(
                    f"{when}{rng.choice(_PLACES)}{rng.choice(_ACTORS)}"
                    f"{rng.choice(_CONNECTORS)}{rng.choice(topic)}和{rng.choice(topic)}"
                    f"{rng.choice(_VERBS)}{rng.choice(_OBJECTS)}。"
                )
            elif roll < 0.8:
                words = [rng.choice(topic if rng.random() < 0.3 else vocab)
                         for _ in range(rng.randint(5, 8))]
                sentences.append(f"{words[0]}{rng.choice(['的', '与', '在'])}"
                                 + "、".join(words[1:3]) + "，" + "".join(words[3:]) + "。")
            else:
                sentences.append(rng.choice(_DETAILS).format(
                    n=rng.randint(2, 900), m=rng.randint(2, 11), p=rng.randint(3, 97)))
        paragraphs.append("".join(sentences))
    return paragraphs


@dataclass
class Article:
    title: str
    paragraphs: list[str]
    published: str = "2024-03-15 10:20"
    author: str = "张伟"
    source: str = "本网"

    @classmethod
    def generate(cls, seed: int | str) -> Article:
        rng = random.Random(f"article-{seed}")
        return cls(
            title=make_title(rng),
            paragraphs=make_paragraphs(rng, rng.randint(12, 16)),
            published=f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
                      f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
            author=rng.choice(_NAMES),
        )

    def reprint(self, source: str) -> Article:
        """A reprint by another portal: new headline, the original portal named as source in
        the info line, half-width commas in the first paragraph.

        (Kept small on purpose: whether larger edits stay within distance 3 is the fingerprint
        benchmark's question, not the crawl tests'.)"""
        paragraphs = list(self.paragraphs)
        paragraphs[0] = paragraphs[0].replace("，", ", ")
        return Article(title=f"转载：{self.title}", paragraphs=paragraphs,
                       published=self.published, author=self.author,
                       source=f"{source}（转自{self.source}）")

    @property
    def text(self) -> str:
        return "\n".join(self.paragraphs)

    def html(self, charset_decl: str | None = "utf-8") -> str:
        meta = f'<meta charset="{charset_decl}">' if charset_decl else ""
        body = "\n".join(f"<p>{p}</p>" for p in self.paragraphs)
        return (
            f"<!DOCTYPE html><html><head>{meta}<title>{self.title}_{self.source}</title>"
            f'<meta name="publishdate" content="{self.published}"></head><body>'
            '<div class="nav"><a href="/">首页</a> <a href="/list/1.html">新闻</a></div>'
            f'<div class="article"><h1>{self.title}</h1>'
            f'<div class="info">{self.published} 来源：{self.source} 作者：{self.author}</div>'
            f'<div class="content">{body}</div></div>'
            '<div class="footer">关于我们 | 联系方式 | 版权所有</div></body></html>'
        )


# --- server --------------------------------------------------------------------------------


@dataclass
class Page:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def html_page(html: str, content_type: str = "text/html; charset=utf-8",
              encoding: str = "utf-8") -> Page:
    return Page(html.encode(encoding), content_type)


def list_html(title: str, links: list[str], extra: str = "") -> str:
    items = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head>'
            f"<body><h1>{title}</h1><ul>{items}</ul>{extra}</body></html>")


class MockPortal:
    """A threaded HTTP server on ``host``:<free port> serving ``self.pages`` and counting hits."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.pages: dict[str, Page] = {}
        self.hits: Counter[str] = Counter()
        self.articles: dict[str, Article] = {}
        self.delays: dict[str, float] = {}  # path -> seconds to wait before answering
        self.failures: dict[str, list[int | None]] = {}  # path -> [status, remaining or None]
        self.held: set[str] = set()  # paths answered only once :meth:`release` is called
        self._released = threading.Event()
        self.in_flight = 0  # requests being answered now
        self.peak_in_flight = 0  # the most requests ever answered at once
        # [path, arrival, end of the answer] (time.monotonic()) of every request
        self.answers: list[list[Any]] = []
        self._lock = threading.Lock()
        portal = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                with portal._lock:
                    portal.in_flight += 1
                    portal.peak_in_flight = max(portal.peak_in_flight, portal.in_flight)
                try:
                    self._timed()
                finally:
                    with portal._lock:
                        portal.in_flight -= 1

            def _timed(self) -> None:
                path = self.path.split("?", 1)[0]
                answer: list[Any] = [path, time.monotonic(), None]
                self._row = answer
                with portal._lock:
                    portal.answers.append(answer)
                try:
                    self._answer(path)
                finally:
                    if answer[2] is None:
                        answer[2] = time.monotonic()

            def _answer(self, path: str) -> None:
                with portal._lock:
                    portal.hits[path] += 1
                    # a page set for a path with its query ("/show?id=2") wins over the path's
                    page = portal.pages.get(self.path) if self.path != path else None
                    if page is not None:
                        portal.hits[self.path] += 1
                    else:
                        page = portal.pages.get(path)
                    delay = portal.delays.get(path, 0.0)
                    held = path in portal.held
                    failure = portal.failures.get(path)
                    if failure is not None:
                        status, remaining = failure
                        page = Page(b"<html><body>busy</body></html>", status=status or 503)
                        if remaining is not None:
                            failure[1] = remaining - 1
                            if remaining <= 1:
                                del portal.failures[path]
                if page is None:
                    page = Page(b"<html><body>not found</body></html>", status=404)
                if held:
                    portal._released.wait(timeout=120)
                if delay:
                    time.sleep(delay)
                # the answer ends as it starts to go out: the client may have it (and end its
                # request: an oversized page's headers are enough) before this thread, waiting
                # for the GIL or writing a body the client dropped, would note a later time
                self._row[2] = time.monotonic()
                self.send_response(page.status)
                self.send_header("Content-Type", page.content_type)
                self.send_header("Content-Length", str(len(page.body)))
                for key, value in page.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(page.body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            # socketserver's default backlog of 5 drops the SYNs of a crawl's concurrent
            # connections beyond it: those pages then answer a second late (the SYN retry)
            request_queue_size = 128

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # clients closing early (oversize pages) are expected here

        self.server = Server((host, 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def start(self) -> MockPortal:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def set(self, path: str, page: Page) -> None:
        with self._lock:
            self.pages[path] = page

    def add_article(self, path: str, article: Article, *, charset_decl: str | None = "utf-8",
                    encoding: str = "utf-8",
                    content_type: str = "text/html; charset=utf-8") -> None:
        self.articles[path] = article
        self.set(path, Page(article.html(charset_decl).encode(encoding), content_type))

    def add_link(self, list_path: str, href: str) -> None:
        """Add a link to a list page (before its closing ``</ul>``)."""
        with self._lock:
            page = self.pages[list_path]
            link = f'<li><a href="{href}">{href}</a></li></ul>'.encode()
            page.body = page.body.replace(b"</ul>", link, 1)

    def most_at_once(self, exclude: Iterable[str] = ()) -> int:
        """The most requests (but those to ``exclude`` paths) answered at one time."""
        events = []
        with self._lock:
            for path, start, end in self.answers:
                if path not in exclude:
                    events += [(start, 1), (end if end is not None else float("inf"), -1)]
        most = now = 0
        for _, step in sorted(events, key=lambda e: (e[0], e[1])):  # an end before a start
            now += step
            most = max(most, now)
        return most

    def mean_at_once(self, paths: Iterable[str], exclude: Iterable[str] = ()) -> float:
        """The time-weighted mean of the requests (but those to ``exclude`` paths) answered at
        once, from the first arrival of a request to one of ``paths`` to the last end of one."""
        paths, exclude = set(paths), set(exclude)
        answers = [a for a in self.answered() if a[0] not in exclude]
        first = min(start for path, start, _ in answers if path in paths)
        last = max(end for path, _, end in answers if path in paths)
        busy = sum(max(0.0, min(end, last) - max(start, first)) for _, start, end in answers)
        return busy / (last - first)

    def arrival_gaps(self, exclude: Iterable[str] = ()) -> list[float]:
        """Seconds between consecutive requests' arrivals (but those to ``exclude`` paths)."""
        with self._lock:
            starts = sorted(start for path, start, _ in self.answers if path not in exclude)
        return [b - a for a, b in zip(starts, starts[1:], strict=False)]

    def answered(self) -> list[tuple[str, float, float]]:
        """(path, arrival, end of the answer) of every request answered so far."""
        with self._lock:
            return [(path, start, end) for path, start, end in self.answers if end is not None]

    def forget_requests(self) -> None:
        """Forget the requests seen so far (hits and answers), so the next crawl counts afresh."""
        with self._lock:
            self.hits.clear()
            self.answers.clear()

    def hit_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self.hits)

    def delay(self, paths: Iterable[str], seconds: float) -> None:
        """Answer these paths ``seconds`` late (0 removes the delay)."""
        with self._lock:
            for path in paths:
                if seconds > 0:
                    self.delays[path] = seconds
                else:
                    self.delays.pop(path, None)

    def hold(self, paths: Iterable[str]) -> None:
        """Keep requests to these paths waiting (up to 120 s) until :meth:`release`."""
        with self._lock:
            self._released.clear()
            self.held.update(paths)

    def release(self) -> None:
        """Answer the held requests, and stop holding."""
        with self._lock:
            self.held.clear()
        self._released.set()

    def fail(self, path: str, times: int | None = None, status: int = 503) -> None:
        """Answer ``path`` with ``status`` for the next ``times`` requests (None: until
        :meth:`recover`), then serve the page again."""
        if times is not None and times < 1:
            raise ValueError("times must be >= 1 (or None)")
        with self._lock:
            self.failures[path] = [status, times]

    def recover(self, path: str) -> None:
        with self._lock:
            self.failures.pop(path, None)


# --- the test layout ----------------------------------------------------------------------

ROBOTS = "User-agent: *\nDisallow: /private/\n"
VIDEO_HTML = ('<!DOCTYPE html><html><head><meta charset="utf-8">'
              '<title>视频：现场直击</title></head>'
              '<body><div class="nav"><a href="/">首页</a></div><h1>视频：现场直击</h1>'
              '<video src="/v/1.mp4" controls></video><div class="footer">版权所有</div>'
              "</body></html>")
PDF_BYTES = b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"


@dataclass
class Layout:
    """What :func:`build_portals` put where (paths per portal), for assertions."""

    a: MockPortal
    b: MockPortal
    unique: list[tuple[MockPortal, str]]  # good article pages with distinct text
    reprint_groups: list[list[tuple[MockPortal, str]]]  # same text (small edits): keep one each
    no_body: list[tuple[MockPortal, str]]
    mojibake: list[tuple[MockPortal, str]]  # newscrawl/extract/mojibake; the last is not stored
    failing: list[tuple[MockPortal, str]]  # 404, PDF, redirect loop, oversize: never stored
    disallowed: list[tuple[MockPortal, str]]
    too_deep: list[tuple[MockPortal, str]]
    a_lists: list[str] = field(default_factory=list)

    def all_good_articles(self) -> list[tuple[MockPortal, str]]:
        return self.unique + [p for group in self.reprint_groups for p in group]


# hrefs that urljoin / Request reject (an unclosed IPv6 bracket, a port out of range)
INVALID_LINKS = ["http://[::1/a/9.html", "http://127.0.0.1:99999/a/9.html"]


def build_portals(a: MockPortal, b: MockPortal, *, n_articles: int = 12) -> Layout:
    """Two portals that reprint each other; ``a`` also holds every troublesome page kind.

    Portal a: ``/`` -> ``/list/1.html`` -> ``/list/2.html`` -> ``/list/3.html`` (pagination);
    with ``max_list_depth = 2`` the article only listed on ``/list/3.html`` must not be fetched.
    """
    unique: list[tuple[MockPortal, str]] = []
    groups: list[list[tuple[MockPortal, str]]] = []
    for portal in (a, b):
        portal.set("/robots.txt", Page(ROBOTS.encode(), "text/plain"))
    a_articles = []
    for i in range(1, n_articles + 1):
        art = Article.generate(f"a{i}")
        art.source = "甲网"
        path = f"/a/{i}.html"
        a.add_article(path, art)
        a_articles.append(path)
    b_articles = []
    for i in range(1, n_articles // 2 + 1):
        art = Article.generate(f"b{i}")
        art.source = "乙网"
        path = f"/a/{i}.html"
        b.add_article(path, art)
        b_articles.append(path)
    # Cross-portal reprints of a/1..a/3 on b (small edits), and an exact copy of a/4 on a.
    for i in (1, 2, 3):
        path = f"/a/{100 + i}.html"
        b.add_article(path, a.articles[f"/a/{i}.html"].reprint("乙网"))
        b_articles.append(path)
        groups.append([(a, f"/a/{i}.html"), (b, path)])
    a.add_article("/a/104.html", a.articles["/a/4.html"])
    a_articles.append("/a/104.html")
    groups.append([(a, "/a/4.html"), (a, "/a/104.html")])
    grouped = {p for g in groups for p in g}
    unique = [(a, p) for p in a_articles if (a, p) not in grouped]
    unique += [(b, p) for p in b_articles if (b, p) not in grouped]
    # GBK pages: a wrong charset declaration (utf-8) and none at all.
    for path, decl, ctype in (("/a/201.html", "utf-8", "text/html; charset=utf-8"),
                              ("/a/202.html", None, "text/html")):
        art = Article.generate(path)
        art.source = "甲网"
        a.add_article(path, art, charset_decl=decl, encoding="gbk", content_type=ctype)
        a_articles.append(path)
        unique.append((a, path))
    # A page declaring UTF-8 with its second half in GBK: decoded piece by piece, stored clean.
    mixed = Article.generate("mixed")
    mixed.source = "甲网"
    a.articles["/a/203.html"] = mixed
    html = mixed.html("utf-8")
    cut = html.index(f"<p>{mixed.paragraphs[len(mixed.paragraphs) // 2]}</p>")
    a.set("/a/203.html", Page(html[:cut].encode("utf-8") + html[cut:].encode("gbk")))
    # A page whose text carries mojibake as served (UTF-8 read as Latin-1 by its publisher):
    # stored, counted in newscrawl/extract/mojibake.
    garbled = Article.generate("garbled")
    garbled.source = "甲网"
    garbled.paragraphs.append("原文：Ã©tÃ© Ã  Paris, rÃ©sumÃ© du dÃ©bat.")
    a.add_article("/a/204.html", garbled)
    for path in ("/a/203.html", "/a/204.html"):
        a_articles.append(path)
        unique.append((a, path))
    # A page no encoding reads (UTF-8 and GBK inside each paragraph): counted, not stored.
    unreadable = Article.generate("unreadable")
    unreadable_body = unreadable.html("utf-8").encode("utf-8")
    for p in unreadable.paragraphs:
        half = len(p) // 2
        unreadable_body = unreadable_body.replace(
            p.encode("utf-8"), p[:half].encode("utf-8") + p[half:].encode("gbk"))
    a.set("/a/205.html", Page(unreadable_body))
    a_articles.append("/a/205.html")
    # Troublesome pages.
    a.set("/a/301.html", Page(VIDEO_HTML.encode()))  # video: no body
    a.set("/a/302.pdf", Page(PDF_BYTES, "application/pdf"))
    a.set("/a/303.html", Page(b"", status=302, headers={"Location": "/a/304.html"}))
    a.set("/a/304.html", Page(b"", status=302, headers={"Location": "/a/303.html"}))
    big = Article.generate("big")
    big.paragraphs = big.paragraphs * 200  # ~250 KB: over the tests' DOWNLOAD_MAXSIZE
    a.add_article("/a/305.html", big)
    # /a/404.html is linked but not served (404). /private/ is disallowed by robots.txt.
    disallowed = [(a, f"/private/a/{i}.html") for i in range(1, 11)]
    for _, path in disallowed:
        a.add_article(path, Article.generate(path))
    deep = Article.generate("deep")
    a.add_article("/a/401.html", deep)
    trouble = ["/a/301.html", "/a/302.pdf", "/a/303.html", "/a/305.html", "/a/404.html"]
    # List pages of a.
    first, rest = a_articles[: len(a_articles) // 2], a_articles[len(a_articles) // 2:]
    # two links that cannot be parsed come first: they are skipped, the rest is still followed
    a.set("/", html_page(list_html("甲网首页", INVALID_LINKS + ["/list/1.html"] + first[:3]
                                   + [p for _, p in disallowed]
                                   + ["http://example.invalid/a/1.html", "/about.html"])))
    a.set("/list/1.html", html_page(list_html("新闻 第1页", first + ["/list/2.html"])))
    a.set("/list/2.html", html_page(list_html("新闻 第2页", rest + trouble + ["/list/3.html"])))
    a.set("/list/3.html", html_page(list_html("新闻 第3页", ["/a/401.html"])))
    a.set("/about.html", html_page(list_html("关于", [])))
    b.set("/", html_page(list_html("乙网首页", b_articles + ["/list/1.html"])))
    b.set("/list/1.html", html_page(list_html("乙网 第1页", b_articles[:2])))
    return Layout(
        a=a, b=b, unique=unique, reprint_groups=groups,
        no_body=[(a, "/a/301.html")],
        mojibake=[(a, "/a/204.html"), (a, "/a/205.html")],
        failing=[(a, p) for p in ("/a/302.pdf", "/a/303.html", "/a/305.html", "/a/404.html")],
        disallowed=disallowed,
        too_deep=[(a, "/a/401.html"), (a, "/list/3.html")],
        a_lists=["/", "/list/1.html", "/list/2.html"],
    )


def sites_toml(a: MockPortal, b: MockPortal, *, max_list_depth: int = 2) -> str:
    return (
        "[[sites]]\n"
        'name = "portal-a"\n'
        f'start_urls = ["{a.base}/"]\n'
        "article_url = '/a/\\d+\\.(html|pdf)$'\n"
        "follow_url = '/list/\\d+\\.html$'\n"
        f"max_list_depth = {max_list_depth}\n"
        "\n[[sites]]\n"
        'name = "portal-b"\n'
        f'start_urls = ["{b.base}/"]\n'
        "article_url = '/a/\\d+\\.html$'\n"
        "follow_url = '/list/\\d+\\.html$'\n"
    )


# --- a portal that publishes every day (pagination tests and benchmark) --------------------------


class DailyPortal:
    """A portal publishing ``per_day`` articles a simulated day, newest first.

    ``/`` shows the ``home`` newest headlines and links to ``/list/1.html``; ``/list/N.html``
    shows articles ``(N-1)*per_page .. N*per_page-1`` (newest first) with links to the first,
    previous and next pages, as portals' pagination bars do. Article texts are distinct.

    ``bar="numbered"``: instead, the home page and every list page show a numbered bar
    ("1 2 3 4 5", link texts are the page numbers, the current page as plain text, a window of
    five pages around it) and a "下一页" link.
    """

    def __init__(self, portal: MockPortal, *, per_page: int = 8, home: int = 5,
                 prefix: str = "d", bar: str = "prevnext") -> None:
        if bar not in ("prevnext", "numbered"):
            raise ValueError(f"unknown bar {bar!r}")
        self.portal = portal
        self.per_page = per_page
        self.home = home
        self.prefix = prefix
        self.bar = bar
        self.paths: list[str] = []  # every article path, oldest first
        self.day = 0

    def publish(self, count: int, *, reprints: Iterable[str] = ()) -> list[str]:
        """Publish ``count`` new articles (a new day) and rebuild the list pages.

        ``reprints``: paths of earlier articles also reprinted that day (new pages with their
        text, a "转载" headline and a source line, published that day), listed after the
        ``count`` new ones (so newer). Every article is published on its simulated day
        (``published_on``)."""
        self.day += 1
        new = []
        for i, original in enumerate([None] * count + list(reprints)):
            n = len(self.paths) + 1
            path = f"/a/{n}.html"
            article = (Article.generate(f"{self.prefix}{n}") if original is None
                       else self.portal.articles[original].reprint("转载网"))
            article.published = f"{self.published_on(self.day)} {8 + i // 60:02d}:{i % 60:02d}"
            self.portal.add_article(path, article)
            self.paths.append(path)
            new.append(path)
        self._rebuild()
        return new

    @staticmethod
    def published_on(day: int) -> str:
        """The date of simulated day ``day`` (day 1: 2026-11-01)."""
        return (datetime.date(2026, 10, 31) + datetime.timedelta(days=day)).isoformat()

    @property
    def newest_first(self) -> list[str]:
        return self.paths[::-1]

    @property
    def n_pages(self) -> int:
        return max(1, -(-len(self.paths) // self.per_page))

    def list_path(self, n: int) -> str:
        return f"/list/{n}.html"

    def pages_holding(self, paths: list[str]) -> set[int]:
        """Numbers of the list pages that show any of ``paths``."""
        order = self.newest_first
        return {order.index(p) // self.per_page + 1 for p in paths}

    def numbered_bar(self, current: int) -> str:
        """A numbered pagination bar: five page numbers around ``current`` (0: the home page,
        not in the bar) and a "下一页" link."""
        last = self.n_pages
        first = min(max(1, current - 2), max(1, last - 4))
        parts = []
        for n in range(first, min(last, first + 4) + 1):
            parts.append(f"<span>{n}</span>" if n == current
                         else f'<a href="{self.list_path(n)}">{n}</a>')
        if current < last:
            parts.append(f'<a href="{self.list_path(current + 1)}">下一页</a>')
        return '<div class="pages">' + " ".join(parts) + "</div>"

    def _rebuild(self) -> None:
        order = self.newest_first
        self.portal.set("/robots.txt", Page(b"User-agent: *\nDisallow:\n", "text/plain"))
        if self.bar == "numbered":
            self.portal.set("/", html_page(list_html("首页", order[: self.home],
                                                     self.numbered_bar(0))))
            for n in range(1, self.n_pages + 1):
                links = order[(n - 1) * self.per_page: n * self.per_page]
                self.portal.set(self.list_path(n), html_page(
                    list_html(f"新闻 第{n}页", links, self.numbered_bar(n))))
            return
        self.portal.set("/", html_page(list_html("首页", order[: self.home] + ["/list/1.html"])))
        last = self.n_pages
        for n in range(1, last + 1):
            nav = ["/list/1.html"]
            if n > 1:
                nav.append(self.list_path(n - 1))
            if n < last:
                nav.append(self.list_path(n + 1))
            links = order[(n - 1) * self.per_page: n * self.per_page]
            self.portal.set(self.list_path(n), html_page(list_html(f"新闻 第{n}页", links + nav)))

    def list_hits(self) -> dict[int, int]:
        hits = self.portal.hit_counts()
        return {n: hits.get(self.list_path(n), 0) for n in range(1, self.n_pages + 1)}

    def sites_toml(self, name: str = "daily", **keys: Any) -> str:
        """A sites-file entry; ``keys`` add or replace keys (strings as TOML literal strings)."""
        extra = "".join(f"{k} = '{v}'\n" if isinstance(v, str) else f"{k} = {v}\n"
                        for k, v in keys.items())
        return (
            "[[sites]]\n"
            f'name = "{name}"\n'
            f'start_urls = ["{self.portal.base}/"]\n'
            + ("" if "article_url" in keys else "article_url = '/a/\\d+\\.html$'\n")
            + ("" if "follow_url" in keys else "follow_url = '/list/\\d+\\.html$'\n")
            + extra
        )


# --- a news source and a portal that reprints it ----------------------------------------------

TWO_PORTALS_START = datetime.datetime(2026, 11, 17, 6, 0)


@dataclass
class Story:
    original: str  # URL path on the source portal
    published: datetime.datetime
    reprint: str | None = None  # URL path on the reprinting portal
    reprinted: datetime.datetime | None = None


@dataclass
class TwoPortals:
    """A news source (40 articles over three days, 5 list pages) and a reprinting portal (20
    reprints 2-30 hours after their originals with a source line and a footer, and 6 stories
    of its own; 3 list pages). ``dated``: URLs carry the day; ``times``: list rows print the
    date and time beside each link."""

    src: MockPortal
    re: MockPortal
    dated: bool
    times: bool
    stories: list[Story] = field(default_factory=list)
    own: list[str] = field(default_factory=list)
    #: the reprinting portal's list rows print times too (None: as ``times``)
    re_times: bool | None = None

    def build(self) -> TwoPortals:
        rng = random.Random(26)
        src_rows: list[tuple[datetime.datetime, str, str]] = []
        re_rows: list[tuple[datetime.datetime, str, str]] = []
        for n in range(40):
            when = TWO_PORTALS_START + datetime.timedelta(minutes=95 * n + rng.randint(0, 30))
            path = (f"/{when:%Y-%m-%d}/doc-{n}.shtml" if self.dated else f"/doc/{n}.shtml")
            article = Article.generate(f"src-{n}")
            article.published = f"{when:%Y-%m-%d %H:%M}"
            article.source = "源头网"
            self.src.add_article(path, article)
            src_rows.append((when, path, article.title))
            self.stories.append(Story(path, when))
        for n, story in enumerate(self.stories[:40:2]):
            when = story.published + datetime.timedelta(hours=rng.uniform(2, 30))
            path = (f"/a/{when:%Y%m%d}/{100 + n}.html" if self.dated else f"/a/{100 + n}.html")
            reprint = self.src.articles[story.original].reprint("转载网")
            reprint.published = f"{when:%Y-%m-%d %H:%M}"
            reprint.paragraphs = [*reprint.paragraphs, "（本文转载自源头网，版权归原作者所有）"]
            self.re.add_article(path, reprint)
            re_rows.append((when, path, reprint.title))
            story.reprint, story.reprinted = path, when
        for n in range(6):
            when = TWO_PORTALS_START + datetime.timedelta(hours=9 * n + 1)
            path = (f"/a/{when:%Y%m%d}/{200 + n}.html" if self.dated else f"/a/{200 + n}.html")
            article = Article.generate(f"re-own-{n}")
            article.published = f"{when:%Y-%m-%d %H:%M}"
            self.re.add_article(path, article)
            re_rows.append((when, path, article.title))
            self.own.append(path)
        self._lists(self.src, src_rows, per_page=8, times=self.times)
        self._lists(self.re, re_rows, per_page=9,
                    times=self.times if self.re_times is None else self.re_times)
        return self

    def _lists(self, portal: MockPortal, rows: list[tuple[datetime.datetime, str, str]],
               per_page: int, *, times: bool) -> None:
        rows = sorted(rows, reverse=True)  # newest first
        pages = [rows[i:i + per_page] for i in range(0, len(rows), per_page)]
        portal.set("/robots.txt", Page(b"User-agent: *\nDisallow:\n", "text/plain"))
        for number, chunk in enumerate(pages, 1):
            items = "".join(
                f'<li><a href="{path}">{title}</a>'
                + (f' <span class="time">{when:%Y-%m-%d %H:%M}</span>' if times else "")
                + "</li>" for when, path, title in chunk)
            nav = (f'<a href="/list/{number + 1}.html">下一页</a>' if number < len(pages)
                   else "")
            html = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>新闻 {number}'
                    f'</title></head><body><ul class="news">{items}</ul>{nav}</body></html>')
            portal.set(f"/list/{number}.html", html_page(html))
            if number == 1:
                portal.set("/", html_page(html.replace(f"新闻 {number}", "首页")))

    def sites_toml(self, *, src_rank: int | None = None) -> str:
        """The reprinting portal first in the file (rank 1 unless ``src_rank`` says)."""
        article_re = r"/a/(\d{8}/)?\d+\.html$"
        article_src = r"/(\d{4}-\d\d-\d\d|doc)/doc-\d+\.shtml$|/doc/\d+\.shtml$"
        rank = f"rank = {src_rank}\n" if src_rank is not None else ""
        return (
            f'[[sites]]\nname = "re"\nstart_urls = ["{self.re.base}/"]\n'
            f"article_url = '{article_re}'\nfollow_url = '/list/\\d+\\.html$'\n"
            f"{'rank = 2' if src_rank == 1 else ''}\n"
            f'[[sites]]\nname = "src"\nstart_urls = ["{self.src.base}/"]\n'
            f"article_url = '{article_src}'\nfollow_url = '/list/\\d+\\.html$'\n{rank}"
        )

    def sitemap(self) -> str:
        """Serve the source's articles in ``/sitemap.xml`` with their publication times
        (``lastmod``, +08:00), newest first; returns its URL."""
        rows = "".join(
            f"<url><loc>{self.src.url(s.original)}</loc>"
            f"<lastmod>{s.published:%Y-%m-%dT%H:%M:%S}+08:00</lastmod></url>"
            for s in sorted(self.stories, key=lambda s: s.published, reverse=True))
        xml = ('<?xml version="1.0" encoding="UTF-8"?>'
               '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
               f"{rows}</urlset>")
        self.src.set("/sitemap.xml", Page(xml.encode(), "application/xml"))
        return self.src.url("/sitemap.xml")

    def reprinted(self) -> list[Story]:
        return [s for s in self.stories if s.reprint is not None]
