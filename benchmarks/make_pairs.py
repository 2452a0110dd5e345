"""Write labelled near-duplicate pairs (JSONL) from the dev corpora, for ``newscrawl eval``.

Positives: every edit kind of ``evalkit.edits`` applied to every article of at least
200 characters of THUCNews dev500 and the SogouCS sample (plus the sample's real exact duplicates);
negatives: 3 same-category partners per article and the Sohu 2021 text-matching pairs (same event /
same topic / unrelated; near-identical ones left out and counted).

    python benchmarks/make_pairs.py --corpus CORPUS/dev --out pairs.jsonl [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from evalkit import PairSet, load_sogou, load_sohu_pairs, load_thucnews, make_pairs  # noqa: E402

from newscrawl.evaluation import write_pairs  # noqa: E402


def build(corpus: Path, seed: int = 1, negatives_per_doc: int = 3) -> PairSet:
    thuc = make_pairs(
        load_thucnews(corpus / "thucnews_sample/cnews.dev500.txt"),
        seed=seed,
        negatives_per_doc=negatives_per_doc,
    )
    sogou = make_pairs(
        load_sogou(corpus / "sogoucs_smarty_sample/news_sohusite_xml.smarty.dat"),
        seed=seed + 1,
        negatives_per_doc=negatives_per_doc,
    )
    sohu_dir = corpus / "sohu2021_textmatch_text2vec"
    sohu = load_sohu_pairs([sohu_dir / "dd-test.jsonl", sohu_dir / "dc-test.jsonl"])
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
