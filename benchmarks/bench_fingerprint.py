"""Fingerprint speed: the seeds' recipe (baseline) vs ours with each segmenter, whole process.

``rjieba`` is the crawl's fingerprinter; the other segmenters run the default weighting through
``fingerprint_variants.py``.

Each method runs in a fresh Python process that imports, initialises (dictionaries, IDF table) and
fingerprints every article once; the parent measures that process's wall time. ``docs/s`` is
articles / wall time (start-up included); ``warm docs/s`` times the fingerprinting loop alone.
Recall is measured at Hamming <= 3 on reprint pairs generated from the same articles (with
``newscrawl.evaluation``), and precision on those pairs' negatives. Prints a markdown table.

    python benchmarks/bench_fingerprint.py --corpus CORPUS/dev [--repeat 3]
                                           [--texts all|articles] [--decision] [--baseline REF]

``--texts all`` (default) fingerprints every distinct dev text: THUCNews dev500, the SogouCS
sample, both sides of every Sohu 2021 pair and the cwced cleaned texts (a fingerprint worker handles
thousands of articles, so start-up weighs less); ``--texts articles`` only THUCNews + SogouCS.
``--decision`` also times what the crawl's fingerprint worker computes per text, the fingerprint
and the text sketch (``get_decision().analyze``); with ``--baseline`` that revision's too, and
its fingerprints and sketches are checked to be the same.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from baselines import SeedsRecipe  # noqa: E402
from evalkit import load_sogou, load_thucnews, make_pairs  # noqa: E402
from fingerprint_variants import SEGMENTERS, VariantConfig, VariantFingerprinter  # noqa: E402

from newscrawl.evaluation import evaluate  # noqa: E402
from newscrawl.simhash import get_fingerprinter, hamming  # noqa: E402

WORKER = r"""
import json, logging, sys, time
t0 = time.perf_counter()
method, path = sys.argv[1], sys.argv[2]
texts = json.load(open(path, encoding="utf-8"))
logging.disable(logging.CRITICAL)
if method == "seeds":
    sys.path.insert(0, "benchmarks")
    from baselines import SeedsRecipe
    fp = SeedsRecipe()
elif method == "rjieba":  # the crawl's fingerprinter (also the --baseline revision's)
    from newscrawl.simhash import get_fingerprinter
    fp = get_fingerprinter()
    fp.fingerprint("预热")
elif method == "decision":  # what the crawl's fingerprint worker computes: fingerprint + sketch
    from newscrawl.simhash import get_decision
    class Both:
        decision = get_decision()
        def fingerprint(self, text):
            analysis = self.decision.analyze(text)
            return analysis.fingerprint, analysis.sketch
    fp = Both()
    fp.fingerprint("预热")
else:  # another segmenter: benchmarks/fingerprint_variants.py
    sys.path.insert(0, "benchmarks")
    from fingerprint_variants import VariantConfig, VariantFingerprinter
    fp = VariantFingerprinter(VariantConfig(segmenter=method))
    fp.fingerprint("预热")
t1 = time.perf_counter()
out = [fp.fingerprint(t) for t in texts]
t2 = time.perf_counter()
import hashlib
digest = hashlib.sha256(repr(out).encode()).hexdigest()
print(json.dumps({"init": t1 - t0, "loop": t2 - t1, "n": len(out), "digest": digest}))
"""


ROOT = Path(__file__).resolve().parents[1]


def run_worker(method: str, path: str, root: Path = ROOT) -> tuple[float, dict[str, float]]:
    """One fresh process fingerprinting every text with ``method``, importing newscrawl from
    ``root`` (this checkout, or a worktree of the --baseline revision)."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, method, path],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONPATH=str(root)),
        cwd=root,  # "python -c" puts the working directory first on sys.path
    )
    wall = time.perf_counter() - start
    return wall, json.loads(proc.stdout.strip().splitlines()[-1])


def _fingerprinter(segmenter: str) -> Any:
    """The crawl's fingerprinter for rjieba, else the variant with ``segmenter``."""
    if segmenter == "rjieba":
        return get_fingerprinter()
    return VariantFingerprinter(VariantConfig(segmenter=segmenter))


