"""Write labelled near-duplicate pairs (JSON Lines) from the dev corpora, for ``newscrawl eval``.

docs/benchmarks.md#make_pairspy.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import _common  # noqa: F401  (tests/ and this tree on sys.path)
from evalkit import PairSet, load_sogou, load_sohu_pairs, load_thucnews, make_pairs
from evalkit.pairs import SOGOU, SOHU, THUCNEWS, write_pairs


def build(corpus: Path, seed: int = 1, negatives_per_doc: int = 3) -> PairSet:
    thuc = make_pairs(load_thucnews(corpus / THUCNEWS), seed=seed,
                      negatives_per_doc=negatives_per_doc)
    sogou = make_pairs(load_sogou(corpus / SOGOU), seed=seed + 1,
                       negatives_per_doc=negatives_per_doc)
    sohu = load_sohu_pairs([corpus / SOHU / "dd-test.jsonl", corpus / SOHU / "dc-test.jsonl"])
    out = PairSet(pairs=thuc.pairs + sogou.pairs + sohu.pairs)
    for part in (thuc, sogou, sohu):
        for kind, n in part.excluded.items():
            out.excluded[kind] = out.excluded.get(kind, 0) + n
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True, type=Path, help="the dev corpus directory")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ps = build(args.corpus, args.seed)
    n = write_pairs(ps.pairs, args.out)
    kinds = Counter((p.duplicate, p.kind) for p in ps.pairs)
    print(f"wrote {n} pairs to {args.out}")
    for (dup, kind), c in sorted(kinds.items(), key=lambda kv: (not kv[0][0], kv[0][1])):
        print(f"  {'dup ' if dup else 'neg '} {kind:16s} {c}")
    if ps.excluded:
        print(f"  near-identical negatives left out: {dict(sorted(ps.excluded.items()))}")


if __name__ == "__main__":
    main()
