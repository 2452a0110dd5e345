"""``newscrawl status``: the crawl as a whole from its Redis: how far (per site), how long (rate
and time left), how the last run went, its workers and politeness. docs/cli.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from typing import Any

from newscrawl.cli._common import open_redis, positive_int, print_json
from newscrawl.exitcodes import ExitCode
from newscrawl.formats import as_text, plural
from newscrawl.meta import RUN_KINDS, SITE, RequestKind
from newscrawl.scheduling.liveness import gone_from_this_host
from newscrawl.sitestats import RATE_BUCKET_SECONDS, run_outcome, split_run_hash

#: queue entries read per site breakdown at most (a queue of millions is summed, not read whole)
MAX_QUEUE_SCAN = 200_000
#: seconds the rate is measured over
RATE_WINDOW = 60
#: share of maxmemory from which ``status`` warns that Redis will soon refuse writes
NEAR_MAXMEMORY = 0.9



def redis_memory(client: Any) -> dict[str, Any] | None:
    """Redis's ``used_memory`` and ``maxmemory`` (0: no limit) and whether it is full (at or over
    its limit: with ``noeviction`` every write is refused, OOM) or near it; None when the server
    does not answer ``INFO memory`` (an ACL without it)."""
    from redis.exceptions import ResponseError

    try:
        info = client.info("memory")
    except ResponseError:
        return None
    from newscrawl.faults import eviction

    used, limit = int(info.get("used_memory", 0)), int(info.get("maxmemory", 0))
    policy = as_text(info.get("maxmemory_policy", "")) or None
    # another policy than noeviction deletes keys at the limit instead of refusing writes
    evicts = eviction(info) is not None
    return {"used_memory": used, "maxmemory": limit, "policy": policy,
            "full": bool(limit) and not evicts and used >= limit,
            "near_full": bool(limit) and not evicts and used >= limit * NEAR_MAXMEMORY,
            "evicts": evicts}


def _size(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _memory_line(memory: dict[str, Any] | None) -> str:
    if memory is None:
        return "redis:      memory unknown (INFO memory refused)"
    used, limit = memory["used_memory"], memory["maxmemory"]
    if not limit:
        return f"redis:      {_size(used)} used (no maxmemory)"
    line = f"redis:      {_size(used)} used of maxmemory {_size(limit)} ({used * 100 // limit} %)"
    if memory.get("evicts"):
        return (line + f": maxmemory-policy {memory['policy']} deletes keys at the limit, so done"
                " records and index entries would be lost without a word (pages fetched again,"
                " near-duplicates stored); set maxmemory-policy noeviction")
    if memory["full"]:
        return (line + ": FULL, every write is refused (OOM), so a crawl stops at once and"
                " cannot record its run here; free memory with `newscrawl prune --days N"
                " --duplicates-days M` or raise maxmemory")
    if memory["near_full"]:
        return (line + ": near its limit, where every write is refused (OOM; a crawl that met"
                " it stopped with exit code 3 and could not record its run, so the last run"
                " shown may be an earlier one); free memory with `newscrawl prune --days N"
                " --duplicates-days M` (fingerprints first stored more than N days ago) or raise"
                " maxmemory")
    return line


def _run_started(run_id: str) -> float | None:
    """The start time a run id carries (``%Y%m%dT%H%M%S`` UTC, then ``-random``)."""
    try:
        start = datetime.datetime.strptime(run_id.split("-", 1)[0], "%Y%m%dT%H%M%S")
    except ValueError:
        return None
    return start.replace(tzinfo=datetime.UTC).timestamp()


def _sites_of(client: Any, key: str, *, limit: int,
              slots: dict[str, dict[str, tuple[Any, Any]]] | None = None,
              kinds: dict[str, dict[str, int]] | None = None,
              ) -> tuple[dict[str, int], bool]:
    """site -> entries of a queue or in-flight sorted set (by the entries' site meta); and
    whether every entry was read (False past ``limit``). ``slots`` gathers site -> host slot key
    -> (concurrency, delay ms) of the entries (what the grant holds them to); ``kinds`` site ->
    page kind -> entries."""
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
        if kinds is not None:
            kind = str(entry.get("k") or "?") if isinstance(entry, dict) else "?"
            per_kind = kinds.setdefault(str(site), {})
            per_kind[kind] = per_kind.get(kind, 0) + 1
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


def _rate(other: dict[str, str], now: float, started: float | None
          ) -> tuple[dict[str, int], float]:
    """site -> pages fetched in the last minute (the run's rate buckets), and the seconds that
    covers: the buckets that began at most :data:`RATE_WINDOW` seconds ago (fewer when the run
    is younger)."""
    first = int((now - RATE_WINDOW) // RATE_BUCKET_SECONDS) + 1
    span = now - first * RATE_BUCKET_SECONDS
    if started is not None:
        span = min(span, now - started)
    pages: dict[str, int] = {}
    for name, value in other.items():
        kind, _, rest = name.partition(":")
        site, _, bucket = rest.rpartition(":")
        if kind != "rate" or not site:
            continue
        try:
            if int(bucket) >= first:
                pages[site] = pages.get(site, 0) + int(value)
        except ValueError:
            continue
    return pages, max(span, 1.0)


def _time_left(left: int, per_minute: float | None, discovering: bool
               ) -> tuple[int | None, str]:
    """(seconds left or None, why unknown / "")."""
    if discovering:
        return None, "still finding links"
    if left == 0:
        return 0, ""
    if not per_minute:
        return None, "no page fetched in the last minute"
    return round(left / per_minute * 60), ""


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min" + (f" {seconds % 60} s" if seconds < 600 and seconds % 60
                                         else "")
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _iso(ts: float | None) -> str | None:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).isoformat(timespec="seconds") \
        if ts else None


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def run_sort_key(run_id: str, ended: Any) -> tuple[str, float, str]:
    """Runs in the order they started, to the second (the id's start), then of one second in the
    order they ended (``run:ended``; a run with no end recorded last)."""
    return run_id[:15], _float(ended) or float("inf"), run_id


def last_run(client: Any, prefix: str, spider: str, current: str | None) -> dict[str, Any] | None:
    """The newest run other than ``current`` whose stats hash Redis still holds (a day after
    the run): start, end, exit code, close reason, the run it took over, per-site summary."""
    from newscrawl import keys

    k = keys.Keys(prefix, spider)
    pattern = k(keys.CRAWL_RUNSTATS, run="*")
    head = pattern[:-1]
    ids = sorted(as_text(key)[len(head):] for key in client.scan_iter(match=pattern, count=1000))
    ids = [run_id for run_id in ids if run_id != current]
    if not ids:
        return None
    # ids sort by their start to the second; of runs started in the same second, the one that
    # ended last (or has no end yet) is the newest
    same_second = [run_id for run_id in ids if run_id[:15] == ids[-1][:15]]
    run_id = ids[-1] if len(same_second) == 1 else max(
        same_second, key=lambda run: run_sort_key(
            run, client.hget(k(keys.CRAWL_RUNSTATS, run=run), "run:ended")))
    figures, other = split_run_hash(client.hgetall(k(keys.CRAWL_RUNSTATS, run=run_id)))
    try:
        names = [str(n) for n in json.loads(other["run:sites"])]
    except (KeyError, ValueError, TypeError):
        names = sorted(figures)
    started = _run_started(run_id)
    ended = _float(other.get("run:ended"))
    code = other.get("run:exit_code")
    outcome = run_outcome(names, figures)
    return {
        "id": run_id,
        "started": _iso(started),
        "ended": _iso(ended),
        "duration_seconds": round(ended - started, 1) if ended and started else None,
        "exit_code": int(code) if code is not None and code.lstrip("-").isdigit() else None,
        "reason": other.get("run:reason"),
        "took_over": other.get("run:took_over"),
        "workers_ended": int(other.get("run:workers_ended", "0") or 0),
        "sites": {s.name: _site_figures(s.figures) for s in outcome.summaries},
        "summary": [s.line() for s in outcome.summaries],
        "fetched_nothing": [s.name for s in outcome.summaries
                            if not sum(s.get(f"pages/{kind}") for kind in RequestKind)],
        "warnings": run_warnings(other),
    }


def exit_meaning(code: int | str | None, reason: str | None) -> str:
    """Scrapy's close reason of a run, after what its failing exit code means: exit code 4
    "(no start, list, sitemap or feed page of any site could be fetched and read; closed:
    finished)"."""
    from newscrawl.exitcodes import MEANING, ExitCode

    try:
        meaning = MEANING.get(ExitCode(int(code))) if code is not None else None
    except ValueError:
        meaning = None
    return f"{meaning}; closed: {reason or '?'}" if meaning else reason or "?"


def run_warnings(other: dict[str, str]) -> dict[str, list[str]]:
    """The end-of-run warnings a finished run recorded per site (``run:warnings``)."""
    try:
        raw = json.loads(other.get("run:warnings") or "{}")
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(site): [str(t) for t in texts] for site, texts in raw.items()
            if isinstance(texts, list) and texts}


def _site_figures(fig: Any) -> dict[str, int]:
    return {
        "list_pages": fig.get("pages/start", 0) + fig.get("pages/list", 0),
        "source_pages": sum(fig.get(f"pages/{kind}", 0) for kind in RUN_KINDS),
        "fetched": fig.get("pages/article", 0),
        "stored": fig.get("stored", 0),
        # every near-duplicate dropped (recorded in the duplicate log): late originals included
        "dropped": fig.get("near_duplicate", 0) + fig.get("late_original", 0),
        "late_originals": fig.get("late_original", 0),
        "already_stored": fig.get("already_stored", 0),
        "not_html": fig.get("not_html", 0),
        "failed": fig.get("failed/article", 0),
    }


def crawl_status(client: Any, prefix: str, spider: str, *, now: float | None = None
                 ) -> dict[str, Any]:
    """Everything ``newscrawl status`` shows, as one JSON-friendly dict."""
    from newscrawl import keys
    from newscrawl.index import SimhashIndex

    now = time.time() if now is None else now
    k = keys.Keys(prefix, spider)
    run_id = client.get(k(keys.CRAWL_RUN))
    run = as_text(run_id) if run_id is not None else None
    figures: dict[str, dict[str, int]] = {}
    other: dict[str, str] = {}
    if run is not None:
        figures, other = split_run_hash(client.hgetall(k(keys.CRAWL_RUNSTATS, run=run)))
    workers = []
    for worker, info in sorted(client.hgetall(k(keys.CRAWL_WORKERS)).items()):
        name = as_text(worker)
        try:
            data = dict(json.loads(info))
        except ValueError:
            data = {}
        beat = data.get("beat")
        counted = other.get(f"worker:{name}")  # in the current run's hash: a worker of it
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
            # pages fetched: the run's count of this worker (what the site figures count, sent
            # with them), else the one its last heartbeat told
            "pages": int(counted) if counted is not None and counted.isdigit()
            else data.get("pages"),
        })
    queue_key, inflight_key = k(keys.CRAWL_QUEUE), k(keys.CRAWL_INFLIGHT)
    slots: dict[str, dict[str, tuple[Any, Any]]] = {}
    queued_kinds: dict[str, dict[str, int]] = {}
    flight_kinds: dict[str, dict[str, int]] = {}
    queued, queue_complete = _sites_of(client, queue_key, limit=MAX_QUEUE_SCAN, slots=slots,
                                       kinds=queued_kinds)
    in_flight, _ = _sites_of(client, inflight_key, limit=MAX_QUEUE_SCAN, slots=slots,
                             kinds=flight_kinds)
    waiting = _waiting_sites(client, k(keys.CRAWL_WAITING, run=run)) if run else {}
    holding = bool(waiting)
    # a run whose workers are all gone (Ctrl-C, killed) is not running: the next crawl takes it
    # over; how it went is the "last run"
    running = run is not None and any(w["alive"] for w in workers)
    started = _run_started(run) if run else None
    minutes = (now - started) / 60 if started else None
    recent, span = _rate(other, now, started)
    sites = {}
    for site in sorted(set(queued) | set(in_flight) | set(figures) | set(waiting)):
        fig = figures.get(site, {})
        fetched = sum(fig.get(f"pages/{kind}", 0) for kind in RequestKind)
        q_kinds, f_kinds = queued_kinds.get(site, {}), flight_kinds.get(site, {})
        sources_left = sum(q_kinds.get(kind, 0) + f_kinds.get(kind, 0) for kind in RUN_KINDS)
        discovering = bool(sources_left) or (holding and run is not None)
        per_minute = round(recent.get(site, 0) * 60 / span, 1) if running else None
        left = queued.get(site, 0) + in_flight.get(site, 0) + waiting.get(site, 0)
        seconds, why = _time_left(left, per_minute, discovering) if running \
            else (None, "no crawl is running")
        articles = _site_figures(fig)
        sites[site] = {
            "queued": queued.get(site, 0),
            # article links found, waiting for the run's discovery to end
            "waiting": waiting.get(site, 0),
            "in_flight": in_flight.get(site, 0),
            "fetched": fetched,
            "stored": fig.get("stored", 0),
            "near_duplicates": fig.get("near_duplicate", 0),
            "failed": fig.get("failed", 0),
            "pages_per_minute": round(fetched / minutes, 1) if minutes and minutes > 0 else None,
            "limits": _limits(client, slots.get(site, {})),
            "list_pages": articles["list_pages"],
            "source_pages": articles["source_pages"],
            "source_pages_left": sources_left,
            "articles": {
                "queued": q_kinds.get(RequestKind.ARTICLE, 0),
                "in_flight": f_kinds.get(RequestKind.ARTICLE, 0),
                "fetched": articles["fetched"],
                "stored": articles["stored"],
                "dropped": articles["dropped"],
                "late_originals": articles["late_originals"],
                "already_stored": articles["already_stored"],
                "not_html": articles["not_html"],
                "failed": articles["failed"],
            },
            "discovering": discovering,
            "pages_last_minute": per_minute,
            "time_left_seconds": seconds,
            "time_left_unknown": why or None,
        }
    index = SimhashIndex(client, prefix=prefix, tune_server=False)
    total_rate = round(sum(recent.values()) * 60 / span, 1) if running else None
    discovering = any(s["discovering"] for s in sites.values()) or bool(holding)
    total_left, total_why = _time_left(int(client.zcard(queue_key))
                                       + int(client.zcard(inflight_key)), total_rate,
                                       discovering)
    return {
        "prefix": prefix,
        "spider": spider,
        "run": run,
        "run_started": datetime.datetime.fromtimestamp(started, datetime.UTC).isoformat()
        if started else None,
        "run_took_over": other.get("run:took_over"),
        "workers": workers,
        "queued": int(client.zcard(queue_key)),
        "queued_by_site_complete": queue_complete,
        "in_flight": int(client.zcard(inflight_key)),
        "retry": int(client.hlen(k(keys.CRAWL_RETRY))),
        "sites": sites,
        "index": {"fingerprints": index.count(), "version": index.stored_version()},
        "redis": redis_memory(client),
        "pages_last_minute": total_rate,
        "discovering": discovering if running else None,
        "time_left_seconds": total_left if running else None,
        "time_left_unknown": (total_why or None) if running else "no crawl is running",
        "running": running,
        # (a SCAN of the keyspace, ~0.4 s at 300,000 keys: not while a crawl runs)
        "last_run": None if running else last_run(client, prefix, spider, None),
    }


