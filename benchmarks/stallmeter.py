"""A Scrapy extension for benchmarks: the longest time the reactor did not run a 20 ms timer.

Enabled with ``-s 'EXTENSIONS={"stallmeter.StallMeter": 0}'`` and this directory on PYTHONPATH;
the figure is the stat ``bench/reactor_stall_max_ms`` (and ``bench/reactor_stall_over_1s``, the
number of stalls longer than a second).
"""

from __future__ import annotations

import time
from typing import Any

from scrapy import signals
from twisted.internet.task import LoopingCall

INTERVAL = 0.02


class StallMeter:
    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self.last: float | None = None
        self.worst = 0.0
        self.long = 0
        self.loop = LoopingCall(self.tick)

    @classmethod
    def from_crawler(cls, crawler: Any) -> StallMeter:
        meter = cls(crawler)
        crawler.signals.connect(meter.opened, signals.spider_opened)
        crawler.signals.connect(meter.closed, signals.spider_closed)
        return meter

    def opened(self, spider: Any) -> None:
        self.loop.start(INTERVAL, now=True)

    def tick(self) -> None:
        now = time.monotonic()
        if self.last is not None:
            stall = now - self.last - INTERVAL
            self.worst = max(self.worst, stall)
            self.long += stall > 1
        self.last = now

    def closed(self, spider: Any) -> None:
        self.tick()
        if self.loop.running:
            self.loop.stop()
        self.crawler.stats.set_value("bench/reactor_stall_max_ms", round(self.worst * 1000))
        self.crawler.stats.set_value("bench/reactor_stall_over_1s", self.long)
