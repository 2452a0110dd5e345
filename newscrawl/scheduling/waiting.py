"""A run's article links wait until its discovery is done, then are queued oldest first; and the
order in which the near-duplicate check takes them. See
docs/design/pagination.md#articles-oldest-first-across-the-run.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, NamedTuple

from newscrawl.extract.dates import ParsedDate, date_from_text, date_from_url, without_full_dates
from newscrawl.keys import (
    CRAWL_INFLIGHT,
    CRAWL_ORDER_SEQ,
    CRAWL_QUEUE,
    CRAWL_START_URLS,
    CRAWL_START_URLS_LOCK,
    CRAWL_UNCHECKED,
    CRAWL_UNCHECKED_ARRIVED,
    CRAWL_UNCHECKED_DAY,
    CRAWL_UNCHECKED_DAYS,
    CRAWL_WAITING,
    CRAWL_WAITING_LOCK,
    CRAWL_WAITING_SINCE,
)
from newscrawl.scheduling.lua import load
from newscrawl.sitestats import MIN_RUN_STATS_TTL

if TYPE_CHECKING:
    from newscrawl.scheduling.dupefilter import RedisDupeFilter
    from newscrawl.scheduling.queue import OrderedLink

logger = logging.getLogger(__name__)

DISCOVERY_KINDS = "start list sitemap feed"
_DISCOVERING = load("discovering.lua", constants=globals())
#: turn.lua's answers
NOT_ORDERED = -1
GO = 0
WAIT = 1
_TURN = load("turn.lua", constants=globals())
_CHECKED = load("checked.lua", constants=globals())
#: how long an article's WAIT is reused, without asking Redis, while the article it waits for
#: has not been checked by this process (one checked by another worker is seen this much later)
TURN_REUSE_SECONDS = 0.25

#: the zone a time with an offset is compared in (the one Chinese portals print in their lists)
CST = timezone(timedelta(hours=8))
#: the score of a link whose date is not known: after every dated one
UNDATED = 1e12
#: list order values are below this (see :func:`list_order`)
ORDER_SPAN = 10**12
#: the lock of the worker queueing the waiting links expires after this (ms)
LOCK_MS = 60_000
#: links read per round trip when they are queued
BATCH = 1000
#: links of one day read at most for the times other sightings give day-only links
DAY_ROWS = 10_000


def date_score(when: datetime | date | ParsedDate | None) -> float:
    """The wait score of a link published at ``when``: seconds of its wall-clock time (a time
    with an offset in China Standard Time, one without as printed; a date without a time of
    day from the start of its day); :data:`UNDATED` for None."""
    if when is None:
        return UNDATED
    if isinstance(when, ParsedDate):
        if when.time is None:
            return float(when.day.toordinal() * 86400)
        when = datetime(when.day.year, when.day.month, when.day.day, *when.time, tzinfo=when.tz)
    if isinstance(when, datetime):
        if when.tzinfo is not None:
            # a time with a zone (a sitemap's, a feed's) as the wall clock list rows of Chinese
            # portals print (China Standard Time)
            when = when.astimezone(CST).replace(tzinfo=None)
        return float(when.date().toordinal() * 86400
                     + when.hour * 3600 + when.minute * 60 + when.second)
    return float(when.toordinal() * 86400)


def url_date(url: str) -> ParsedDate | None:
    """The date an article URL carries (``/2024-03-15/``, ``/2024/0315/``, ``/20240315/``,
    ``/2024/03-15/``, ``/202403/15/``, ``/2024/03/15/``, ``_20240315_``), impossible dates
    rejected."""
    return date_from_url(url)


# "11-18 10:20", "[11/18]", "11月18日 10:20": a list row's date without its year
_MONTH_DAY = re.compile(
    r"(?<![\d])(0?[1-9]|1[0-2])\s*(?:[-/.]|月)\s*([0-2]?\d|3[01])(?![\d])\s*日?"
    r"(?:\s*(\d{1,2})[:：](\d{2})(?![\d]))?")


def row_date(text: str, today: date | None = None) -> ParsedDate | None:
    """The date printed in a list row's text (beside the link): a full date, else a month and
    day (the year that puts it no later than two days from ``today``). A full date more than
    two days ahead is no date: its month and day are not read again as this year's or last."""
    if not text or not any(ch.isdigit() for ch in text):
        return None
    today = today or date.today()
    found = date_from_text(text, today)
    if found is not None:
        return found
    match = _MONTH_DAY.search(without_full_dates(text))
    if match is None:
        return None
    month, day = int(match.group(1)), int(match.group(2))
    for year in (today.year, today.year - 1):
        try:
            when = date(year, month, day)
        except ValueError:
            continue
        if (when - today).days <= 2:
            clock = None
            if match.group(3) is not None:
                hour, minute = int(match.group(3)), int(match.group(4))
                if hour <= 23 and minute <= 59:
                    clock = (hour, minute, 0)
            return ParsedDate(when, clock)
    return None


