"""Article extraction in the worker processes (``newscrawl.workers``): real worker processes, the
mock portals' pages, and a real crawl whose worker is killed while it runs."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from crawlrun import FAST, assert_stored_once, run_crawl, start_crawl, stored_urls, url_of, wait_for
from mockportal import Layout, MockPortal, sites_toml

from newscrawl._extract_job import Extracted, extract_page
from newscrawl.workers import PageJob, RemoteTraceback, WorkerPool


def jobs_of(*portals: MockPortal) -> list[PageJob]:
    """Every article page of the portals as the spider sends it (charset from Content-Type)."""
    out = []
    for portal in portals:
        for path, page in sorted(portal.pages.items()):
            if not path.startswith("/a/") or not isinstance(page.body, bytes):
                continue
            ctype = page.content_type.lower()
            charset = ctype.split("charset=", 1)[1].split(";")[0].strip() if "charset=" in ctype \
                else None
            out.append(PageJob(page.body, portal.url(path), charset, None, None))
    return out


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_pages_extracted_in_the_worker_equal_in_process(portals: Layout) -> None:
    """Every kind of article page of the mock portals (GBK, mojibake, no body, reprints) comes
    back from the worker as extraction gives it in-process; the worker did the work."""
    jobs = jobs_of(portals.a, portals.b)
    expected = [extract_page(job) for job in jobs]
    assert any(e.article is None for e in expected) and any(e.mojibake for e in expected)
    assert any(e.encoding == "gb18030" for e in expected)
    pool = WorkerPool(None, 1, fingerprints=False)
    try:
        pid = pool._workers[0].process.pid
        assert pid is not None
        cpu0 = cpu_seconds(pid)

        async def run() -> list[Extracted]:
            return list(await asyncio.gather(*(pool.extract(job) for job in jobs)))

        got = asyncio.run(run())
        assert pool.processes == 1
        assert cpu_seconds(pid) - cpu0 > 0.05  # extracted there, not by the fallback here
        assert got == expected
    finally:
        pool.close()


def test_an_extraction_error_is_raised_as_in_process(caplog: pytest.LogCaptureFixture) -> None:
    """A page extraction raises on is raised by ``extract`` with the in-process exception, the
    one raised in the worker (its traceback there the cause; the page is not extracted a second
    time here); the worker stays in use for the next page."""
    bad = PageJob("<html>not bytes</html>", "http://x/a/1.html", None, None, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError) as in_process:
        extract_page(bad)
    good = PageJob("<html><body><p>好</p></body></html>".encode(), "http://x/a/2.html",
                   "utf-8", None, None)
    pool = WorkerPool(None, 1, fingerprints=False)
    try:
        with pytest.raises(TypeError) as through_pool:
            asyncio.run(pool.extract(bad))
        assert str(through_pool.value) == str(in_process.value)
        cause = through_pool.value.__cause__
        assert isinstance(cause, RemoteTraceback)
        assert "in _outcome" in str(cause) and "in extract_page" in str(cause)
        assert asyncio.run(pool.extract(good)) == extract_page(good)
        assert pool.processes == 1
        assert "worker process failed" not in caplog.text
    finally:
        pool.close()


def test_a_worker_killed_with_pages_in_flight_loses_none(
    portals: Layout, caplog: pytest.LogCaptureFixture
) -> None:
    """Pages sent to a worker that dies are extracted in-process (logged once), none lost."""
    jobs = jobs_of(portals.a, portals.b)
    pool = WorkerPool(None, 1)

    async def run() -> list[Extracted]:
        first = await pool.extract(jobs[0])
        in_flight = [asyncio.ensure_future(pool.extract(job)) for job in jobs[1:]]
        await asyncio.sleep(0)
        process = pool._workers[0].process
        assert process.pid is not None
        os.kill(process.pid, signal.SIGKILL)
        process.join(10)
        rest = await asyncio.wait_for(asyncio.gather(*in_flight), 60)
        return [first, *rest]

    try:
        with caplog.at_level(logging.ERROR, logger="newscrawl.workers"):
            got = asyncio.run(run())
        assert got == [extract_page(job) for job in jobs]
        assert pool.processes == 0
        assert caplog.text.count("worker process failed") == 1
    finally:
        pool.close()


BURST = """
import asyncio, sys
from newscrawl._extract_job import extract_page
from newscrawl.workers import PageJob, WorkerPool

def page(i):
    paras = "".join(f"<p>第{i}篇第{n}段，" + "新闻正文内容" * 40 + "。</p>" for n in range(60))
    html = f"<html><head><title>标题{i}</title></head><body><h1>标题{i}</h1>{paras}</body></html>"
    return PageJob(html.encode(), f"http://x/a/{i}.html", "utf-8", None, None)

