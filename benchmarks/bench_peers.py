"""newscrawl against the crawlers it replaces, on local portals built from dev corpus text.

Variants A (plain Scrapy + trafilatura), B (scrapy-redis + the seeds' recipe), C (newscrawl), E (C
with dedup off), M (C from ``--baseline-src``): real crawls in interleaved rounds; ``--profile``
splits their CPU by stage. Variants, columns and figures: docs/benchmarks.md#bench_peerspy.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _common import HERE, children_cpu, round_order, sites_toml, spread, table
from crawlrun import crawl_command, crawl_env, parse_stats
from evalkit.pairs import SOGOU, SOHU, THUCNEWS, load_sogou, load_thucnews
from make_stream import near_exact_pairs
from mockportal import MockPortal, Page, html_page, list_html
from redisserver import RedisServer

from newscrawl.index import DuplicateLog

# MEMUSAGE_CHECK_INTERVAL_SECONDS: Scrapy samples the process's RSS every second, not every minute
COMMON = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS=16",
          "CONCURRENT_REQUESTS_PER_DOMAIN=16", "LOG_LEVEL=INFO",
          "MEMUSAGE_CHECK_INTERVAL_SECONDS=1")  # fmt: skip
ARTICLE_RE, LIST_RE = r"/a/\d+\.html$", r"/list/\d+\.html$"
REPRINT_SHARE = 0.1
VARIANTS = {
    "A": "plain Scrapy + trafilatura, memory scheduler, no dedup",
    "B": "scrapy-redis + jieba top-20 / simhash / HGETALL scan",
    "C": "newscrawl, REDIS_URL",
    "E": "newscrawl, REDIS_URL, dedup off",
    "M": "newscrawl of --baseline-src (e.g. main), REDIS_URL",
}
BASELINE: Path | None = None  # --baseline-src: the tree variant M imports newscrawl from
PROFILE = False  # --profile: every crawl process under cProfile
CHANNELS = ["首页", "新闻", "国内", "国际", "财经", "股票", "基金", "理财", "房产", "汽车", "科技",
            "数码", "手机", "体育", "娱乐", "时尚", "教育", "健康", "旅游", "文化", "读书", "游戏",
            "视频", "图片", "评论", "专题", "公益", "地方", "English", "客户端"]  # fmt: skip


# --- the portal ---------------------------------------------------------------------------------
class TimedPortal(MockPortal):
    """A mock portal that answers every page ``latency`` seconds late (a remote portal) and
    tells when its article pages were requested."""

    def __init__(self, host: str = "127.0.0.1", latency: float = 0.0) -> None:
        super().__init__(host)
        self.latency = latency

    def set(self, path: str, page: Page) -> None:
        super().set(path, page)
        self.delay([path], self.latency)

    @property
    def article_times(self) -> list[float]:
        with self._lock:
            return [start for path, start, _ in self.answers if "/a/" in path]


@dataclass
class Story:
    title: str
    paragraphs: list[str]
    source: str
    original: int | None = None  # for a reprint: the page number of its original


def corpus_texts(corpus: Path) -> list[tuple[str, str]]:
    """(title, body) of the dev corpus's articles, near-duplicates among them left out."""
    out: list[tuple[str, str]] = []
    for d in load_thucnews(corpus / THUCNEWS):
        head, _, body = d.text.partition("　")  # the headline runs into the body
        title = head if 4 <= len(head) <= 40 and body else d.text[:20]
        out.append((title, body or d.text))
    for d in load_sogou(corpus / SOGOU):
        title, _, body = d.text.partition("\n")
        out.append((title, body or title))
    with open(corpus / SOHU / "dc-test.jsonl", encoding="utf-8") as fh:
        for line in fh:
            text = json.loads(line)["sentence2"]
            out.append((text[:18], text))
    seen: set[str] = set()
    unique = []
    for title, body in out:
        if len(body) >= 200 and body not in seen:
            seen.add(body)
            unique.append((title, body))
    drop = {j for _, j, _ in near_exact_pairs([b for _, b in unique])}
    return [t for n, t in enumerate(unique) if n not in drop]


