"""Scrapy settings for newscrawl.

Every ``NEWSCRAWL_*`` setting is documented in README.md ("Settings"). Settings that belong to
scrapy-redis (``REDIS_URL``, ``SCHEDULER_PERSIST``) keep their names.
"""

from __future__ import annotations

BOT_NAME = "newscrawl"
SPIDER_MODULES = ["newscrawl.spiders"]
NEWSPIDER_MODULE = "newscrawl.spiders"

# --- scheduling through Redis (scrapy-redis base classes, owned subclasses) ----------------------
SCHEDULER = "newscrawl.scheduling.scheduler.Scheduler"
DUPEFILTER_CLASS = "newscrawl.scheduling.dupefilter.RedisDupeFilter"
SCHEDULER_QUEUE_CLASS = "newscrawl.scheduling.queue.LeasedPriorityQueue"
SCHEDULER_PERSIST = True

# --- politeness -------------------------------------------------------------------------------
USER_AGENT = "newscrawl/0.1 (+https://github.com/newscrawl/newscrawl)"
ROBOTSTXT_OBEY = True
AUTOTHROTTLE_ENABLED = True
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 4
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_WARNSIZE = 2 * 1024 * 1024

# No listening sockets in a worker: Scrapy 2.19 enables both by default.
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
