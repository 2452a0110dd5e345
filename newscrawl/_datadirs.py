"""Which data directories each sites file was crawled with, for the embedded Redis.

The default data directory, ``.newscrawl``, is relative to the working directory: a crawl
started elsewhere (a cron line without ``cd``, a shell in another directory) would start a new,
empty crawl and fetch every article again into a second store. Each crawl on the embedded Redis
records its sites file, data directory and working directory in ``data-dirs.json`` of the user's
newscrawl directory (that of the IDF cache: ``$NEWSCRAWL_CACHE_DIR``, else
``$XDG_CACHE_HOME/newscrawl``, else ``~/.cache/newscrawl``); a crawl (or ``newscrawl push``,
``newscrawl dedup``) about to create a new relative data directory, in a working
directory without ``scrapy.cfg``, for a sites file that other data directories hold the crawl
of, is refused with their paths (:func:`check_new_data_dir`). Losing the file loses only that
check. docs/operations.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from newscrawl.defaults import EMBEDDED_AOF_NAME, EMBEDDED_DB_NAME

logger = logging.getLogger(__name__)

REGISTRY_NAME = "data-dirs.json"
#: the sites files kept, the most recently used
MAX_ENTRIES = 500
#: what a data directory holds once the embedded Redis ran in it: its snapshot (written at a
#: clean stop) or its append-only file (from the first write on)
_REDIS_FILES = (EMBEDDED_DB_NAME, EMBEDDED_AOF_NAME)


def _registry() -> Path | None:
    from newscrawl.simhash.idf import default_cache_dir

    where = default_cache_dir()
    if where is None or not where.is_absolute():
        return None
    return where / REGISTRY_NAME


def _key(sites_path: Path) -> str:
    # its directory resolved (a symlinked directory is one place), the file's name as written
    # (two directories linking one shared sites file are two crawls)
    absolute = Path(os.path.abspath(sites_path))
    return str(absolute.parent.resolve() / absolute.name)


def holds_redis(data_dir: Path) -> bool:
    return any((data_dir / name).exists() for name in _REDIS_FILES)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _dirs(entry: Any) -> dict[str, dict[str, Any]]:
    """An entry's data directories: path -> {"cwd", "used", "runs"}."""
    dirs = entry.get("dirs") if isinstance(entry, dict) else None
    return {str(k): v for k, v in dirs.items() if isinstance(v, dict)} \
        if isinstance(dirs, dict) else {}


def recorded_data_dirs(sites_path: Path) -> list[tuple[Path, Path | None]]:
    """(data directory, the working directory it is relative to, None when it was given as an
    absolute path) of the crawls of ``sites_path`` that still hold a Redis, the most used
    first."""
    registry = _registry()
    if registry is None:
        return []
    dirs = _dirs(_read(registry).get(_key(sites_path)))
    ranked = sorted(dirs.items(), key=lambda item: (_int(item[1].get("runs")),
                                                    _int(item[1].get("used"))), reverse=True)
    return [(Path(where), Path(str(info["cwd"])) if info.get("cwd") else None)
            for where, info in ranked if holds_redis(Path(where))]


def known_data_dirs(limit: int = 3) -> list[Path]:
    """The data directories recorded for any sites file that still hold a Redis, the most
    recently used first."""
    registry = _registry()
    if registry is None:
        return []
    found: dict[str, int] = {}
    for entry in _read(registry).values():
        for where, info in _dirs(entry).items():
            found[where] = max(found.get(where, 0), _int(info.get("used")))
    ranked = sorted(found, key=lambda where: found[where], reverse=True)
    return [Path(where) for where in ranked if holds_redis(Path(where))][:limit]


def data_dirs_besides(data_dir: Path) -> list[Path] | None:
    """The data directories recorded for any sites file that still hold a Redis, ``data_dir``
    aside; None when there is no record to look in (no home directory, say)."""
    if _registry() is None:
        return None
    return [path for path in known_data_dirs() if path != data_dir]


