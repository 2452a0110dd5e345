"""Near-duplicate quality: precision/recall at Hamming <= 3 for our fingerprint, its variants and
the references (seeds' recipe, PyPI ``simhash`` if installed). Prints markdown tables.

    python benchmarks/bench_quality.py [--pairs pairs.jsonl | --corpus CORPUS/dev]
                                       [--variants] [--report]

``--variants`` adds the weighting variants of docs/design/fingerprint.md (alternatives measured:
``fingerprint_variants.py`` computes them; the crawl's fingerprinter has the default alone);
``--report`` prints the full threshold/per-kind report of the default fingerprinter.
``--cosine`` compares the signature with an exact cosine on the same weights: the cosine
threshold that keeps 95 % of the duplicates and what it lets through, and recall at Hamming <= 3
by cosine band (the projection noise of a 64-bit signature; docs/design/fingerprint.md, "Why
distance <= 3 stops near 0.87").
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from baselines import PypiSimhash, SeedsRecipe  # noqa: E402
from fingerprint_variants import (  # noqa: E402
    VariantConfig,
    VariantFingerprinter,
    check_default,
)
from make_pairs import build  # noqa: E402

from newscrawl.evaluation import EvalReport, evaluate, format_report, read_pairs  # noqa: E402
from newscrawl.simhash import feature_hash, get_fingerprinter  # noqa: E402
from newscrawl.simhash.core import simhash_int_weights  # noqa: E402


class WeightVariant:
    """Our tokens with another weighting: w = count**a * idf**b, optional top-k / cap at rank r."""

    def __init__(self, a: float, b: float, top_k: int = 0, rank: int = 0, tf: str = "raw") -> None:
        self.base = get_fingerprinter()
        self.a, self.b, self.top_k, self.rank, self.tf = a, b, top_k, rank, tf
        extra = (f", top-{top_k}" if top_k else "") + (f", capped at rank {rank}" if rank else "")
        tf_txt = "(1+ln count)" if tf == "log" else "count"
        self.version = f"{tf_txt}^{a:g} * idf^{b:g}{extra}"

    def fingerprint(self, text: str) -> int | None:
        toks = self.base.tokens(text)
        if len(toks) < self.base.config.min_tokens:
            return None
        idf = self.base._idf
        w = {}
        for t, n in Counter(toks).items():
            tf = 1 + math.log(n) if self.tf == "log" else n
            w[t] = tf**self.a * (idf.get(t) / 1000) ** self.b
        items = sorted(w.items(), key=lambda kv: (-kv[1], kv[0]))
        if self.top_k:
            items = items[: self.top_k]
        if self.rank and len(items) >= self.rank:
            cap = items[self.rank - 1][1]
            items = [(t, min(x, cap)) for t, x in items]
        top = items[0][1]
        return simhash_int_weights({feature_hash(t): round(1e6 * x / top) for t, x in items})


def methods(variants: bool) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [
        ("newscrawl default (rjieba)", get_fingerprinter()),
        ("newscrawl, jieba segmenter", VariantFingerprinter(VariantConfig(segmenter="jieba"))),
        ("seeds recipe: jieba extract_tags top-20, md5", SeedsRecipe()),
    ]
    try:
        out.append(("PyPI simhash defaults (char 4-shingles)", PypiSimhash()))
    except ImportError:
        print("(PyPI simhash not installed: skipped)", file=sys.stderr)
    if variants:
        base = VariantConfig()
        for label, cfg in [
            ("previous default: (tf*idf)^2", base.replace(power=2, plateau=0, max_share=0)),
            ("(tf*idf)^3, plateau 150, no share cap", base.replace(max_share=0)),
            ("(tf*idf)^3, share cap 30%, no plateau", base.replace(plateau=0)),
            ("(tf*idf)^2, plateau 150, share cap 30%", base.replace(power=2)),
            ("(tf*idf)^3, plateau 200, share cap 30%", base.replace(plateau=200)),
            ("(tf*idf)^3, plateau 150, share cap 35%", base.replace(max_share=35)),
            ("(tf*idf)^3, plateau 150, share cap 40%", base.replace(max_share=40)),
            ("all tokens, (1+ln tf)*idf", base.replace(tf="log", power=1, plateau=0, max_share=0)),
            ("all tokens, tf*idf", base.replace(power=1, plateau=0, max_share=0)),
            (
                "all tokens, ((1+ln tf)*idf)^2",
                base.replace(tf="log", power=2, plateau=0, max_share=0),
            ),
            ("all tokens, (tf*idf)^3", base.replace(power=3, plateau=0, max_share=0)),
            ("default, CJK words >= 2 chars", base.replace(min_cjk_len=2)),
            ("default + word bigrams", base.replace(shingle=2)),
            (
                "(tf*idf)^2 + word bigrams, no plateau, no cap",
                base.replace(power=2, plateau=0, max_share=0, shingle=2),
            ),
        ]:
            out.append((label, VariantFingerprinter(cfg)))
        for kw in [
            {"a": 1, "b": 1, "top_k": 20, "tf": "log"},
            {"a": 2, "b": 1},
            {"a": 3, "b": 2},
            {"a": 2, "b": 2, "rank": 3},
        ]:
            v = WeightVariant(**kw)  # type: ignore[arg-type]
            out.append((v.version, v))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=Path)
    ap.add_argument("--corpus", type=Path, help="the dev corpus directory (or give --pairs)")
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--cosine", action="store_true")
    args = ap.parse_args()
    if not args.pairs and not args.corpus:
        ap.error("give --corpus DIR (the dev corpus) or --pairs FILE")
    if args.pairs:
        pairs = list(read_pairs(args.pairs))
        excluded = ""
    else:
        ps = build(args.corpus)
        pairs = ps.pairs
        excluded = f"; near-identical negatives left out: {dict(sorted(ps.excluded.items()))}"
    if args.variants:  # the variants' code computes the default exactly as the crawl does
        check_default(t for p in pairs[:500] for t in (p.a, p.b))
    pos = sum(p.duplicate for p in pairs)
    print(f"{len(pairs)} pairs: {pos} duplicates, {len(pairs) - pos} non-duplicates{excluded}\n")
    print("| method | precision@3 | recall@3 | FP@3 | best recall at precision >= 0.99 (k) | s |")
    print("|---|---:|---:|---:|---:|---:|")
    reports: dict[str, EvalReport] = {}
    for label, fp in methods(args.variants):
        t0 = time.perf_counter()
        rep = evaluate(pairs, fp, name=label)  # type: ignore[arg-type]
        reports[label] = rep
        r3 = rep.at(3)
        ok = [r for r in rep.thresholds if r.precision >= 0.99]
        best = max(ok, key=lambda r: r.recall) if ok else None
        best_txt = f"{best.recall:.4f} ({best.threshold})" if best else "-"
        print(
            f"| {label} | {r3.precision:.4f} | {r3.recall:.4f} | {r3.fp} | {best_txt} "
            f"| {time.perf_counter() - t0:.0f} |",
            flush=True,
        )
    print("\nRecall at Hamming <= 3 by the length of the original text (characters):\n")
    bands = [r.label for r in next(iter(reports.values())).lengths]
    print("| method | " + " | ".join(bands) + " |")
    print("|---|" + "---:|" * len(bands))
    for label, rep in reports.items():
        cells = {r.label: f"{r.recall:.3f} ({r.pairs})" for r in rep.lengths}
        print(f"| {label} | " + " | ".join(cells.get(b, "-") for b in bands) + " |")
    if args.report:
        print()
        print(format_report(reports["newscrawl default (rjieba)"]))
    if args.cosine:
        print()
        cosine_analysis(pairs)


def cosine_analysis(pairs: list[Any]) -> None:
    """Exact cosine of the default weight vectors against the 64-bit signature at <= 3."""
    fp = get_fingerprinter()
    weights: dict[str, dict[str, int] | None] = {}

    def vec(text: str) -> dict[str, int] | None:
        if text not in weights:
            weights[text] = fp.weights(text) if fp.fingerprint(text) is not None else None
        return weights[text]

    def cosine(a: dict[str, int], b: dict[str, int]) -> float:
        if len(b) < len(a):
            a, b = b, a
        dot = sum(float(w) * b.get(t, 0) for t, w in a.items())
        na = math.sqrt(sum(float(w) * w for w in a.values()))
        nb = math.sqrt(sum(float(w) * w for w in b.values()))
        return dot / (na * nb) if na and nb else 0.0

    pos: list[tuple[float, int]] = []  # (cosine, Hamming distance)
    neg: list[float] = []
    for p in pairs:
        va, vb = vec(p.a), vec(p.b)
        if va is None or vb is None:
            continue
        c = cosine(va, vb)
        if p.duplicate:
            d = ((fp.fingerprint(p.a) or 0) ^ (fp.fingerprint(p.b) or 0)).bit_count()
            pos.append((c, d))
        else:
            neg.append(c)
    pos.sort(reverse=True)
    print(
        f"Exact cosine vs signature ({len(pos)} duplicate and {len(neg)} non-duplicate pairs "
        "with a fingerprint on both sides):\n"
    )
    print(
        "| recall kept | cosine threshold | non-duplicates at or above | expected Hamming "
        "distance there (64 arccos/pi) |"
    )
    print("|---:|---:|---:|---:|")
    for keep in (0.90, 0.95, 0.97):
        th = pos[max(0, math.ceil(keep * len(pos)) - 1)][0]
        n_fp = sum(c >= th for c in neg)
        print(f"| {keep:.2f} | {th:.4f} | {n_fp} | {64 * math.acos(min(th, 1.0)) / math.pi:.1f} |")
    print("\n| cosine band | duplicate pairs | recall at Hamming <= 3 |")
    print("|---|---:|---:|")
    edges = [(0.999, 2.0), (0.995, 0.999), (0.99, 0.995), (0.98, 0.99), (0.95, 0.98), (0.9, 0.95),
             (-1.0, 0.9)]  # fmt: skip
    for lo, hi in edges:
        band = [d for c, d in pos if lo <= c < hi]
        label = f">= {lo}" if hi > 1 else (f"< {hi}" if lo < 0 else f"{lo}-{hi}")
        rate = f"{sum(d <= 3 for d in band) / len(band):.3f}" if band else "-"
        print(f"| {label} | {len(band)} | {rate} |")


if __name__ == "__main__":
    main()
