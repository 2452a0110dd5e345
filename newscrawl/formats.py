"""How newscrawl writes a fingerprint (16 hex digits) and a day (days since 1970, UTC), how it
compares two publication times (an item's ``published``: ISO 8601 date or datetime), and how it
reads a Redis reply as text; a count with its noun, for messages."""

from __future__ import annotations

import time
from datetime import date, datetime

SECONDS_PER_DAY = 86400


def as_text(value: object) -> str:
    """A Redis reply (bytes, or str with ``decode_responses``) or any value as text; bytes that are
    not UTF-8 are replaced, never raised."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def plural(n: object, word: str, words: str | None = None) -> str:
    """``1 day``, ``2 days`` (``words``: the plural when it is not ``word + "s"``)."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def fingerprint_hex(value: int) -> str:
    """A 64-bit fingerprint as 16 lowercase hex digits."""
    return f"{value:016x}"


def day_number(timestamp: float) -> int:
    """Days since 1970-01-01 (UTC) of a Unix timestamp."""
    return int(timestamp // SECONDS_PER_DAY)


def today() -> int:
    """Days since 1970-01-01 (UTC)."""
    return day_number(time.time())


def _published(value: object) -> datetime | date | None:
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        if len(text) <= 10:
            return date.fromisoformat(text)
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def published_before(a: object, b: object) -> bool | None:
    """Whether publication time ``a`` is strictly before ``b`` (``published`` values); None when
    either is missing or unreadable. A date without a time, or a time without a zone against one
    with, is compared by the calendar day only."""
    x, y = _published(a), _published(b)
    if x is None or y is None:
        return None
    if isinstance(x, datetime) and isinstance(y, datetime) and \
            (x.tzinfo is None) == (y.tzinfo is None):
        return x < y
    day_x = x.date() if isinstance(x, datetime) else x
    day_y = y.date() if isinstance(y, datetime) else y
    return day_x < day_y
