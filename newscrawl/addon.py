"""newscrawl as a Scrapy add-on: ``ADDONS = {"newscrawl.addon.Newscrawl": 0}`` (docs/addon.md).

It sets newscrawl's scheduler, middlewares, pipelines and extensions and the defaults of the
settings registry (:mod:`newscrawl.defaults`), at the ``"addon"`` priority: a project's settings
win. ``scrapy crawl`` exits with newscrawl's codes (3: Redis stayed away or refused to write, 4: no
source page fetched, 5: the article store could not be written) only with ``COMMANDS_MODULE =
"newscrawl.commands"`` in the project's settings: Scrapy loads commands before add-ons.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.utils.misc import load_object

from newscrawl import defaults
from newscrawl._scrapy_compat import check_scrapy_version

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: Settings priority of everything the add-on sets (Scrapy's ``SETTINGS_PRIORITIES["addon"]``).
PRIORITY = "addon"

#: Settings set when nothing of higher priority set them.
SETTINGS: dict[str, Any] = {
    # scheduling through Redis (scrapy-redis base classes, owned subclasses)
    "SCHEDULER": "newscrawl.scheduling.scheduler.Scheduler",
    "DUPEFILTER_CLASS": "newscrawl.scheduling.dupefilter.RedisDupeFilter",
    "SCHEDULER_QUEUE_CLASS": "newscrawl.scheduling.queue.LeasedPriorityQueue",
    # each download slot held to CONCURRENT_REQUESTS_PER_DOMAIN/_PER_IP, which Scrapy 2.19's own
    # downloader exceeds under the asyncio reactor (newscrawl/_scrapy_compat.py)
    "DOWNLOADER": "newscrawl._scrapy_compat.Downloader",
    # a dropped item on one line (URL and reason), not followed by the whole article
    "LOG_FORMATTER": "newscrawl.logformatter.LogFormatter",
    # the defaults of the settings registry that the add-on sets
    **defaults.SETTINGS,
}

#: (priority dictionary setting, component, order); None switches a component off.
COMPONENTS: tuple[tuple[str, str, int | None], ...] = (
    # robots.txt also for the first concurrent requests to a host (newscrawl/middlewares/robots.py)
    ("DOWNLOADER_MIDDLEWARES", "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware", None),
    ("DOWNLOADER_MIDDLEWARES", "newscrawl.middlewares.robots.RobotsTxtMiddleware", 100),
    # a redirect loop becomes a counted failure instead of a silently filtered request
    ("DOWNLOADER_MIDDLEWARES", "newscrawl.middlewares.redirects.RedirectLoopMiddleware", 610),
    # a system fault (Redis refusing a command, the store not writable) raised in a callback or
    # a middleware stops the crawl as in the pipelines (newscrawl/middlewares/faults.py)
    ("SPIDER_MIDDLEWARES", "newscrawl.middlewares.faults.SystemFaultSpiderMiddleware", 1000),
    ("DOWNLOADER_MIDDLEWARES", "newscrawl.middlewares.faults.SystemFaultDownloaderMiddleware",
     1000),
    # an article is stored only once its fingerprint is in the index
    ("ITEM_PIPELINES", "newscrawl.pipelines.near_duplicates.NearDuplicatePipeline", 300),
    ("ITEM_PIPELINES", "newscrawl.pipelines.store.StorePipeline", 800),
    # AutoThrottle's delay per host shared by all workers while the scheduler grants the turns
    # (newscrawl/extensions/throttle.py); Scrapy's AutoThrottle where it does not
    ("EXTENSIONS", "scrapy.extensions.throttle.AutoThrottle", None),
    ("EXTENSIONS", "newscrawl.extensions.throttle.AutoThrottle", 0),
    # expired fingerprints and old near-duplicate records are pruned once a day, by the worker
    # that claims the day
    ("EXTENSIONS", "newscrawl.extensions.index_prune.IndexPruneExtension", 500),
)


class Newscrawl:
    """The Scrapy add-on (see the module docstring)."""

    def update_settings(self, settings: BaseSettings) -> None:
        check_scrapy_version()
        for name, value in SETTINGS.items():
            settings.set(name, value, priority=PRIORITY)
        for name, path, order in COMPONENTS:
            # kept as the project set it when named there (by path or class), even as None
            settings.setdefault_in_component_priority_dict(name, load_object(path), order)
