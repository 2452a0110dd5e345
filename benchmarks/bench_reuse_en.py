"""English text reuse that is not a reprint: the Clough-Stevenson short answers against the crawl's
decision.

Each of the five Wikipedia source texts is added to a fresh index on the embedded Redis; each of
the 95 answers (200-300 words, graded ``cut``, ``light``, ``heavy`` revision of its source, or
``non``: written independently) is then looked up (``SimhashIndex.query`` with its fingerprint
and sketch, as the crawl's check does, nothing added). An answer is caught when its own task's
source is among the matches. Figures and command: docs/benchmarks.md#bench_reuse_enpy.
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from collections import defaultdict
from pathlib import Path

from _common import table

from newscrawl.connection import close_embedded, open_embedded
from newscrawl.index import SimhashIndex
from newscrawl.simhash.core import hamming
from newscrawl.simhash.decision import get_decision

GRADES = ("cut", "light", "heavy", "non")


def read_text(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:  # 17 of the files are cp1252
        return raw.decode("cp1252")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True,
                        help="the dev corpus folder (holding clough_stevenson_plagiarism_en/)")
    args = parser.parse_args()
    data = args.corpus / "clough_stevenson_plagiarism_en" / "data"
    rows = list(csv.DictReader((data / "file_information.csv").open(encoding="utf-8")))
    decision = get_decision()
    with tempfile.TemporaryDirectory() as tmp:
        client = open_embedded(Path(tmp))
        try:
            index = SimhashIndex(client, prefix="reuse", version=decision.version)
            sources = {}
            for task in "abcde":
                analysis = decision.analyze(read_text(data / f"orig_task{task}.txt"))
                assert analysis.fingerprint is not None
                sources[task] = analysis.fingerprint
                index.add(analysis.fingerprint, f"orig_task{task}", analysis.sketch)
            caught: dict[str, int] = defaultdict(int)
            total: dict[str, int] = defaultdict(int)
            distances: dict[str, list[int]] = defaultdict(list)
            for row in rows:
                grade, task = row["Category"], row["Task"]
                if grade not in GRADES:
                    continue
                analysis = decision.analyze(read_text(data / row["File"]))
                if analysis.fingerprint is None:
                    continue
                total[grade] += 1
                distances[grade].append(hamming(analysis.fingerprint, sources[task]))
                matches = index.query(analysis.fingerprint, analysis.sketch)
                caught[grade] += any(m.doc_id == f"orig_task{task}" for m in matches)
        finally:
            close_embedded(client)
    table(["grade", "answers", "caught as a near-duplicate of its source",
           "Hamming distance to its source, median [min, max]"],
          [(g, total[g], f"{caught[g]} ({caught[g] / total[g]:.2f})",
            f"{sorted(distances[g])[len(distances[g]) // 2]} "
            f"[{min(distances[g])}, {max(distances[g])}]") for g in GRADES if total[g]])


if __name__ == "__main__":
    main()
