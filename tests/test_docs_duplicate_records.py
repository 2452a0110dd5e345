"""docs/redis-keys.md documents every field a duplicate record can carry: the fixed fields of
``DuplicateLog.record`` and every extra field a caller in newscrawl passes to it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _is_log_record(node: ast.AST) -> bool:
    """``log.record`` / ``self.log.record``: the duplicate log's record method."""
    if not (isinstance(node, ast.Attribute) and node.attr == "record"):
        return False
    owner = node.value
    return (isinstance(owner, ast.Name) and owner.id == "log") or (
        isinstance(owner, ast.Attribute) and owner.attr == "log")


def written_fields() -> set[str]:
    fields: set[str] = set()
    source = (REPO / "newscrawl" / "index" / "duplicates.py").read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == "record":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Dict):
                    fields |= {k.value for k in sub.keys
                               if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    assert {"url", "original_url", "seen_at"} <= fields, fields
    callers = 0
    for path in (REPO / "newscrawl").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            # log.record(..., site=...) or self._redis(self.log.record, ..., site=..., what=...)
            if _is_log_record(node.func) or any(_is_log_record(a) for a in node.args):
                callers += 1
                fields |= {k.arg for k in node.keywords if k.arg not in (None, "what")}
    assert callers >= 2, callers  # the pipeline and `newscrawl dedup`
    return fields


def test_every_field_of_a_duplicate_record_is_documented() -> None:
    docs = (REPO / "docs" / "redis-keys.md").read_text(encoding="utf-8")
    section = docs.split("### Duplicate records", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)`(?:, `([a-z_]+)`)? \|", section, re.M))
    names = {name for pair in documented for name in pair if name}
    fields = written_fields()
    assert "original_title" in fields
    assert fields <= names, sorted(fields - names)
    assert names <= fields, sorted(names - fields)  # nothing documented that is not written
