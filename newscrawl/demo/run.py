"""Serve the sample portal, run the real ``scrapy crawl portal`` on it in a subprocess, report what
it stored and dropped; the data directory remembers the port so a second run is incremental.
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from newscrawl.demo.portal import HOST, PortalServer, SamplePortal, sites_toml
from newscrawl.errors import NewscrawlError
from newscrawl.exitcodes import ExitCode

STATE_FILE = "demo.json"
SITES_FILE = "demo-sites.toml"
LOG_FILE = "demo-crawl.log"
#: the crawl of the sample portal takes seconds; past this it is stopped
CRAWL_TIMEOUT = 300.0
#: settings of the demo's crawl: fast and in a fixed order (one request at a time, so the
#: originals are always met before their reprints), without the 10 s wait for other workers
CRAWL_SETTINGS = (
    "AUTOTHROTTLE_ENABLED=False",
    "CONCURRENT_REQUESTS=1",
    "NEWSCRAWL_IDLE_EXIT_SECONDS=0.5",
    "NEWSCRAWL_FINGERPRINT_WORKERS=0",
    "LOG_LEVEL=INFO",
)


class DemoError(NewscrawlError):
    """Why the demo cannot run (reported as ``newscrawl: error: ...``, exit 1)."""


# --- the data directory --------------------------------------------------------------------------
def _prepare(data_dir: str | None) -> tuple[Path, dict[str, Any]]:
    if data_dir is None:
        return Path(tempfile.mkdtemp(prefix="newscrawl-demo-")), {}
    directory = Path(data_dir).resolve()
    state_path = directory / STATE_FILE
    if state_path.is_file():
        try:
            state = json.loads(state_path.read_text(encoding="utf-8"))
            int(state["port"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DemoError(f"{state_path}: not a demo state file ({exc})") from None
        return directory, state
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        # never mix the demo into a real crawl's data (or any other files)
        raise DemoError(
            f"{directory} is not empty and holds no demo: give a new or empty directory"
        )
    directory.mkdir(parents=True, exist_ok=True)
    return directory, {}


def _serve(portal: SamplePortal, port: int, remembered: bool, directory: Path) -> PortalServer:
    try:
        return PortalServer(portal, port).start()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            why = (
                f"the first demo run in {directory} served on it, and the article URLs it "
                "stored contain the port: the incremental run needs the same one. Free the "
                "port, or run the demo on a new --data-dir"
                if remembered
                else "choose another --port, or leave --port out for a free one"
            )
            raise DemoError(f"port {port} on {HOST} is in use: {why}") from None
        raise DemoError(f"cannot serve the sample portal on {HOST}:{port}: {exc}") from None


# --- the crawl ---------------------------------------------------------------------------------
def crawl_command(sites: Path, log: Path) -> list[str]:
    # -a _demo: not recorded among this user's crawls (newscrawl/_datadirs.py): its temporary
    # directory is no crawl a later one could have meant
    cmd = [sys.executable, "-m", "scrapy", "crawl", "portal", "-a", "_demo=1",
           "-s", f"NEWSCRAWL_SITES={sites}"]
    for setting in (*CRAWL_SETTINGS, f"LOG_FILE={log}"):
        cmd += ["-s", setting]
    return cmd


def crawl_env(directory: Path) -> dict[str, str]:
    env = dict(os.environ)
    # the demo's own embedded Redis, never the Redis of a real crawl
    for name in ("REDIS_URL", "NEWSCRAWL_REDIS_PREFIX", "SCRAPY_PROJECT"):
        env.pop(name, None)
    package_root = str(Path(__file__).resolve().parent.parent.parent)
    env.update(
        {
            "SCRAPY_SETTINGS_MODULE": "newscrawl.settings",
            "NEWSCRAWL_DATA_DIR": str(directory),
            "PYTHONPATH": os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p),
        }
    )
    return env


def _stop(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Stop the crawl like Ctrl-C does (it shuts down cleanly and stops its Redis); kill its
    process group if it does not finish in ``timeout`` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the crawl and anything it started
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()


def run_crawl(directory: Path, sites: Path, log: Path) -> int:
    """``scrapy crawl portal`` to its end; its exit code."""
    proc = subprocess.Popen(
        crawl_command(sites, log),
        cwd=directory,
        env=crawl_env(directory),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # Ctrl-C reaches the demo, which stops the crawl itself
    )
    try:
        _, err = proc.communicate(timeout=CRAWL_TIMEOUT)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise DemoError(f"the crawl did not finish in {CRAWL_TIMEOUT:.0f} s (log: {log})") from None
    except BaseException:  # Ctrl-C or an error here: the crawl must not outlive the demo
        _stop(proc)
        raise
    if err.strip():
        with open(log, "ab") as fh:  # what did not go to the log file (a startup error)
            fh.write(err)
    return int(proc.returncode)


_STAT = re.compile(r"'([a-z_/]+)': (\d+),?\n")


def crawl_stats(log: Path) -> dict[str, int]:
    """The integer stats of the last run logged in ``log`` ("Dumping Scrapy stats")."""
    text = log.read_text(encoding="utf-8", errors="replace")
    start = text.rfind("Dumping Scrapy stats:")
    if start < 0:
        return {}
    end = text.find("}", start)
    return {k: int(v) for k, v in _STAT.findall(text[start : end + 1])}


def stored_articles(directory: Path) -> list[dict[str, Any]]:
    from newscrawl.storage import iter_articles

    return list(iter_articles(directory / "articles"))


def duplicate_records(directory: Path) -> list[Any]:
    """The recorded near-duplicates, newest first, from the demo's embedded Redis (started for
    this and stopped again; a server the crawl left behind is stopped too)."""
    from newscrawl.connection import close_embedded, open_embedded
    from newscrawl.index import DuplicateLog

    client = open_embedded(directory)
    try:
        return list(reversed(DuplicateLog(client).list()))
    finally:
        close_embedded(client)


def stop_leftover_redis(directory: Path) -> None:
    """Stop the embedded Redis of ``directory`` if a killed crawl left it running."""
    from newscrawl.connection import EMBEDDED_REGISTRY_NAME, close_embedded, open_embedded

    if not (directory / EMBEDDED_REGISTRY_NAME).exists():
        return  # no server registered: nothing runs
    try:
        close_embedded(open_embedded(directory))
    except Exception as exc:  # noqa: BLE001 - reported, the demo's own outcome stands
        print(f"newscrawl: warning: could not stop the embedded Redis in {directory}: {exc}",
              file=sys.stderr)


# --- the demo ------------------------------------------------------------------------------------
def run_demo(data_dir: str | None, port: int | None = None, out: IO[str] | None = None) -> int:
    """Serve the sample portal, crawl it, print what happened; the exit code."""
    out = out if out is not None else sys.stdout
    directory, state = _prepare(data_dir)
    remembered = int(state["port"]) if state else None
    if remembered is not None and port not in (None, remembered):
        raise DemoError(
            f"the demo in {directory} was first run on port {remembered} and its stored article "
            f"URLs contain it: run it again without --port (or with --port {remembered})"
        )
    portal = SamplePortal.load()
    run = int(state.get("runs", 0)) + 1 if state else 1
    server = _serve(portal, remembered or port or 0, remembered is not None, directory)
    try:
        (directory / STATE_FILE).write_text(
            json.dumps({"port": server.port, "runs": run}) + "\n", encoding="utf-8"
        )
        sites = directory / SITES_FILE
        sites.write_text(sites_toml(server.base), encoding="utf-8")
        log = directory / LOG_FILE
        log.unlink(missing_ok=True)
        before = {str(a.get("url")) for a in stored_articles(directory)}
        print(f"newscrawl demo, run {run}: a sample portal of {len(portal.articles)} article "
              f"pages on {server.base}/", file=out)
        print(f"data directory: {directory}", file=out)
        print(f"crawling: scrapy crawl portal -s NEWSCRAWL_SITES={sites} ...", file=out,
              flush=True)
        started, since = time.monotonic(), time.time()
        code = run_crawl(directory, sites, log)
        took = time.monotonic() - started
        fetched = server.article_hits()
    finally:
        server.stop()
        stop_leftover_redis(directory)
    if code != ExitCode.OK:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        raise DemoError(
            f"the crawl failed (exit {code}); the end of its log ({log}):\n  " + "\n  ".join(tail)
        )
    stats = crawl_stats(log)
    articles = stored_articles(directory)
    records = duplicate_records(directory)
    _report(out, directory, portal, server.base, took, fetched, stats, articles, before, records,
            since)
    return ExitCode.OK


def _report(
    out: IO[str],
    directory: Path,
    portal: SamplePortal,
    base: str,
    took: float,
    fetched: int,
    stats: dict[str, int],
    articles: list[dict[str, Any]],
    before: set[str],
    records: list[Any],
    since: float,
) -> None:
    def say(line: str = "") -> None:
        print(line, file=out)

    new = [a for a in articles if str(a.get("url")) not in before]
    done = stats.get("newscrawl/scheduler/filtered/done", 0)
    lists = stats.get("newscrawl/pages/start", 0) + stats.get("newscrawl/pages/list", 0)
    say(f"crawl finished in {took:.1f} s (log: {directory / LOG_FILE})")
    say()
    say(f"{lists} start/list pages fetched, {fetched} article pages fetched, "
        f"{done} already done (not fetched again)")
    say(f"{len(new)} articles stored this run, {len(articles)} in all" + (":" if new else ""))
    for article in new:
        say(f"  {article.get('title')}    {_path_of(article.get('url'), base)}")
    failed = sum(v for k, v in stats.items()
                 if k.startswith("newscrawl/sites/") and k.endswith("/failed"))  # fmt: skip
    if failed:
        say(f"{failed} pages failed: the log has each one's cause ({directory / LOG_FILE})")
    recent = [r for r in records if r.seen_at >= since]
    dropped = stats.get("newscrawl/dedup/near_duplicate", 0)
    say(f"{dropped} near-duplicates dropped this run (not stored), {len(records)} recorded in all"
        + (":" if recent else ""))
    for record in recent:
        say(f"  {record.extra.get('title', '')}    {_path_of(record.url, base)}")
        say(f"    near-duplicate of {_path_of(record.original_url, base)} (Hamming distance "
            f"{record.distance})")
    say()
    files = sorted((directory / "articles").glob("*.jsonl"))
    say("where the files are:")
    for path in files:
        say(f"  {path}  (stored articles, JSON Lines)")
    say(f"  {directory}  (embedded Redis: index, duplicate records, crawl state)")
    say()
    say("look further:")
    say(f"  newscrawl --data-dir {directory} duplicates")
    say(f"  newscrawl --data-dir {directory} stats")
    say(f"  newscrawl demo --data-dir {directory}    # again: the incremental crawl")
    if os.environ.get("REDIS_URL"):
        say("  (REDIS_URL is set: unset it for the first two, or they read that Redis instead)")


def _path_of(url: Any, base: str) -> str:
    text = str(url)
    return text[len(base):] if text.startswith(base) else text
