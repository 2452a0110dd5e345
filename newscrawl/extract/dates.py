"""Publication dates: parse the forms news pages use and print them as ISO 8601.

Handled inputs: ISO 8601 / RFC 3339 strings from metadata (``2024-03-15T10:20:00+08:00``),
numeric dates with ``-``, ``/`` or ``.`` separators, Chinese dates (``2024年03月15日 10:20``,
``2024年3月15日10时20分``) and dates inside URLs (``/2024/0315/``, ``/20240315/``, ``/2024-03-15/``,
``t20240315_``).

Time zone rule (docs/design/extraction.md): a time with an explicit offset keeps it; a time without
one gets ``+08:00`` when the page is Chinese (``assume_cst=True``, chosen by the caller from the
page text) and stays a local time without offset otherwise. A date without a time is printed as a
date (``2024-03-15``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone

__all__ = ["ParsedDate", "date_from_text", "date_from_url", "find_dates", "parse_date",
           "without_full_dates"]

_CST = timezone(timedelta(hours=8))
_MIN_YEAR = 1990

# year, month, day [time]; separators: - / . 年月日; optional weekday and time after the date.
_DATE_RE = re.compile(
    r"(?<![\d])((?:19|20)\d{2})\s*(?:[-/.]|年)\s*(\d{1,2})\s*(?:[-/.]|月)\s*(\d{1,2})(?![\d])\s*日?"
    r"(?:[T\s]*(?:星期.|周.)?\s*(?:(上午|下午|晚上|早上)\s*)?"
    r"(\d{1,2})\s*[:：时]\s*(\d{1,2})(?:\s*[:：分]\s*(\d{1,2}))?(?![\d])"
    r"(?:\.\d+)?\s*(Z|[+-]\d{2}:?\d{2}(?![\d]))?)?"
)
# year and month only ("1998年3月", "1998-3"): used for date lines only.
_URL_RE = re.compile(
    r"(?<![\d])((?:19|20)\d{2})[-/_]?(0[1-9]|1[0-2])[-/_]?(0[1-9]|[12]\d|3[01])(?![\d])"
)


@dataclass(frozen=True, slots=True)
class ParsedDate:
    """A date with optional time and offset; ``iso()`` prints it."""

    day: date
    time: tuple[int, int, int] | None = None
    tz: timezone | None = None

    def iso(self, *, assume_cst: bool = False) -> str:
        if self.time is None:
            return self.day.isoformat()
        tz = self.tz if self.tz is not None else (_CST if assume_cst else None)
        dt = datetime(self.day.year, self.day.month, self.day.day, *self.time, tzinfo=tz)
        return dt.isoformat()


def _valid_day(y: int, m: int, d: int, *, today: date | None = None) -> date | None:
    try:
        day = date(y, m, d)
    except ValueError:
        return None
    limit = (today or date.today()) + timedelta(days=2)
    if day.year < _MIN_YEAR or day > limit:
        return None
    return day


def _tz(value: str | None) -> timezone | None:
    if not value:
        return None
    if value == "Z":
        return UTC
    sign = -1 if value[0] == "-" else 1
    digits = value[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4])
    if hours > 14 or minutes > 59:
        return None
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _from_match(m: re.Match[str], today: date | None = None) -> ParsedDate | None:
    day = _valid_day(int(m.group(1)), int(m.group(2)), int(m.group(3)), today=today)
    if day is None:
        return None
    if m.group(5) is None:
        return ParsedDate(day)
    hour, minute = int(m.group(5)), int(m.group(6))
    second = int(m.group(7)) if m.group(7) else 0
    if m.group(4) in ("下午", "晚上") and hour < 12:
        hour += 12
    if hour > 23 or minute > 59 or second > 59:
        return ParsedDate(day)
    return ParsedDate(day, (hour, minute, second), _tz(m.group(8)))


def find_dates(text: str) -> list[tuple[int, ParsedDate]]:
    """All plausible dates in ``text`` with their offsets, in order."""
    out: list[tuple[int, ParsedDate]] = []
    for m in _DATE_RE.finditer(text):
        parsed = _from_match(m)
        if parsed is not None:
            out.append((m.start(), parsed))
    return out


def date_from_text(text: str, today: date | None = None) -> ParsedDate | None:
    """The first plausible date in ``text`` (no later than two days after ``today``)."""
    for m in _DATE_RE.finditer(text):
        parsed = _from_match(m, today)
        if parsed is not None:
            return parsed
    return None


def without_full_dates(text: str) -> str:
    """``text`` with every year-month-day date blanked out, plausible or not (so that a search
    for a month and day alone does not find one inside a full date)."""
    return _DATE_RE.sub(lambda m: " " * len(m.group(0)), text)


def parse_date(value: str | None) -> ParsedDate | None:
    """Parse a metadata value (ISO 8601, numeric or Chinese date); None if it holds no full date."""
    if not value:
        return None
    return date_from_text(value.strip())


def date_from_url(url: str) -> ParsedDate | None:
    """A date written in a URL path (``/2024/0315/``, ``/20240315/``, ``/2024-03-15/``...)."""
    path = url.split("://", 1)[-1]
    slash = path.find("/")
    if slash < 0:
        return None
    path = path[slash:]
    for m in _URL_RE.finditer(path):
        day = _valid_day(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if day is not None:
            return ParsedDate(day)
    return None
