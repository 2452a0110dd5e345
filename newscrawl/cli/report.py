"""``newscrawl report``: one self-contained HTML file (no script, no network) of the last days of
crawling, for an editor: per-site figures, dropped near-duplicates beside their stored text, late
originals, sites that fetched nothing. docs/cli.md.
"""

from __future__ import annotations

import argparse
import datetime
import difflib
import html
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from newscrawl.cli._common import CliError, open_redis, positive_int
from newscrawl.cli.status import exit_meaning, run_sort_key, run_warnings
from newscrawl.exitcodes import ExitCode
from newscrawl.formats import SECONDS_PER_DAY, as_text

#: near-duplicates shown with their texts (the newest); the others are counted
DEFAULT_PAIRS = 50
#: characters of each text compared and shown (a diff of longer texts costs too much)
MAX_TEXT_CHARS = 6000
#: the late originals listed at most
MAX_LATE = 200

_STATE = ("stored", "dropped", "failed")
_COLOURS = {"stored": "#2e7d32", "dropped": "#ef8f00", "failed": "#c62828"}



def _day(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d")


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _run_day(run_id: str) -> str | None:
    try:
        start = datetime.datetime.strptime(run_id.split("-", 1)[0], "%Y%m%dT%H%M%S")
    except ValueError:
        return None
    return start.strftime("%Y-%m-%d")


def late_original(record: Mapping[str, Any]) -> bool:
    """Whether a duplicate record says its dropped copy was published before the stored text it
    was matched to: ``published_first`` set to anything but ``"original"`` (``null`` or absent:
    not known)."""
    first = record.get("published_first")
    return isinstance(first, str) and bool(first) and first != "original"


def read_runs(client: Any, prefix: str, spider: str) -> list[dict[str, Any]]:
    """The runs whose per-site figures Redis still holds, oldest first: id, day, figures (site ->
    path -> count) and the ``run:*`` fields."""
    from newscrawl import keys
    from newscrawl.sitestats import split_run_hash

    k = keys.Keys(prefix, spider)
    pattern = k(keys.CRAWL_RUNSTATS, run="*")
    head = pattern[:-1]
    runs: list[dict[str, Any]] = []
    for key in client.scan_iter(match=pattern, count=1000):
        run_id = as_text(key)[len(head):]
        figures, other = split_run_hash(client.hgetall(key))
        runs.append({"id": run_id, "day": _run_day(run_id), "figures": figures,
                     "info": {n: v for n, v in other.items() if n.startswith("run:")}})
    runs.sort(key=lambda r: run_sort_key(str(r["id"]), r["info"].get("run:ended")))
    return runs


def _pages(paths: Mapping[str, int]) -> int:
    return sum(n for path, n in paths.items() if path.startswith("pages/"))


def build_report(client: Any, prefix: str, spider: str, store_dir: Path, *, days: int,
                 pairs: int = DEFAULT_PAIRS, now: float | None = None) -> dict[str, Any]:
    """Everything the report shows, as one JSON-friendly dict."""
    from newscrawl.index.duplicates import DuplicateLog, DuplicateRecord
    from newscrawl.storage import day_files, find_articles, read_records

    now = time.time() if now is None else now
    today = int(now // SECONDS_PER_DAY)
    day_list = [_day((today - n) * SECONDS_PER_DAY) for n in range(days - 1, -1, -1)]
    since = (today - days + 1) * SECONDS_PER_DAY
    counts: dict[str, dict[str, dict[str, int]]] = {}  # site -> day -> state -> n

    def add(site: str, day: str, state: str, n: int = 1) -> None:
        if day in day_list and n:
            per_day = counts.setdefault(site, {}).setdefault(day, {})
            per_day[state] = per_day.get(state, 0) + n

    unreadable_store = 0
    for day, path in day_files(store_dir, since_day=day_list[0]):
        try:
            for _, record in read_records(path):
                add(str(record.get("site") or "?"), day, "stored")
        except OSError:
            unreadable_store += 1

    log = DuplicateLog(client, prefix=prefix)
    urls = [as_text(u) for u in client.zrangebyscore(log.log_key, since, "+inf")]
    records: list[dict[str, Any]] = []
    unreadable_records = 0
    raws = client.hmget(log.hash_key, urls) if urls else []
    for raw in raws:
        if raw is None:
            unreadable_records += 1
            continue
        try:
            rec = DuplicateRecord.from_stored(raw)
        except (ValueError, KeyError, TypeError):
            unreadable_records += 1
            continue
        data = {**rec.extra, "url": rec.url, "original_url": rec.original_url,
                "distance": rec.distance, "seen_at": rec.seen_at}
        records.append(data)
        add(str(data.get("site") or "?"), _day(rec.seen_at), "dropped")
    records.sort(key=lambda r: r["seen_at"], reverse=True)

    runs = read_runs(client, prefix, spider)
    failed_known: set[str] = set()
    for run in runs:
        if run["day"] in day_list:
            failed_known.add(run["day"])
            for site, paths in run["figures"].items():
                add(site, run["day"], "failed", paths.get("failed", 0))

    shown = records[:pairs]
    texts = find_articles(store_dir, {r["original_url"] for r in shown}
                          | {r["url"] for r in shown})
    duplicates = []
    for shown_rec in shown:
        duplicates.append({"record": shown_rec, "original": texts.get(shown_rec["original_url"]),
                           "copy": texts.get(shown_rec["url"])})

    last = _last_run(runs)
    return {
        "generated": now,
        "days": day_list,
        "sites": {site: counts[site] for site in sorted(counts)},
        "failed_known_days": sorted(failed_known),
        "duplicates": duplicates,
        "duplicates_total": len(records),
        "late_originals": [r for r in records if late_original(r)][:MAX_LATE],
        "last_run": last,
        "store": str(store_dir),
        "problems": {"unreadable_store_files": unreadable_store,
                     "unreadable_duplicate_records": unreadable_records},
    }


def _last_run(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest run: its end and the sites it fetched no page of."""
    if not runs:
        return None
    run = runs[-1]
    info = run["info"]
    try:
        names = [str(s) for s in json.loads(info["run:sites"])]
    except (KeyError, ValueError, TypeError):
        names = sorted(run["figures"])
    silent = []
    for site in names:
        paths = run["figures"].get(site, {})
        if not _pages(paths):
            silent.append({"site": site, "failed": paths.get("failed", 0),
                           "causes": {p.partition("/")[2]: n for p, n in sorted(paths.items())
                                      if p.startswith("failed_by/") and n}})
    try:
        ended: float | None = float(info["run:ended"])
    except (KeyError, ValueError):
        ended = None
    said = {s["site"] for s in silent}  # their warning is the list of silent sites
    warned = {site: texts for site, texts in run_warnings(info).items() if site not in said}
    return {"id": run["id"], "ended": ended, "exit_code": info.get("run:exit_code"),
            "reason": info.get("run:reason"), "sites": names, "fetched_nothing": silent,
            "warnings": warned}


# --- HTML ------------------------------------------------------------------------------------
def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","PingFang SC",
 sans-serif;margin:0 auto;max-width:1180px;padding:16px 24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:4px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#666}.note{color:#555;font-size:13px;margin:4px 0 10px}
.sites{display:flex;flex-wrap:wrap;gap:12px}
.site{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 10px}
.site h3{font-size:15px;margin:0 0 4px}.legend span{margin-right:12px;font-size:12px}
.sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
table{border-collapse:collapse;font-size:13px}td,th{padding:2px 6px;text-align:right}
th{background:#eee}td:first-child,th:first-child{text-align:left}
.pair{background:#fff;border:1px solid #ddd;border-radius:6px;margin:12px 0;padding:8px 12px}
.pair .head{font-size:13px;color:#444;margin-bottom:6px}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.col{border:1px solid #eee;padding:6px 8px;max-height:360px;overflow:auto;white-space:pre-wrap;
 word-break:break-word}.col h4{margin:0 0 4px;font-size:13px;white-space:normal}
.col .rec{white-space:normal;font-size:13px}
del{background:#ffd7d5;text-decoration:line-through}ins{background:#ccf0d0;text-decoration:none}
.missing{color:#8a6d00;background:#fff8e1;padding:4px 6px;font-size:13px;white-space:normal}
table.texts td,table.texts th{text-align:left;vertical-align:top}
.ok{color:#2e7d32}.bad{color:#c62828}a{color:#1a4f9c;word-break:break-all}
"""


def _chart(site: str, days: list[str], per_day: Mapping[str, Mapping[str, int]],
           failed_known: set[str]) -> str:
    """A small grouped bar chart: per day, stored / dropped / failed."""
    top = max([1] + [n for d in per_day.values() for n in d.values()])
    bar, gap, height = 9, 8, 90
    width = len(days) * (3 * bar + gap) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 34}" '
             f'role="img" aria-label="{_e(site)}: articles per day">']
    parts.append(f'<text x="0" y="10" font-size="10" fill="#666">{top}</text>'
                 f'<line x1="24" y1="{height + 12}" x2="{width}" y2="{height + 12}" '
                 'stroke="#999"/>')
    for i, day in enumerate(days):
        x0 = 28 + i * (3 * bar + gap)
        for j, state in enumerate(_STATE):
            n = per_day.get(day, {}).get(state, 0)
            known = state != "failed" or day in failed_known
            h = round(height * n / top) if known else 0
            label = f"{day} {state}: {n if known else 'not known'}"
            parts.append(
                f'<rect x="{x0 + j * bar}" y="{height + 12 - h}" width="{bar - 1}" '
                f'height="{max(h, 1 if known and n else 0)}" fill="{_COLOURS[state]}">'
                f"<title>{_e(label)}</title></rect>")
        parts.append(f'<text x="{x0}" y="{height + 26}" font-size="10" fill="#444">'
                     f"{_e(day[5:])}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _site_table(days: list[str], per_day: Mapping[str, Mapping[str, int]],
                failed_known: set[str]) -> str:
    rows = ["<table><tr><th>day</th>" + "".join(f"<th>{s}</th>" for s in _STATE) + "</tr>"]
    for day in reversed(days):
        d = per_day.get(day, {})
        failed = str(d.get("failed", 0)) if day in failed_known else "–"
        rows.append(f"<tr><td>{_e(day)}</td><td>{d.get('stored', 0)}</td>"
                    f"<td>{d.get('dropped', 0)}</td><td>{_e(failed)}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def mark_differences(a: str, b: str) -> tuple[str, str]:
    """Escaped HTML of ``a`` and ``b`` with what only one of them has marked: ``<del>`` in
    ``a``, ``<ins>`` in ``b`` (by character: Chinese text has no spaces between words)."""
    a, b = a[:MAX_TEXT_CHARS], b[:MAX_TEXT_CHARS]
    left, right = [], []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            left.append(_e(a[i1:i2]))
            right.append(_e(b[j1:j2]))
            continue
        if i2 > i1:
            left.append(f"<del>{_e(a[i1:i2])}</del>")
        if j2 > j1:
            right.append(f"<ins>{_e(b[j1:j2])}</ins>")
    return "".join(left), "".join(right)


def _link(url: Any) -> str:
    text = _e(url)
    safe = isinstance(url, str) and url.lower().startswith(("http://", "https://"))
    return f'<a href="{text}" rel="noreferrer">{text}</a>' if safe else text


def _record_fields(rec: Mapping[str, Any]) -> str:
    rows = [("title", rec.get("title")), ("url", rec.get("url")),
            ("distance", rec.get("distance")), ("published", rec.get("published")),
            ("dropped", _iso(rec.get("seen_at")))]
    return "<div class='rec'>" + "<br>".join(
        f"<b>{_e(name)}</b>: {_link(v) if name == 'url' else _e(v)}"
        for name, v in rows if v not in (None, "")) + "</div>"


def _pair(item: Mapping[str, Any]) -> str:
    rec, original, copy = item["record"], item["original"], item["copy"]
    late = late_original(rec)
    head = (f"<div class='head'>{_e(_iso(rec['seen_at']))} · site <b>{_e(rec.get('site'))}</b>"
            f" · distance {_e(rec.get('distance'))}"
            + (" · <b class='bad'>late original: the dropped copy was published first</b>"
               if late else "") + "</div>")
    o_text = str(original.get("text") or "") if original else ""
    o_title = (original or {}).get("title") or rec.get("original_title")
    right_head = (f"<h4>stored: {_e(o_title)}<br>{_link(rec['original_url'])}"
                  + (f" · published {_e(rec.get('original_published'))}"
                     if rec.get("original_published") else "") + "</h4>")
    if copy is not None and original is not None:
        left_html, right_html = mark_differences(str(copy.get("text") or ""), o_text)
        left = (f"<h4>recorded as the near-duplicate: {_e(copy.get('title'))}<br>"
                f"{_link(rec['url'])}</h4>{left_html}")
        right = right_head + right_html
    else:
        left = ("<h4>dropped copy</h4>" + _record_fields(rec)
                + "<p class='missing'>The text of a dropped near-duplicate is not kept (the "
                "duplicate log records its title, URL, distance and dates); the stored text it "
                "was matched to is on the right.</p>")
        right = right_head + (_e(o_text[:MAX_TEXT_CHARS]) if original is not None else
                              "<p class='missing'>Not found in the article store (another "
                              "store directory, or its day file was removed).</p>")
    return (f"<div class='pair'>{head}<div class='cols'><div class='col'>{left}</div>"
            f"<div class='col'>{right}</div></div></div>")


def render_html(report: Mapping[str, Any]) -> str:
    days = report["days"]
    known = set(report["failed_known_days"])
    out = [
        "<!DOCTYPE html><html lang='zh'><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; img-src data:\">",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>newscrawl report {_e(days[0])} – {_e(days[-1])}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>newscrawl report: {_e(days[0])} to {_e(days[-1])}</h1>",
        f"<p class='meta'>generated {_e(_iso(report['generated']))} · article store "
        f"{_e(report['store'])} · {len(report['sites'])} site(s) · "
        f"{report['duplicates_total']} near-duplicate(s) dropped</p>",
    ]
    last = report["last_run"]
    out.append("<h2 id='last-run'>Last run</h2>")
    if last is None:
        out.append("<p>No run's figures in Redis (it keeps them a day after each run).</p>")
    else:
        code = last["exit_code"]
        out.append(
            f"<p>run <b>{_e(last['id'])}</b>: "
            + (f"ended {_e(_iso(last['ended']))}, exit code {_e(code)} "
               f"({_e(exit_meaning(code, last['reason']))})"
               if last["ended"] is not None else "still running, or stopped without ending "
               "(killed)") + "</p>")
        silent = last["fetched_nothing"]
        if silent:
            out.append("<p class='bad'>Sites whose last run fetched no page:</p><ul>")
            for s in silent:
                causes = ", ".join(f"{_e(c)} {n}" for c, n in s["causes"].items())
                out.append(f"<li class='silent'><b>{_e(s['site'])}</b>: {s['failed']} "
                           f"failed" + (f" ({causes})" if causes else "") + "</li>")
            out.append("</ul>")
        else:
            out.append("<p class='ok'>Every site of the last run fetched pages.</p>")
        if last["warnings"]:
            out.append("<p class='bad'>Warnings of the last run:</p><ul>")
            for site, texts in last["warnings"].items():
                out += [f"<li class='warned'><b>{_e(site)}</b>: {_e(t)}</li>" for t in texts]
            out.append("</ul>")
    out.append("<h2 id='per-site'>Articles per site and day</h2><div class='legend'>"
               + "".join(f"<span><i class='sw' style='background:{_COLOURS[s]}'></i>{s}</span>"
                         for s in _STATE)
               + "</div><p class='note'>stored: the article store's day files; dropped: "
               "near-duplicates by the day they were dropped; failed: failed fetches and unusable "
               "pages, each run's summed (a page that failed in three runs of a day counts three; "
               "it is tried again until it has failed on NEWSCRAWL_MAX_ATTEMPTS days), from "
               "the runs' figures Redis keeps a day after each run (– where no longer "
               "known).</p><div class='sites'>")
    if not report["sites"]:
        out.append("<p>Nothing stored, dropped or failed in these days.</p>")
    for site, per_day in report["sites"].items():
        out.append(f"<div class='site'><h3>{_e(site)}</h3>"
                   f"{_chart(site, days, per_day, known)}{_site_table(days, per_day, known)}"
                   "</div>")
    out.append("</div>")
    out.append("<h2 id='late'>Late originals</h2>")
    late = report["late_originals"]
    if not late:
        out.append("<p>None: no dropped copy is known to have been published before the text "
                   "it was matched to.</p>")
    else:
        out.append("<p class='note'>Dropped near-duplicates published before the stored text "
                   "they were matched to: the store keeps the later copy.</p>"
                   "<table class='texts'>"
                   "<tr><th>site</th><th>dropped copy</th><th>published</th>"
                   "<th>stored</th><th>published</th></tr>")
        for rec in late:
            out.append(f"<tr class='late'><td>{_e(rec.get('site'))}</td><td>{_e(rec.get('title'))}"
                       f"<br>{_link(rec['url'])}</td><td>{_e(rec.get('published'))}</td>"
                       f"<td>{_link(rec['original_url'])}</td>"
                       f"<td>{_e(rec.get('original_published'))}</td></tr>")
        out.append("</table>")
    out.append("<h2 id='duplicates'>Dropped near-duplicates</h2>")
    pairs = report["duplicates"]
    if not pairs:
        out.append("<p>No near-duplicate dropped in these days.</p>")
    else:
        more = report["duplicates_total"] - len(pairs)
        out.append(f"<p class='note'>The newest {len(pairs)}"
                   + (f" ({more} more not shown: --pairs)" if more > 0 else "")
                   + ", each beside the stored text it was matched to. Where both texts are "
                   "stored, <del>struck</del> text is only in the left one and "
                   "<ins>green</ins> text only in the right one.</p>")
        out.extend(_pair(item) for item in pairs)
    problems = report["problems"]
    if any(problems.values()):
        out.append(f"<p class='bad'>Skipped: {problems['unreadable_store_files']} unreadable "
                   f"store file(s), {problems['unreadable_duplicate_records']} unreadable "
                   "duplicate record(s).</p>")
    out.append("</body></html>\n")
    return "\n".join(out)


def _write(name: str, text: str) -> None:
    if name == "-":
        sys.stdout.write(text)
        return
    path = Path(name)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise CliError(f"cannot write {name}: {exc.strerror or exc}") from None


def cmd_report(args: argparse.Namespace) -> int:
    from newscrawl.connection import resolve_data_dir

    store = Path(args.store_dir).expanduser() if args.store_dir else \
        resolve_data_dir(args.data_dir) / "articles"
    with open_redis(args) as client:
        report = build_report(client, args.prefix, args.spider, store, days=args.days,
                              pairs=args.pairs)
    _write(args.output, render_html(report))
    if args.output != "-":
        print(f"{args.output}: {len(report['sites'])} site(s), {len(report['days'])} day(s), "
              f"{report['duplicates_total']} near-duplicate(s) dropped, "
              f"{len(report['late_originals'])} late original(s)")
    return ExitCode.OK


def add_report(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "report", parents=[common],
        help="an HTML page of the last days: per site stored/dropped/failed, the dropped "
        "near-duplicates beside their originals, late originals, sites that fetched nothing",
        description="Write one self-contained HTML file (no network needed to view it) from "
        "the article store and the crawl's Redis.")
    p.add_argument("--days", type=positive_int, default=7, metavar="N",
                   help="days shown, today (UTC) and the days before it (default: 7)")
    p.add_argument("-o", "--output", default="newscrawl-report.html", metavar="FILE",
                   help="the HTML file written; - for standard output "
                   "(default: newscrawl-report.html)")
    p.add_argument("--spider", default="portal", help="the spider's name (default: portal)")
    p.add_argument("--store-dir", metavar="DIR",
                   help="the article store (default: <data dir>/articles, as the crawl's "
                   "NEWSCRAWL_STORE_DIR default)")
    p.add_argument("--pairs", type=positive_int, default=DEFAULT_PAIRS, metavar="N",
                   help=f"near-duplicates shown with their texts, newest first "
                   f"(default: {DEFAULT_PAIRS})")
    p.set_defaults(func=cmd_report)
