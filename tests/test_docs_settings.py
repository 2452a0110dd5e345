"""docs/settings.md lists exactly the settings of the registry (``newscrawl.defaults.REGISTRY``),
with their defaults, and apart from them exactly the environment-only variables."""

from __future__ import annotations

import re
from pathlib import Path

from newscrawl.defaults import ENVIRONMENT_ONLY, REGISTRY

DOC = Path(__file__).resolve().parent.parent / "docs" / "settings.md"


def _section(title: str | None) -> str:
    """The text of the ``## title`` section (None: before the first ``##``)."""
    parts = re.split(r"^## ", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE)
    if title is None:
        return parts[0]
    found = [part for part in parts[1:] if part.startswith(title + "\n")]
    assert len(found) == 1, f"no single '## {title}' in {DOC}"
    return found[0]


def _table_rows(text: str) -> dict[str, tuple[str, str]]:
    """``{name: (default cell, meaning cell)}`` for each setting named in the first column of
    the first table of ``text`` (a row may name several: `` `A` / `B` ``)."""
    rows: dict[str, tuple[str, str]] = {}
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert len(lines) > 2, "no table"
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0]):
            assert name not in rows, f"{name} is listed twice"
            rows[name] = (cells[1], cells[-1]) if len(cells) > 2 else ("", cells[-1])
    return rows


def test_the_settings_table_lists_exactly_the_registry() -> None:
    documented = _table_rows(_section(None))
    declared = [setting.name for setting in REGISTRY]
    assert sorted(documented) == sorted(declared), (
        f"documented, not declared: {sorted(set(documented) - set(declared))}; "
        f"declared, not documented: {sorted(set(declared) - set(documented))}")


def test_each_documented_default_is_the_registry_default() -> None:
    documented = _table_rows(_section(None))
    for setting in REGISTRY:
        default, _ = documented[setting.name]
        if setting.default is None:
            continue  # described in words ("unset", "<NEWSCRAWL_DATA_DIR>/articles")
        shown = re.findall(r"`([^`]+)`", default)
        assert str(setting.default) in shown, (setting.name, default, setting.default)


def test_the_environment_only_section_lists_exactly_the_environment_only_variables() -> None:
    listed = _table_rows(_section("Environment only"))
    assert sorted(listed) == sorted(ENVIRONMENT_ONLY)


def test_no_newscrawl_name_in_the_docs_is_neither_a_setting_nor_an_environment_variable() -> None:
    # a whole name (not a family such as NEWSCRAWL_SITEMAP_*)
    named = set(re.findall(r"\b(NEWSCRAWL_[A-Z0-9_]*[A-Z0-9])(?![A-Z0-9_*])",
                           DOC.read_text(encoding="utf-8")))
    known = {setting.name for setting in REGISTRY} | set(ENVIRONMENT_ONLY)
    named.discard("NEWSCRAWL_DEDUP_ENABLE")  # the misspelling the typo check's example shows
    assert named <= known, sorted(named - known)
