"""``newscrawl reset``: what it deletes and keeps, its refusals, and a crawl after it."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import redis
from crawlrun import FAST, IN_PROCESS, assert_stored_once, run_crawl, stored_urls, url_of
from mockportal import Layout

from newscrawl.cli import main
from newscrawl.connection import close_embedded, get_client
from newscrawl.index import DuplicateLog, SimhashIndex

CRAWL_STATE = {
    "newscrawl:portal:requests": ("zadd", {"{}": 1}),
    "newscrawl:portal:requests:seq": ("set", 7),
    "newscrawl:portal:inflight": None,  # left empty: a lease would mean a live run
    "newscrawl:portal:seen:00ab": ("zadd", {"abcdef": 20000}),
    "newscrawl:portal:seen:ffff": ("zadd", {"012345": 20000}),
    "newscrawl:portal:seen-pruned": ("set", 20000),
    "newscrawl:portal:pending": ("hset", {"k": 1}),
    "newscrawl:portal:failures": ("hset", {"k": "1:20000"}),
    "newscrawl:portal:deadletter": ("rpush", ["{}"]),
    "newscrawl:portal:listseen:r1": ("sadd", ["x"]),
}
KEPT = ["newscrawl:other:seen:0001", "elsewhere:portal:requests"]


def fill(r: redis.Redis) -> None:
    for name, op in CRAWL_STATE.items():
        if op is None:
            continue
        method, value = op
        if method == "zadd":
            r.zadd(name, value)
        elif method == "set":
            r.set(name, value)
        elif method == "hset":
            r.hset(name, mapping=value)
        elif method == "rpush":
            r.rpush(name, *value)
        else:
            r.sadd(name, *value)
    for name in KEPT:
        r.zadd(name, {"m": 1})
    SimhashIndex(r, version="v1").add(0x1234, "https://a.example/1")
    DuplicateLog(r).record("https://b.example/1", "https://a.example/1", 1, 0x1235, 0x1234)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_reset_deletes_the_crawl_state_of_one_spider(
    capsys: pytest.CaptureFixture[str], r: redis.Redis
) -> None:
    url = ["--redis-url", f"unix://{r.socket_file}"]
    fill(r)
    index_keys = sorted(k.decode() for k in r.scan_iter("newscrawl:simhash:*"))
    code, out, err = run(capsys, *url, "reset", "--yes")
    assert code == 0, err
    assert "deleted 9 key(s): crawl state of spider 'portal'" in out
    assert "(1 queued, 0 in flight, 2 shard(s) of done URLs)" in out
    assert not list(r.scan_iter("newscrawl:portal:*"))
    for name in KEPT:
        assert r.exists(name), name  # other spiders, other prefixes
    assert sorted(k.decode() for k in r.scan_iter("newscrawl:simhash:*")) == index_keys
    assert DuplicateLog(r).count() == 1
    code, out, _ = run(capsys, *url, "reset", "--yes")
    assert code == 0 and out.startswith("nothing to reset")
    code, out, err = run(capsys, *url, "reset", "--yes", "--index")
    assert code == 0, err
    assert not list(r.scan_iter("newscrawl:simhash:*")) and DuplicateLog(r).count() == 0
    assert "the next crawl rebuilds the index from the article files" in out
    for name in KEPT:
        assert r.exists(name), name


def test_reset_asks_and_refuses_during_a_run(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = ["--redis-url", f"unix://{r.socket_file}"]
    fill(r)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))  # a pipe: no answer taken from it
    code, _, err = run(capsys, *url, "reset")
    assert code == 1 and "not confirmed: standard input is not a terminal (pass --yes)" in err
    # what it would delete comes first, as on a terminal
    assert err.index("would delete the crawl state of spider 'portal'") < err.index("not confirmed")
    monkeypatch.setattr("sys.stdin", Tty("n\n"))
    code, _, err = run(capsys, *url, "reset")
    assert code == 1 and "Continue? [y/N]" in err and "nothing deleted" in err
    assert r.exists("newscrawl:portal:requests")
    # a worker alive (its heartbeat and registry entry, as a crawl keeps them): refused
    r.set("newscrawl:portal:run", "run-1", ex=600)
    r.hset("newscrawl:portal:workers", "host1:4242:ab",
           json.dumps({"host": "host1", "pid": 4242, "run": "run-1"}))
    r.set("newscrawl:portal:worker:host1:4242:ab", "run-1", ex=600)
    r.zadd("newscrawl:portal:inflight", {"{}": 1e12})
    code, _, err = run(capsys, *url, "reset", "--yes")
    assert code == 1 and "a run of spider 'portal' is live: 1 worker(s) alive (host1:4242)" in err
    assert "stop its workers first, or pass --force if they are gone" in err
    assert r.exists("newscrawl:portal:requests")
    # its heartbeat gone (killed, stopped): a stopped run is reset without --force, as the next
    # crawl would take it over
    r.delete("newscrawl:portal:worker:host1:4242:ab")
    monkeypatch.setattr("sys.stdin", Tty("y\n"))
    code, out, err = run(capsys, *url, "reset")
    assert code == 0, err
    assert not list(r.scan_iter("newscrawl:portal:*"))
    r.set("newscrawl:portal:requests:seq", 1)
    r.hset("newscrawl:portal:workers", "host1:4242:ab", "{}")
    r.set("newscrawl:portal:worker:host1:4242:ab", "run-1", ex=600)
    monkeypatch.setattr("sys.stdin", Tty("y\n"))
    code, out, err = run(capsys, *url, "reset", "--force")
    assert code == 0, err
    assert not list(r.scan_iter("newscrawl:portal:*"))
    code, _, err = run(capsys, *url, "reset", "--yes", "--spider", "a:b")
    assert code == 1 and "not a spider name" in err


def test_crawl_after_reset_fetches_again_and_stores_nothing_twice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, portals: Layout, sites: Path
) -> None:
    first = run_crawl(tmp_path, sites, *FAST, IN_PROCESS)
    assert first.returncode == 0, first.log[-3000:]
    assert_stored_once(portals, stored_urls(tmp_path))
    articles = [url_of(p, path) for p, path in portals.all_good_articles()]
    hits = {url_of(p, path): p.hit_counts().get(path, 0) for p, path in portals.unique}
    stored_first = sum(stored_urls(tmp_path).values())

    code, out, err = run(capsys, "--data-dir", str(tmp_path / "data"), "reset", "--yes")
    assert code == 0, err
    client = get_client(data_dir=tmp_path / "data")
    try:  # kept: the index and the recorded duplicates
        assert SimhashIndex(client, tune_server=False).count() == stored_first
        assert DuplicateLog(client).count() >= 1
        assert not list(client.scan_iter("newscrawl:portal:*"))
    finally:
        close_embedded(client)

    second = run_crawl(tmp_path, sites, *FAST, IN_PROCESS)
    assert second.returncode == 0, second.log[-3000:]
    for p, path in portals.unique:  # every article page fetched again: its done record is gone
        assert p.hit_counts().get(path, 0) > hits[url_of(p, path)], path
    assert_stored_once(portals, stored_urls(tmp_path))  # and none stored a second time
    assert second.stats.get("newscrawl/dedup/already_stored") == stored_first
    # the sites' summary lines count them, so stored + dropped + failed adds up to new
    site_lines = "\n".join(line for line in second.log.splitlines() if " INFO: Site " in line)
    assert sum(int(n) for n in re.findall(r"already stored \(not stored again\) (\d+)",
                                          site_lines)) == stored_first
    # and the line adding the sites up
    (total,) = [line for line in second.log.splitlines() if " INFO: All 2 sites: " in line]
    assert f"already stored (not stored again) {stored_first}," in total
    assert "interrupted run" not in second.log
    # one INFO line each, saying why
    assert second.log.count("is already stored") == second.log.count(
        "is already stored (indexed and in the article store): not stored again") == stored_first
    assert len(articles) > stored_first  # reprints were dropped as near-duplicates again


def test_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "0 ok, 1 error, 2 usage, 130 interrupted (Ctrl-C)" in " ".join(out.split())
