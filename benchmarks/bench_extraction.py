"""Decoding and article extraction on the labelled pages of the dev corpus, against baselines.

newscrawl next to trafilatura alone: body F1, titles, dates, authors, sources, mojibake, boilerplate
cut. Every table and the figures: docs/benchmarks.md#bench_extractionpy.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import re
import statistics
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import lxml.html
from _common import HERE
from _common import markdown as table

from newscrawl.extract import MIN_BODY_CHARS, decode_html_detailed, has_mojibake
from newscrawl.extract.article import DEFAULT_STRATEGY, _extract, _Strategy
from newscrawl.extract.boilerplate import EDGE_PATTERNS, trim_edges
from newscrawl.extract.page import parse
from newscrawl.extract.zones import visible_text, zones


@dataclass
class Page:
    dataset: str
    pid: str
    body: bytes
    url: str
    lang: str  # "zh" or "en"
    text: str | None = None  # labelled body
    title: str | None = None
    date: tuple[int, ...] | None = None  # (y, m[, d])
    author: str | None = None
    source: str | None = None  # the outlet named as the text's source (sources.tsv); None: none
    html_title: str | None = None
    weak_text: str | None = None  # machine reference (gne result.txt)
    html: str = field(default="", repr=False)


@dataclass
class Out:
    title: str | None
    text: str
    published: str | None
    author: str | None
    source: str | None = None


# ---------------------------------------------------------------- loading -------------------------

_LABEL_DATE = re.compile(r"^\s*((?:19|20)\d{2})(?:\D+(\d{1,2}))?(?:\D+(\d{1,2}))?")


def _label_date(value: str | None) -> tuple[int, ...] | None:
    if not value:
        return None
    m = _LABEL_DATE.match(value)
    if not m or m.group(2) is None:
        return None  # "UNKNOWN", a year alone, or not a date (label noise)
    return tuple(int(g) for g in m.groups() if g is not None)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8").strip()


def load_cwced(root: Path) -> list[Page]:
    d = root / "cwced_zh_handlabeled"
    if not d.is_dir():
        return []
    index = {e["id"]: e for e in json.loads((d / "index.json").read_text(encoding="utf-8"))}
    pages = []
    for f in sorted((d / "original").glob("*.html")):
        pid = f.stem
        author = _read(d / "author" / f"{pid}.txt")
        host = (index.get(pid) or {}).get("first_host_in_html") or "example.com"
        pages.append(Page(
            "cwced_zh_handlabeled", pid, f.read_bytes(), f"http://{host}/", "zh",
            text=_read(d / "cleaned" / f"{pid}.txt"),
            date=_label_date(_read(d / "date" / f"{pid}.txt")),
            author=None if author in ("", "UNKNOWN") else author,
        ))
    return pages


def _parse_gne_results(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    if not path.is_file():
        return out
    raw = path.read_text(encoding="utf-8")
    for m in re.finditer(r">{5,}(tests/\S+?)>{5,}\s*(\{.*?\})\s*<{5,}", raw, re.S):
        try:
            out[m.group(1)] = json.loads(m.group(2))
        except json.JSONDecodeError:
            continue
    return out


def load_gne(root: Path) -> list[Page]:
    d = root / "gne_test_pages"
    if not d.is_dir():
        return []
    index = json.loads((d / "index.json").read_text(encoding="utf-8"))
    weak = _parse_gne_results(d / "result.txt")
    pages = []
    for e in index:
        ref = weak.get(e["source_path"])
        pages.append(Page(
            "gne_test_pages", Path(e["file"]).stem, (d / e["file"]).read_bytes(),
            f"http://{e['site_dir']}.example/", "zh", html_title=e.get("html_title"),
            weak_text=ref.get("content") if ref else None,
        ))
    return pages


def _html_text(html: str) -> str:
    tree = lxml.html.fromstring(html)
    for bad in tree.xpath("//script|//style"):
        bad.drop_tree()
    return tree.text_content()


def load_readability(root: Path) -> list[Page]:
    d = root / "readability_testpages"
    if not d.is_dir():
        return []
    pages = []
    for sub in sorted(p for p in d.iterdir() if p.is_dir()):
        meta = json.loads((sub / "expected-metadata.json").read_text(encoding="utf-8"))
        lang = "zh" if sub.name in ("qq", "gmw", "youth") else "en"
        byline = meta.get("byline")
        if byline and re.search(r"\d", byline):
            byline = None  # seattletimes: the "byline" label is a date line
        pages.append(Page(
            "readability_testpages", sub.name, (sub / "source.html").read_bytes(),
            f"http://{sub.name}.example/", lang,
            text=_html_text((sub / "expected.html").read_text(encoding="utf-8")),
            title=meta.get("title"), date=_label_date(meta.get("publishedTime")),
            author=byline,
        ))
    return pages


def load_aeb(root: Path) -> list[Page]:
    d = root / "scrapinghub_aeb_en_news"
    if not d.is_dir():
        return []
    truth = json.loads((d / "ground-truth.json").read_text(encoding="utf-8"))
    pages = []
    for pid, gt in sorted(truth.items()):
        f = d / "html" / f"{pid}.html.gz"
        if not f.is_file():
            continue
        pages.append(Page("scrapinghub_aeb_en_news", pid[:10], gzip.decompress(f.read_bytes()),
                          gt.get("url") or "", "en", text=gt["articleBody"]))
    return pages


LOADERS: dict[str, Callable[[Path], list[Page]]] = {
    "cwced_zh_handlabeled": load_cwced,
    "gne_test_pages": load_gne,
    "readability_testpages": load_readability,
    "scrapinghub_aeb_en_news": load_aeb,
}

LABELS, AUTHOR_LABELS, SOURCE_LABELS = (HERE / "labels" / f"{name}.tsv"
                                        for name in ("titles", "authors", "sources"))


def load_title_labels(path: Path) -> dict[str, str]:
    """``dataset/page<TAB>value`` lines (titles, authors); ``#`` starts a comment line."""
    out: dict[str, str] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        key, sep, title = line.partition("\t")
        if not sep or not title.strip():
            raise SystemExit(f"{path}:{n}: expected 'dataset/page<TAB>title'")
        out[key.strip()] = title.strip()
    return out


