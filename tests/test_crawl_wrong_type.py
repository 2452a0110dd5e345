"""A key of the wrong type stops the crawl wherever it is met, and loses nothing.

For each place a crawl talks to Redis (docs/redis-keys.md), a value of another type is planted
at its key: a real ``scrapy crawl portal`` on a real redis-server then exits 3 with one CRITICAL
line naming the refusal, whether the key is met by the scheduler, the spider's callback, a
middleware, an extension, a signal handler or a pipeline; and once the key is deleted, the next
run stores every article exactly once (docs/operations.md, "Faults").

The cases share one mock portal and one redis-server (each its own ``NEWSCRAWL_REDIS_PREFIX``
and data directory) and run in parallel, once for the test session (``pytest -n`` included); each
case's test reads its result.
Keys whose name holds the run id (``robots:{run}``, ``walk:{run}:{walk}``...) are planted while
the run runs, as soon as its run marker names it. :func:`test_every_key_of_the_docs_has_a_case`
fails when docs/redis-keys.md documents a key no case plants.

Marked ``slow`` (``pytest -m "not slow"`` leaves it out); ``WRONGTYPE_CASES=seen-shard,walk`` runs
only the cases named, while working on one.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from crawlrun import REPO, CrawlResult, once_per_session, run_crawl, stored_urls
from mockportal import DailyPortal, MockPortal
from redisserver import RedisServer

pytestmark = pytest.mark.slow

SPIDER = "portal"
HOST = "127.0.0.1"
SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS_PER_DOMAIN=8", "RETRY_TIMES=0",
            "NEWSCRAWL_REDIS_RETRY_SECONDS=5", "NEWSCRAWL_FINGERPRINT_WORKERS=0")
#: the shared AutoThrottle delay (slots:{host}:throttle) is only kept with AutoThrottle on
THROTTLED = ("AUTOTHROTTLE_ENABLED=True", "AUTOTHROTTLE_START_DELAY=0",
             "AUTOTHROTTLE_MAX_DELAY=0.2", "CONCURRENT_REQUESTS_PER_DOMAIN=8", "RETRY_TIMES=0",
             "NEWSCRAWL_REDIS_RETRY_SECONDS=5", "NEWSCRAWL_FINGERPRINT_WORKERS=0")
PARALLEL = 4


def fp8(url: str) -> bytes:
    from scrapy import Request
    from scrapy.utils.request import RequestFingerprinter

    return bytes(RequestFingerprinter().fingerprint(Request(url)))[:8]


def wrong_type(client: Any, key: str, string_key: bool = False) -> str:
    """Put a value of another type than newscrawl's at ``key``: a list where it keeps a string,
    else a string."""
    client.delete(key)
    if string_key:
        client.rpush(key, "oops")
    else:
        client.set(key, "oops")
    return key


@dataclass
class Env:
    """What a case plants against: the prefix, the portal, and (during the run) the run id."""

    client: Any
    prefix: str
    daily: DailyPortal
    run: str = ""

    def key(self, name: str) -> str:
        return f"{self.prefix}:{SPIDER}:{name}"

    def walk(self) -> str:
        return fp8(self.daily.portal.url("/")).hex()


Plant = Callable[[Env], list[str]]


@dataclass
class Case:
    #: the docs/redis-keys.md keys it plants a wrong type at (or covers, see GROUPED)
    keys: tuple[str, ...]
    plant: Plant | None
    #: planted once the run marker names the run (the key's name holds the run id)
    during_run: bool = False
    settings: tuple[str, ...] = SETTINGS
    #: a project component meeting the refusal (tests/faultcomponents.py), in the first run only
    component: tuple[str, ...] = ()
    #: Scrapy logs the fault as a spider error first (raised where no middleware catches it)
    spider_error: bool = False
    #: the crawl stops (exit code 3); False: no command meets the wrong type, the crawl goes on
    stops: bool = True
    #: crawl two sites (the run's cross-site order is only kept with more than one)
    two_sites: bool = False


def component(setting: str, name: str, order: int = 500) -> tuple[str, ...]:
    return (f'{setting}={{"faultcomponents.{name}": {order}}}',)


def crawl_key(name: str, string_key: bool = False, **fields: Any) -> Plant:
    def plant(env: Env) -> list[str]:
        return [wrong_type(env.client, env.key(name.format(run=env.run, walk=env.walk(),
                                                           **fields)), string_key)]
    return plant


def seen_shard(env: Env) -> list[str]:
    # the shard of an article every run's walk checks ("done check" in the spider's callback)
    fp = fp8(env.daily.portal.url(env.daily.paths[0]))
    return [wrong_type(env.client, env.key(f"seen:{fp[:2].hex()}"))]


def index_buckets(env: Env) -> list[str]:
    # every block-0 bucket: the first article's check-and-add meets one of them
    keys = [f"{env.prefix}:simhash:0:{value:04x}" for value in range(1 << 16)]
    pipe = env.client.pipeline(transaction=False)
    for key in keys:
        pipe.set(key, "oops")
    pipe.execute()
    return keys


def index_key(name: str) -> Plant:
    def plant(env: Env) -> list[str]:
        return [wrong_type(env.client, f"{env.prefix}:{name}")]
    return plant


def deadletter(env: Env) -> list[str]:
    # an unreadable queue entry is moved to the dead-letter list when a worker pops it
    env.client.zadd(env.key("requests"), {b"\xff not json": 0})
    return [env.key("requests"), wrong_type(env.client, env.key("deadletter"))]


CASES: dict[str, Case] = {
    "requests": Case(("requests",), crawl_key("requests")),
    "requests-seq": Case(("requests:seq",), crawl_key("requests:seq", string_key=True)),
    "requests-hosts": Case(("requests:hosts",), crawl_key("requests:hosts")),
    "inflight": Case(("inflight",), crawl_key("inflight")),
    # emptied by the worker that starts a run with an empty queue: planted once it has
    "inflight-owners": Case(("inflight:owners",), crawl_key("inflight:owners"), during_run=True),
    "pending": Case(("pending",), crawl_key("pending"), during_run=True),
    "seen-shard": Case(("seen:{0000..ffff}",), seen_shard),
    "seen-pruned": Case(("seen-pruned",), crawl_key("seen-pruned", string_key=True)),
    "failures": Case(("failures",), crawl_key("failures")),
    "retry": Case(("retry",), crawl_key("retry")),
    "deadletter": Case(("deadletter",), deadletter),
    "run": Case(("run",), crawl_key("run", string_key=True)),
    "run-sites": Case(("run:sites",), crawl_key("run:sites", string_key=True)),
    "workers": Case(("workers", "worker:{id}", "beats-resumed", "beats-last"),
                    crawl_key("workers")),
    "slots": Case(("slots:{host}",), crawl_key(f"slots:{HOST}")),
    # read with PTTL only (any type): a key without a TTL, never the grant's, is replaced
    "slots-next": Case(("slots:{host}:next",), crawl_key(f"slots:{HOST}:next", string_key=True),
                       stops=False),
    "throttle": Case(("slots:{host}:throttle",),
                     crawl_key(f"slots:{HOST}:throttle", string_key=True), settings=THROTTLED),
    "robots": Case(("robots:{run}",), crawl_key("robots:{run}"), during_run=True),
    "listseen": Case(("listseen:{run}",), crawl_key("listseen:{run}"), during_run=True),
    "walk": Case(("walk:{run}:{walk}",), crawl_key("walk:{run}:{walk}"), during_run=True),
    "waiting": Case(("waiting:{run}",), crawl_key("waiting:{run}"), during_run=True),
    "waiting-since": Case(("waiting:{run}:since",),
                          crawl_key("waiting:{run}:since", string_key=True), during_run=True),
    # a lock without a TTL (never the crawl's) is replaced: the crawl goes on
    "waiting-lock": Case(("waiting:{run}:lock",),
                         crawl_key("waiting:{run}:lock", string_key=True), during_run=True,
                         stops=False),
    "order": Case(("order:{run}",), crawl_key("order:{run}", string_key=True), during_run=True,
                  two_sites=True),
    "unchecked": Case(("unchecked:{run}", "unchecked:{run}:days", "unchecked:{run}:day:{day}",
                       "unchecked:{run}:done"),
                      crawl_key("unchecked:{run}"), during_run=True, two_sites=True),
    "unchecked-arrived": Case(("unchecked:{run}:arrived",),
                              crawl_key("unchecked:{run}:arrived"), during_run=True,
                              two_sites=True),
    "start-urls": Case(("start_urls",), crawl_key("start_urls")),
    "start-urls-lock": Case(("start_urls:lock",), crawl_key("start_urls:lock", string_key=True),
                            stops=False),
    "runstats": Case(("runstats:{run}",), crawl_key("runstats:{run}"), during_run=True),
    # read and written at the end of a finished run
    "sites-first-run": Case(("sites-first-run",), crawl_key("sites-first-run", string_key=True)),
    "sites-follow-url": Case(("sites-follow-url",),
                             crawl_key("sites-follow-url", string_key=True)),
    "index-buckets": Case(("{prefix}:simhash:{block}:{value:04x}",), index_buckets),
    "index-meta": Case(("{prefix}:simhash:meta", "{prefix}:simhash:pruned:{day}"),
                       index_key("simhash:meta")),
    "duplicates": Case(("{prefix}:duplicates",), index_key("duplicates")),
    "duplicates-log": Case(("{prefix}:duplicates:log",), index_key("duplicates:log")),
    # a project's own components meeting a refusal: a downloader middleware, a spider middleware
    # further from the spider than newscrawl's (Scrapy's spider_error), an extension's handler
    "project-downloader-mw": Case((), None, component=component(
        "DOWNLOADER_MIDDLEWARES", "RefusingDownloaderMiddleware")),
    "project-spider-mw": Case((), None, spider_error=True, component=component(
        "SPIDER_MIDDLEWARES", "RefusingSpiderMiddleware")),
    "project-extension": Case((), None, component=component(
        "EXTENSIONS", "RefusingExtension")),
}

#: Keys a case covers without planting its own wrong type, and why.
GROUPED = {
    # written only for links whose one known date was a day (the mock portal's carry none), in
    # the same pipeline and Lua calls as the unchecked set, whose case plants its wrong type
    "unchecked:{run}:days": "unchecked",
    "unchecked:{run}:day:{day}": "unchecked",
    # written only for an article with no place in the run's order, in the Lua call that takes
    # members out of the unchecked set (checked.lua), whose case plants its wrong type
    "unchecked:{run}:done": "unchecked",
    # written only with SET (which replaces a value of any type) and read with EXISTS: no command
    # of newscrawl on it can meet a wrong type; the workers hash beside it is planted
    "worker:{id}": "workers",
    # read only with PTTL and written with SET; the other replaced by SET at the run's claim,
    # before any heartbeat reads it: beside the workers hash, in the same Lua calls
    "beats-resumed": "workers",
    "beats-last": "workers",
    # claimed with SET NX EX (a value of any type counts as claimed) and deleted with DEL: no
    # command can meet a wrong type; the index meta is planted instead (read at the start, as
    # the prune reads the index)
    "{prefix}:simhash:pruned:{day}": "index-meta",
}


# --- running the cases -----------------------------------------------------------------------


@dataclass
class Outcome:
    faulted: CrawlResult | None = None
    rerun: CrawlResult | None = None
    planted: list[str] = field(default_factory=list)
    stored: dict[str, int] = field(default_factory=dict)
    #: after the stopped run: requests recorded as failed (failures, retry), queue entries
    failed: int = 0
    queued: list[bytes] = field(default_factory=list)
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        runs = {name: None if run is None else [run.returncode, run.log, run.stats]
                for name, run in (("faulted", self.faulted), ("rerun", self.rerun))}
        return {**runs, "planted": self.planted, "stored": self.stored, "failed": self.failed,
                "queued": [entry.decode("latin-1") for entry in self.queued],
                "error": self.error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        runs = {name: None if data[name] is None else CrawlResult(*data[name])
                for name in ("faulted", "rerun")}
        return cls(runs["faulted"], runs["rerun"], data["planted"], data["stored"],
                   data["failed"], [entry.encode("latin-1") for entry in data["queued"]],
                   data["error"])


def plant_during_run(case: Case, env: Env, stop: threading.Event, planted: list[str]) -> None:
    """Plant ``case``'s keys as soon as the run marker names the run."""
    assert case.plant is not None
    while not stop.is_set():
        raw = env.client.get(env.key("run")) if env.client.type(env.key("run")) == b"string" \
            else None
        if raw:
            env.run = raw.decode()
            planted.extend(case.plant(env))
            return
        time.sleep(0.002)


