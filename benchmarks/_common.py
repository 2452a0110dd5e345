"""Plumbing the benchmark scripts share: import paths, paired rounds, CPU, tables.

Every script prints markdown tables of medians [min, max] over interleaved rounds;
docs/benchmarks.md describes each script and keeps its figures.
"""

from __future__ import annotations

import resource
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO / "tests", REPO):  # the tests' mock portals and crawl runner, this tree
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

T = TypeVar("T")


def children_cpu() -> float:
    """User + system CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def spread(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    """``median [min, max]`` (the median alone for one value)."""
    med = fmt.format(statistics.median(values))
    if len(values) < 2:
        return med
    return f"{med} [{fmt.format(min(values))}, {fmt.format(max(values))}]"


def round_order(configs: Sequence[T], round_: int) -> Sequence[T]:
    """The configurations of one round, alternating ABC.. and ..CBA so drift cancels out."""
    return configs if round_ % 2 == 0 else configs[::-1]


def table(headers: Sequence[str], rows: Iterable[Sequence[object]],
          align: str | None = None) -> None:
    """Print a markdown table; ``align`` is one character per column, ``l`` or ``r``
    (default: the first column left, the others right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    print("| " + " | ".join(headers) + " |")
    print("|" + "|".join("---" if a == "l" else "---:" for a in align) + "|")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