def paragraphs_of(body: str) -> list[str]:
    parts = [p.strip() for p in body.replace("\u3000", "\n").split("\n") if p.strip()]
    out: list[str] = []
    for p in parts:  # long runs cut at sentence ends, about 200 characters a paragraph
        while len(p) > 300:
            cut = p.find("。", 150)
            if cut < 0 or cut > 290:
                break
            out.append(p[: cut + 1])
            p = p[cut + 1 :]
        out.append(p)
    return out


def chrome(rng: random.Random, titles: list[str], size: int) -> tuple[str, str]:
    """(head and header, sidebar and footer) of about ``size`` bytes of portal chrome."""
    slots = "".join(
        f"var slot_{rng.randrange(10**6)}={{id:'{rng.getrandbits(48):012x}',"
        f"w:{rng.choice([300, 728, 970])},"
        f"h:{rng.choice([90, 250, 600])},src:'//ad.example/s/{rng.getrandbits(32):08x}.js'}};\n"
        for _ in range(40)
    )
    nav = "".join(f'<li><a href="/channel/{n}.html">{c}</a></li>' for n, c in enumerate(CHANNELS))
    head = (
        f"<script>{slots}</script><div class='top'><ul class='nav'>{nav}</ul>"
        "<form action='/search'><input name='q'><button>搜索</button></form></div>"
    )
    blocks, size_now = [], len(head.encode())
    while size_now < size:
        picks = rng.sample(titles, 12)
        items = "".join(f'<li><a href="/topic/{rng.randrange(10**5)}.html">{t}</a></li>'
                        for t in picks)  # fmt: skip
        name = rng.choice(["热点", "推荐", "排行", "图片"])
        block = f"<div class='side'><h3>{name}</h3><ul>{items}</ul></div>"
        blocks.append(block)
        size_now += len(block.encode())
    footer = (
        "<div class='footer'>关于我们 | 广告服务 | 联系我们 | 招聘信息 | 网站地图 | 隐私政策<br>"
        "违法和不良信息举报电话：010-00000000 | 互联网新闻信息服务许可证 | "
        "版权所有 未经授权禁止转载"
        "</div>"
    )
    return head, "".join(blocks) + footer


@dataclass(frozen=True)
class PortalKind:
    """How a portal's article pages look: the share of pages that print a byline (``作者：``),
    whether every page (not only reprints) ends with an editor line, and the bytes of chrome."""

    byline_share: float
    editor_line: bool
    chrome_kb: tuple[int, int] = (22, 34)


PORTALS = {
    # a third of the pages print a byline (on the dev corpus's labelled Chinese pages, 2 of 3 have
    # none that a line rule finds); an editor line on reprints only
    "third": PortalKind(1 / 3, editor_line=False),
    # no byline anywhere, an editor line at the end of every page: extraction runs the
    # library's author search on every page
    "none": PortalKind(0.0, editor_line=True),
    # a byline and an editor line on every page
    "all": PortalKind(1.0, editor_line=True),
}