def run_case(name: str, case: Case, base: Path, server: RedisServer, daily: DailyPortal,
             sites: Path) -> Outcome:
    outcome = Outcome()
    workdir = base / name
    workdir.mkdir()
    prefix = f"nc-{name}"
    client = server.client()
    env = Env(client, prefix, daily)
    settings = (*case.settings, f"NEWSCRAWL_REDIS_PREFIX={prefix}")
    env_vars = {"PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}"}
    try:
        stop = threading.Event()
        planter = None
        if case.during_run:
            planter = threading.Thread(target=plant_during_run,
                                       args=(case, env, stop, outcome.planted))
            planter.start()
        elif case.plant is not None:
            outcome.planted = case.plant(env)
        try:
            if case.two_sites:
                sites = sites.with_name("two-sites.toml")
            outcome.faulted = run_crawl(workdir, sites, *settings, *case.component,
                                        redis_url=server.url, timeout=90, env=env_vars)
        finally:
            stop.set()
            if planter is not None:
                planter.join()
        (workdir / "faulted.log").write_text(outcome.faulted.log, encoding="utf-8")
        for hash_key in (env.key("failures"), env.key("retry")):
            if client.type(hash_key) == b"hash":
                outcome.failed += client.hlen(hash_key)
        if client.type(env.key("requests")) == b"zset":
            outcome.queued = client.zrange(env.key("requests"), 0, -1)
        if not case.stops:
            outcome.rerun = outcome.faulted
            outcome.stored = dict(stored_urls(workdir))
            return outcome
        for i in range(0, len(outcome.planted), 4096):
            client.delete(*outcome.planted[i:i + 4096])
        outcome.rerun = run_crawl(workdir, sites, *settings, redis_url=server.url, timeout=90)
        (workdir / "rerun.log").write_text(outcome.rerun.log, encoding="utf-8")
        outcome.stored = dict(stored_urls(workdir))
    except Exception as exc:  # reported by the case's test
        outcome.error = f"{type(exc).__name__}: {exc}"
    finally:
        client.close()
    return outcome