def load_texts(corpus: Path, which: str) -> tuple[list[str], str]:
    docs = load_thucnews(corpus / "thucnews_sample/cnews.dev500.txt") + load_sogou(
        corpus / "sogoucs_smarty_sample/news_sohusite_xml.smarty.dat"
    )
    texts = [d.text for d in docs]
    label = "THUCNews dev500 + SogouCS sample"
    if which == "all":
        for name in ("dd-test.jsonl", "dc-test.jsonl"):
            with open(corpus / "sohu2021_textmatch_text2vec" / name, encoding="utf-8") as fh:
                for line in fh:
                    row = json.loads(line)
                    texts += [row["sentence1"], row["sentence2"]]
        cw = corpus / "cwced_zh_handlabeled/cleaned"
        texts += [f.read_text(encoding="utf-8") for f in sorted(cw.glob("*.txt"))]
        label += " + Sohu 2021 pair texts + cwced cleaned"
    texts = list(dict.fromkeys(t for t in texts if t.strip()))  # distinct, in order
    return texts, label


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True, help="the dev corpus directory")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--segmenters", default=",".join(SEGMENTERS))
    ap.add_argument("--texts", choices=("all", "articles"), default="all")
    ap.add_argument(
        "--decision",
        action="store_true",
        help="also time the crawl's whole decision: fingerprint + text sketch, as the fingerprint "
        "worker computes them (the seeds' recipe has no sketch)",
    )
    ap.add_argument(
        "--baseline",
        metavar="GIT_REF",
        help="also time the default fingerprinter of this revision (a temporary git worktree), "
        "interleaved with the others: the same-run A/B for a speed change",
    )
    args = ap.parse_args()
    corpus = Path(args.corpus)
    texts, label = load_texts(corpus, args.texts)
    kb = sum(len(t.encode("utf-8")) for t in texts) / len(texts) / 1024
    segs = [s for s in args.segmenters.split(",") if s]
    methods = ["seeds", *segs, *(["decision"] if args.decision else [])]
    worktree: Path | None = None
    if args.baseline:
        methods.append(f"rjieba@{args.baseline}")
        if args.decision:
            methods.append(f"decision@{args.baseline}")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(texts, fh, ensure_ascii=False)
        path = fh.name
    try:
        if args.baseline:
            worktree = Path(tempfile.mkdtemp(prefix="bench-fp-baseline-")) / "tree"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(worktree),
                 args.baseline],
                check=True,
            )  # fmt: skip
        timing: dict[str, list[tuple[float, dict[str, float]]]] = {m: [] for m in methods}
        for _ in range(args.repeat):  # interleaved, so machine noise hits every method alike
            for m in methods:
                method, _, ref = m.partition("@")
                try:
                    timing[m].append(
                        run_worker(method, path, worktree if ref and worktree else ROOT)
                    )
                except subprocess.CalledProcessError as exc:
                    print(f"{m}: failed: {exc.stderr[-300:]}", file=sys.stderr)
    finally:
        os.unlink(path)
        if worktree is not None:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                check=False,
                capture_output=True,
            )
            shutil.rmtree(worktree.parent, ignore_errors=True)
            subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=False)

    pairs = make_pairs(load_thucnews(corpus / "thucnews_sample/cnews.dev500.txt"), seed=1).pairs
    pairs += make_pairs(
        load_sogou(corpus / "sogoucs_smarty_sample/news_sohusite_xml.smarty.dat"), seed=2
    ).pairs

    print(
        f"{len(texts)} distinct texts ({label}), mean {kb:.1f} KB UTF-8; "
        f"median of {args.repeat} runs; {len(pairs)} pairs for recall/precision.\n"
    )
    print(
        "| method | docs/s (whole process) | ratio vs seeds | warm docs/s | ratio "
        "| start-up s (process - loop) | recall@3 | precision@3 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    base = base_warm = None
    for m in methods:
        if not timing[m]:
            continue
        wall = statistics.median(w for w, _ in timing[m])
        warm = statistics.median(r["n"] / r["loop"] for _, r in timing[m])
        init = statistics.median(w - r["loop"] for w, r in timing[m])
        dps = len(texts) / wall
        base = base or dps
        base_warm = base_warm or warm
        name = "seeds recipe (jieba extract_tags top-20)" if m == "seeds" else f"newscrawl, {m}"
        if m.startswith("decision"):
            name = "newscrawl decision: rjieba fingerprint + text sketch" + m[len("decision"):]
        if m == "decision":
            quality = "(the rjieba fingerprint's) | -"
        elif "@" in m:  # another revision: its quality cannot be scored in this process
            own = timing.get(m.partition("@")[0])
            same = bool(own) and timing[m][0][1]["digest"] == own[0][1]["digest"]  # type: ignore[index]
            quality = "same as this code | same" if same else "other fingerprints | -"
        else:
            fp = SeedsRecipe() if m == "seeds" else _fingerprinter(m)
            row = evaluate(pairs, fp).at(3)
            quality = f"{row.recall:.4f} | {row.precision:.4f}"
        print(
            f"| {name} | {dps:.0f} | {dps / base:.2f}x | {warm:.0f} | {warm / base_warm:.2f}x "
            f"| {init:.2f} | {quality} |"
        )

    if "jieba" in segs and len(segs) > 1:
        ref = _fingerprinter("jieba")
        print(
            "\nAgreement with the jieba segmenter on the same articles (tokens after our CJK-run "
            "split; fingerprints):\n"
        )
        print("| segmenter | identical tokens | identical fingerprints | max Hamming |")
        print("|---|---:|---:|---:|")
        ref_tok = [ref.tokens(t) for t in texts]
        ref_fp = [ref.fingerprint(t) for t in texts]
        for s in segs:
            if s == "jieba":
                continue
            other = _fingerprinter(s)
            same_tok = sum(other.tokens(t) == rt for t, rt in zip(texts, ref_tok, strict=True))
            fps = [other.fingerprint(t) for t in texts]
            same_fp = sum(a == b for a, b in zip(fps, ref_fp, strict=True))
            dists = [
                hamming(a, b)
                for a, b in zip(fps, ref_fp, strict=True)
                if a is not None and b is not None
            ]
            n = len(texts)
            print(
                f"| {s} | {same_tok}/{n} ({same_tok / n:.1%}) | {same_fp}/{n} ({same_fp / n:.1%})"
                f" | {max(dists) if dists else '-'} |"
            )


if __name__ == "__main__":
    main()
