"""Precision and recall of a fingerprinter on labelled pairs, per Hamming threshold and per kind:
``newscrawl eval PAIRS.jsonl`` (docs/cli.md), to choose ``NEWSCRAWL_MAX_DISTANCE``.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from newscrawl.errors import ConfigError
from newscrawl.simhash.core import hamming

THRESHOLDS = tuple(range(9))
CHOSEN = 3
# Duplicate pairs are also scored by the length (characters) of their first text: one sentence
# is a larger share of a short text, so recall depends on length.
LENGTH_BOUNDS = (500, 1000, 2000)


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    duplicate: bool
    kind: str

    def to_json(self) -> str:
        obj = {"a": self.a, "b": self.b, "duplicate": self.duplicate, "kind": self.kind}
        return json.dumps(obj, ensure_ascii=False)


class PairFormatError(ConfigError):
    """A malformed pair, its message naming the file and line."""


def parse_pair(obj: object, where: str) -> Pair:
    if not isinstance(obj, dict):
        raise PairFormatError(f"{where}: expected a JSON object")
    a, b, dup, kind = obj.get("a"), obj.get("b"), obj.get("duplicate"), obj.get("kind", "")
    if not isinstance(a, str) or not isinstance(b, str):
        raise PairFormatError(f"{where}: 'a' and 'b' must be strings")
    if not isinstance(dup, bool):
        raise PairFormatError(f"{where}: 'duplicate' must be true or false")
    if not isinstance(kind, str):
        raise PairFormatError(f"{where}: 'kind' must be a string")
    return Pair(a, b, dup, kind or ("duplicate" if dup else "negative"))


def read_pairs(path: str | os.PathLike[str]) -> Iterator[Pair]:
    """Pairs of a JSONL file; a malformed line raises PairFormatError naming file and line."""
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PairFormatError(f"{path}:{n}: not JSON: {exc}") from exc
            yield parse_pair(obj, f"{path}:{n}")


class SupportsFingerprint(Protocol):
    def fingerprint(self, text: str) -> int | None: ...


@dataclass(frozen=True)
class ThresholdRow:
    threshold: int
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0


@dataclass(frozen=True)
class KindRow:
    kind: str
    duplicate: bool
    pairs: int
    matched: int  # distance <= chosen threshold
    no_fingerprint: int
    median_distance: float | None
    p95_distance: float | None

    @property
    def rate(self) -> float:
        return self.matched / self.pairs if self.pairs else 0.0


@dataclass(frozen=True)
class LengthRow:
    low: int  # first text's length in characters: low <= length < high (None: no upper bound)
    high: int | None
    pairs: int  # duplicate pairs
    matched: int  # distance <= chosen threshold

    @property
    def label(self) -> str:
        return f"{self.low:,}-{self.high - 1:,}" if self.high is not None else f">= {self.low:,}"

    @property
    def recall(self) -> float:
        return self.matched / self.pairs if self.pairs else 0.0


@dataclass
class EvalReport:
    name: str
    thresholds: list[ThresholdRow]
    kinds: list[KindRow]
    chosen: int = CHOSEN
    positives: int = 0
    negatives: int = 0
    texts: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    lengths: list[LengthRow] = field(default_factory=list)

    def at(self, threshold: int) -> ThresholdRow:
        return next(r for r in self.thresholds if r.threshold == threshold)


def _quantile(values: Sequence[int], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return float(s[min(len(s) - 1, int(q * len(s)))])


def evaluate(
    pairs: Iterable[Pair],
    fingerprinter: SupportsFingerprint,
    *,
    thresholds: Sequence[int] = THRESHOLDS,
    chosen: int = CHOSEN,
    name: str | None = None,
) -> EvalReport:
    """Fingerprint every distinct text once, then score all pairs."""
    pairs = list(pairs)
    cache: dict[str, int | None] = {}
    start = time.perf_counter()
    for p in pairs:
        for text in (p.a, p.b):
            if text not in cache:
                cache[text] = fingerprinter.fingerprint(text)
    seconds = time.perf_counter() - start
    distances: list[int | None] = []
    for p in pairs:
        fa, fb = cache[p.a], cache[p.b]
        distances.append(None if fa is None or fb is None else hamming(fa, fb))
    rows = []
    for k in thresholds:
        tp = fp = fn = tn = 0
        for p, d in zip(pairs, distances, strict=True):
            hit = d is not None and d <= k
            if p.duplicate:
                tp, fn = tp + hit, fn + (not hit)
            else:
                fp, tn = fp + hit, tn + (not hit)
        rows.append(ThresholdRow(k, tp, fp, fn, tn))
    groups: dict[tuple[bool, str], list[int | None]] = defaultdict(list)
    for p, d in zip(pairs, distances, strict=True):
        groups[(p.duplicate, p.kind)].append(d)
    kinds = []
    for (dup, kind), ds in sorted(groups.items(), key=lambda kv: (not kv[0][0], kv[0][1])):
        known = [d for d in ds if d is not None]
        kinds.append(
            KindRow(
                kind=kind,
                duplicate=dup,
                pairs=len(ds),
                matched=sum(1 for d in known if d <= chosen),
                no_fingerprint=len(ds) - len(known),
                median_distance=_quantile(known, 0.5),
                p95_distance=_quantile(known, 0.95),
            )
        )
    edges = (0, *LENGTH_BOUNDS)
    lengths = []
    for low, high in zip(edges, (*LENGTH_BOUNDS, None), strict=True):
        ds = [
            d
            for p, d in zip(pairs, distances, strict=True)
            if p.duplicate and low <= len(p.a) and (high is None or len(p.a) < high)
        ]
        if ds:
            matched = sum(1 for d in ds if d is not None and d <= chosen)
            lengths.append(LengthRow(low, high, len(ds), matched))
    return EvalReport(
        name=name or str(getattr(fingerprinter, "version", type(fingerprinter).__name__)),
        lengths=lengths,
        thresholds=rows,
        kinds=kinds,
        chosen=chosen,
        positives=sum(p.duplicate for p in pairs),
        negatives=sum(not p.duplicate for p in pairs),
        texts=len(cache),
        seconds=seconds,
    )


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"


def format_report(report: EvalReport) -> str:
    """Markdown: a threshold table and a per-kind table at the chosen threshold."""
    lines = [
        f"Fingerprinter: `{report.name}`",
        "",
        f"{report.positives} duplicate pairs, {report.negatives} non-duplicate pairs, "
        f"{report.texts} distinct texts fingerprinted in {report.seconds:.2f} s.",
        "",
        "| Hamming <= | precision | recall | TP | FP | FN |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report.thresholds:
        mark = " **(chosen)**" if r.threshold == report.chosen else ""
        lines.append(
            f"| {r.threshold}{mark} | {r.precision:.4f} | {r.recall:.4f} "
            f"| {r.tp} | {r.fp} | {r.fn} |"
        )
    lines += [
        "",
        f"Per kind at Hamming <= {report.chosen} (duplicates: recall; non-duplicates: "
        "false-positive rate):",
        "",
        "| kind | duplicate | pairs | matched | rate | no fingerprint | median d | p95 d |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for k in report.kinds:
        lines.append(
            f"| {k.kind} | {'yes' if k.duplicate else 'no'} | {k.pairs} | {k.matched} | "
            f"{k.rate:.3f} | {k.no_fingerprint} | {_fmt(k.median_distance)} | "
            f"{_fmt(k.p95_distance)} |"
        )
    if report.lengths:
        lines += [
            "",
            f"Duplicates by the length of the first text, at Hamming <= {report.chosen}:",
            "",
            "| characters | pairs | matched | recall |",
            "|---|---:|---:|---:|",
        ]
        lines += [
            f"| {r.label} | {r.pairs} | {r.matched} | {r.recall:.3f} |" for r in report.lengths
        ]
    lines += [f"- {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def run_eval(
    path: str | os.PathLike[str],
    *,
    idf_file: str | None = None,
) -> str:
    """``newscrawl eval PAIRS.jsonl``: evaluate the default fingerprinter (optionally with another
    IDF table), markdown out.

    Raises PairFormatError (a ValueError naming file and line) for a malformed pairs file.
    """
    from newscrawl.simhash import get_fingerprinter

    fp = get_fingerprinter(idf_file=idf_file)
    return format_report(evaluate(read_pairs(path), fp))
