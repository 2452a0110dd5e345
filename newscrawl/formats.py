"""How newscrawl writes a fingerprint (16 hex digits) and a day (days since 1970, UTC)."""

from __future__ import annotations

import time

SECONDS_PER_DAY = 86400


def fingerprint_hex(value: int) -> str:
    """A 64-bit fingerprint as 16 lowercase hex digits."""
    return f"{value:016x}"


def day_number(timestamp: float) -> int:
    """Days since 1970-01-01 (UTC) of a Unix timestamp."""
    return int(timestamp // SECONDS_PER_DAY)


def today() -> int:
    """Days since 1970-01-01 (UTC)."""
    return day_number(time.time())
