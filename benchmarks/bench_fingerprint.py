"""Fingerprint speed, whole process: the seeds' recipe against newscrawl's fingerprint path.

Each method (``rjieba``, ``decision``, ``pipe``) runs in a fresh process, interleaved over the
runs, ratios paired per run; ``--reference`` also runs another tree's and checks equal results;
``--pure-python`` also runs each method without the C speedups (``NEWSCRAWL_PURE_PYTHON=1``).
Methods, columns and figures: docs/benchmarks.md#bench_fingerprintpy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO as ROOT
from baselines import SeedsRecipe
from evalkit import load_sogou, load_thucnews, make_pairs
from evalkit.pairs import SOGOU, SOHU, THUCNEWS

from newscrawl.evaluation import evaluate
from newscrawl.simhash import get_fingerprinter

WORKER = r"""
import hashlib, json, logging, sys, time
t0 = time.perf_counter()
method, path = sys.argv[1], sys.argv[2]
texts = json.load(open(path, encoding="utf-8"))
logging.disable(logging.CRITICAL)
if method == "seeds":
    sys.path.insert(0, "benchmarks")
    from baselines import SeedsRecipe
    fp = SeedsRecipe()
    run = lambda: [fp.fingerprint(t) for t in texts]
elif method == "rjieba":
    from newscrawl.simhash import get_fingerprinter
    fp = get_fingerprinter()
    run = lambda: [fp.fingerprint(t) for t in texts]
elif method == "decision":
    from newscrawl.simhash import get_decision
    analyze = get_decision().analyze
    run = lambda: [(a.fingerprint, a.sketch) for a in map(analyze, texts)]
elif method == "pipe":
    import asyncio
    from newscrawl.workers import WorkerPool
    async def both():
        pool = WorkerPool(None, 1)
        try:
            return list(await asyncio.gather(*map(pool.fingerprint, texts)))
        finally:
            pool.close()
    run = lambda: asyncio.run(both())
else:
    raise SystemExit(f"unknown method {method}")
out = run()
digest = hashlib.sha256(repr(out).encode()).hexdigest()
print(json.dumps({"n": len(out), "digest": digest, "in_process": time.perf_counter() - t0}))
"""

PURE = " (pure Python)"


def run_worker(method: str, path: str, root: Path) -> dict[str, float | str]:
    """One fresh process handling every text with ``method``, newscrawl imported from ``root``:
    its wall time and the CPU time of its whole process tree. A method ending in PURE runs
    without the C speedups."""
    pure = method.endswith(PURE)
    method = method.removesuffix(PURE)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, method, path],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(root), NEWSCRAWL_PURE_PYTHON="1" if pure else "0"),
        cwd=root if method in METHODS else ROOT,  # "python -c" puts it first on sys.path
    )
    if proc.returncode:
        raise SystemExit(f"{method} ({root}) failed: {proc.stderr[-2000:]}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"wall": wall, "cpu": cpu, **json.loads(proc.stdout.strip().splitlines()[-1])}


METHODS = ("rjieba", "decision", "pipe")


def load_texts(corpus: Path, which: str) -> list[str]:
    """THUCNews dev500 + the SogouCS sample; ``all`` adds both sides of every Sohu 2021 pair and the
    cwced texts; ``first``: all's first only (start-up). Distinct non-blank texts, in order."""
    docs = load_thucnews(corpus / THUCNEWS) + load_sogou(corpus / SOGOU)
    texts = [d.text for d in docs]
    if which != "articles":
        for name in ("dd-test.jsonl", "dc-test.jsonl"):
            with open(corpus / SOHU / name, encoding="utf-8") as fh:
                for line in fh:
                    row = json.loads(line)
                    texts += [row["sentence1"], row["sentence2"]]
        cw = corpus / "cwced_zh_handlabeled/cleaned"
        texts += [f.read_text(encoding="utf-8") for f in sorted(cw.glob("*.txt"))]
    texts = list(dict.fromkeys(t for t in texts if t.strip()))
    return texts[:1] if which == "first" else texts


