"""The objects of a JSON-LD block, outermost first (for extraction's date and source rules)."""

from __future__ import annotations

from collections.abc import Iterator

#: how deep a block's objects are read
DEPTH = 6


def page_objects(data: object, skip: frozenset[str]) -> Iterator[dict[str, object]]:
    """The JSON objects of ``data``, level by level from the outermost, to :data:`DEPTH`
    levels, not descending into the keys of ``skip`` (things other than the page itself)."""
    level: list[object] = [data]
    for _ in range(DEPTH):
        below: list[object] = []
        for node in level:
            if isinstance(node, list):
                below.extend(node)
            elif isinstance(node, dict):
                yield node
                below.extend(v for k, v in node.items()
                             if k not in skip and isinstance(v, dict | list))
        if not below:
            return
        level = below
