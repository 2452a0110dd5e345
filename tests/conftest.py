"""Shared fixtures: the ONE mock portal server fixture (two portals on 127.0.0.1 / 127.0.0.2).

``portals`` gives a fresh :class:`tests.mockportal.Layout` per test: two running
:class:`~tests.mockportal.MockPortal` servers (port 0, loopback only) filled by
:func:`tests.mockportal.build_portals`. Pages are mutable (``portal.add_article``/``portal.set``)
and ``portal.hits`` counts requests per path.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from mockportal import Layout, MockPortal, build_portals  # noqa: E402


@pytest.fixture
def portals() -> Iterator[Layout]:
    a = MockPortal("127.0.0.1").start()
    b = MockPortal("127.0.0.2").start()
    try:
        yield build_portals(a, b)
    finally:
        a.stop()
        b.stop()