@pytest.fixture(scope="module")
def daily_portal() -> Iterator[DailyPortal]:
    portal = MockPortal("127.0.0.1").start()
    try:
        daily = DailyPortal(portal, per_page=8, home=5)
        daily.publish(20)
        daily.publish(3, reprints=[daily.paths[0]])  # one reprint: a near-duplicate record
        yield daily
    finally:
        portal.stop()


def run_cases(base: Path, daily_portal: DailyPortal) -> dict[str, Any]:
    """Every case (or those ``WRONGTYPE_CASES`` names), ``PARALLEL`` at a time, and the portal's
    URLs the tests expect: JSON-able, for :func:`crawlrun.once_per_session`."""
    sites = base / "sites.toml"
    sites.write_text(daily_portal.sites_toml(), encoding="utf-8")
    base_url = daily_portal.portal.base
    (base / "two-sites.toml").write_text(
        daily_portal.sites_toml() + daily_portal.sites_toml(name="more").replace(
            f'start_urls = ["{base_url}/"]', f'start_urls = ["{base_url}/list/2.html"]'),
        encoding="utf-8")
    with RedisServer(base / "redis", persist=False) as server:
        with ThreadPoolExecutor(PARALLEL) as pool:
            only = os.environ.get("WRONGTYPE_CASES", "").split(",")
            futures = {name: pool.submit(run_case, name, case, base, server, daily_portal, sites)
                       for name, case in CASES.items() if only == [""] or name in only}
            outcomes = {name: future.result() for name, future in futures.items()}
    return {"start_url": daily_portal.portal.url("/"),
            "article_urls": [daily_portal.portal.url(p) for p in daily_portal.paths],
            "outcomes": {name: outcome.to_json() for name, outcome in outcomes.items()}}


