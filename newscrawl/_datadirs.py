"""Which data directory each sites file was crawled with, for the embedded Redis.

The default data directory, ``.newscrawl``, is relative to the working directory: a crawl
started elsewhere (a cron line without ``cd``, a shell in another directory) would start a new,
empty crawl and fetch every article again into a second store. Each crawl on the embedded Redis
records its sites file and data directory in ``data-dirs.json`` of the user's newscrawl
directory (``$NEWSCRAWL_CACHE_DIR``, else ``~/.cache/newscrawl``, as the IDF cache); a crawl
about to create a new relative data directory, in a directory without ``scrapy.cfg``, for a
sites file that another data directory holds the crawl of, is refused with both paths
(:func:`check_new_data_dir`). Losing the file loses only that check. docs/operations.md.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path

logger = logging.getLogger(__name__)

REGISTRY_NAME = "data-dirs.json"
#: the entries kept, the most recently used
MAX_ENTRIES = 500
#: what a data directory the crawl has used holds
_DB_NAME = "redis.db"


def _registry() -> Path | None:
    from newscrawl.simhash.idf import default_cache_dir

    where = default_cache_dir()
    return None if where is None else where / REGISTRY_NAME


def _read(path: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, dict)} \
        if isinstance(data, dict) else {}


def recorded_data_dir(sites_path: Path) -> Path | None:
    """The data directory the crawl of ``sites_path`` last used, if it still holds a Redis."""
    registry = _registry()
    if registry is None:
        return None
    entry = _read(registry).get(str(sites_path.resolve()))
    where = entry.get("data_dir") if entry else None
    if not isinstance(where, str) or not (Path(where) / _DB_NAME).exists():
        return None
    return Path(where)


def known_data_dirs(limit: int = 3) -> list[Path]:
    """The data directories recorded, the most recently used first, that still hold a Redis."""
    registry = _registry()
    if registry is None:
        return []
    entries = sorted(_read(registry).values(), key=_used, reverse=True)
    found: list[Path] = []
    for entry in entries:
        where = entry.get("data_dir")
        if isinstance(where, str) and (Path(where) / _DB_NAME).exists() \
                and Path(where) not in found:
            found.append(Path(where))
    return found[:limit]


def record_data_dir(sites_path: Path, data_dir: Path) -> None:
    """Record that the crawl of ``sites_path`` uses ``data_dir`` (best effort: a home directory
    that cannot be written only loses the check)."""
    registry = _registry()
    if registry is None:
        return
    try:
        # the entries of data directories deleted since (a test's, a demo's) go
        entries = {name: entry for name, entry in _read(registry).items()
                   if isinstance(entry.get("data_dir"), str)
                   and Path(str(entry["data_dir"])).exists()}
        entries[str(sites_path.resolve())] = {"data_dir": str(data_dir.resolve()),
                                              "used": int(time.time())}
        kept = sorted(entries.items(), key=lambda item: _used(item[1]))[-MAX_ENTRIES:]
        registry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=registry.parent, prefix=".data-dirs-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(dict(kept), out, ensure_ascii=False, indent=1)
        os.replace(tmp, registry)
    except OSError as exc:
        logger.debug("Cannot record the data directory in %s: %s", registry, exc)


def _used(entry: dict[str, object]) -> int:
    used = entry.get("used")
    return used if isinstance(used, int) else 0


def check_new_data_dir(sites_path: Path, data_dir: Path) -> None:
    """Raise ValueError when ``data_dir`` (the embedded Redis's) would be a new directory made
    relative to the working directory, here without a ``scrapy.cfg``, while another data
    directory holds the crawl of ``sites_path``."""
    if data_dir.is_absolute() or data_dir.exists():
        return
    where = data_dir.resolve()
    if (where.parent / "scrapy.cfg").exists():
        return  # a project directory: its own crawl
    known = recorded_data_dir(sites_path)
    if known is None or known == where:
        return
    raise ValueError(
        f"the crawl of {sites_path.resolve()} keeps its data in {known}, and this crawl would"
        f" start a new, empty data directory {where} (NEWSCRAWL_DATA_DIR {str(data_dir)!r} is"
        f" relative to the working directory, {where.parent}) and fetch every article again"
        f" into a second store. Run it in {known.parent}, or set NEWSCRAWL_DATA_DIR={known};"
        f" to start a new crawl here on purpose, set NEWSCRAWL_DATA_DIR={where}")