def _left(seconds: int | None, why: str | None) -> str:
    if seconds is None:
        return f"unknown ({why})" if why else "unknown"
    return "done" if seconds == 0 else "~" + _duration(seconds)


def _last_run_lines(last: dict[str, Any]) -> list[str]:
    code = last["exit_code"]
    if last["ended"]:
        ended = (f"ended {last['ended']} after {_duration(last['duration_seconds'])}, exit code "
                 f"{code if code is not None else '?'} ({exit_meaning(code, last['reason'])})")
    else:
        ended = ("no end recorded: its workers stopped without recording it (killed, or Redis"
                 " refused the write: see the redis line); the next crawl takes it over")
    lines = [f"last run:   {last['id']} (started {last['started'] or '?'}), {ended}"]
    if last["took_over"]:
        lines.append(f"            it took over run {last['took_over']} (none of its workers "
                     "was alive)")
    lines += [f"  {line}" for line in last["summary"]]
    if last["fetched_nothing"]:
        lines.append("  fetched nothing: " + ", ".join(last["fetched_nothing"]))
    for site, texts in last["warnings"].items():
        if site not in last["fetched_nothing"]:  # said just above
            lines += [f"  WARNING {site}: {text}" for text in texts]
    return lines


def _lines(status: dict[str, Any]) -> list[str]:
    alive = [w for w in status["workers"] if w["alive"]]
    lines = [
        f"run:        {status['run'] or '(none: no crawl is running)'}"
        + (f" (started {status['run_started']})" if status["run_started"] else "")
        + (f", took over run {status['run_took_over']}" if status["run_took_over"] else "")
        + (", stopped: no worker alive (the next crawl takes it over)"
           if status["run"] and not status["running"] else ""),
    ]
    if not status["running"]:
        lines += _last_run_lines(status["last_run"]) if status["last_run"] else [
            "last run:   (none in Redis: it keeps a run's figures a day after the run)"]
    lines.append(f"workers:    {len(alive)} alive" + (
        f", {len(status['workers']) - len(alive)} gone" if len(alive) < len(status["workers"])
        else ""))
    for w in status["workers"]:
        state = ("idle" if w["idle"] else "working") if w["alive"] else "gone"
        ago = w["last_heartbeat_seconds_ago"]
        lines.append(
            f"  {w['host']}:{w['pid']}  {state}, last heartbeat "
            + (f"{ago:.0f} s ago" if ago is not None else "?")
            + (f", {plural(w['pages'], 'page')} fetched" if w["pages"] is not None else ""))
    stale = not status["running"] and status["in_flight"]
    lines.append(f"queue:      {status['queued']} queued, {status['in_flight']} in flight"
                 + (" (held by workers that stopped: the next crawl puts them back)"
                    if stale else "")
                 + f", {status['retry']} failed earlier (retried by the next run)")
    if status["running"]:
        rate = status["pages_last_minute"]
        lines.append(f"rate:       {rate:g} pages a minute (the last minute); time left: "
                     + _left(status["time_left_seconds"], status["time_left_unknown"]))
    if status["sites"]:
        lines.append(f"{'site':<20} {'lists':>6} | articles: {'queued':>7} {'flight':>6} "
                     f"{'fetched':>7} {'stored':>6} {'dropped':>7} {'failed':>6} | "
                     f"{'pages/min':>9}  time left")
        for site, s in status["sites"].items():
            a, ppm = s["articles"], s["pages_last_minute"]
            lines.append(
                f"{site[:20]:<20} {s['list_pages']:>6} |           {a['queued']:>7} "
                f"{a['in_flight']:>6} {a['fetched']:>7} {a['stored']:>6} {a['dropped']:>7} "
                f"{a['failed']:>6} | {(f'{ppm:g}' if ppm is not None else '-'):>9}  "
                + (_left(s["time_left_seconds"], s["time_left_unknown"]) if status["running"]
                   else "-"))
        for site, s in status["sites"].items():
            for lim in s["limits"]:
                auto = lim["autothrottle_delay"]
                lines.append(
                    f"  {site[:20]} at {lim['host']}: {lim['concurrency']} at once"
                    + (f", delay {lim['delay']:g} s" if lim["delay"] else ", no delay")
                    + (f", AutoThrottle {auto:g} s" if auto is not None else "")
                    + (f"; {lim['at_host_now']} there now" if status["running"]
                       or not lim["at_host_now"] else
                       f"; {lim['at_host_now']} held by workers that stopped"))
        if not status["queued_by_site_complete"]:
            lines.append(f"(queued by site: the first {MAX_QUEUE_SCAN} entries)")
    index = status["index"]
    lines.append(f"index:      {index['fingerprints']} fingerprints"
                 + (f" (version {index['version']})" if index["version"] else ""))
    lines.append(_memory_line(status["redis"]))
    return lines