@dataclass
class Shared:
    """The cases' outcomes and the URLs of the portal they crawled (articles oldest first: the
    reprinted original first, its reprint last)."""

    outcomes: dict[str, Outcome]
    start_url: str
    article_urls: list[str]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, daily_portal: DailyPortal) -> Shared:
    """The cases run once for the session: under ``pytest -n`` the first worker to need them
    runs them (its portal), the others read what it found."""
    data = once_per_session(tmp_path_factory, "wrong-type-cases", lambda: run_cases(
        tmp_path_factory.mktemp("wrongtype"), daily_portal))
    return Shared({name: Outcome.from_json(outcome) for name, outcome in data["outcomes"].items()},
                  data["start_url"], data["article_urls"])


def criticals(result: CrawlResult) -> list[str]:
    return [line for line in result.log.splitlines() if " CRITICAL: " in line]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_wrong_type_key_stops_the_crawl_and_the_next_run_stores_everything_once(
    name: str, shared: Shared
) -> None:
    outcome = shared.outcomes[name]
    assert not outcome.error, outcome.error
    assert outcome.planted or CASES[name].component, "nothing was planted (no run id seen?)"
    faulted, rerun = outcome.faulted, outcome.rerun
    assert faulted is not None and rerun is not None
    if CASES[name].stops:
        assert faulted.returncode == 3, faulted.log[-6000:]
        lines = criticals(faulted)
        assert len(lines) == 1, lines
        assert "WRONGTYPE" in lines[0] and "delete the key" in lines[0], lines[0]
        # nothing counted as a failed attempt: what was in flight went back to the queue
        assert outcome.failed == 0
    else:
        assert not criticals(faulted), faulted.log[-6000:]
    if name == "seen-shard":  # the start page, whose callback met the fault, is queued again
        start = shared.start_url.encode()
        assert any(start in entry for entry in outcome.queued), outcome.queued
    assert ("Spider error processing" in faulted.log) == CASES[name].spider_error, \
        faulted.log[-6000:]
    assert "Error caught on signal handler" not in faulted.log, faulted.log[-6000:]
    assert rerun.returncode == 0, rerun.log[-6000:]
    # one copy of the story the portal reprints: the original, or the reprint when the stopped
    # run's leftovers reached the check before it (the original is then a late original)
    reprint, original = shared.article_urls[-1], shared.article_urls[0]
    expected = dict.fromkeys(shared.article_urls, 1)
    del expected[reprint if reprint not in outcome.stored else original]
    assert outcome.stored == expected, (
        sorted(set(expected) - set(outcome.stored)),
        {u: n for u, n in outcome.stored.items() if n > 1 or u not in expected})


