"""docs/design/architecture.md's layout table names every module of newscrawl/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _rows() -> list[str]:
    text = (ROOT / "docs/design/architecture.md").read_text(encoding="utf-8")
    layout = text.split("## Code layout", 1)[1].split("\n## ", 1)[0]
    paths: list[str] = []
    for line in layout.splitlines():
        if line.startswith("| `newscrawl/"):
            cell = line.split("|")[1]
            named = re.findall(r"`([^`]+)`", cell)
            base = named[0].rsplit("/", 1)[0]
            # "`newscrawl/scheduling/queue.py`, `serializer.py`": later names are siblings
            paths += [n if n.startswith("newscrawl/") else f"{base}/{n}" for n in named]
    return paths


def test_every_module_has_a_row() -> None:
    rows = _rows()
    assert len(rows) > 30
    missing = []
    for path in sorted((ROOT / "newscrawl").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if path.name == "__init__.py" and any(r.startswith(rel[: -len("__init__.py")])
                                                for r in rows):
            continue  # a package's glue: its modules have rows
        if not any(rel == r or (r.endswith("/") and rel.startswith(r)) for r in rows):
            missing.append(rel)
    assert missing == [], f"modules without a row in docs/design/architecture.md: {missing}"


def test_every_row_names_something_that_exists() -> None:
    gone = [r for r in _rows() if not (ROOT / r).exists()]
    assert gone == []