@contextlib.contextmanager
def _locked(registry: Path) -> Iterator[None]:
    registry.parent.mkdir(parents=True, exist_ok=True)
    with open(registry.with_name(registry.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def record_data_dir(sites_path: Path, data_dir: Path) -> None:
    """Record that the crawl of ``sites_path`` uses ``data_dir`` from this working directory
    (best effort: a home directory that cannot be written only loses the check)."""
    registry = _registry()
    if registry is None:
        return
    try:
        with _locked(registry):
            entries = _read(registry)
            key = _key(sites_path)
            where = str(data_dir.resolve())
            dirs = _dirs(entries.get(key))
            runs = _int(dirs.get(where, {}).get("runs")) + 1
            # where to run it: only a data directory named relative to it depends on that
            cwd = dirs.get(where, {}).get("cwd") if data_dir.is_absolute() else os.getcwd()
            dirs[where] = {"cwd": cwd, "used": int(time.time()), "runs": runs}
            # the data directories deleted since (a test's, a demo's) go
            dirs = {path: info for path, info in dirs.items()
                    if path == where or Path(path).exists()}
            entries[key] = {"dirs": dirs, "used": int(time.time())}
            kept = sorted(entries.items(), key=lambda item: _int(item[1].get("used"))
                          if isinstance(item[1], dict) else 0)[-MAX_ENTRIES:]
            fd, tmp = tempfile.mkstemp(dir=registry.parent, prefix=".data-dirs-")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(dict(kept), out, ensure_ascii=False, indent=1)
            os.chmod(tmp, 0o644)  # as the IDF cache beside it, which users may share
            os.replace(tmp, registry)
    except OSError as exc:
        logger.debug("Cannot record the data directory in %s: %s", registry, exc)


def other_data_dirs(sites_path: Path, data_dir: Path) -> list[Path]:
    """The data directories the crawl of ``sites_path`` used before, when ``data_dir`` (one that
    exists) is not among them: the crawl of one project run with another's data."""
    if not data_dir.exists():
        return []
    where = data_dir.resolve()
    known = [path for path, _ in recorded_data_dirs(sites_path)]
    return [] if where in known else known


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _new_here(data_dir: Path) -> Path | None:
    """The new directory ``data_dir`` would make, when it is relative to the working directory
    and neither that nor the directory's parent a project's (with a ``scrapy.cfg``)."""
    if data_dir.is_absolute() or data_dir.exists():
        return None
    where = data_dir.resolve()
    if (Path.cwd() / "scrapy.cfg").exists() or (where.parent / "scrapy.cfg").exists():
        return None  # run in a project directory, or a data directory beside one
    return where


def check_new_data_dir_for_a_command(data_dir: Path, *, what: str) -> None:
    """Raise ValueError when a command with no sites file to go by would make a new relative
    data directory while the crawls of this user keep theirs elsewhere (a directory made here
    would exempt a crawl started here by mistake from :func:`check_new_data_dir`)."""
    where = _new_here(data_dir)
    known = [str(path) for path in data_dirs_besides(where) or []] if where else []
    if where is None or not known:
        return
    raise ValueError(
        f"{what} would start a new, empty data directory {where} (NEWSCRAWL_DATA_DIR"
        f" {str(data_dir)!r} is relative to the working directory, {Path.cwd()}), while the"
        f" crawls run on this machine keep their data in {', '.join(known)}: run it there, pass"
        f" --data-dir, or set NEWSCRAWL_DATA_DIR={where} to start a new one here")


def check_new_data_dir(sites_path: Path, data_dir: Path, *, what: str = "this crawl") -> None:
    """Raise ValueError when ``data_dir`` (the embedded Redis's) would be a new directory made
    relative to the working directory (:func:`_new_here`) while other data directories hold the
    crawl of ``sites_path``."""
    where = _new_here(data_dir)
    if where is None:
        return
    cwd = Path.cwd()
    known = [(path, used_from) for path, used_from in recorded_data_dirs(sites_path)
             if path != where]
    if not known:
        return
    (main, main_cwd), others = known[0], [str(path) for path, _ in known[1:]]
    also = f" (also in {', '.join(others)})" if others else ""
    run_there = f"Run it in {main_cwd}, or set" if main_cwd not in (None, cwd) else "Set"
    raise ValueError(
        f"the crawl of {_key(sites_path)} keeps its data in {main}{also}, and {what} would"
        f" start a new, empty data directory {where} (NEWSCRAWL_DATA_DIR {str(data_dir)!r} is"
        f" relative to the working directory, {cwd}) and fetch every article again into a"
        f" second store. {run_there} NEWSCRAWL_DATA_DIR={main}; to start a new crawl here on"
        f" purpose, set NEWSCRAWL_DATA_DIR={where}")
