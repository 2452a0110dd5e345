"""The text sketch in one process: ``sketch()`` with its C speedups against the Python code.

The C path and the Python path (what ``NEWSCRAWL_PURE_PYTHON`` selects at import) run over the
same texts in alternating order each round; ratios are paired per round, CPU time of this process.
Figures: docs/design/fingerprint.md#the-text-sketch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from _common import round_order, spread, table
from bench_fingerprint import load_texts

from newscrawl.simhash import sketch as skmod


def run(texts: list[str], c: object) -> tuple[float, list[bytes]]:
    skmod._c = c  # type: ignore[assignment]
    t0 = time.process_time()
    out = [skmod.sketch(t).to_bytes() for t in texts]
    return time.process_time() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True, help="the dev corpus directory")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--texts", choices=("all", "articles"), default="all")
    args = ap.parse_args()
    if skmod._c is None:
        raise SystemExit("the C speedups are not built or NEWSCRAWL_PURE_PYTHON is set")
    texts = load_texts(Path(args.corpus), args.texts)
    paths = {"C": skmod._c, "Python": None}
    seconds: dict[str, list[float]] = {name: [] for name in paths}
    results: dict[str, list[bytes]] = {}
    for i in range(args.repeat):
        for name in round_order(list(paths), i):
            took, results[name] = run(texts, paths[name])
            seconds[name].append(took)
    skmod._c = paths["C"]
    ratios = [p / c for p, c in zip(seconds["Python"], seconds["C"], strict=True)]
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    same = "yes" if results["C"] == results["Python"] else "**NO**"
    print(f"{len(texts)} texts, {args.repeat} rounds, load average at the end {load};"
          f" same sketches: {same}\n")  # fmt: skip
    table(
        ["path", "CPU s, median [min, max]", "texts/s", "Python / C, paired"],
        [
            [
                name,
                spread(seconds[name], "{:.3f}"),
                f"{len(texts) / statistics.median(seconds[name]):.0f}",
                spread(ratios, "{:.2f}x") if name == "C" else "1.00x",
            ]
            for name in paths
        ],  # fmt: skip
    )


if __name__ == "__main__":
    main()
