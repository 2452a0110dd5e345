"""The scheduler's Lua scripts (``*.lua`` here), read once by the modules that run them.

A script names its return codes and the strings it compares in a ``local NAME = value`` block at
its top; the Python module that runs it defines the same names. :func:`load` checks that both
sides agree, so a code cannot change on one side only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources

_CONSTANT = re.compile(r"^local ([A-Z][A-Z0-9_]*) = (-?\d+|'[^']*')", re.MULTILINE)


def load(*names: str, constants: Mapping[str, object]) -> str:
    """The files ``names`` joined into one script; raises RuntimeError when a constant they
    declare is missing from ``constants`` (the calling module's ``globals()``) or differs."""
    text = "".join(resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
                   for name in names)
    for name, value in _CONSTANT.findall(text):
        if repr(constants.get(name)) != value:
            raise RuntimeError(f"{'+'.join(names)}: {name} = {value} in Lua but"
                               f" {constants.get(name)!r} in Python")
    return text
