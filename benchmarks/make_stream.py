"""Build the stream benchmark: news texts with reprints and daily template reports, in crawl order.

What the stream holds and how it is labelled: docs/benchmarks.md#make_streampy-bench_streampy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import _common  # noqa: F401  (tests/ and this tree on sys.path)
from evalkit.edits import STREAM_EDITS, EditContext
from evalkit.pairs import SOGOU, SOHU, THUCNEWS, grams, load_sogou, load_thucnews, normalise
from evalkit.templates import daily_reports

NEAR_EXACT = 0.5
REPRINT = 0.9
MIN_REPRINT_CHARS = 120
SKETCH = 64
START = date(2026, 3, 2)
DAY = 86400.0

# edit kinds and weights of a corpus reprint, in the order they are applied
EDIT_ORDER = ["drop_sentence", "truncate", "typos", "caption", "width", "headline", "tag",
              "editor_note", "source_line", "editor_line", "footer", "related_reading"]  # fmt: skip
EDIT_WEIGHTS = {"source_line": 3, "editor_line": 2, "footer": 3, "related_reading": 2,
                "caption": 2, "tag": 2, "headline": 1, "editor_note": 1, "drop_sentence": 2,
                "truncate": 1, "typos": 1, "width": 1}  # fmt: skip
TEMPLATE_EDITS = ["source_line", "editor_line", "footer", "tag", "width", "related_reading"]
REPRINT_SITES = ["sina", "163", "qq", "ifeng", "people", "xinhuanet", "chinanews", "thepaper",
                 "eastmoney", "hexun", "gmw", "youth", "cnr", "huanqiu"]  # fmt: skip


@dataclass
class Doc:
    id: str
    text: str
    url: str
    title: str
    source: str
    time: float = 0.0
    kind: str = "distinct"
    original: str | None = None
    edit: list[str] = field(default_factory=list)
    group: str | None = None
    name: str | None = None
    near: list[str] = field(default_factory=list)

    def stream_json(self) -> str:
        obj = {"id": self.id, "text": self.text, "url": self.url, "title": self.title}
        return json.dumps(obj, ensure_ascii=False)

    def label_json(self) -> str:
        obj = {"id": self.id, "kind": self.kind, "original": self.original, "edit": self.edit,
               "length": len(self.text), "source": self.source, "group": self.group,
               "name": self.name, "day": int(self.time // DAY), "near": self.near}
        return json.dumps(obj, ensure_ascii=False)


# --- near-exact duplicates ----------------------------------------------------------------------
def _sketch(g: set[str]) -> list[int]:
    hashes = (int.from_bytes(hashlib.blake2b(x.encode(), digest_size=8).digest(), "big") for x in g)
    return sorted(hashes)[:SKETCH]


def near_exact_pairs(texts: list[str]) -> list[tuple[int, int, float]]:
    """Index pairs (i < j) of texts with 3-gram Jaccard >= NEAR_EXACT."""
    gs = [grams(t) for t in texts]
    postings: dict[int, list[int]] = defaultdict(list)
    for i, g in enumerate(gs):
        for h in _sketch(g):
            postings[h].append(i)
    candidates = {(a, b) for ids in postings.values() for a in ids for b in ids if a < b}
    out = []
    for a, b in sorted(candidates):
        j = len(gs[a] & gs[b]) / len(gs[a] | gs[b])
        if j >= NEAR_EXACT:
            out.append((a, b, j))
    return out


# --- corpora ------------------------------------------------------------------------------------
def corpus_docs(corpus: Path, rng: random.Random, sohu_pairs: int) -> list[Doc]:
    """The corpus articles of the stream."""
    docs: list[Doc] = []
    for d in load_thucnews(corpus / THUCNEWS):
        n = int(d.ident.split(":")[1])
        title = re.split(r"\s", d.text[:40], maxsplit=1)[0][:30]
        docs.append(Doc(f"thuc-{n:04d}", d.text, f"https://thucnews.example/{n:04d}.html", title,
                        "thucnews"))
    for n, d in enumerate(load_sogou(corpus / SOGOU)):
        docs.append(Doc(f"sogou-{n:03d}", d.text, d.ident, d.text.split("\n", 1)[0], "sogou"))
    seen_text: set[str] = set()
    for short in ("dd", "dc"):
        path = corpus / SOHU / f"{short}-test.jsonl"
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
        same_event = [n for n, r in enumerate(rows) if r.get("label") == 5]
        chosen = set(rng.sample(same_event, min(sohu_pairs, len(same_event))))
        for n, r in enumerate(rows):
            for side, key in (("a", "sentence1"), ("b", "sentence2")):
                text = r[key].strip()
                if not text or text in seen_text:
                    continue
                seen_text.add(text)
                if n in chosen:
                    docs.append(Doc(f"sohu-{short}-{n:03d}{side}", text,
                                    f"https://sohu2021.example/{short}/{n:03d}{side}.html", "",
                                    f"sohu_{short}", group=f"sohu_{short}:{n}"))
    return docs


# --- the stream ---------------------------------------------------------------------------------
def _reprint_url(rng: random.Random, when: float, ident: str) -> str:
    d = START + timedelta(days=int(when // DAY))
    return f"https://{rng.choice(REPRINT_SITES)}.example/{d:%Y%m%d}/{ident.replace('~', '-')}.html"


def _apply(text: str, kinds: list[str], rng: random.Random, ctx: EditContext) -> str:
    for kind in sorted(kinds, key=EDIT_ORDER.index):
        text = STREAM_EDITS[kind](text, rng, ctx)
    return text


def _pick_edits(rng: random.Random) -> list[str]:
    n = rng.choices([1, 2, 3], weights=[4, 4, 2])[0]
    kinds: list[str] = []
    names, weights = list(EDIT_WEIGHTS), list(EDIT_WEIGHTS.values())
    while len(kinds) < n:
        k = rng.choices(names, weights=weights)[0]
        if k not in kinds and not (k in ("tag", "headline") and {"tag", "headline"} & set(kinds)):
            kinds.append(k)
    return kinds


def build(corpus: Path, seed: int = 1, days: int = 10,
          sohu_pairs: int = 100) -> tuple[list[Doc], dict[str, object]]:
    rng = random.Random(seed)
    docs = corpus_docs(corpus, rng, sohu_pairs)
    span = days * DAY
    # times: corpus articles spread over the period; the second text of a Sohu pair within 2 days
    firsts: dict[str, float] = {}
    for d in docs:
        if d.group and d.group in firsts:
            d.time = min(span - 1, firsts[d.group] + rng.uniform(0, 2 * DAY))
        else:
            d.time = rng.uniform(0, span * 0.9)
            if d.group:
                firsts[d.group] = d.time
    # templates
    templates: list[Doc] = []
    slugs: dict[str, str] = {}
    for r in daily_reports(days, start=START, seed=seed):
        if r.series not in slugs:
            slugs[r.series] = f"{r.kind}{sum(k.startswith(r.kind + '/') for k in slugs) + 1}"
        slug = slugs[r.series]
        ident = f"tpl-{slug}-{r.date:%m%d}"
        url = f"https://{_outlet_host(r.outlet)}.example/{r.kind}/{r.date:%Y%m%d}/{slug}.html"
        templates.append(Doc(ident, r.text, url, r.title, "template",
                             time=r.day * DAY + r.hour * 3600, kind="template", group=r.series,
                             name=r.name))
    # ground truth among corpus texts
    parent = list(range(len(docs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    pairs = near_exact_pairs([d.text for d in docs])
    for a, b, j in pairs:
        if j >= REPRINT:
            parent[find(a)] = find(b)
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(len(docs)):
        members[find(i)].append(i)
    root_of: dict[int, Doc] = {}
    for group in members.values():
        in_stream = sorted(group, key=lambda i: docs[i].time)
        root = docs[in_stream[0]]
        for i in in_stream:
            root_of[i] = root
        for i in in_stream[1:]:
            d = docs[i]
            d.kind, d.original = "reprint", root.id
            d.edit = ["exact" if normalise(d.text) == normalise(root.text) else "near_exact"]
    ambiguous = 0
    for a, b, _ in pairs:
        if root_of[a] is not root_of[b]:
            ra, rb = root_of[a], root_of[b]
            ra.near = sorted(set(ra.near) | {rb.id})
            rb.near = sorted(set(rb.near) | {ra.id})
            ambiguous += 1
    for i, d in enumerate(docs):
        d.near = root_of[i].near
    # reprints of corpus articles and of template reports
    ctx = EditContext(others=[d.text for d in docs])
    reprints: list[Doc] = []
    for d in docs:
        roll = rng.random()
        count = 2 if roll < 0.15 else 1 if roll < 0.60 else 0
        if len(d.text) < MIN_REPRINT_CHARS:
            count = 0
        for k in range(1, count + 1):
            kinds = _pick_edits(rng)
            when = min(span - 1, d.time + rng.uniform(600, 3 * DAY))
            ident = f"{d.id}~r{k}"
            text = _apply(d.text, kinds, rng, ctx)
            reprints.append(Doc(ident, text, _reprint_url(rng, when, ident), d.title, d.source,
                                time=when, kind="reprint", original=d.original or d.id,
                                edit=kinds, group=d.group, near=d.near))
    for t in templates:
        if rng.random() < 0.2:
            kinds = rng.sample(TEMPLATE_EDITS, rng.randint(1, 2))
            when = t.time + rng.uniform(600, 6 * 3600)
            ident = f"{t.id}~r1"
            reprints.append(Doc(ident, _apply(t.text, kinds, rng, ctx),
                                _reprint_url(rng, when, ident), t.title, "template", time=when,
                                kind="reprint", original=t.id, edit=kinds, group=t.group,
                                name=t.name))
    stream = sorted(docs + templates + reprints, key=lambda d: d.time)
    reprinted = {d.original for d in stream if d.kind == "reprint"}
    for d in stream:
        if d.kind == "distinct" and d.id in reprinted:
            d.kind = "original"
    summary: dict[str, object] = {
        "seed": seed, "days": days, "documents": len(stream),
        "kinds": dict(Counter(d.kind for d in stream)),
        "sources": dict(Counter(d.source for d in stream)),
        "edits": dict(Counter(k for d in stream for k in d.edit)),
        "similar_pairs_in_corpus": len(pairs), "ambiguous_pairs_in_stream": ambiguous,
    }
    return stream, summary


def _outlet_host(outlet: str) -> str:
    return "o" + hashlib.blake2b(outlet.encode(), digest_size=3).hexdigest()


def write(out: Path, stream: list[Doc], summary: dict[str, object]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ids = Counter(d.id for d in stream)
    urls = Counter(d.url for d in stream)
    dup = [k for k, v in (ids + urls).items() if v > 1]
    if dup:
        raise SystemExit(f"duplicate ids or urls: {dup[:5]}")
    for name, lines in (("stream", [d.stream_json() for d in stream]),
                        ("labels", [d.label_json() for d in stream])):
        (out / f"{name}.jsonl").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=1) + "\n",
                                      encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--corpus", required=True, type=Path, help="the dev corpora directory")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--days", type=int, default=10, help="simulated days (default 10)")
    ap.add_argument("--sohu-pairs", type=int, default=100,
                    help="same-event pairs taken from each Sohu 2021 file (default 100)")
    args = ap.parse_args()
    if not (args.corpus / "thucnews_sample").is_dir():
        ap.error(f"{args.corpus} does not look like the dev corpora (no thucnews_sample/)")
    stream, summary = build(args.corpus, args.seed, args.days, args.sohu_pairs)
    write(args.out, stream, summary)
    print(json.dumps(summary, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