def build(portal: TimedPortal, corpus: Path, n_articles: int, reprint_share: float,
          seed: int, kind: PortalKind = PORTALS["third"]) -> list[Story]:  # fmt: skip
    rng = random.Random(seed)
    texts = corpus_texts(corpus)
    rng.shuffle(texts)
    n_reprints = round(n_articles * reprint_share)
    originals = texts[: n_articles - n_reprints]
    if len(originals) < n_articles - n_reprints:
        raise SystemExit(f"the corpus has {len(originals)} usable texts")
    stories = [Story(t, paragraphs_of(b), "本网") for t, b in originals]
    for _ in range(n_reprints):  # a reprint comes after its original
        at = rng.randrange(len(stories) // 3, len(stories) + 1)
        candidates = [i for i in range(at) if stories[i].original is None
                      and sum(map(len, stories[i].paragraphs)) >= 300]  # fmt: skip
        o = rng.choice(candidates)
        src = stories[o]
        paras = list(src.paragraphs)
        paras[0] = paras[0].replace("，", ", ")
        paras = [f"（来源：{rng.choice(['新华网', '人民网', '中新网', '澎湃新闻'])}）", *paras,
                 f"（责任编辑：{rng.choice(['王明', '李华', '张伟', '刘洋'])}）"]  # fmt: skip
        stories.insert(at, Story(f"转载：{src.title}", paras, "乙网", original=o))
        for s in stories[at + 1 :]:  # originals after the insertion point moved one place
            if s.original is not None and s.original >= at:
                s.original += 1
    titles = [s.title for s in stories]
    portal.set("/robots.txt", Page(b"User-agent: *\nDisallow: /private/\n", "text/plain"))
    paths = []
    editors = random.Random(seed + 1)  # its own draws: the other pages stay as they are
    low, high = kind.chrome_kb
    for i, s in enumerate(stories):
        top, bottom = chrome(rng, titles, rng.randint(low * 1000, high * 1000))
        paras = s.paragraphs
        if kind.editor_line and s.original is None:
            paras = [*paras, f"（责任编辑：{editors.choice(['王明', '李华', '张伟', '刘洋'])}）"]
        body = "".join(f"<p>{p}</p>" for p in paras)
        names = ["张伟", "王芳", "李强"]
        byline = f" 作者：{rng.choice(names)}" if rng.random() < kind.byline_share else ""
        html = (
            f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{s.title}_{s.source}</title>'
            f'<meta name="publishdate" content="2024-03-{1 + i % 28:02d} 10:{i % 60:02d}"></head>'
            f"<body>{top}<div class='main'><div class='article'><h1>{s.title}</h1>"
            f"<div class='info'>2024-03-{1 + i % 28:02d} 来源：{s.source}{byline}</div>"
            f"<div class='content'>{body}</div></div>{bottom}</div></body></html>"
        )
        path = f"/a/{i}.html"
        portal.set(path, html_page(html))
        paths.append(path)
    lists = []
    for n, start in enumerate(range(0, len(paths), 50)):
        path = f"/list/{n}.html"
        portal.set(path, html_page(list_html(f"第{n}页", paths[start : start + 50])))
        lists.append(path)
    portal.set("/", html_page(list_html("首页", lists)))
    return stories


# --- one run --------------------------------------------------------------------------------------
@dataclass
class Run:
    variant: str
    pages_per_s: float  # articles through the pipelines a second (docs: "articles/s")
    downloads_per_s: float  # article pages downloaded a second
    pages: int
    cpu_ms: float
    rss_mib: float
    redis_bytes_per_url: float | None
    redis_bytes_per_article: float | None
    reprints_caught: int
    distinct_dropped: int
    drops: list[tuple[str, str]]
    stages_ms: dict[str, float] | None = None  # --profile: CPU ms per article by stage


class Server(RedisServer):
    """A fresh redis-server (no persistence) whose CPU and memory growth are read."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir, persist=False)
        self.start()
        self.conn = self.client()
        self.used0 = int(self.conn.info("memory")["used_memory"])

    def cpu(self) -> float:
        """The server's user + system CPU seconds (Linux /proc)."""
        assert self.proc is not None
        with open(f"/proc/{self.proc.pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def used(self) -> int:
        return int(self.conn.info("memory")["used_memory"]) - self.used0

    def stop(self, timeout: float = 30.0) -> None:
        self.conn.close()
        super().stop(timeout)


def score(stories: list[Story], drops: list[tuple[str, str]]) -> tuple[int, int]:
    def page(url: str) -> int:
        return int(url.rsplit("/", 1)[1].split(".")[0])

    def cluster(n: int) -> int:
        o = stories[n].original
        return n if o is None else o

    caught = distinct = 0
    for url, of in drops:
        # an original fetched after its reprint and dropped against it counts as caught too
        if cluster(page(url)) == cluster(page(of)):
            caught += 1
        else:
            distinct += 1
    return caught, distinct


def peer_command(base: str, out: Path,
                 server: Server | None = None) -> tuple[list[str], dict[str, str]]:
    """The command (after ``python -m``) and environment of variant A (B with ``server``):
    ``peers_spider.py`` run by ``scrapy runspider``, its items written to ``out``."""
    pipelines = {"peers_spider.StorePipeline": 300}
    settings = [*COMMON, f"PEERS_OUT={out}", f"PEERS_ARTICLE={ARTICLE_RE}", f"PEERS_LIST={LIST_RE}",
                "ROBOTSTXT_OBEY=True", "TELNETCONSOLE_ENABLED=False"]  # fmt: skip
    if server is not None:
        pipelines["peers_spider.SeedsDedupPipeline"] = 100
        settings += ["SCHEDULER=scrapy_redis.scheduler.Scheduler",
                     "DUPEFILTER_CLASS=scrapy_redis.dupefilter.RFPDupeFilter",
                     # a daily crawl keeps its dupefilter (and so its Redis memory is measured)
                     "SCHEDULER_PERSIST=True", f"REDIS_URL={server.url}"]  # fmt: skip
    settings.append("ITEM_PIPELINES=" + json.dumps(pipelines))
    cmd = ["scrapy", "runspider", str(HERE / "peers_spider.py"), "-a", f"start={base}/"]
    for s in settings:
        cmd += ["-s", s]
    env = {k: v for k, v in os.environ.items() if k not in ("SCRAPY_SETTINGS_MODULE", "REDIS_URL")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    return cmd, env


def variant_command(variant: str, portal: TimedPortal, work: Path, sites: Path,
                    server: Server | None) -> tuple[list[str], dict[str, str]]:
    """The crawl process of one variant: its command after ``python -m``, its environment."""
    if variant in ("A", "B"):
        return peer_command(portal.base, work / "items.jsonl", server if variant == "B" else None)
    assert server is not None
    settings = [*COMMON]
    if variant == "E":
        settings.append("NEWSCRAWL_DEDUP_ENABLED=False")
    if PROFILE:  # the fingerprints in the profiled process
        settings.append("NEWSCRAWL_FINGERPRINT_WORKERS=0")
    env = {"PYTHONPATH": str(BASELINE)} if variant == "M" and BASELINE else None
    return crawl_command(sites, tuple(settings))[2:], crawl_env(work, server.url, env)


# Every crawl process runs under this clock: the time (time.monotonic(), as the portal's) of each
# article's item leaving the pipelines, stored or dropped, written as JSON to the first argument.
CLOCK = r"""
import json, runpy, sys, time
from pydispatch import dispatcher
from scrapy import signals
out, sys.argv = sys.argv[1], sys.argv[2:]
done = []
def seen(*args, **kwargs): done.append(time.monotonic())
for signal in (signals.item_scraped, signals.item_dropped):
    dispatcher.connect(seen, signal=signal, weak=False)  # any crawler's
try:
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
finally:
    json.dump(done, open(out, "w"))
"""
# --profile: runs the command after the profile's path under cProfile with the main thread's CPU
# clock, then writes the profile and the process's CPU (all threads) next to it.
RUNNER = r"""
import cProfile, json, resource, runpy, sys, time
out, sys.argv = sys.argv[1], sys.argv[2:]
prof = cProfile.Profile(time.thread_time)
prof.enable()
try:
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
except SystemExit:
    pass
prof.disable()
prof.dump_stats(out)
ru = resource.getrusage(resource.RUSAGE_SELF)
json.dump({"cpu": ru.ru_utime + ru.ru_stime, "main": time.thread_time()}, open(out + ".json", "w"))
"""
STAGES = ["download", "decode", "parse", "trafilatura", "extraction rules", "fingerprint", "index",
          "scheduler", "redis client", "store", "spider", "engine/other"]  # fmt: skip
# A function's stage: the first of these (stage, substrings of "file:function") that matches.
_RULES = [(pattern, stage) for stage, patterns in (
    ("decode", "newscrawl/extract/decode.py w3lib/encoding scrapy/http/response/text.py"),
    ("parse", "trafilatura/utils.py:load_html lxml/html/__init__.py library.py:library_tree"
              " article.py:_library_tree extract/page.py:parse article.py:_parse"),
    ("trafilatura", "library.py:library_body article.py:_library trafilatura/ htmldate/ courlan/"
                    " justext/ dateparser/"),
    ("extraction rules", "newscrawl/extract/"),
    ("fingerprint", "newscrawl/simhash/"),
    ("index", "newscrawl/index/ newscrawl/pipelines/near_duplicates.py"),
    ("scheduler", "newscrawl/scheduling/"),
    ("redis client", "redis/"),
    ("store", "newscrawl/pipelines/store.py newscrawl/storage.py peers_spider.py:StorePipeline"),
    ("download", "scrapy/core/downloader scrapy/core/http2 twisted/web/ twisted/internet/tcp.py"),
    ("spider", "newscrawl/spiders/ peers_spider.py parsel/ scrapy/linkextractors"),
) for pattern in patterns.split()]


def stages(prof_path: Path) -> dict[str, float]:
    """Seconds of own time per stage (a C function goes to its heaviest caller's stage), and the
    process's other threads (the index's Redis calls)."""
    stats = pstats.Stats(str(prof_path)).stats  # type: ignore[attr-defined]
    memo: dict[Any, str] = {}

    def stage(key: Any, depth: int = 0) -> str:
        if key not in memo:
            filename, _, name = key
            where = f"{filename}:{name}"
            found = next((st for pattern, st in _RULES if pattern in where), None)
            if found is None and (filename == "~" or filename.startswith("<")):
                callers = stats[key][4] if key in stats else {}
                heaviest = max(callers.items(), key=lambda kv: kv[1][2], default=None)
                found = stage(heaviest[0], depth + 1) if heaviest and depth < 20 else None
            memo[key] = found or "engine/other"
        return memo[key]

    out = dict.fromkeys(STAGES, 0.0)
    for key, (_, _, tottime, _, _) in stats.items():
        out[stage(key)] += tottime
    cpu = json.loads(Path(f"{prof_path}.json").read_text())
    out["other threads"] = max(0.0, cpu["cpu"] - cpu["main"])
    out["process"] = cpu["cpu"]
    return out


def run_once(variant: str, portal: TimedPortal, stories: list[Story], work: Path,
             sites: Path) -> Run:  # fmt: skip
    work.mkdir(parents=True)
    server = Server(work) if variant != "A" else None
    prof = work / "run.prof"
    try:
        portal.forget_requests()
        cpu0 = children_cpu()
        rcpu0 = server.cpu() if server else 0.0
        cmd, env = variant_command(variant, portal, work, sites, server)
        clock = work / "items.clock"
        runner = ["-c", RUNNER, str(prof)] if PROFILE else ["-c", CLOCK, str(clock)]
        proc = subprocess.run([sys.executable, *runner, *cmd], cwd=work, env=env,
                              capture_output=True, text=True, timeout=3600)  # fmt: skip
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            print(log[-3000:], file=sys.stderr)
            raise SystemExit(f"variant {variant}: exit code {proc.returncode}")
        redis_cpu = (server.cpu() - rcpu0) if server else 0.0
        cpu = children_cpu() - cpu0 + redis_cpu
        stats = parse_stats(log)
        if variant in ("A", "B"):
            out = work / "items.jsonl"
            rows = ([json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
                    if out.exists() else [])
            drops = [(r["url"], r["duplicate_of"]) for r in rows if "duplicate_of" in r]
            stored = sum(1 for r in rows if r.get("kept"))
        else:
            assert server is not None
            drops = [(d.url, d.original_url) for d in DuplicateLog(server.conn).list()]
            stored = int(stats.get("newscrawl/store/stored", 0))
        used = server.used() if server else None
        urls = sum(portal.hits.values())
    finally:
        if server:
            server.stop()
    times = sorted(portal.article_times)
    pages = len(times)
    done = json.loads(clock.read_text()) if clock.exists() else []
    caught, distinct = score(stories, drops)
    spent = {**stages(prof), "redis-server": redis_cpu} if PROFILE else None
    run = Run(
        variant=variant,
        pages_per_s=len(done) / (max(done) - times[0]) if done else pages / (times[-1] - times[0]),
        downloads_per_s=pages / (times[-1] - times[0]),
        pages=pages,
        cpu_ms=cpu * 1000 / pages,
        rss_mib=float(stats.get("memusage/max", 0)) / 2**20,
        redis_bytes_per_url=used / urls if used is not None else None,
        redis_bytes_per_article=used / max(1, stored) if used is not None else None,
        reprints_caught=caught,
        distinct_dropped=distinct,
        drops=drops,
        stages_ms={k: v * 1000 / pages for k, v in spent.items()} if spent else None,
    )
    print(f"  {variant}: {pages} pages, {run.pages_per_s:.1f} articles/s"
          f" ({run.downloads_per_s:.1f} downloaded/s), {run.cpu_ms:.1f} CPU ms, "
          f"stored {stored}, caught {caught}, distinct dropped {distinct}",
          file=sys.stderr)  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    return run


def paired(runs: dict[str, list[Run]], v: str, b: str) -> tuple[list[float], list[float]]:
    """Per round, ``v``'s articles/s over ``b``'s and its CPU per article over ``b``'s."""
    pairs = list(zip(runs[v], runs[b], strict=True))
    return ([x.pages_per_s / y.pages_per_s for x, y in pairs],
            [x.cpu_ms / y.cpu_ms for x, y in pairs])


def report(runs: dict[str, list[Run]], n_reprints: int) -> None:
    """The medians table and the paired ratios to A, B and E (C over E: what the near-duplicate
    check costs) of one portal's runs."""
    def cell(values: list[Any], fmt: str = "{:.0f}") -> str:
        return spread(values, fmt) if values else "–"

    table(["variant", "articles/s", "downloads/s", "CPU ms / article", "peak RSS MiB",
           "Redis B / URL", "Redis B / article", "reprints caught", "distinct articles dropped"],
          ([f"{v}. {VARIANTS[v]}", cell([r.pages_per_s for r in rs], "{:.1f}"),
            cell([r.downloads_per_s for r in rs], "{:.1f}"),
            cell([r.cpu_ms for r in rs], "{:.1f}"), f"{max(r.rss_mib for r in rs):.0f}",
            cell([r.redis_bytes_per_url for r in rs if r.redis_bytes_per_url]),
            cell([r.redis_bytes_per_article for r in rs if r.redis_bytes_per_article]),
            "–" if v in ("A", "E") else f"{cell([r.reprints_caught for r in rs])} of {n_reprints}",
            cell([r.distinct_dropped for r in rs])] for v, rs in runs.items()))
    bases = [b for b in ("A", "B", "E") if b in runs]
    if bases:
        print(f"\nPaired ratios (same round): articles/s and CPU ms per article over"
              f" {' and '.join(bases)}\n")
        table(["variant", *(f"{x} / {b}" for b in bases for x in ("articles/s", "CPU"))],
              ([v, *(spread(x) for b in bases for x in paired(runs, v, b))] for v in runs))


def worst(results: dict[str, dict[str, list[Run]]]) -> None:
    """Per variant, the worst portal's paired medians: the least articles/s and the most CPU per
    article over A and over B (the portal named)."""
    names = list(next(iter(results.values())))
    bases = [b for b in ("A", "B") if b in names]
    if not bases:
        return
    rows = []
    for v in names:
        cells = []
        for b in bases:
            med = {p: [statistics.median(x) for x in paired(rs, v, b)]
                   for p, rs in results.items()}
            low = min(med, key=lambda p: med[p][0])
            high = max(med, key=lambda p: med[p][1])
            cells += [f"{med[low][0]:.2f} ({low})", f"{med[high][1]:.2f} ({high})"]
        rows.append([v, *cells])
    print("\nWorst portal (paired medians over rounds; the portal in brackets)\n")
    table(["variant", *(f"{x} / {b}" for b in bases for x in ("articles/s", "CPU"))], rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--corpus", required=True, type=Path, help="the dev corpus directory")
    ap.add_argument("--articles", type=int, default=400, help="article pages, reprints included")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--portal", action="append", choices=sorted(PORTALS),
                    help="portal kinds to crawl, each in turn (default: all)")
    ap.add_argument("--byline-share", type=float,
                    help="share of pages with a byline (instead of the portal kinds')")
    ap.add_argument("--editor-line", choices=("yes", "no"),
                    help="an editor line on every page (instead of the portal kinds')")
    ap.add_argument("--chrome-kb", default="22-34", help="portal chrome per page, KB (LOW-HIGH)")
    ap.add_argument("--only", action="append", choices=sorted(VARIANTS))
    ap.add_argument("--baseline-src", type=Path,
                    help="variant M: newscrawl imported from this tree (a checkout of main)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write every run here")
    ap.add_argument("--profile", action="store_true",
                    help="run every crawl process under cProfile and print its CPU per article by"
                         " stage instead (C with its fingerprints in the crawl process)")
    args = ap.parse_args(argv)
    low, _, high = args.chrome_kb.partition("-")
    chrome_kb = (int(low), int(high or low))

    global BASELINE, PROFILE
    BASELINE = args.baseline_src.resolve() if args.baseline_src else None
    PROFILE = args.profile
    names = [v for v in VARIANTS if (not args.only or v in args.only)
             and (v != "M" or BASELINE)]
    results: dict[str, dict[str, list[Run]]] = {}
    reprints: dict[str, int] = {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    started = time.perf_counter()
    try:
        for name in args.portal or list(PORTALS):
            kind = PORTALS[name]
            kind = PortalKind(
                kind.byline_share if args.byline_share is None else args.byline_share,
                kind.editor_line if args.editor_line is None else args.editor_line == "yes",
                chrome_kb,
            )
            portal = TimedPortal(latency=args.latency_ms / 1000)
            portal.start()
            try:
                stories = build(portal, args.corpus, args.articles, REPRINT_SHARE, args.seed,
                                kind)  # fmt: skip
                sizes = sorted(len(p.body) for path, p in portal.pages.items()
                               if path.startswith("/a/"))  # fmt: skip
                reprints[name] = sum(s.original is not None for s in stories)
                print(
                    f"portal {name} ({kind}): {len(stories)} article pages ({reprints[name]}"
                    f" reprints), {sizes[0] // 1024}-{sizes[-1] // 1024} KB, median"
                    f" {sizes[len(sizes) // 2] // 1024} KB",
                    file=sys.stderr,
                )
                sites = tmp / f"sites-{name}.toml"
                sites.write_text(sites_toml({"peers": portal.base}, max_list_depth=1),
                                 encoding="utf-8")
                runs: dict[str, list[Run]] = {v: [] for v in names}
                for r in range(args.rounds):
                    print(f"{name}: round {r + 1}/{args.rounds}", file=sys.stderr)
                    for i, v in enumerate(round_order(names, r)):
                        runs[v].append(run_once(v, portal, stories, tmp / f"run-{name}-{r}-{i}",
                                                sites))  # fmt: skip
                results[name] = runs
            finally:
                portal.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    minutes = (time.perf_counter() - started) / 60

    print(f"\n{args.articles} article pages a portal, {args.latency_ms:g} ms latency,"
          f" {args.rounds} round(s) a portal in {minutes:.1f} min; median over rounds"
          " [min, max]")  # fmt: skip
    if PROFILE:
        cols = [*STAGES, "other threads", "redis-server"]
        print("\nCPU ms per article, profiled (cProfile inflates every figure: read the shares)\n")
        table(["portal", "variant", "process", *cols],
              ([p, v, *(f"{r.stages_ms[c]:.1f}" for c in ("process", *cols))]
               for p, runs in results.items() for v, rs in runs.items() for r in rs
               if r.stages_ms), "ll" + "r" * (len(cols) + 1))
    for name, runs in (() if PROFILE else results.items()):
        print(f"\n### portal {name}: {PORTALS[name]}\n")
        report(runs, reprints[name])
    if len(results) > 1 and not PROFILE:
        worst(results)
    if args.json:
        args.json.write_text(json.dumps({p: {v: [asdict(r) for r in rs] for v, rs in runs.items()}
                                         for p, runs in results.items()}, indent=1),
                             encoding="utf-8")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
