"""IDF tables in jieba's format (``word idf`` per line, UTF-8), quantised to integers.

Weights are integers (``round(idf * IDF_SCALE)``) so that the fingerprint arithmetic is exact and
identical on every machine. Words missing from the table get the table's median IDF, as jieba does.
The table's digest (SHA-256 of the file bytes, first 8 hex digits) is part of the fingerprint
version.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

IDF_SCALE = 1000
# Median (x IDF_SCALE) of IDF tables already validated, by the SHA-256 of their bytes: such a file
# needs no number parsing at load (about 0.1 s less start-up for jieba's 270k-entry table; a test
# recomputes the median with the careful parse). 501b70ec...: jieba 0.42.1's analyse/idf.txt.
_KNOWN_MEDIANS = {
    "501b70ec56c34d90f3f590f1918ca4b1bd617d5b46cd99bd6d17c7de6e4f80ed": 11955,
}


def default_idf_path() -> Path:
    """jieba's bundled table (found without importing jieba.analyse, which is slow to import)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("jieba is not installed: no default IDF table")
    return Path(next(iter(spec.submodule_search_locations))) / "analyse" / "idf.txt"


@dataclass(frozen=True)
class IdfTable:
    path: str
    digest: str
    raw: dict[str, str]  # word -> idf as written (converted on lookup: loading stays fast)
    median: int

    def get(self, word: str) -> int:
        """``round(idf * IDF_SCALE)`` of ``word``, the median for unknown words."""
        value = self.raw.get(word)
        return self.median if value is None else round(float(value) * IDF_SCALE)


class IdfFormatError(ValueError):
    pass


def load_idf(path: str | os.PathLike[str] | None = None) -> IdfTable:
    """Load a jieba-format IDF file (the bundled jieba table when ``path`` is None).

    Lines are ``word idf``; blank lines and lines starting with ``#`` are skipped. Any other line
    that is not exactly two fields with a number in [0, 1e6) raises IdfFormatError (file:line).
    """
    p = Path(path) if path is not None else default_idf_path()
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IdfFormatError(f"{p}: IDF file is not UTF-8: {exc}") from exc
    sha = hashlib.sha256(data).hexdigest()
    known = _KNOWN_MEDIANS.get(sha)
    if known is not None:  # the same bytes were validated before: no number parsing
        fields = text.split()
        return IdfTable(
            path=str(p),
            digest=sha[:8],
            raw=dict(zip(fields[::2], fields[1::2], strict=True)),
            median=known,
        )
    raw: dict[str, str] = {}
    values: list[float] = []
    # Fast path for a clean file (no blank or comment lines): one split, validated by counts.
    fields = text.split()
    n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if not text.startswith("#") and "\n#" not in text and len(fields) == 2 * n_lines:
        raw = dict(zip(fields[::2], fields[1::2], strict=True))
        try:
            values = list(map(float, raw.values()))
        except ValueError:
            values = []
        if values and not (0.0 <= min(values) and max(values) < 1e6):
            values = []
    if not values:  # careful line-by-line parse; raises IdfFormatError on the first bad line
        raw = _parse_lines(p, text)
        values = [float(v) for v in raw.values()]
    if not values:
        raise IdfFormatError(f"{p}: IDF file has no entries")
    values.sort()
    return IdfTable(
        path=str(p),
        digest=sha[:8],
        raw=raw,
        median=round(values[len(values) // 2] * IDF_SCALE),
    )


def _parse_lines(p: Path, text: str) -> dict[str, str]:
    raw: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) != 2:
            raise IdfFormatError(f"{p}:{lineno}: expected 'word idf', got {line[:80]!r}")
        try:
            idf = float(parts[1])
        except ValueError:
            raise IdfFormatError(f"{p}:{lineno}: idf {parts[1]!r} is not a number") from None
        if not (0.0 <= idf < 1e6):
            raise IdfFormatError(f"{p}:{lineno}: idf {parts[1]!r} out of range [0, 1e6)")
        raw[parts[0]] = parts[1]
    return raw
