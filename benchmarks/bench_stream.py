"""Score the near-duplicate decision on a stream of make_stream.py, as a crawl meets it.

Recall, precision, wrong drops by kind. Scores and figures:
docs/benchmarks.md#make_streampy-bench_streampy.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import REPO

LENGTH_BANDS = [(0, 200), (200, 500), (500, 1000), (1000, 2000), (2000, 10**9)]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# --- the run -----------------------------------------------------------------------------------
def run_cli(stream_file: Path,
            newscrawl: Sequence[str] | None = None) -> tuple[list[dict[str, Any]], float]:
    """``newscrawl dedup`` of the stream on a fresh data dir.

    ``newscrawl``: the command to run (default: ``python -m newscrawl.cli`` of this repository)."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    if newscrawl is None:
        command, cwd = [sys.executable, "-m", "newscrawl.cli"], str(REPO)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    else:
        command, cwd = list(newscrawl), None
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        (Path(tmp) / "data").mkdir()
        cmd = [*command, "dedup", "--data-dir", str(Path(tmp) / "data"),
               "--jsonl", str(stream_file.resolve())]
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, cwd=cwd or tmp, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} exited {done.returncode}: {done.stderr[-2000:]}")
    out = done.stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()], elapsed


# --- scoring ------------------------------------------------------------------------------------
@dataclass
class Group:
    n: int = 0
    caught: int = 0

    def row(self) -> dict[str, Any]:
        return {"n": self.n, "caught": self.caught,
                "recall": round(self.caught / self.n, 4) if self.n else None}


def _band(length: int) -> str:
    for lo, hi in LENGTH_BANDS:
        if lo <= length < hi:
            return f"{lo}-{hi - 1}" if hi < 10**9 else f">={lo}"
    return "?"


