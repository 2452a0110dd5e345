"""Scrapy settings for newscrawl.

Every ``NEWSCRAWL_*`` setting is documented in docs/settings.md. Settings that belong to
scrapy-redis (``REDIS_URL``, ``SCHEDULER_PERSIST``) keep their names.
"""

from __future__ import annotations

BOT_NAME = "newscrawl"
# INFO: what a run did (per-site summary, warnings); DEBUG only when asked for (-s LOG_LEVEL=DEBUG).
LOG_LEVEL = "INFO"
# A dropped item on one line (URL and reason), not followed by the whole article.
LOG_FORMATTER = "newscrawl.logformatter.LogFormatter"
SPIDER_MODULES = ["newscrawl.spiders"]
NEWSPIDER_MODULE = "newscrawl.spiders"

# --- scheduling through Redis (scrapy-redis base classes, owned subclasses) ----------------------
SCHEDULER = "newscrawl.scheduling.scheduler.Scheduler"
DUPEFILTER_CLASS = "newscrawl.scheduling.dupefilter.RedisDupeFilter"
SCHEDULER_QUEUE_CLASS = "newscrawl.scheduling.queue.LeasedPriorityQueue"
SCHEDULER_PERSIST = True
# `scrapy crawl` exits non-zero when Redis stayed away (newscrawl/scheduling/commands/crawl.py).
COMMANDS_MODULE = "newscrawl.scheduling.commands"
NEWSCRAWL_LEASE_SECONDS = 120  # in-flight lease; expired leases (dead workers) are requeued
NEWSCRAWL_MAX_ATTEMPTS = 3  # failed downloads of an article before giving up on it
NEWSCRAWL_REDIS_RETRY_SECONDS = 60  # retry Redis this long, then stop with exit code 3
NEWSCRAWL_URL_RETENTION_DAYS = 365  # done-URL records older than this are pruned
NEWSCRAWL_RUN_TTL = 900  # run marker TTL (refreshed while the run's first worker lives)
NEWSCRAWL_IDLE_EXIT_SECONDS = 10  # exit 0 after the queue is empty and nothing in flight this long

# --- politeness -------------------------------------------------------------------------------
USER_AGENT = "newscrawl/0.1 (+https://github.com/newscrawl/newscrawl)"
ROBOTSTXT_OBEY = True
AUTOTHROTTLE_ENABLED = True
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 4
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_WARNSIZE = 2 * 1024 * 1024
# A request that failed every retry is logged once, as a WARNING by the spider's errback (with a
# counted reason); Scrapy's own "Gave up retrying" line stays at INFO instead of a second ERROR.
RETRY_GIVE_UP_LOG_LEVEL = "INFO"

# No listening sockets in a worker: Scrapy 2.19 enables both by default.
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False

# --- portal crawl: sites, robots.txt, pipelines, storage (docs/design/architecture.md) -------
# NEWSCRAWL_SITES = "sites.toml"  # default: sites.toml in the working dir / next to scrapy.cfg
DOWNLOADER_MIDDLEWARES = {
    # robots.txt also for the first concurrent requests to a host (newscrawl/middlewares/robots.py)
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "newscrawl.middlewares.robots.RobotsTxtMiddleware": 100,
    # a redirect loop becomes a counted failure instead of a silently filtered request
    "newscrawl.middlewares.redirects.RedirectLoopMiddleware": 610,
}
ITEM_PIPELINES = {
    "newscrawl.pipelines.dedup.NearDuplicatePipeline": 300,
    "newscrawl.pipelines.store.StorePipeline": 800,
}
NEWSCRAWL_DEDUP_ENABLED = True
NEWSCRAWL_MAX_DISTANCE = 3
NEWSCRAWL_IDF_FILE = None
NEWSCRAWL_FINGERPRINT_RETENTION_DAYS = 365  # 0 or None: fingerprints are compared forever
NEWSCRAWL_FINGERPRINT_WORKERS = 1  # fingerprint in N worker processes (0: in the crawl process)
# expired fingerprints are pruned from the index once a day, by the worker that claims the day
EXTENSIONS = {"newscrawl.extensions.index_prune.IndexPruneExtension": 500}
NEWSCRAWL_STORE = True
NEWSCRAWL_STORE_DIR = None  # default: <NEWSCRAWL_DATA_DIR>/articles
