"""Requests in flight over time at the portals, per variant: where a crawl's pipe empties.

    python benchmarks/inflight_timeline.py [--scenario many] [--step 0.5] [--only A --only C]
        [--baseline-src DIR]

One crawl per variant on the portals of ``bench_inflight.py`` (same scenarios and variants).
Prints, per ``--step`` seconds from the first article request, the mean requests answered at once
over all hosts and how many hosts still had an article request to come, then when each host's
last article request came. See docs/benchmarks.md ("bench_inflight.py").
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import bench_inflight as bench


def timeline(ps: list[bench.MockPortal], step: float) -> tuple[list[str], list[float]]:
    answers = [(h, path, s, e) for h, p in enumerate(ps) for path, s, e in p.answered()]
    arts = [a for a in answers if a[1].startswith("/a/")]
    t0, t1 = min(a[2] for a in arts), max(a[3] for a in arts)
    cells, t = [], t0
    while t < t1:
        busy = sum(max(0.0, min(e, t + step) - max(s, t)) for _, _, s, e in answers) / step
        left = len({h for h, _, s, _ in arts if s >= t})
        cells.append(f"{t - t0:4.1f}s {busy:4.1f}/{left}")
        t += step
    last = {h: max(s for g, _, s, _ in arts if g == h) - t0 for h in range(len(ps))}
    return cells, [last[h] for h in sorted(last)]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--scenario", choices=sorted(bench.SCENARIOS), default="many")
    ap.add_argument("--step", type=float, default=0.5)
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--articles", type=int, default=480)
    ap.add_argument("--only", action="append", choices=["A", "C", "C0"])
    ap.add_argument("--baseline-src", type=Path)
    args = ap.parse_args()
    n_hosts, per_host = bench.SCENARIOS[args.scenario]
    ps = bench.portals(n_hosts, args.articles, args.latency_ms / 1000)
    tmp = Path(tempfile.mkdtemp(prefix="inflight-timeline-"))
    try:
        for v in args.only or ["A", "C"]:
            bench.run_once(v, ps, per_host, tmp / v, args.baseline_src)
            cells, last = timeline(ps, args.step)
            print(f"{v}: in flight / hosts with requests to come, per {args.step:g} s:")
            print("  " + "  ".join(cells))
            print(f"{v}: each host's last article request at (s): "
                  + " ".join(f"{x:.1f}" for x in last))
    finally:
        for p in ps:
            p.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