def score(stream: Sequence[dict[str, Any]], labels: Sequence[dict[str, Any]],
          rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    if len(rows) != len(stream):
        raise SystemExit(f"{len(rows)} output lines for {len(stream)} stream documents")
    label = {lab["id"]: lab for lab in labels}
    by_key: dict[str, str] = {}
    for doc in stream:
        by_key[doc["id"]] = doc["id"]
        if doc.get("url"):
            by_key[doc["url"]] = doc["id"]

    def root(ident: str) -> str:
        lab = label.get(ident)
        return (lab.get("original") or ident) if lab else ident

    seen: set[str] = set()  # cluster roots with a fingerprint so far
    correct = ambiguous = catchable = no_fp = 0
    wrong: Counter[str] = Counter()
    wrong_list: list[dict[str, Any]] = []
    by_edit: dict[str, Group] = defaultdict(Group)
    by_band: dict[str, Group] = defaultdict(Group)
    by_nedits: dict[str, Group] = defaultdict(Group)
    by_single: dict[str, Group] = defaultdict(Group)
    tpl_total = 0
    for doc, row in zip(stream, rows, strict=True):
        ident = doc["id"]
        if row.get("id") != ident:
            raise SystemExit(f"output line for {row.get('id')!r} where {ident!r} was expected")
        lab = label[ident]
        fp = int(row["simhash"], 16) if row.get("simhash") else None
        r = root(ident)
        earlier = r in seen
        if fp is None:
            no_fp += 1
        kind = lab["kind"]
        target = row.get("duplicate_of")
        verdict = None
        if target is not None:
            tid = by_key.get(target)
            if tid is not None and root(tid) == r and kind == "reprint":
                verdict = "correct"
                correct += 1
            elif tid is not None and root(tid) in lab.get("near", ()):
                verdict = "ambiguous"
                ambiguous += 1
            else:
                verdict = "wrong"
                why = kind
                if kind == "reprint" and tid is not None:
                    why = "reprint matched to another article"
                wrong[why] += 1
                wrong_list.append({
                    "id": ident, "kind": kind, "source": lab.get("source"),
                    "name": lab.get("name"), "duplicate_of": tid or target,
                    "distance": row.get("distance"), "length": lab["length"],
                    "same_group": bool(tid and lab.get("group")
                                       and label.get(tid, {}).get("group") == lab.get("group")),
                })  # fmt: skip
        if kind == "reprint" and fp is not None and earlier:
            catchable += 1
            hit = verdict == "correct"
            groups = [by_edit[k] for k in lab["edit"]] + [by_band[_band(lab["length"])]]
            groups.append(by_nedits[f"{len(lab['edit'])} edit(s)"])
            if len(lab["edit"]) == 1:
                groups.append(by_single[f"only {lab['edit'][0]}"])
            groups.append(by_edit["(all reprints)"])
            for g in groups:
                g.n += 1
                g.caught += hit
        tpl_total += kind == "template" and fp is not None
        if fp is not None:
            seen.add(r)
    drops = correct + sum(wrong.values())
    templates_dropped = [w for w in wrong_list if w["kind"] == "template"]
    return {
        "documents": len(stream),
        "no_fingerprint": no_fp,
        "reprints_catchable": catchable,
        "correct_drops": correct,
        "wrong_drops": sum(wrong.values()),
        "ambiguous_drops": ambiguous,
        "recall": round(correct / catchable, 4) if catchable else None,
        "precision": round(correct / drops, 4) if drops else None,
        "wrong_by_kind": dict(wrong),
        "templates": {
            "reports": tpl_total,
            "dropped": len(templates_dropped),
            "dropped_names": [
                f"{w['name']} (d={w['distance']}, as {w['duplicate_of']})"
                for w in templates_dropped
            ],  # fmt: skip
        },
        "hard_negatives_dropped": [
            w for w in wrong_list if w["same_group"] and w["source"] in ("sohu_dd", "sohu_dc")
        ],  # fmt: skip
        "wrong": wrong_list,
        "by_edit": {k: g.row() for k, g in sorted(by_edit.items())},
        "by_edit_count": {k: g.row() for k, g in sorted(by_nedits.items())},
        "by_single_edit": {k: g.row() for k, g in sorted(by_single.items())},
        "by_length": {
            k: by_band[k].row() for k in (_band(lo) for lo, _ in LENGTH_BANDS) if k in by_band
        },  # fmt: skip
    }


# --- report -------------------------------------------------------------------------------------
def _f(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:g}" if x.is_integer() or x * 2 == int(x * 2) else f"{x:.3f}"
    return str(x)


def markdown(results: list[dict[str, Any]]) -> str:
    out = ["| run | docs/s | recall | precision | correct | wrong | ambiguous | templates dropped "
           "| wrong: distinct / original / reprint→other |",
           "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for res in results:
        s = res["score"]
        w = s["wrong_by_kind"]
        out.append(
            f"| {res['run']} | {res['docs_per_s']:.0f} | {_f(s['recall'])} | {_f(s['precision'])} "
            f"| {s['correct_drops']}/{s['reprints_catchable']} | {s['wrong_drops']} "
            f"| {s['ambiguous_drops']} | {s['templates']['dropped']}/{s['templates']['reports']} "
            f"| {w.get('distinct', 0)} / {w.get('original', 0)} / "
            f"{w.get('reprint matched to another article', 0)} |"
        )
    for res in results:
        s = res["score"]
        out += ["", f"### {res['run']}", "", "| reprints | n | recall |", "|---|---|---|"]
        for section in ("by_edit", "by_single_edit", "by_edit_count", "by_length"):
            for k, row in s[section].items():
                out.append(f"| {k} | {row['n']} | {_f(row['recall'])} |")
        t = s["templates"]
        out += ["", f"Template reports: {t['dropped']} of {t['reports']} dropped."]
        if t["dropped_names"]:
            out += ["", "Template reports dropped: " + "; ".join(t["dropped_names"])]
        hn = s["hard_negatives_dropped"]
        if hn:
            out += ["", "Sohu same-event partners dropped: " + "; ".join(
                f"{w['id']} as {w['duplicate_of']} (d={w['distance']})" for w in hn)]
        other = [w for w in s["wrong"] if w["kind"] != "template" and not w["same_group"]]
        if other:
            out += ["", "Other wrong drops: " + "; ".join(
                f"{w['id']} ({w['kind']}, {w['length']} chars) as {w['duplicate_of']} "
                f"(d={w['distance']})" for w in other[:40]
            ) + (f"; ... {len(other) - 40} more" if len(other) > 40 else "")]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--stream", required=True, type=Path, help="directory of make_stream.py")
    ap.add_argument("--newscrawl", help="the newscrawl command to run, e.g. 'newscrawl'"
                    " or 'env PYTHONPATH=/other/checkout python -m newscrawl.cli' (default: this "
                    "repository's, through python -m newscrawl.cli)")
    ap.add_argument("--json", type=Path, help="write the scores as JSON here")
    args = ap.parse_args(argv)
    stream = read_jsonl(args.stream / "stream.jsonl")
    labels = read_jsonl(args.stream / "labels.jsonl")
    newscrawl = shlex.split(args.newscrawl) if args.newscrawl else None
    rows, secs = run_cli(args.stream / "stream.jsonl", newscrawl)
    results = [{"run": "newscrawl dedup", "seconds": secs,
                "docs_per_s": len(stream) / secs,
                "score": score(stream, labels, rows)}]  # fmt: skip
    try:
        print(markdown(results))
    except BrokenPipeError:  # e.g. | head
        sys.stderr.close()
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
