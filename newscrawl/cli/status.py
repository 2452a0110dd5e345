"""``newscrawl status``: the crawl as a whole, read from its Redis (any machine that reaches it).

The current run and its workers (alive or not, last heartbeat, pages fetched), per site what is
queued and in flight, the run's figures so far (fetched, stored, failed, pages a minute) and the
politeness in force at its hosts (requests at once and delay for the whole cluster, AutoThrottle's
shared delay, requests there now), the index size. ``--watch`` redraws it every ``--interval``
seconds until Ctrl-C.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from typing import Any

from newscrawl.cli._common import open_redis, positive_int, print_json
from newscrawl.exitcodes import ExitCode
from newscrawl.meta import SITE, RequestKind
from newscrawl.scheduling.run import gone_from_this_host

#: queue entries read per site breakdown at most (a queue of millions is summed, not read whole)
MAX_QUEUE_SCAN = 200_000


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _run_started(run_id: str) -> float | None:
    """The start time a run id carries (``%Y%m%dT%H%M%S`` UTC, then ``-random``)."""
    try:
        start = datetime.datetime.strptime(run_id.split("-", 1)[0], "%Y%m%dT%H%M%S")
    except ValueError:
        return None
    return start.replace(tzinfo=datetime.UTC).timestamp()


def _sites_of(client: Any, key: str, *, limit: int,
              slots: dict[str, dict[str, tuple[Any, Any]]] | None = None,
              ) -> tuple[dict[str, int], bool]:
    """site -> entries of a queue or in-flight sorted set (by the entries' site meta); and
    whether every entry was read (False past ``limit``). ``slots`` gathers site -> host slot key
    -> (concurrency, delay ms) of the entries (what the grant holds them to)."""
    counts: dict[str, int] = {}
    read = 0
    for raw, _score in client.zscan_iter(key, count=1000):
        read += 1
        if read > limit:
            return counts, False
        try:
            entry = json.loads(raw)
            site = entry["r"]["meta"].get(SITE) or "?"
        except (ValueError, KeyError, TypeError, AttributeError):
            site, entry = "?", {}
        counts[str(site)] = counts.get(str(site), 0) + 1
        slot = entry.get("s") if isinstance(entry, dict) else None
        if slots is not None and isinstance(slot, str) and slot:
            slots.setdefault(str(site), {})[slot] = (entry.get("c"), entry.get("d"))
    return counts, True


def _limits(client: Any, slots: dict[str, tuple[Any, Any]]) -> list[dict[str, Any]]:
    """The politeness in force at each host slot: its concurrency and delay for the whole
    cluster, AutoThrottle's shared delay, the requests holding the slot now."""
    out = []
    seconds, micros = client.time()  # the slots' lease deadlines are on the Redis clock
    now_ms = seconds * 1000 + micros / 1000
    for slot, (concurrency, delay_ms) in sorted(slots.items()):
        throttle = client.get(slot + ":throttle")
        try:
            shared = round(float(throttle) / 1000, 3) if throttle is not None else None
        except ValueError:
            shared = None
        out.append({
            "host": slot.rpartition(":slots:")[2] or slot,
            "concurrency": concurrency,
            "delay": round(delay_ms / 1000, 3) if isinstance(delay_ms, (int, float)) else None,
            "autothrottle_delay": shared,
            "at_host_now": int(client.zcount(slot, now_ms, "+inf")),
        })
    return out


def crawl_status(client: Any, prefix: str, spider: str, *, now: float | None = None
                 ) -> dict[str, Any]:
    """Everything ``newscrawl status`` shows, as one JSON-friendly dict."""
    from newscrawl.index import SimhashIndex
    from newscrawl.redis import keys

    now = time.time() if now is None else now
    k = keys.Keys(prefix, spider)
    run_id = client.get(k(keys.CRAWL_RUN))
    run = _text(run_id) if run_id is not None else None
    workers = []
    for worker, info in sorted(client.hgetall(k(keys.CRAWL_WORKERS)).items()):
        name = _text(worker)
        try:
            data = dict(json.loads(info))
        except ValueError:
            data = {}
        beat = data.get("beat")
        workers.append({
            "id": name,
            "host": data.get("host"),
            "pid": data.get("pid"),
            "run": data.get("run"),
            # a process gone from this host is dead at once, its heartbeat key notwithstanding
            "alive": bool(client.exists(k(keys.CRAWL_WORKER, worker=name)))
            and not gone_from_this_host(data),
            "idle": bool(data.get("idle")),
            "last_heartbeat_seconds_ago": round(now - beat, 1)
            if isinstance(beat, (int, float)) else None,
            "pages": data.get("pages"),
        })
    queue_key, inflight_key = k(keys.CRAWL_QUEUE), k(keys.CRAWL_INFLIGHT)
    slots: dict[str, dict[str, tuple[Any, Any]]] = {}
    queued, queue_complete = _sites_of(client, queue_key, limit=MAX_QUEUE_SCAN, slots=slots)
    in_flight, _ = _sites_of(client, inflight_key, limit=MAX_QUEUE_SCAN, slots=slots)
    figures: dict[str, dict[str, int]] = {}
    if run is not None:
        for name, value in client.hgetall(k(keys.CRAWL_RUNSTATS, run=run)).items():
            site, _, path = _text(name).partition("/")
            try:
                figures.setdefault(site, {})[path] = int(value)
            except ValueError:
                continue
    started = _run_started(run) if run else None
    minutes = (now - started) / 60 if started else None
    sites = {}
    for site in sorted(set(queued) | set(in_flight) | set(figures)):
        fig = figures.get(site, {})
        fetched = sum(fig.get(f"pages/{kind}", 0) for kind in RequestKind)
        sites[site] = {
            "queued": queued.get(site, 0),
            "in_flight": in_flight.get(site, 0),
            "fetched": fetched,
            "stored": fig.get("stored", 0),
            "near_duplicates": fig.get("near_duplicate", 0),
            "failed": fig.get("failed", 0),
            "pages_per_minute": round(fetched / minutes, 1) if minutes and minutes > 0 else None,
            "limits": _limits(client, slots.get(site, {})),
        }
    index = SimhashIndex(client, prefix=prefix, tune_server=False)
    return {
        "prefix": prefix,
        "spider": spider,
        "run": run,
        "run_started": datetime.datetime.fromtimestamp(started, datetime.UTC).isoformat()
        if started else None,
        "workers": workers,
        "queued": int(client.zcard(queue_key)),
        "queued_by_site_complete": queue_complete,
        "in_flight": int(client.zcard(inflight_key)),
        "retry": int(client.hlen(k(keys.CRAWL_RETRY))),
        "sites": sites,
        "index": {"fingerprints": index.count(), "version": index.stored_version()},
    }


def _lines(status: dict[str, Any]) -> list[str]:
    alive = [w for w in status["workers"] if w["alive"]]
    lines = [
        f"run:        {status['run'] or '(none: no crawl is running)'}"
        + (f" (started {status['run_started']})" if status["run_started"] else ""),
        f"workers:    {len(alive)} alive" + (
            f", {len(status['workers']) - len(alive)} gone" if len(alive) < len(status["workers"])
            else ""),
    ]
    for w in status["workers"]:
        state = ("idle" if w["idle"] else "working") if w["alive"] else "gone"
        ago = w["last_heartbeat_seconds_ago"]
        lines.append(
            f"  {w['host']}:{w['pid']}  {state}, last heartbeat "
            + (f"{ago:.0f} s ago" if ago is not None else "?")
            + (f", {w['pages']} pages" if w["pages"] is not None else ""))
    lines.append(f"queue:      {status['queued']} queued, {status['in_flight']} in flight, "
                 f"{status['retry']} failed earlier (retried by the next run)")
    if status["sites"]:
        lines.append(f"{'site':<20} {'queued':>8} {'flight':>7} {'fetched':>8} {'stored':>7} "
                     f"{'dups':>5} {'failed':>7} {'pages/min':>10}")
        for site, s in status["sites"].items():
            ppm = s["pages_per_minute"]
            lines.append(
                f"{site[:20]:<20} {s['queued']:>8} {s['in_flight']:>7} {s['fetched']:>8} "
                f"{s['stored']:>7} {s['near_duplicates']:>5} {s['failed']:>7} "
                f"{(f'{ppm:.1f}' if ppm is not None else '-'):>10}")
        for site, s in status["sites"].items():
            for lim in s["limits"]:
                auto = lim["autothrottle_delay"]
                lines.append(
                    f"  {site[:20]} at {lim['host']}: {lim['concurrency']} at once"
                    + (f", delay {lim['delay']:g} s" if lim["delay"] else ", no delay")
                    + (f", AutoThrottle {auto:g} s" if auto is not None else "")
                    + f"; {lim['at_host_now']} there now")
        if not status["queued_by_site_complete"]:
            lines.append(f"(queued by site: the first {MAX_QUEUE_SCAN} entries)")
    index = status["index"]
    lines.append(f"index:      {index['fingerprints']} fingerprints"
                 + (f" (version {index['version']})" if index["version"] else ""))
    return lines


def cmd_status(args: argparse.Namespace) -> int:
    with open_redis(args) as client:
        while True:
            status = crawl_status(client, args.prefix, args.spider)
            if args.json:
                print_json(status)
            else:
                if args.watch:
                    print("\033[2J\033[H", end="")  # clear the terminal, cursor home
                print("\n".join(_lines(status)), flush=True)
            if not args.watch:
                return ExitCode.OK
            time.sleep(args.interval)


def add_status(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "status", parents=[common],
        help="the running crawl: its run, workers, per-site queue and figures, index size")
    p.add_argument("--spider", default="portal", help="the spider's name (default: portal)")
    p.add_argument("--json", action="store_true", help="one JSON object (a line each refresh)")
    p.add_argument("--watch", action="store_true", help="refresh until Ctrl-C")
    p.add_argument("--interval", type=positive_int, default=2, metavar="S",
                   help="seconds between refreshes with --watch (default: 2)")
    p.set_defaults(func=cmd_status)