async def burst(pool, jobs):
    return await asyncio.gather(*(pool.extract(j) for j in jobs))

if __name__ == "__main__":
    jobs = [page(i) for i in range(120)]
    pool = WorkerPool(None, 1, fingerprints=False)
    try:
        got = asyncio.run(burst(pool, jobs))
        assert pool.processes == 1, "the worker failed"
        assert got[::20] == [extract_page(j) for j in jobs[::20]]
        assert len(got[0].article.text) > 10_000
    finally:
        pool.close()
    print("ok")
"""


def test_a_burst_of_large_pages_does_not_deadlock_the_pipes(tmp_path: Path) -> None:
    """120 pages of 45 KB whose answers are 45 KB each, all submitted at once: more than either
    pipe holds in both directions. Run in a process of its own, so a deadlock fails the test."""
    script = tmp_path / "burst.py"
    script.write_text(BURST, encoding="utf-8")
    try:
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=180)
    except subprocess.TimeoutExpired:
        pytest.fail("120 large pages at once did not come back within 180 s: the pipes deadlocked")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


def worker_pids(pid: int) -> list[int]:
    """The crawl process's worker processes (multiprocessing's spawned children; not its
    embedded redis-server)."""
    out = []
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as fh:
            children = [int(p) for p in fh.read().split()]
        for child in children:
            with open(f"/proc/{child}/cmdline", "rb") as fh:
                if b"spawn_main" in fh.read():
                    out.append(child)
    except OSError:
        pass
    return out


def test_a_worker_killed_mid_crawl_loses_nothing(tmp_path: Path, portals: Layout) -> None:
    """A real crawl whose worker process is killed while article pages are being fetched:
    every distinct article is still stored once, the failure logged once, exit code 0."""
    layout = portals
    sites = tmp_path / "sites.toml"
    sites.write_text(sites_toml(layout.a, layout.b, max_list_depth=2), encoding="utf-8")
    slow = [path for portal, path in layout.unique[len(layout.unique) // 2 :]]
    for portal in (layout.a, layout.b):
        portal.delay([p for p in slow if p in portal.pages], 1.0)
    worker = start_crawl(tmp_path, sites, *FAST, log_path=tmp_path / "crawl.log")
    try:
        wait_for(lambda: bool(worker_pids(worker.proc.pid))
                 and sum(p.hit_counts().get(path, 0) for p, path in layout.unique) >= 2,
                 timeout=60, what="the worker process and the first article pages")
        for pid in worker_pids(worker.proc.pid):
            os.kill(pid, signal.SIGKILL)
        result = worker.wait(120)
    finally:
        worker.kill()
    assert result.returncode == 0, result.log[-4000:]
    assert result.log.count("Fingerprint worker process failed") == 1, result.log[-4000:]
    assert_stored_once(layout, stored_urls(tmp_path))


def test_a_crawl_without_near_duplicate_check_extracts_in_the_worker(
    tmp_path: Path, portals: Layout
) -> None:
    """Dedup off: the worker process (no fingerprint decision loaded) extracts every article."""
    layout = portals
    sites = tmp_path / "sites.toml"
    sites.write_text(sites_toml(layout.a, layout.b, max_list_depth=2), encoding="utf-8")
    result = run_crawl(tmp_path, sites, *FAST, "NEWSCRAWL_DEDUP_ENABLED=False")
    assert result.returncode == 0, result.log[-4000:]
    assert "worker process failed" not in result.log and "did not start" not in result.log
    stored = stored_urls(tmp_path)
    expected = {url_of(p, path) for p, path in layout.all_good_articles()}
    assert expected <= set(stored), sorted(expected - set(stored))
    assert result.stats["newscrawl/extract/mojibake"] == len(layout.mojibake)


def test_the_workers_log_lines_are_logged_by_the_caller(
    portals: Layout, caplog: pytest.LogCaptureFixture
) -> None:
    """A warning extraction logs in the worker (a page no encoding reads) reaches the crawl's
    log under its own logger, once; records below the level are not sent."""
    job = next(j for j in jobs_of(portals.a, portals.b) if extract_page(j).source == "fallback")
    caplog.clear()
    pool = WorkerPool(None, 1, fingerprints=False, log_level=logging.INFO)
    try:
        with caplog.at_level(logging.DEBUG):
            got = asyncio.run(pool.extract(job))
        assert pool.processes == 1 and got.source == "fallback"
        warnings = [r for r in caplog.records if r.name == "newscrawl.extract.decode"]
        assert [r.levelno for r in warnings] == [logging.WARNING]
        assert "no encoding reads this page" in warnings[0].getMessage()
        assert not [r for r in caplog.records
                    if r.levelno < logging.INFO and r.name.startswith("newscrawl")]
    finally:
        pool.close()
