"""The index's Lua scripts (``*.lua`` here), as the scheduler's are loaded: ``lib.lua`` first.

A script names the constants it shares with Python in ``local NAME = value`` lines at its top (a
number, a quoted string, or a table of quoted strings); :func:`load` checks that the calling
module defines the same values. Design: docs/design/index.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources

_CONSTANT = re.compile(r"^local ([A-Z][A-Z0-9_]*) = (-?\d+|'[^']*'|\{[^}]*\})", re.MULTILINE)
_ITEM = re.compile(r"'([^']*)'")


def _lua_value(literal: str) -> object:
    if literal.startswith("{"):
        return tuple(_ITEM.findall(literal))
    if literal.startswith("'"):
        return literal[1:-1]
    return int(literal)


def load(*names: str, constants: Mapping[str, object]) -> str:
    """The files ``names`` joined into one script; raises RuntimeError when a constant they
    declare is missing from ``constants`` (the calling module's ``globals()``) or differs."""
    text = "".join(resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
                   for name in names)
    for name, literal in _CONSTANT.findall(text):
        value = _lua_value(literal)
        if constants.get(name) != value or type(constants.get(name)) is not type(value):
            raise RuntimeError(f"{'+'.join(names)}: {name} = {literal} in Lua but"
                               f" {constants.get(name)!r} in Python")
    return text
