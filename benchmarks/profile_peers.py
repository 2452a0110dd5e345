"""Where newscrawl's CPU per article goes, against plain Scrapy + the same trafilatura call.

    python benchmarks/profile_peers.py --corpus CORPUS/dev [--articles 200] [--json OUT]
        [--portal byline=0,editor=1 ...] [--before DIR]
    python benchmarks/profile_peers.py --corpus CORPUS/dev --authors [--articles 300]
    python benchmarks/profile_peers.py --corpus CORPUS/dev --loop DIR [--rounds 3]

Crawls the portal of ``benchmarks/bench_peers.py`` (per ``--portal``: the share of pages with a
``作者：`` byline, an editor line after every body or not) with variant A (plain Scrapy,
``benchmarks/peers_spider.py``) and C (``scrapy crawl portal`` with ``REDIS_URL``, fingerprints in
the crawl process), each under ``cProfile`` with the main thread's CPU clock, and sorts every
function's own time into stages by its file (a C function by its heaviest caller's). ``--before
DIR`` also profiles C with another checkout's ``newscrawl`` package first on the path, in the same
run. ``--authors``: no crawl, which author extraction gives per kind of page. ``--loop DIR``: no
crawl, CPU ms per page of ``extract_article`` over the portal's article pages, this tree and DIR's
alternating for ``--rounds`` rounds. Stages, figures and the command: docs/benchmarks.md
(profile_peers.py).
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench_crawl import TimedPortal  # noqa: E402
from bench_peers import ARTICLE_RE, COMMON, LIST_RE, Server, build  # noqa: E402
from crawlrun import crawl_command, crawl_env, parse_stats  # noqa: E402
from mockportal import Page  # noqa: E402

# Runs the command after "--" under cProfile with the main thread's CPU clock, then writes the
# profile and the process's CPU (all threads) next to it.
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


def _stage_of(key: tuple[str, int, str]) -> str | None:
    filename, _, name = key
    where = f"{filename}:{name}"
    for pattern, stage in _RULES:
        if pattern in where:
            return stage
    if filename == "~" or filename.startswith("<"):
        return None  # a C function (or generated code): its caller decides
    return "engine/other"


def stages(prof_path: Path) -> dict[str, float]:
    """Seconds of own time per stage (C functions go to their heaviest caller's stage)."""
    stats = pstats.Stats(str(prof_path)).stats  # type: ignore[attr-defined]
    memo: dict[Any, str] = {}

    def stage(key: Any, depth: int = 0) -> str:
        if key in memo:
            return memo[key]
        found = _stage_of(key)
        if found is None:
            callers = stats[key][4] if key in stats else {}
            heaviest = max(callers.items(), key=lambda kv: kv[1][2], default=None)
            found = stage(heaviest[0], depth + 1) if heaviest and depth < 20 else "engine/other"
        memo[key] = found
        return found

    out = dict.fromkeys(STAGES, 0.0)
    for key, (_, _, tottime, _, _) in stats.items():
        out[stage(key)] += tottime
    return out


def rules(prof_path: Path) -> dict[str, float]:
    """Cumulative seconds of each function of newscrawl/extract/ (what each rule costs with
    what it calls: a function called by another is inside the caller's figure too)."""
    stats = pstats.Stats(str(prof_path)).stats  # type: ignore[attr-defined]
    return {f"{Path(k[0]).name}:{k[2]}": v[3] for k, v in stats.items()
            if "newscrawl/extract/" in k[0]}  # fmt: skip


def set_portal(portal: Any, byline: float, editor: bool, seed: int) -> None:
    """Every article page gets (or loses) its ``作者：`` byline with probability ``byline`` and,
    with ``editor``, an editor line after its last paragraph."""
    rng = random.Random(seed)
    for path, page in list(portal.pages.items()):
        if not re.match(ARTICLE_RE.rstrip("$"), path):
            continue
        html = re.sub(r" 作者：\S{2,3}(?=</div>)", "", page.body.decode("utf-8"))
        if rng.random() < byline:
            html = html.replace("</div><div class='content'>",
                                f" 作者：{rng.choice(['张伟', '王芳', '李强'])}</div>"
                                "<div class='content'>", 1)  # fmt: skip
        if editor and "责任编辑" not in html:
            html = html.replace("</p></div></div>", "</p><p>（责任编辑：王明）</p></div></div>", 1)
        portal.set(path, Page(html.encode("utf-8"), page.content_type))


def run_profiled(variant: str, portal: TimedPortal, work: Path,
                 tree: Path | None) -> dict[str, Any]:
    work.mkdir(parents=True)
    prof = work / "run.prof"
    server = Server(work) if variant != "A" else None
    try:
        portal.reset()
        if server is None:
            settings = [*COMMON, f"PEERS_OUT={work / 'items.jsonl'}", f"PEERS_ARTICLE={ARTICLE_RE}",
                        f"PEERS_LIST={LIST_RE}", "ROBOTSTXT_OBEY=True",
                        "TELNETCONSOLE_ENABLED=False",
                        "ITEM_PIPELINES=" + json.dumps({"peers_spider.StorePipeline": 300})]
            cmd = ["scrapy", "runspider", str(HERE / "peers_spider.py"),
                   "-a", f"start={portal.base}/"]  # fmt: skip
            for s in settings:
                cmd += ["-s", s]
            env = {k: v for k, v in os.environ.items()
                   if k not in ("SCRAPY_SETTINGS_MODULE", "REDIS_URL")}  # fmt: skip
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
        else:
            sites = work / "sites.toml"
            sites.write_text(f'[[sites]]\nname = "peers"\nstart_urls = ["{portal.base}/"]\n'
                             f"article_url = '{ARTICLE_RE}'\nfollow_url = '{LIST_RE}'\n"
                             "max_list_depth = 1\n", encoding="utf-8")  # as bench_peers.py
            cmd = crawl_command(sites, (*COMMON, "NEWSCRAWL_FINGERPRINT_WORKERS=0"))[2:]
            env = crawl_env(work, server.url)
            if tree is not None:  # another checkout's newscrawl package first
                env["PYTHONPATH"] = f"{tree}{os.pathsep}{env['PYTHONPATH']}"
        rcpu0 = server.cpu() if server else 0.0
        proc = subprocess.run([sys.executable, "-c", RUNNER, str(prof), *cmd], cwd=work, env=env,
                              capture_output=True, text=True, timeout=3600)  # fmt: skip
        log = proc.stdout + proc.stderr
        if proc.returncode != 0 or not prof.exists():
            print(log[-3000:], file=sys.stderr)
            raise SystemExit(f"variant {variant}: exit code {proc.returncode}")
        redis_cpu = (server.cpu() - rcpu0) if server else 0.0
    finally:
        if server:
            server.stop()
    articles = len(portal.article_times)
    cpu = json.loads((work / "run.prof.json").read_text())
    by_stage = stages(prof)
    # other threads of the crawl process (the index's Redis calls): whole process less main thread
    by_stage["other threads"] = max(0.0, cpu["cpu"] - cpu["main"])
    by_stage["redis-server"] = redis_cpu
    return {"variant": variant, "articles": articles,
            "items": parse_stats(log).get("item_scraped_count", 0),
            "process_cpu_ms": cpu["cpu"] * 1000 / articles,
            "ms_per_article": {k: v * 1000 / articles for k, v in by_stage.items()},
            "extract_cumulative_ms": {k: v * 1000 / articles for k, v in rules(prof).items()}}


class Pages:
    """The portal's pages without serving them."""

    def __init__(self) -> None:
        self.pages: dict[str, Page] = {}

    def set(self, path: str, page: Page) -> None:
        self.pages[path] = page


def article_pages(corpus: Path, articles: int, seed: int, portals: list[str]) -> list[list[str]]:
    """[html, url] of every article page of the portal, once per ``--portal`` kind."""
    out = []
    for n, spec in enumerate(portals):
        portal = Pages()
        build(portal, corpus, articles, 0.1, seed)  # type: ignore[arg-type]
        opts = dict(kv.split("=") for kv in spec.split(","))
        set_portal(portal, float(opts.get("byline", 0)), opts.get("editor", "0") == "1", seed + n)
        out += [[p.body.decode("utf-8"), "http://portal.test" + path]
                for path, p in portal.pages.items() if re.match(ARTICLE_RE.rstrip("$"), path)]
    return out


# Extracts every page of a JSON file [[html, url], ...] and prints CPU ms per page.
LOOP = r"""
import json, sys, time
from newscrawl.extract import extract_article
pages = json.load(open(sys.argv[1]))
t = time.process_time()
for html, url in pages:
    extract_article(html, url)
print((time.process_time() - t) * 1000 / len(pages))
"""


def loop(pages: list[list[str]], other: Path, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="profile-peers-") as tmp:
        path = Path(tmp) / "pages.json"
        path.write_text(json.dumps(pages), encoding="utf-8")
        times: dict[str, list[float]] = {"this tree": [], str(other): []}
        for _ in range(rounds):
            for name, tree in (("this tree", REPO), (str(other), other)):
                out = subprocess.run([sys.executable, "-c", LOOP, str(path)], cwd=tmp, text=True,
                                     env=dict(os.environ, PYTHONPATH=str(tree)),
                                     capture_output=True, check=True).stdout
                times[name].append(float(out))
    for name, ms in times.items():
        print(f"{name}: {' '.join(f'{m:.1f}' for m in ms)} CPU ms/page ({len(pages)} pages)")
    ratios = sorted(a / b for a, b in zip(times["this tree"], times[str(other)], strict=True))
    print(f"this tree / {other}: median {ratios[len(ratios) // 2]:.3f} of {len(ratios)} rounds")


def authors(pages: list[list[str]]) -> None:
    """Per kind of page (a ``作者：`` byline or not, an editor line or not): pages, those where
    the library's author search ran (no byline found by the line rules first), authors given."""
    from collections import Counter

    from newscrawl.extract import article, library

    searched: list[bool] = []
    library_author = library.LibraryMetadata.author

    def author(self: Any) -> str | None:
        searched.append(True)
        return library_author(self)

    library.LibraryMetadata.author = author  # type: ignore[method-assign]
    rows: dict[tuple[str, str], list[Any]] = {}
    for html, url in pages:
        byline = re.search(r"作者：(\S{2,3})</div>", html)
        editor = re.search(r"责任编辑：(\S{2,3})）", html)
        searched.clear()
        found = article.extract_article(html, url)
        got = found.author if found else None
        row = rows.setdefault(("byline" if byline else "no byline",
                               "editor line" if editor else "-"), [0, 0, Counter()])
        row[0] += 1
        row[1] += bool(searched)
        kind = ("none" if not got else "the byline" if byline and got == byline.group(1)
                else "the editor" if editor and got == editor.group(1) else "another name")
        row[2][kind] += 1
    print("| page | pages | library author search ran | author given |\n|---|---:|---:|---|")
    for (b, e), (n, ran, kinds) in sorted(rows.items()):
        given = ", ".join(f"{k} {v}" for k, v in kinds.most_common())
        print(f"| {b}, {e} | {n} | {ran} | {given} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--articles", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--portal", action="append",
                    help="byline=SHARE,editor=0|1 (default: the four of byline 0 / 1 x editor)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--authors", action="store_true", help="no crawl: the authors extracted")
    ap.add_argument("--before", type=Path, help="also variant C with DIR's newscrawl package")
    ap.add_argument("--loop", type=Path, help="no crawl: extract_article CPU, this tree and DIR's")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    portals = args.portal or ["byline=0,editor=0", "byline=0,editor=1", "byline=1,editor=0",
                              "byline=0.33,editor=1"]  # fmt: skip
    if args.authors or args.loop:
        pages = article_pages(args.corpus, args.articles, args.seed, ["byline=0.33,editor=0"]
                              if args.authors and not args.portal else portals)  # fmt: skip
        authors(pages) if args.authors else loop(pages, args.loop, args.rounds)
        return 0
    portal = TimedPortal()
    portal.start()
    build(portal, args.corpus, args.articles, 0.1, args.seed)
    variants: list[tuple[str, Path | None]] = [("A", None), ("C", None)]
    if args.before:
        variants.append(("C before", args.before))
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="profile-peers-") as tmp:
            for n, spec in enumerate(portals):
                opts = dict(kv.split("=") for kv in spec.split(","))
                set_portal(portal, float(opts.get("byline", 0)), opts.get("editor", "0") == "1",
                           args.seed + n)
                for v, (variant, tree) in enumerate(variants):
                    row = run_profiled(variant, portal, Path(tmp) / f"{n}-{v}", tree)
                    row["portal"] = spec
                    results.append(row)
                    print(f"  {spec} {variant}: {row['articles']} articles, "
                          f"{row['process_cpu_ms']:.1f} CPU ms/article", file=sys.stderr)
    finally:
        portal.stop()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    cols = [*STAGES, "other threads", "redis-server"]
    print("| portal | variant | CPU ms/article (process) | " + " | ".join(cols) + " |")
    print("|---|---|---:|" + "---:|" * len(cols))
    for r in results:
        ms = r["ms_per_article"]
        print(f"| {r['portal']} | {r['variant']} | {r['process_cpu_ms']:.1f} | "
              + " | ".join(f"{ms[c]:.2f}" for c in cols) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
