"""IDF tables in jieba's format (``word idf`` per line, UTF-8), quantised to integers.

Weights are integers (``round(idf * IDF_SCALE)``) so that the fingerprint arithmetic is exact and
identical on every machine. Words missing from the table get the table's median IDF, as jieba does.
The table's digest (SHA-256 of the file bytes, first 8 hex digits) is part of the fingerprint
version.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

IDF_SCALE = 1000


def default_idf_path() -> Path:
    import jieba.analyse

    return Path(jieba.analyse.__file__).with_name("idf.txt")


@dataclass(frozen=True)
class IdfTable:
    path: str
    digest: str
    table: dict[str, int]
    median: int


class IdfFormatError(ValueError):
    pass


def load_idf(path: str | os.PathLike[str] | None = None) -> IdfTable:
    """Load a jieba-format IDF file (the bundled jieba table when ``path`` is None)."""
    p = Path(path) if path is not None else default_idf_path()
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IdfFormatError(f"{p}: IDF file is not UTF-8: {exc}") from exc
    table: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise IdfFormatError(f"{p}:{lineno}: expected 'word idf', got {line[:80]!r}")
        word, value = parts
        try:
            idf = float(value)
        except ValueError:
            raise IdfFormatError(f"{p}:{lineno}: idf {value!r} is not a number") from None
        if not (0.0 <= idf < 1e6):
            raise IdfFormatError(f"{p}:{lineno}: idf {value!r} out of range [0, 1e6)")
        table[word] = round(idf * IDF_SCALE)
    if not table:
        raise IdfFormatError(f"{p}: IDF file has no entries")
    values = sorted(table.values())
    return IdfTable(
        path=str(p),
        digest=hashlib.sha256(data).hexdigest()[:8],
        table=table,
        median=values[len(values) // 2],
    )