def one_line(status: dict[str, Any], now: float | None = None) -> str:
    """The status in one line (``--watch`` when the output is not a terminal)."""
    stamp = time.strftime("%H:%M:%S", time.gmtime(time.time() if now is None else now))
    if not status["running"]:
        last = status["last_run"]
        tail = ""
        if last:
            tail = (f"; last run {last['id']} " + (
                f"ended {last['ended']}, exit code {last['exit_code']}" if last["ended"]
                else "has no end recorded"))
        return f"{stamp} no crawl is running; {status['queued']} queued{tail}{_full(status)}"
    sites = "; ".join(
        f"{name} {s['articles']['fetched']} fetched, {s['articles']['stored']} stored, "
        f"{s['articles']['queued'] + s['articles']['in_flight']} left"
        for name, s in status["sites"].items())
    alive = sum(1 for w in status["workers"] if w["alive"])
    return (f"{stamp} run {status['run']}: {plural(alive, 'worker')}; "
            f"{status['pages_last_minute']:g} pages/min; time left "
            f"{_left(status['time_left_seconds'], status['time_left_unknown'])}"
            + (f"; {sites}" if sites else "") + _full(status))


def _full(status: dict[str, Any]) -> str:
    memory = status.get("redis")
    return "; Redis FULL (at its maxmemory): writes refused" if memory and memory["full"] else ""