# --- every documented key has a case ---------------------------------------------------------


def documented_keys() -> list[str]:
    """The first column of the key tables of docs/redis-keys.md."""
    text = (REPO / "docs" / "redis-keys.md").read_text(encoding="utf-8")
    # the fields of a duplicate record are no keys
    before, _, after = text.partition("### Duplicate records")
    text = before + ("\n## " + after.split("\n## ", 1)[1] if "\n## " in after else "")
    keys = re.findall(r"^\| `([^`]+)` \|", text, re.M)
    assert len(keys) > 20, "the key tables of docs/redis-keys.md were not found"
    return keys


def shape(key: str) -> str:
    """A key template without its prefix and with its fields blank: ``walk:{}:{}``."""
    key = re.sub(r"^\{prefix\}:\{spider\}:", "", key)
    return re.sub(r"\{[^}]*\}", "{}", key)


def test_every_key_of_the_docs_has_a_case() -> None:
    covered = {key for case in CASES.values() for key in case.keys}
    missing = [key for key in documented_keys() if key not in covered]
    assert not missing, f"keys of docs/redis-keys.md without a planted-key case: {missing}"
    assert set(GROUPED) <= covered
    unknown = covered - set(documented_keys())
    assert not unknown, f"cases for keys docs/redis-keys.md does not document: {unknown}"


def test_every_key_template_is_documented() -> None:
    from newscrawl import keys

    templates = {shape(value) for name, value in vars(keys).items()
                 if name.isupper() and isinstance(value, str) and value.startswith("{prefix}")}
    documented = {shape(key) for key in documented_keys()}
    assert templates - documented == set(), "templates of newscrawl/keys.py not in the docs"
