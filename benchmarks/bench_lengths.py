"""Short articles against long ones on the same topic: distinct articles the decision must keep.

    python benchmarks/bench_lengths.py --corpus CORPUS/dev [--seed 1] [--json OUT]

A text sketch estimates the containment of the smaller text's 4-grams in the other from a
resemblance estimate; the longer the other text, the more a few bins matched by chance inflate it
(``newscrawl.simhash.sketch.text_chance``). This benchmark builds, from the dev corpus, groups of
distinct same-topic articles of very different lengths and counts what the decision drops:

* **THUCNews groups**, one per category (the topic): up to ``--shorts`` (20) articles of 300-800
  characters (briefs), and ``--longs`` (6) long articles of 4,000-6,500 characters, each the
  category's other articles joined in a random order (a long read or digest on the topic); an
  article is in one text only.
* **Sohu groups**: each same-event pair (grade 5) of the Sohu 2021 short-long file whose short
  passage has at least 100 characters: a passage and a full article on one event, ~10x longer.

Every text is distinct; a pair whose smaller text really has >= 50 % of its 4-grams in the other
(the corpus's own near-duplicates) is counted apart as ambiguous, neither right nor wrong.

Runs (each on a fresh embedded Redis, through ``SimhashIndex.check_and_add``: the index's Lua):

* ``nominated``: every text of a group gets the group's fingerprint (distance 0: the simhash
  nominates every same-topic pair, the worst case for the confirmation), with its real sketch;
  longs first, then shorts, and the other order (a long dropped against a short checked before it).
  With ``--no-chance`` it also runs the rule without the chance check (``Thresholds.chance``
  1,000,000: rules 1-3 of docs/design/near-duplicates.md, the bins and the number set alone).
* ``real``: the texts' own fingerprints (``get_decision().analyze``), both orders.
* ``pairs``: every short-long pair of a group judged by ``newscrawl.simhash.sketch.confirms``, by
  length ratio.

Prints markdown tables; ``--json OUT`` writes every number and each wrong drop.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalkit.pairs import load_thucnews  # noqa: E402

from newscrawl.simhash import get_decision  # noqa: E402
from newscrawl.simhash.sketch import (  # noqa: E402
    DEFAULT_THRESHOLDS,
    TextSketch,
    Thresholds,
    confirms,
    normalize,
)

SHORT = (300, 800)
LONG = (4000, 6500)
SOHU_MIN_SHORT = 100
AMBIGUOUS = 0.5
RULES = {
    "the decision": DEFAULT_THRESHOLDS,
    "without the chance check": Thresholds(chance=1_000_000),
}


@dataclass
class Doc:
    id: str
    group: str
    kind: str  # "short" | "long"
    text: str


def build(corpus: Path, seed: int, shorts: int, longs: int) -> list[list[Doc]]:
    rng = random.Random(seed)
    groups: list[list[Doc]] = []
    by_cat: dict[str, list[str]] = {}
    for d in load_thucnews(corpus / "thucnews_sample/cnews.dev500.txt"):
        by_cat.setdefault(d.category, []).append(d.text)
    for cat in sorted(by_cat):
        texts = by_cat[cat][:]
        rng.shuffle(texts)
        short = [t for t in texts if SHORT[0] <= len(t) <= SHORT[1]][:shorts]
        material = [t for t in texts if t not in short]
        group = [Doc(f"{cat}-s{i}", cat, "short", t) for i, t in enumerate(short)]
        for i in range(longs):
            target = rng.randint(*LONG)
            parts: list[str] = []
            while material and sum(map(len, parts)) < target:
                parts.append(material.pop())
            if sum(map(len, parts)) < LONG[0]:
                break
            group.append(Doc(f"{cat}-l{i}", cat, "long", "\n".join(parts)))
        groups.append(group)
    path = corpus / "sohu2021_textmatch_text2vec/dc-test.jsonl"
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            row = json.loads(line)
            pair = (row["sentence1"], row["sentence2"])
            if row["label"] == 5 and min(map(len, pair)) >= SOHU_MIN_SHORT:
                g = f"sohu-dc-{n:03d}"
                short_text, long_text = sorted(pair, key=len)
                groups.append([Doc(f"{g}s", g, "short", short_text),
                               Doc(f"{g}l", g, "long", long_text)])  # fmt: skip
    return groups


def grams(text: str) -> set[str]:
    n = normalize(text)
    return {n[i : i + 4] for i in range(max(1, len(n) - 3))}


def containment(a: set[str], b: set[str]) -> float:
    small, big = (a, b) if len(a) <= len(b) else (b, a)
    return len(small & big) / len(small) if small else 0.0


def run_index(
    stream: list[Doc], fps: dict[str, int], sketches: dict[str, bytes], rule: Thresholds
) -> list[tuple[str, str]]:
    """(dropped id, id it was matched to) for the stream, in order, on a fresh index."""
    from newscrawl.index import SimhashIndex
    from newscrawl.redis import close_embedded, open_embedded

    drops = []
    with tempfile.TemporaryDirectory(prefix="bench-lengths-") as tmp:
        client = open_embedded(Path(tmp))
        try:
            index = SimhashIndex(client, thresholds=rule)
            for d in stream:
                match = index.check_and_add(fps[d.id], d.id, sketches[d.id])
                if match is not None:
                    drops.append((d.id, match.doc_id))
            index.close()
        finally:
            close_embedded(client)
    return drops


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--corpus", required=True, type=Path, help="the dev corpus directory")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shorts", type=int, default=20, help="short articles per category")
    ap.add_argument("--longs", type=int, default=6, help="long articles per category")
    ap.add_argument("--no-chance", action="store_true", help="also run the rule without it")
    ap.add_argument("--json", type=Path, help="write the scores as JSON here")
    args = ap.parse_args(argv)

    groups = build(args.corpus, args.seed, args.shorts, args.longs)
    decision = get_decision()
    docs = [d for g in groups for d in g]
    fps: dict[str, dict[str, int]] = {"nominated": {}, "real": {}}
    sketches: dict[str, bytes] = {}
    for d in docs:
        a = decision.analyze(d.text)
        if a.fingerprint is None or a.sketch is None:
            continue
        sketches[d.id] = a.sketch
        fps["real"][d.id] = a.fingerprint
        digest = hashlib.blake2b(d.group.encode(), digest_size=8).digest()
        fps["nominated"][d.id] = int.from_bytes(digest, "big")
    docs = [d for d in docs if d.id in sketches]
    gram = {d.id: grams(d.text) for d in docs}
    ambiguous = {
        frozenset((a.id, b.id))
        for g in groups
        for i, a in enumerate(g)
        for b in g[i + 1 :]
        if a.id in gram and b.id in gram and containment(gram[a.id], gram[b.id]) >= AMBIGUOUS
    }
    kinds = Counter(d.kind for d in docs)
    ratios = [
        len(b.text) / len(a.text)
        for g in groups
        for a in g
        if a.kind == "short" and a.id in gram
        for b in g
        if b.kind == "long" and b.id in gram
    ]
    ratios.sort()
    summary = {
        "groups": len(groups),
        "shorts": kinds["short"],
        "longs": kinds["long"],
        "short_long_pairs": len(ratios),
        "median_length_ratio": round(ratios[len(ratios) // 2], 1) if ratios else None,
        "ambiguous_pairs": len(ambiguous),
    }
    print(
        f"{summary['groups']} groups, {summary['shorts']} short and {summary['longs']} long texts"
        f" with a fingerprint, {summary['short_long_pairs']} short-long pairs (median length"
        f" ratio {summary['median_length_ratio']}), {summary['ambiguous_pairs']} ambiguous pairs"
        " (containment >= 0.5)\n"
    )
    rules = dict(RULES) if args.no_chance else {"the decision": DEFAULT_THRESHOLDS}
    longs_first = sorted(docs, key=lambda d: d.kind != "long")
    shorts_first = sorted(docs, key=lambda d: d.kind != "short")
    results: list[dict[str, Any]] = []
    print("| fingerprints | rule | order | drops | wrong (distinct dropped) | ambiguous |")
    print("|---|---|---|---|---|---|")
    for fp_kind in ("nominated", "real"):
        for rule_name, rule in rules.items():
            for order, stream in (("longs first", longs_first), ("shorts first", shorts_first)):
                drops = run_index(stream, fps[fp_kind], sketches, rule)
                wrong = [
                    {
                        "id": d,
                        "of": m,
                        "lengths": [len(gram[d]), len(gram[m])],
                        "containment": round(containment(gram[d], gram[m]), 3),
                    }  # fmt: skip
                    for d, m in drops
                    if frozenset((d, m)) not in ambiguous
                ]
                row = {"fingerprints": fp_kind, "rule": rule_name, "order": order,
                       "drops": len(drops), "wrong": len(wrong),
                       "ambiguous": len(drops) - len(wrong), "wrong_drops": wrong}  # fmt: skip
                results.append(row)
                print(f"| {fp_kind} | {rule_name} | {order} | {len(drops)} | {len(wrong)} |"
                      f" {row['ambiguous']} |")  # fmt: skip
    # every short-long pair of a group, judged by the confirmation alone
    sk = {k: TextSketch.from_bytes(v) for k, v in sketches.items()}
    bands = [(0, 3), (3, 6), (6, 10), (10, 10**9)]
    pairs: dict[str, Counter[str]] = {name: Counter() for name in RULES}
    for g in groups:
        for a in g:
            for b in g:
                if a.kind != "short" or b.kind != "long" or a.id not in sk or b.id not in sk:
                    continue
                if frozenset((a.id, b.id)) in ambiguous:
                    continue
                ratio = len(b.text) / len(a.text)
                band = next(f"{lo}-{hi}" if hi < 10**9 else f">={lo}"
                            for lo, hi in bands if lo <= ratio < hi)  # fmt: skip
                for name, rule in RULES.items():
                    pairs[name][band + " n"] += 1
                    pairs[name][band] += confirms(sk[a.id], sk[b.id], thresholds=rule)
    print("\n| short-long pairs by length ratio | pairs | confirmed: the decision |"
          " confirmed: without the chance check |")  # fmt: skip
    print("|---|---|---|---|")
    for lo, hi in bands:
        band = f"{lo}-{hi}" if hi < 10**9 else f">={lo}"
        n = pairs["the decision"][band + " n"]
        print(
            f"| {band} | {n} | {pairs['the decision'][band]} |"
            f" {pairs['without the chance check'][band]} |"
        )
    if args.json:
        out = {"summary": summary, "runs": results,
               "pairs": {k: dict(v) for k, v in pairs.items()}}  # fmt: skip
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