def cmd_status(args: argparse.Namespace) -> int:
    terminal = sys.stdout.isatty()
    with open_redis(args) as client:
        while True:
            status = crawl_status(client, args.prefix, args.spider)
            if args.json:
                print_json(status)
            elif args.watch and not terminal:
                print(one_line(status), flush=True)
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
        help="the crawl at a glance: how far each site is, the rate and time left, the "
        "workers; with no crawl running, how the last run went")
    p.add_argument("--spider", default="portal", help="the spider's name (default: portal)")
    p.add_argument("--json", action="store_true", help="one JSON object (a line each refresh)")
    p.add_argument("--watch", action="store_true",
                   help="refresh until Ctrl-C: redrawn on a terminal, one line a refresh "
                   "otherwise")
    p.add_argument("--interval", type=positive_int, default=2, metavar="S",
                   help="seconds between refreshes with --watch (default: 2)")
    p.set_defaults(func=cmd_status)


def _waiting_sites(client: Any, key: str) -> dict[str, int]:
    """Article links waiting for the run's discovery to end, per site (the first
    MAX_QUEUE_SCAN of them)."""
    out: dict[str, int] = {}
    for member in client.zrange(key, 0, MAX_QUEUE_SCAN - 1):
        text = member.decode("utf-8", "replace") if isinstance(member, bytes) else str(member)
        parts = text.split("\n")
        if len(parts) >= 3:
            out[parts[1]] = out.get(parts[1], 0) + 1
    return out