def day_only(score: float) -> int | None:
    """The day ordinal of a wait score that knew only the day (no time of day), else None."""
    if score >= UNDATED or score % 86400:
        return None
    return int(score // 86400)


def list_order(position: int) -> int:
    """The order value of a link at list ``position`` (larger: further down a newest-first
    listing, older): older links first."""
    return ORDER_SPAN - 1 - max(0, min(position, ORDER_SPAN - 1))


@dataclass(frozen=True)
class Waiting:
    """One waiting article link."""

    site: str
    url: str
    depth: int
    score: float
    rank: int
    order: int

    def member(self) -> str:
        return f"{self.rank:06d}{self.order:012d}:{self.depth}\n{self.site}\n{self.url}"

    @classmethod
    def parse(cls, member: bytes | str, score: float) -> Waiting | None:
        text = member.decode("utf-8", "surrogateescape") if isinstance(member, bytes) \
            else str(member)
        head, _, rest = text.partition("\n")
        site, _, url = rest.partition("\n")
        key, _, depth = head.partition(":")
        if not url or len(key) != 18 or not key.isdigit():
            return None
        try:
            return cls(site, url, int(depth or 1), score, int(key[:6]), int(key[6:]))
        except ValueError:
            return None


@dataclass(frozen=True)
class Release:
    """Links taken for queueing (call :meth:`ArticleWait.done` once they are queued)."""

    links: list[Waiting]
    members: list[Any]
    token: bytes
    #: the wait's bound, not the end of discovery, released them
    bound: bool


class ArticleWait:
    """The run's waiting article links in Redis (see the module docstring)."""

    def __init__(self, dupefilter: RedisDupeFilter, *, ttl: int, wait_seconds: float) -> None:
        self.df = dupefilter
        self.server = dupefilter.server
        self.ttl = max(int(ttl), MIN_RUN_STATS_TTL)  # as the walks' keys: a day after the last use
        self.wait_seconds = wait_seconds
        self._discovering = self.server.register_script(_DISCOVERING)

    def key(self, run_id: str) -> str:
        return self.df.keys(CRAWL_WAITING, run=run_id)

    def hold(self, run_id: str, links: Sequence[Waiting]) -> None:
        """Add ``links`` to the run's waiting set (a link added twice keeps one place per
        member; the scheduler queues a URL once)."""
        if not links:
            return
        key = self.key(run_id)
        since = self.df.keys(CRAWL_WAITING_SINCE, run=run_id)

        def add() -> None:
            pipe = self.server.pipeline(transaction=True)
            pipe.zadd(key, {link.member(): link.score for link in links})
            pipe.expire(key, self.ttl)
            pipe.set(since, int(time.time()), nx=True, ex=self.ttl)
            pipe.execute()

        self.df.retry.call(add, what="hold article links")

    def waiting(self, run_id: str) -> int:
        """How many links of the run wait."""
        return int(self.df.retry.call(self.server.zcard, self.key(run_id),
                                      what="waiting article links"))

    def adopt(self, run_id: str, earlier_run: str) -> int:
        """Move the links a taken-over run left waiting into ``run_id``'s set."""
        old, new = self.key(earlier_run), self.key(run_id)

        def move() -> int:
            pipe = self.server.pipeline(transaction=True)
            pipe.zcard(old)
            pipe.zunionstore(new, [new, old], aggregate="MIN")
            pipe.expire(new, self.ttl)
            pipe.delete(old, self.df.keys(CRAWL_WAITING_SINCE, run=earlier_run))
            return int(pipe.execute()[0])

        return self.df.retry.call(move, what="adopt waiting article links")

    def discovering(self) -> int:
        """How many start, list, sitemap and feed pages are queued or in flight (all workers)."""
        return int(self.df.retry.call(
            self._discovering, keys=[self.df.keys(CRAWL_QUEUE), self.df.keys(CRAWL_INFLIGHT)],
            args=[], what="discovery pages"))

    def take(self, run_id: str, *, force: bool = False) -> Release | None:
        """The run's waiting links, in order, when its discovery is done (or the wait's bound
        passed, or ``force``), under the run's release lock; None when it is not time, nothing
        waits or another worker is queueing them."""
        key = self.key(run_id)
        lock = self.df.keys(CRAWL_WAITING_LOCK, run=run_id)

        def peek() -> tuple[int, Any]:
            pipe = self.server.pipeline(transaction=False)
            pipe.zcard(key)
            pipe.get(self.df.keys(CRAWL_WAITING_SINCE, run=run_id))
            count, since = pipe.execute()
            return int(count), since

        count, since = self.df.retry.call(peek, what="waiting article links")
        if not count:
            return None
        bound = False
        if not force and self.discovering() > 0:
            started = float(since) if since is not None else time.time()
            if time.time() - started < self.wait_seconds:
                return None
            bound = True
        token = os.urandom(8)
        if not _lock(self.server, self.df.retry, lock, token, LOCK_MS):
            return None
        def read() -> list[tuple[bytes, float]]:
            return list(self.server.zrange(key, 0, BATCH - 1, withscores=True))  # type: ignore[arg-type]

        rows = self.df.retry.call(read, what="waiting article links")
        links = []
        for member, score in rows:
            link = Waiting.parse(member, float(score))
            if link is not None:
                links.append(link)
        return Release(self._timed(key, links), [member for member, _ in rows], token, bound)

    def _timed(self, key: str, links: list[Waiting]) -> list[Waiting]:
        """``links`` in order, a link known only by its day placed at the time another sighting
        of it gives that day (a list row prints the day, the site's sitemap or feed the time):
        the earliest sighting would put it at the start of its day, before the articles other
        sites published that morning."""
        days = sorted({day for link in links if (day := day_only(link.score)) is not None})
        if not days:
            return links

        def read() -> list[Any]:
            pipe = self.server.pipeline(transaction=False)
            for day in days:
                pipe.zrangebyscore(key, f"({day * 86400}", f"({(day + 1) * 86400}", start=0,
                                   num=DAY_ROWS, withscores=True)
            return list(pipe.execute())

        timed: dict[tuple[str, str], float] = {}
        for rows in self.df.retry.call(read, what="waiting article links of a day"):
            for member, score in rows:
                seen = Waiting.parse(member, float(score))
                if seen is not None:
                    timed.setdefault((seen.site, seen.url), float(score))
        if not timed:
            return links
        moved = [replace(link, score=timed.get((link.site, link.url), link.score))
                 if day_only(link.score) is not None else link for link in links]
        # as Redis orders members of one score: rank, then list order
        return sorted(moved, key=lambda link: (link.score, link.rank, link.order))

    def done(self, run_id: str, release: Release) -> None:
        """Remove the links of ``release`` (queued now) and free the lock."""
        key = self.key(run_id)
        lock = self.df.keys(CRAWL_WAITING_LOCK, run=run_id)

        def remove() -> None:
            pipe = self.server.pipeline(transaction=True)
            if release.members:
                pipe.zrem(key, *release.members)
            pipe.execute()
            if self.server.get(lock) == release.token:
                self.server.delete(lock)

        self.df.retry.call(remove, what="queued article links")

    def abandon(self, run_id: str, release: Release) -> None:
        """Free the lock without removing anything (the links were not queued)."""
        lock = self.df.keys(CRAWL_WAITING_LOCK, run=run_id)
        try:
            if self.server.get(lock) == release.token:
                self.server.delete(lock)
        except Exception:  # the lock expires by itself
            return


class CheckOrder:
    """The run's order carried into the near-duplicate check: each queued article link has an
    order number (given as the waiting links are queued); an article is checked once no
    article of another site with a lower number is still unchecked (or after ``wait``
    seconds), so the original of a story is checked, and stored, before its reprints even when
    their portals answer at different speeds. Links whose only known date was a day tie with
    every other site's of that day: there an article that names another outlet as its source
    (a reprint) also waits for the other sites' articles of that day to reach the check, and
    those naming none go first (turn.lua). A waiting article asks again and again: its WAIT is
    reused for ``TURN_REUSE_SECONDS`` unless the article it waits for is checked here first."""

    def __init__(self, server: Any, keys: Any, retry: Any, *, ttl: int) -> None:
        self.server = server
        self.keys = keys
        self.retry = retry
        self.ttl = max(int(ttl), MIN_RUN_STATS_TTL)  # as the walks' keys: a day after the last use
        self._turn = server.register_script(_TURN)
        self._checked = server.register_script(_CHECKED)
        # a waiting article's last answer, reused while what it waits for was not checked here
        # and is younger than TURN_REUSE_SECONDS: (run, member) -> (waited for, when, number)
        self._waits: dict[tuple[str, str], tuple[bytes, float, int]] = {}
        self._blocking: dict[tuple[str, bytes], set[str]] = {}

    def _key(self, run_id: str) -> str:
        return str(self.keys(CRAWL_UNCHECKED, run=run_id))

    def _keys(self, run_id: str) -> list[str]:
        return [self._key(run_id), str(self.keys(CRAWL_UNCHECKED_DAYS, run=run_id)),
                str(self.keys(CRAWL_UNCHECKED_ARRIVED, run=run_id))]

    def reserve(self, run_id: str, count: int) -> int:
        """The first of ``count`` new order numbers of the run."""
        key = self.keys(CRAWL_ORDER_SEQ, run=run_id)

        def incr() -> int:
            pipe = self.server.pipeline(transaction=True)
            pipe.incrby(key, count)
            pipe.expire(key, self.ttl)
            return int(pipe.execute()[0]) - count + 1

        return int(self.retry.call(incr, what="article order"))

    def adopt(self, run_id: str, links: Sequence[OrderedLink]) -> int:
        """Article links earlier runs queued and left (stopped, killed, a fault; their
        numbers were their own): each gets a number of this run, in their old order (by the
        run that numbered them, then its number) and before any link this run numbers, so
        they keep their order at the check. ``links``: ((run id, number), site, URL, day, timed
        day). Returns how many."""
        if not links:
            return 0
        first = self.reserve(run_id, len(links))
        ordered = sorted(links)
        done_key = f"{self._key(run_id)}:done"
        for start in range(0, len(ordered), 500):
            batch = [(site, url, first + start + i, day, timed_day)
                     for i, (_, site, url, day, timed_day)
                     in enumerate(ordered[start:start + 500])]
            self._add(run_id, batch)
            # A worker that joined the run may have met some of them already (checked with
            # no place in the order, or failed): finished() recorded those in <unchecked>:done
            # and finishes them again here; one finished after the add is taken out by itself.
            met = self._members_of(done_key, [f"{site}\n{url}" for site, url, *_ in batch])
            if met:
                self.retry.call(self._checked, keys=self._keys(run_id),
                                args=[self.ttl, *met], what="article order")
        return len(links)

    def _members_of(self, key: str, members: list[str]) -> list[str]:
        """Those of ``members`` in the set ``key``, in one round trip (SMISMEMBER would need
        Redis 6.2)."""
        def ask() -> list[Any]:
            pipe = self.server.pipeline(transaction=False)
            for member in members:
                pipe.sismember(key, member)
            return list(pipe.execute())

        flags = self.retry.call(ask, what="article order")
        return [member for member, flag in zip(members, flags, strict=True) if flag]

    def pending(self, run_id: str, site: str, url: str, number: int,
                day: int | None = None, *, timed_day: int | None = None) -> None:
        """An article link queued with its order number (and ``day``, the day ordinal when
        that was all that was known of its date, or ``timed_day``, its day when a time of day
        was known too: stored as ``t<day>``, it is among the day's articles a reprint known by
        its day alone waits for, and does not tie with them)."""
        self._add(run_id, [(site, url, number, day, timed_day)])

    def _add(self, run_id: str,
             links: Sequence[tuple[str, str, int, int | None, int | None]]) -> None:
        """(site, URL, number, day, timed day) of links, in one round trip."""
        unchecked, days, _ = self._keys(run_id)  # the arrived hash: turn.lua keeps its TTL

        def add() -> None:
            pipe = self.server.pipeline(transaction=False)
            for site, url, number, day, timed_day in links:
                member = f"{site}\n{url}"
                known = day if day is not None else timed_day
                pipe.zadd(unchecked, {member: number})
                if known is not None:
                    pipe.hset(days, member, str(day) if day is not None else f"t{timed_day}")
                    day_key = str(self.keys(CRAWL_UNCHECKED_DAY, run=run_id, day=known))
                    pipe.zadd(day_key, {member: number})
                    pipe.expire(day_key, self.ttl)
            pipe.expire(unchecked, self.ttl)
            if any(day is not None or timed_day is not None for *_, day, timed_day in links):
                pipe.expire(days, self.ttl)
            pipe.execute()

        self.retry.call(add, what="article order")

    def finished(self, run_id: str, site: str, urls: Sequence[str]) -> None:
        """The articles ``urls`` of ``site`` went through the check (or will not reach it)."""
        if urls:
            members = sorted({f"{site}\n{url}" for url in urls})
            self.retry.call(self._checked, keys=self._keys(run_id), args=[self.ttl, *members],
                            what="article order")
            for member in members:
                self._forget_wait(run_id, member)
                self._pass_on(run_id, self._blocking.pop((run_id, member.encode("utf-8")), set()))

    def _pass_on(self, run_id: str, waiting: set[str]) -> None:
        """The articles ``waiting`` waited for one checked now. By number, each one after an
        article of another site among them waits for that one (unchecked, earlier, another
        site's); the others ask Redis again: a question per site first in line, not each."""
        first: list[tuple[str, str]] = []  # (site, member): the first waiting of two sites
        known = {m: self._waits[(run_id, m)] for m in waiting if (run_id, m) in self._waits}
        for member in sorted(known, key=lambda m: known[m][2]):
            site = member.split("\n", 1)[0]
            earlier = next((m for s, m in first if s != site), None)
            if earlier is None:
                self._waits.pop((run_id, member), None)
            else:
                self._waits[(run_id, member)] = (earlier.encode(), *known[member][1:])
                self._blocking.setdefault((run_id, earlier.encode()), set()).add(member)
            if len(first) < 2 and all(s != site for s, _ in first):
                first.append((site, member))

    def _forget_wait(self, run_id: str, member: str) -> None:
        known = self._waits.pop((run_id, member), None)
        if known is not None:
            blocked = self._blocking.get((run_id, known[0]))
            if blocked is not None:
                blocked.discard(member)
                if not blocked:
                    del self._blocking[(run_id, known[0])]

    def turn(self, run_id: str, site: str, url: str, *, names_source: bool = False) -> int:
        """:data:`NOT_ORDERED` (the article has no order number), :data:`WAIT` or :data:`GO`
        (see the class docstring; ``names_source``: its page names another outlet as the
        source of its text): one Lua call, or none while a WAIT is reused (``TURN_REUSE_SECONDS``,
        until the article waited for is checked through this object)."""
        return self.turn_why(run_id, site, url, names_source=names_source)[0]

    def number(self, run_id: str, site: str, url: str) -> int | None:
        """The article's order number, as its last WAIT answer gave it (None: not waiting)."""
        known = self._waits.get((run_id, f"{site}\n{url}"))
        return known[2] if known is not None else None

    def turn_why(self, run_id: str, site: str, url: str, *, names_source: bool = False
                 ) -> tuple[int, str]:
        """:meth:`turn`, and with :data:`WAIT` the article waited for (``<site> <url>``)."""
        member = f"{site}\n{url}"
        now = time.monotonic()
        known = self._waits.get((run_id, member))
        if known is not None and now - known[1] < TURN_REUSE_SECONDS:
            answer: Any = [WAIT, known[0]]
        else:
            answer = self.retry.call(self._turn, keys=self._keys(run_id),
                                     args=[member, f"{site}\n", "s" if names_source else "n",
                                           self.ttl],
                                     what="article order")
            self._forget_wait(run_id, member)
            if isinstance(answer, list):
                waited = answer[1] if isinstance(answer[1], bytes) else str(answer[1]).encode()
                self._waits[(run_id, member)] = (waited, now, int(answer[2]))
                self._blocking.setdefault((run_id, waited), set()).add(member)
        if isinstance(answer, list):
            waited = answer[1]
            text = waited.decode("utf-8", "replace") if isinstance(waited, bytes) else str(waited)
            return int(answer[0]), text.replace("\n", " ", 1)
        return int(answer), ""


class PushedEntry(NamedTuple):
    """One URL pushed for the crawl: the site it names (None: the first site that takes it) and
    whether an article done before is fetched again (``newscrawl push --again``)."""

    url: str
    site: str | None = None
    again: bool = False


@dataclass(frozen=True)
class Pushed:
    """Entries taken from ``{prefix}:{spider}:start_urls``; call :meth:`PushedUrls.done` once
    they are scheduled."""

    entries: list[PushedEntry]
    count: int
    token: bytes
    unreadable: int


class PushedUrls:
    """URLs pushed through Redis for the crawl (scrapy-redis's ``<spider>:start_urls``): read
    in order under a lock and removed only once scheduled, so a worker killed in between
    leaves them to the next one (the dupefilter drops what was scheduled twice)."""

    BATCH = 100
    LOCK_MS = 30_000

    def __init__(self, server: Any, keys: Any, retry: Any) -> None:
        self.server = server
        self.key = str(keys(CRAWL_START_URLS))
        self.lock = str(keys(CRAWL_START_URLS_LOCK))
        self.retry = retry

    def take(self) -> Pushed | None:
        if not self.retry.call(self.server.llen, self.key, what="pushed URLs"):
            return None
        token = os.urandom(8)
        if not _lock(self.server, self.retry, self.lock, token, self.LOCK_MS):
            return None
        raw = self.retry.call(self.server.lrange, self.key, 0, self.BATCH - 1,
                              what="pushed URLs")
        entries: list[PushedEntry] = []
        unreadable = 0
        for item in raw:
            entry = parse_pushed(item)
            if entry is None:
                unreadable += 1
            else:
                entries.append(entry)
        return Pushed(entries, len(raw), token, unreadable)

    def done(self, pushed: Pushed) -> None:
        def trim() -> None:
            self.server.ltrim(self.key, pushed.count, -1)
            if self.server.get(self.lock) == pushed.token:
                self.server.delete(self.lock)

        self.retry.call(trim, what="pushed URLs")


def _lock(server: Any, retry: Any, key: str, token: bytes, ms: int) -> bool:
    """Take the lock ``key`` for ``ms``; a value there without an expiry is not a lock of the
    crawl's (they all expire): it is replaced."""
    def take() -> bool:
        if server.set(key, token, nx=True, px=ms):
            return True
        if server.pttl(key) == -1:
            server.delete(key)
            return bool(server.set(key, token, nx=True, px=ms))
        return False

    return bool(retry.call(take, what="lock"))


def parse_pushed(item: bytes | str) -> PushedEntry | None:
    """A pushed entry: a URL, or JSON ``{"url": ..., "site": ..., "again": true}`` (``site`` and
    ``again`` optional); None when unreadable."""
    text = item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item)
    text = text.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        url, site = data.get("url"), data.get("site")
        if not isinstance(url, str) or not url.strip():
            return None
        return PushedEntry(url.strip(), site if isinstance(site, str) else None,
                           data.get("again") is True)
    return PushedEntry(text) if text else None
