"""Reliable, incremental scheduling in Redis (docs/design/scheduling.md): the Scrapy scheduler,
its leased priority queue, the dupefilter's done/pending records, the run marker shared by the
workers of a run and the list-page walks; their Lua in ``lua/``."""

from __future__ import annotations

from newscrawl.scheduling.dupefilter import RedisDupeFilter
from newscrawl.scheduling.lists import ListWalks
from newscrawl.scheduling.queue import LeasedPriorityQueue
from newscrawl.scheduling.run import RunMarker
from newscrawl.scheduling.scheduler import Scheduler

__all__ = ["LeasedPriorityQueue", "ListWalks", "RedisDupeFilter", "RunMarker", "Scheduler"]