# ---------------------------------------------------------------- metrics -------------------------


def tokens(text: str, lang: str) -> Counter[str]:
    if lang == "zh":
        return Counter(c for c in text if not c.isspace())
    return Counter(re.findall(r"\w+", text.lower()))


def f1(ref: str, got: str, lang: str) -> float:
    a, b = tokens(ref, lang), tokens(got, lang)
    common = sum((a & b).values())
    if not common:
        return 0.0
    p, r = common / sum(b.values()), common / sum(a.values())
    return 2 * p * r / (p + r)


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip().lower()


def title_ok(pred: str | None, exp: str) -> bool:
    """Equal, or equal up to a site suffix ("标题_科技_腾讯网", "Title | BBC News")."""
    if not pred:
        return False
    p, e = _norm(pred), _norm(exp)
    if p == e:
        return True
    for short, long in ((p, e), (e, p)):
        if short and long.startswith(short) and long[len(short):].lstrip()[:1] in "_|-–—:":
            return True
    return False


def title_key(s: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", s)).lower()


def title_exact(pred: str | None, exp: str) -> bool:
    """The label, up to white space, letter case and full/half-width forms (no suffix allowed)."""
    return bool(pred) and title_key(pred or "") == title_key(exp)


def date_ok(pred: str | None, exp: tuple[int, ...]) -> bool:
    if not pred:
        return False
    m = re.match(r"(\d{4})-(\d{2})(?:-(\d{2}))?", pred)
    if not m:
        return False
    got = tuple(int(g) for g in m.groups() if g is not None)
    return got[: len(exp)] == exp


def _author_norm(s: str) -> str:
    s = re.sub(r"^\s*by\s+", "", s, flags=re.I)
    return re.sub(r"[\W_]+", "", s).lower()


def author_ok(pred: str | None, exp: str) -> bool:
    return bool(pred) and _author_norm(pred or "") == _author_norm(exp)


# ---------------------------------------------------------------- extractors ----------------------


def run_trafilatura(html: str, url: str) -> Out | None:
    import trafilatura

    doc = trafilatura.bare_extraction(html, url=url, with_metadata=True)
    if doc is None or isinstance(doc, dict):
        return None
    if not doc.text:
        return None
    return Out(doc.title, doc.text, doc.date, doc.author)


def make_newscrawl(strategy: _Strategy) -> Callable[[str, str], Out | None]:
    def run(html: str, url: str) -> Out | None:
        a = _extract(html, url, None, strategy)
        return None if a is None else Out(a.title, a.text, a.published, a.author, a.source)

    return run


def library_title(html: str, url: str) -> str | None:
    """The baseline of the title table: the extraction library's title alone."""
    import trafilatura

    doc = trafilatura.bare_extraction(
        html, url=url or None, with_metadata=True, include_comments=False, include_tables=True,
        favor_precision=True, date_extraction_params={"original_date": True,
                                                      "extensive_search": False},
    )
    title = getattr(doc, "title", None) if doc is not None else None
    return re.sub(r"\s+", " ", title).strip() or None if title else None


def title_report(pages: list[Page], show_misses: bool) -> str:
    rows = []
    misses: list[str] = []
    for ds in sorted({p.dataset for p in pages}):
        sub = [p for p in pages if p.dataset == ds]
        stats = {"library title alone": [0, 0, 0, 0], "newscrawl": [0, 0, 0, 0]}
        for p in sub:
            art = _extract(p.html, p.url, None, DEFAULT_STRATEGY)
            if art is None:
                continue
            for name, title in (("library title alone", library_title(p.html, p.url)),
                                ("newscrawl", art.title)):
                st = stats[name]
                st[0] += 1
                st[1] += bool(title)
                if p.title is not None:
                    st[2] += 1
                    ok = title_exact(title, p.title)
                    st[3] += ok
                    if not ok and name == "newscrawl":
                        misses.append(f"{ds}/{p.pid}: got {title!r}, label {p.title!r}")
        for name, (n, has, labelled, right) in stats.items():
            rows.append([ds, name, str(n), f"{has / n:.3f} ({has}/{n})" if n else "–",
                         f"{right / labelled:.3f} ({right}/{labelled})" if labelled else "–"])
    out = table(["dataset", "title logic", "pages with an article", "with a title",
                 "right title (labelled)"], rows)
    if show_misses and misses:
        out += "\n\nnewscrawl titles that differ from the label:\n" + "\n".join(misses)
    return out


# The baseline row: trafilatura alone (library defaults, its own title, date and author).
BASELINE = "trafilatura alone"


def methods() -> dict[str, Callable[[str, str], Out | None]]:
    return {BASELINE: run_trafilatura, "newscrawl": make_newscrawl(DEFAULT_STRATEGY)}


# ---------------------------------------------------------------- reports -------------------------


def _fmt(values: list[bool]) -> str:
    if not values:
        return "–"
    return f"{sum(values) / len(values):.2f} ({sum(values)}/{len(values)})"


def evaluate(pages: list[Page], name: str, fn: Callable[[str, str], Out | None]) -> list[str]:
    f1s: list[float] = []
    weak: list[float] = []
    titles: list[bool] = []
    dates: list[bool] = []
    right = wrong = empty = 0
    sources = [0, 0, 0]  # right, wrong, missed
    mojibake = 0
    none = 0
    elapsed = 0.0
    for p in pages:
        t0 = time.perf_counter()
        out = fn(p.html, p.url)
        elapsed += time.perf_counter() - t0
        if out is None:
            none += 1
        text = out.text if out else ""
        if out is not None and (has_mojibake(out.title or "") or has_mojibake(text)):
            mojibake += 1
        if p.text is not None:
            f1s.append(f1(p.text, text, p.lang))
        if p.weak_text is not None:
            weak.append(f1(p.weak_text, text, p.lang))
        if p.title is not None:
            titles.append(title_ok(out.title if out else None, p.title))
        elif p.html_title is not None:
            titles.append(title_ok(out.title if out else None, p.html_title))
        if p.date is not None:
            dates.append(date_ok(out.published if out else None, p.date))
        if p.author is not None:
            got = out.author if out else None
            if not got:
                empty += 1
            elif author_ok(got, p.author):
                right += 1
            else:
                wrong += 1
        got_source = out.source if out else None
        if got_source:
            sources[0 if got_source == p.source else 1] += 1
        elif p.source:
            sources[2] += 1
    body = weak if not f1s else f1s
    tag = "" if f1s else " (weak ref)"
    mean = f"{statistics.mean(body):.3f}{tag}" if body else "–"
    median = f"{statistics.median(body):.3f}" if body else "–"
    labelled = right + wrong + empty
    authors = f"{right} / {wrong} / {empty}" if labelled else "–"
    reads_sources = name == "newscrawl"
    source_cell = " / ".join(map(str, sources)) if reads_sources else "–"
    return [name, str(len(pages)), mean, median, _fmt(titles), _fmt(dates), authors, source_cell,
            str(mojibake), str(none), f"{len(pages) / elapsed:.1f}" if elapsed else "–"]


def edge_report(pages: list[Page]) -> str:
    """How many bodies each boilerplate pattern (newscrawl.extract.boilerplate) cut, per dataset."""
    untrimmed = replace(DEFAULT_STRATEGY, trim_edges=False)
    names = ["dateline", "infoline"] + [n for n, _ in EDGE_PATTERNS] + ["related", "infoline_copy"]
    rows = []
    for ds in sorted({p.dataset for p in pages}):
        counts: Counter[str] = Counter()
        sub = [p for p in pages if p.dataset == ds]
        for p in sub:
            art = _extract(p.html, p.url, None, untrimmed)
            if art is not None:
                zone = zones(visible_text(parse(p.html)), art.title, art.text)[0]
                counts.update(set(trim_edges(art.text, keep_chars=MIN_BODY_CHARS, above=zone)[1]))
        rows.append([ds, str(len(sub))] + [str(counts[n]) for n in names])
    return table(["dataset", "pages"] + names, rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, required=True, help="path to corpus/dev")
    ap.add_argument("--datasets", nargs="*", default=list(LOADERS))
    ap.add_argument("--methods", nargs="*", default=None,
                    help=f"subset of extractor names ('{BASELINE}', 'newscrawl')")
    ap.add_argument("--titles", type=Path, default=LABELS,
                    help="title labels, dataset/page<TAB>title")
    ap.add_argument("--authors", type=Path, default=AUTHOR_LABELS,
                    help="author labels for pages without one, dataset/page<TAB>author")
    ap.add_argument("--sources", type=Path, default=SOURCE_LABELS,
                    help="source labels, dataset/page<TAB>outlet (pages not listed: none)")
    ap.add_argument("--titles-only", action="store_true", help="only the title table")
    ap.add_argument("--show-misses", action="store_true", help="list pages with a wrong title")
    args = ap.parse_args(argv)
    logging.disable(logging.WARNING)  # the libraries log every odd page

    pages: list[Page] = []
    for ds in args.datasets:
        pages += LOADERS[ds](args.corpus)
    if not pages:
        raise SystemExit(f"no pages found under {args.corpus}")
    labels = load_title_labels(args.titles) if args.titles.is_file() else {}
    author_labels = load_title_labels(args.authors) if args.authors.is_file() else {}
    source_labels = load_title_labels(args.sources) if args.sources.is_file() else {}
    for p in pages:
        p.html = decode_html_detailed(p.body).text
        p.title = labels.get(f"{p.dataset}/{p.pid}", p.title)
        p.author = p.author or author_labels.get(f"{p.dataset}/{p.pid}")
        p.source = source_labels.get(f"{p.dataset}/{p.pid}")

    print("## Titles\n")
    print(title_report(pages, args.show_misses))
    if args.titles_only:
        return 0
    fns = methods()
    if args.methods:
        fns = {k: v for k, v in fns.items() if k in args.methods}
    header = ["extractor", "pages", "body F1 mean", "body F1 median", "title acc", "date acc",
              "authors right / wrong / empty", "sources right / wrong / missed", "mojibake",
              "no article", "pages/s"]
    for ds in args.datasets:
        sub = [p for p in pages if p.dataset == ds]
        if not sub:
            continue
        print(f"\n## {ds}\n")
        print(table(header, (evaluate(sub, name, fn) for name, fn in fns.items())))
    print("\n## Boilerplate cut at the end of bodies (bodies per pattern)\n")
    print(edge_report(pages))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
