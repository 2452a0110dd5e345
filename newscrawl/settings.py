"""Scrapy settings of the newscrawl project (docs/settings.md).

The add-on (:mod:`newscrawl.addon`) brings newscrawl's components and the defaults of its settings
(:mod:`newscrawl.defaults`); a setting given here wins over them. With ``COMMANDS_MODULE`` below,
``scrapy crawl`` exits 3 (Redis stayed away or refused to write), 4 (no source page fetched) or 5
(the article store could not be written) when the crawl failed.
"""

from __future__ import annotations

BOT_NAME = "newscrawl"
# INFO: what a run did (per-site summary, warnings); DEBUG only when asked for (-s LOG_LEVEL=DEBUG).
LOG_LEVEL = "INFO"
SPIDER_MODULES = ["newscrawl.spiders"]
NEWSPIDER_MODULE = "newscrawl.spiders"

# Reliable Redis scheduling, robots.txt and redirect-loop middlewares, near-duplicate and storage
# pipelines, daily index prune, one-line dropped-item log, NEWSCRAWL_* defaults.
ADDONS = {"newscrawl.addon.Newscrawl": 0}
# newscrawl's exit codes for `scrapy crawl` (newscrawl/commands/crawl.py). Scrapy loads commands
# before add-ons: set here.
COMMANDS_MODULE = "newscrawl.commands"

# --- politeness -------------------------------------------------------------------------------
USER_AGENT = "newscrawl/0.1 (+https://github.com/newscrawl/newscrawl)"
ROBOTSTXT_OBEY = True
AUTOTHROTTLE_ENABLED = True
# AutoThrottle's first delay per host (Scrapy's default is 5 s): the second request to a portal,
# the start page after robots.txt, waited 5 s; AutoThrottle adapts the delay from there.
AUTOTHROTTLE_START_DELAY = 1.0
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 4
DOWNLOAD_TIMEOUT = 30
# Scrapy starts this many tasks for each response's output (default 100); a page yields one item
# or a list page's links, and an article waiting for the near-duplicate check's order holds them.
CONCURRENT_ITEMS = 8
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_WARNSIZE = 2 * 1024 * 1024
# A request that failed every retry is logged once, as a WARNING by the spider's errback (with a
# counted reason); Scrapy's own "Gave up retrying" line stays at INFO instead of a second ERROR.
RETRY_GIVE_UP_LOG_LEVEL = "INFO"

# No listening sockets in a worker: Scrapy 2.19 enables both by default.
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False

# NEWSCRAWL_SITES = "sites.toml"  # default: sites.toml in the working dir / next to scrapy.cfg

# `scrapy crawl`: from here on, a SIGTERM/SIGINT before Scrapy's own handlers are installed (and
# after they are gone) is held for the crawl command instead of killing the process half-way
# (newscrawl/_signals.py). Lower-case: not a setting.
from newscrawl._signals import hold_if_crawl as _hold_if_crawl  # noqa: E402

_hold_if_crawl()
