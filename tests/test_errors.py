"""newscrawl's errors share one base carrying cause, advice and exit code; a system fault is told
by its type, never by its message; what a crawl records lives in its CrawlContext."""

from __future__ import annotations

import errno
import functools
import importlib
import inspect
import pkgutil

import pytest
import redis
import scrapy
from scrapy.exceptions import DropItem, IgnoreRequest
from scrapy.utils.test import get_crawler

import newscrawl
from newscrawl.connection import RedisRefused, RedisUnavailable
from newscrawl.errors import ConfigError, ExitCode, NewscrawlError, SystemFaultError
from newscrawl.exitcodes import exit_code, exit_reason, set_exit_code
from newscrawl.faults import RunRefused, system_fault
from newscrawl.index import IncompatibleIndexError
from newscrawl.scheduling.run import current_run, set_current_run
from newscrawl.storage import StoreWriteError


@functools.cache
def newscrawl_exceptions() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(newscrawl.__path__, "newscrawl."):
        if info.name.endswith("__main__") or info.name == "newscrawl.settings":
            continue  # running them has effects (a command, held signals); they define none
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) \
                    and obj.__module__ == module.__name__ and not name.startswith("_"):
                found.append(obj)
    return found


def test_every_public_exception_of_newscrawl_derives_from_the_base() -> None:
    classes = newscrawl_exceptions()
    assert len(classes) >= 18, [c.__name__ for c in classes]
    # Scrapy's outcomes of a request or an item (IgnoreRequest, DropItem) are not errors
    assert [c.__qualname__ for c in classes
            if not issubclass(c, NewscrawlError | IgnoreRequest | DropItem)] == []


def test_config_errors_stay_value_errors() -> None:
    # callers (the crawl command, the sites file check) catch ValueError
    assert issubclass(ConfigError, ValueError)
    for cls in newscrawl_exceptions():
        if cls.__name__ in ("SitesError", "UrlPatternError", "IdfFormatError", "PairFormatError"):
            assert issubclass(cls, ConfigError), cls


def test_the_message_is_cause_and_advice_unless_given() -> None:
    exc = NewscrawlError("the disk is full", "free space")
    assert (str(exc), exc.cause, exc.advice, exc.exit_code) == (
        "the disk is full. Free space", "the disk is full", "free space", ExitCode.ERROR)
    assert str(NewscrawlError("alone")) == "alone"
    assert str(NewscrawlError("a", "b", message="a; b")) == "a; b"


def test_system_faults_carry_their_line_and_exit_code() -> None:
    refused = RunRefused("r. 1; x", [{"host": "h", "pid": 7}])
    fault = system_fault(refused)
    assert fault is not None and fault.exit_code == ExitCode.ERROR and fault.kind == "run"
    # a cause holding "; " or ". " is not cut there: nothing is parsed from the message
    assert fault.error == "crawl run r. 1; x is live with another sites file (its workers: h:7)"
    assert fault.line() == (
        "crawl run r. 1; x is live with another sites file (its workers: h:7). Wait for it to"
        " finish, or stop its workers (SIGTERM/Ctrl-C): the next crawl then takes the run over"
        " with this sites file")
    assert str(refused).startswith("crawl run r. 1; x is live with another sites file (its"
                                   " workers: h:7); wait for it")

    index = IncompatibleIndexError("v1. a", "v2")
    fault = system_fault(index)
    assert fault is not None and (fault.kind, fault.exit_code) == ("index", ExitCode.ERROR)
    assert fault.line() == str(index)
    assert fault.advice.startswith("Use another NEWSCRAWL_REDIS_PREFIX")

    store = StoreWriteError("/data/articles/2024-01-01.jsonl",
                            OSError(errno.ENOSPC, "No space left on device"))
    fault = system_fault(store)
    assert fault is not None and (fault.kind, fault.exit_code) == ("storage",
                                                                   ExitCode.STORAGE_FAILED)
    assert fault.error == ("cannot write the article store (/data/articles/2024-01-01.jsonl):"
                           " No space left on device")
    assert isinstance(store, OSError) and store.errno == errno.ENOSPC

    oom = RedisRefused("ack", redis.ResponseError("OOM command not allowed"), "raise maxmemory")
    fault = system_fault(oom)
    assert fault is not None and fault.line() == (
        "Redis refused ack: OOM command not allowed. Raise maxmemory")
    assert fault.exit_code == ExitCode.REDIS_UNAVAILABLE and oom.what == "ack"

    gone = RedisUnavailable("pop", 60, ConnectionError("refused"))
    fault = system_fault(gone)
    assert fault is not None and fault.error == str(gone) and fault.kind == "redis"


def test_faults_of_other_code_are_classified_by_type() -> None:
    fault = system_fault(OSError(errno.EROFS, "Read-only file system", "/x"))
    assert fault is not None and fault.exit_code == ExitCode.STORAGE_FAILED
    fault = system_fault(redis.ResponseError("MISCONF Redis is configured to save RDB"))
    assert fault is not None and fault.kind == "redis"
    for site_fault in (ValueError("bad page"), OSError(errno.ENOENT, "gone"),
                       NewscrawlError("a. b; c"), ConfigError("x")):
        assert system_fault(site_fault) is None
    assert isinstance(RedisUnavailable("x", 1, None), SystemFaultError)


def test_the_crawl_s_exit_code_and_run_live_in_its_context() -> None:
    crawler = get_crawler(scrapy.Spider)
    before = set(vars(crawler))
    assert exit_code(crawler) == 0 and exit_reason(crawler) == "" and current_run(crawler) is None
    set_exit_code(crawler, ExitCode.STORAGE_FAILED, "disk full")
    set_exit_code(crawler, ExitCode.NO_SOURCES)  # the first one wins
    set_current_run(crawler, "run-1")
    assert (exit_code(crawler), exit_reason(crawler), current_run(crawler)) == (
        5, "disk full", "run-1")
    assert set(vars(crawler)) - before == {"_newscrawl_context"}

    other = get_crawler(scrapy.Spider)
    set_exit_code(other, ExitCode.NO_SOURCES)
    assert exit_reason(other) == ("no start, list, sitemap or feed page of any site could be"
                                  " fetched and read")


@pytest.mark.parametrize("code", [ExitCode.REDIS_UNAVAILABLE, ExitCode.STORAGE_FAILED])
def test_exit_codes_keep_their_numbers(code: ExitCode) -> None:
    assert {ExitCode.REDIS_UNAVAILABLE: 3, ExitCode.STORAGE_FAILED: 5}[code] == int(code)