def reference_tree(ref: str, tmp: Path) -> Path:
    """``ref`` itself when it is a directory holding newscrawl/, else a worktree of revision ref."""
    if (Path(ref) / "newscrawl").is_dir():
        return Path(ref).resolve()
    tree = tmp / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), ref],
                   check=True)  # fmt: skip
    return tree


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True, help="the dev corpus directory")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--texts", choices=("all", "articles", "first"), default="all")
    ap.add_argument("--methods", default=",".join(METHODS), help="rjieba, decision, pipe")
    ap.add_argument("--reference", metavar="DIR_OR_GIT_REF",
                    help="also run the newscrawl methods with this tree; checks equal results")
    ap.add_argument("--pure-python", action="store_true",
                    help="also run each method without the C speedups; checks equal results")
    ap.add_argument("--quality", action="store_true", help="recall/precision of seeds and ours")
    args = ap.parse_args()  # fmt: skip
    corpus = Path(args.corpus)
    texts = load_texts(corpus, args.texts)
    kb = sum(len(t.encode("utf-8")) for t in texts) / len(texts) / 1024
    ours = [m for m in args.methods.split(",") if m]
    if args.pure_python:
        ours += [m + PURE for m in ours]
    tmp = Path(tempfile.mkdtemp(prefix="bench-fp-"))
    path = tmp / "texts.json"
    path.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
    trees = {"": ROOT}
    try:
        if args.reference:
            trees["@ref"] = reference_tree(args.reference, tmp)
        runs = [("seeds", "")] + [(m, t) for t in trees for m in ours
                                  if m.removesuffix(PURE) in METHODS or not t]
        timing: dict[tuple[str, str], list[dict[str, float | str]]] = {r: [] for r in runs}
        for i in range(args.repeat):  # interleaved, alternating order: noise hits every method
            for m, t in runs if i % 2 == 0 else runs[::-1]:
                timing[(m, t)].append(run_worker(m, str(path), trees[t]))
    finally:
        if args.reference and trees.get("@ref", ROOT).is_relative_to(tmp):
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(trees["@ref"])], check=False, capture_output=True)  # fmt: skip
            subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=False)
        shutil.rmtree(tmp, ignore_errors=True)

    with open("/proc/loadavg", encoding="ascii") as fh:
        load = " ".join(fh.read().split()[:3])
    print(f"{len(texts)} distinct texts, mean {kb:.1f} KB UTF-8; {args.repeat} runs, load average"
          f" at the end {load}; ratios: seeds' time / the method's, paired per run.\n")  # fmt: skip
    print("| method | docs/s (whole process, median) | ratio, wall: median [min, max] "
          "| ratio, CPU: median [min, max] | same results as this tree |")  # fmt: skip
    print("|---|---:|---:|---:|---|")
    seeds = timing[("seeds", "")]
    for m, t in runs:
        rows = timing[(m, t)]
        dps = len(texts) / statistics.median(float(r["wall"]) for r in rows)
        cells = []
        for key in ("wall", "cpu"):
            ratios = [float(s[key]) / float(r[key]) for s, r in zip(seeds, rows, strict=True)]
            cells.append(f"{statistics.median(ratios):.2f}x [{min(ratios):.2f}, {max(ratios):.2f}]")
        same = "-"
        if t or m.endswith(PURE):
            mine = {r["digest"] for r in timing[(m.removesuffix(PURE), "")]}
            same = "yes" if {r["digest"] for r in rows} == mine and len(mine) == 1 else "**NO**"
        print(f"| {m}{' ' + args.reference if t else ''} | {dps:.{0 if dps >= 10 else 2}f} "
              f"| {cells[0]} | {cells[1]} | {same} |")  # fmt: skip

    if args.quality:
        pairs = make_pairs(load_thucnews(corpus / THUCNEWS), seed=1).pairs
        pairs += make_pairs(load_sogou(corpus / SOGOU), seed=2).pairs
        for name, fp in (("seeds", SeedsRecipe()), ("newscrawl", get_fingerprinter())):
            row = evaluate(pairs, fp).at(3)
            print(f"\n{name}: recall@3 {row.recall:.4f}, precision@3 {row.precision:.4f} "
                  f"({len(pairs)} pairs)", end="")  # fmt: skip
        print()


if __name__ == "__main__":
    main()
