"""Stopping on a fault (newscrawl/scheduling/stopping.py): a guarded entry point hands a Redis
failure to the one FaultStop and answers its fallback from then on."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from scrapy.utils.test import get_crawler

from newscrawl.connection import RedisUnavailable
from newscrawl.exitcodes import ExitCode, exit_code
from newscrawl.scheduling.stopping import REASON_SYSTEM_FAULT, FaultStop, guarded, returns


class Worker:
    def __init__(self, faults: FaultStop) -> None:
        self.faults = faults
        self.calls = 0
        self.fail = False

    @guarded(returns("fallback"))
    def work(self, value: str) -> str:
        self.calls += 1
        if self.fail:
            raise RedisUnavailable("dequeue", 3.0, ConnectionError("refused"))
        return value


def _faults() -> FaultStop:
    crawler = get_crawler()
    crawler.engine = SimpleNamespace(spider=None)  # type: ignore[assignment]  # nothing to close
    return FaultStop(crawler, 3)


def test_a_redis_failure_stops_the_crawl_once_and_later_calls_do_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    faults = _faults()
    worker = Worker(faults)
    assert worker.work("a") == "a"
    worker.fail = True
    assert worker.work("b") == "fallback"
    assert faults.stopped and faults.redis_gone
    assert exit_code(faults.crawler) == ExitCode.REDIS_UNAVAILABLE
    worker.fail = False
    assert worker.work("c") == "fallback"  # stopped: not run
    assert worker.calls == 2
    criticals = [r for r in caplog.records if r.levelname == "CRITICAL"]
    assert len(criticals) == 1 and "Redis is unreachable" in criticals[0].getMessage()
    stats = faults.crawler.stats
    assert stats is not None and stats.get_value("newscrawl/scheduler/redis_unavailable") == 1


class Buggy(Worker):
    @guarded(returns(None))
    def work(self, value: str) -> str:
        raise ZeroDivisionError(value)


def test_other_errors_are_not_faults() -> None:
    faults = _faults()
    assert not faults.stop(ValueError("a bug"))
    with pytest.raises(ZeroDivisionError):
        Buggy(faults).work("x")  # raised as without the guard
    assert not faults.stopped


def test_a_storage_fault_closes_as_a_system_fault() -> None:
    faults = _faults()
    assert faults.stop(OSError(28, "No space left on device", "/data/x.jsonl"))
    assert faults.close_reason == REASON_SYSTEM_FAULT and not faults.redis_gone
    assert exit_code(faults.crawler) != 0
