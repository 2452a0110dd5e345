"""Plumbing the benchmark scripts share: import paths, paired rounds, CPU, tables, sites files.

docs/benchmarks.md describes each script and keeps its figures.
"""

from __future__ import annotations

import resource
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeVar

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for _path in (HERE, REPO / "tests", REPO):  # the tests' mock portals and crawl runner, this tree
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


def markdown(headers: Sequence[str], rows: Iterable[Sequence[object]],
             align: str | None = None) -> str:
    """A markdown table; ``align`` is one character per column, ``l`` or ``r``
    (default: the first column left, the others right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]],
          align: str | None = None) -> None:
    """Print :func:`markdown`."""
    print(markdown(headers, rows, align))


def sites_toml(sites: dict[str, str], max_list_depth: int | None = None) -> str:
    """A sites file: one site per name and start URL, articles at ``/a/N.html``, lists at
    ``/list/N.html``."""
    depth = "" if max_list_depth is None else f"max_list_depth = {max_list_depth}\n"
    return "\n".join(
        f'[[sites]]\nname = "{name}"\nstart_urls = ["{base}/"]\n'
        f"article_url = '/a/\\d+\\.html$'\nfollow_url = '/list/\\d+\\.html$'\n{depth}"
        for name, base in sites.items())
