"""The Scrapy versions newscrawl is tested with and the internals it uses
(newscrawl/_scrapy_compat.py): one WARNING at start on an untested Scrapy, a clear error when an
internal is missing."""

from __future__ import annotations

import logging
import tomllib
from pathlib import Path

import pytest
import scrapy
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from scrapy.core.engine import ExecutionEngine
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as ScrapyRobotsTxt
from scrapy.utils.test import get_crawler

from newscrawl import _scrapy_compat as compat
from newscrawl.middlewares.robots import RobotsTxtMiddleware

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
ADDON = {"newscrawl.addon.Newscrawl": 0}


def compat_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == compat.__name__ and r.levelno == logging.WARNING]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Versions warned about earlier in this process are forgotten."""
    monkeypatch.setattr(compat, "_warned", set())


def test_tested_range_is_pyprojects_scrapy_requirement() -> None:
    deps = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    (scrapy_req,) = [r for r in map(Requirement, deps) if r.name == "scrapy"]
    assert scrapy_req.specifier == SpecifierSet(compat.TESTED_SCRAPY)


def test_installed_scrapy_is_tested_and_says_nothing(
        fresh: None, caplog: pytest.LogCaptureFixture) -> None:
    get_crawler(settings_dict={"ADDONS": ADDON})
    assert compat.check_scrapy_version()
    assert compat_warnings(caplog) == []


@pytest.mark.parametrize("version", ["2.20.0", "2.18.1", "2.20.0rc1", "3.0", "unknown"])
def test_untested_scrapy_is_one_warning_naming_both_versions(
        version: str, fresh: None, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(scrapy, "__version__", version)
    get_crawler(settings_dict={"ADDONS": ADDON})  # the add-on checks when the crawler starts
    (message,) = compat_warnings(caplog)
    assert f"Scrapy {version} is installed" in message
    assert compat.TESTED_SCRAPY in message
    get_crawler(settings_dict={"ADDONS": ADDON})
    assert not compat.check_scrapy_version()  # as the scheduler does when it is built
    assert len(compat_warnings(caplog)) == 1


def test_robots_middleware_missing_internal_is_a_clear_error_at_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(ScrapyRobotsTxt, "_robots_error")
    monkeypatch.setattr(scrapy, "__version__", "2.21.0")
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True})
    with pytest.raises(compat.ScrapyIncompatible) as exc:
        RobotsTxtMiddleware.from_crawler(crawler)
    assert str(exc.value) == (
        "newscrawl needs RobotsTxtMiddleware._robots_error, which Scrapy 2.21.0 does not have"
        f" (newscrawl is tested with Scrapy {compat.TESTED_SCRAPY})"
    )


def test_engine_missing_remove_request_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = get_crawler()._create_engine()
    monkeypatch.delattr(ExecutionEngine, "_remove_request")
    with pytest.raises(compat.ScrapyIncompatible, match=r"ExecutionEngine\._remove_request,"):
        compat.on_request_done(engine, lambda request: None)


def test_a_worker_is_stalled_by_waiting_items_only_when_nothing_else_can_move() -> None:
    """Scrapy's scraper slot over its size, every response in it held by a waiting item and no
    download running: only then may a waiting article skip its turn (stalled_by_waiting)."""
    from types import SimpleNamespace

    from scrapy import Request
    from scrapy.core.scraper import Slot
    from scrapy.http import HtmlResponse

    from newscrawl._scrapy_compat import stalled_by_waiting

    slot = Slot(max_active_size=5_000)
    big, other = Request("http://a/1"), Request("http://b/1")
    slot.add_response_request(HtmlResponse(big.url, body=b"x" * 6_000), big)
    slot.next_response_request_deferred()  # taken by the scraper: in slot.active
    engine = SimpleNamespace(scraper=SimpleNamespace(slot=slot),
                             downloader=SimpleNamespace(active=set()))
    assert stalled_by_waiting(engine, waiting=1)  # type: ignore[arg-type]
    assert not stalled_by_waiting(engine, waiting=0)  # type: ignore[arg-type]
    engine.downloader.active.add(other)  # a download may bring what the item waits for
    assert not stalled_by_waiting(engine, waiting=1)  # type: ignore[arg-type]
    engine.downloader.active.clear()
    slot.add_response_request(HtmlResponse(other.url, body=b"y"), other)  # not yet scraped
    assert not stalled_by_waiting(engine, waiting=1)  # type: ignore[arg-type]
    slot.next_response_request_deferred()  # scraped, and not a waiting item
    assert not stalled_by_waiting(engine, waiting=1)  # type: ignore[arg-type]
    assert stalled_by_waiting(engine, waiting=2)  # type: ignore[arg-type]
    slot.finish_response(HtmlResponse(big.url, body=b"x" * 6_000), big)  # under the bound
    assert not stalled_by_waiting(engine, waiting=2)  # type: ignore[arg-type]
