"""The fingerprint worker pool (``newscrawl.workers``): worker processes on pipes."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing.context
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mockportal import Article

from newscrawl.simhash import IdfFormatError, fingerprint
from newscrawl.workers import WorkerPool as FingerprintPool


def test_long_text_same_fingerprint_through_the_worker() -> None:
    """A text past max_chars (sent to the worker cut to max_chars) gets the fingerprint the
    function gives the whole text, answered by the worker."""
    body = "".join(Article.generate(f"long{i}").text for i in range(120))
    text = body * (1 + 250_000 // len(body))
    fps = FingerprintPool(None, 1)
    try:
        assert len(text) > fps.max_chars
        got = asyncio.run(fps.fingerprint(text))[0]
        assert fps.processes == 1  # answered by the worker, not the in-process fallback
        assert got == fingerprint(text) == fingerprint(text[: fps.max_chars])
        assert got != fingerprint(text[100_000 - 5_000 :])
    finally:
        fps.close()


def test_worker_dead_at_start_leaves_fingerprints_in_process(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker killed before it answers (OOM killer, a crash) is logged, not a crash of the
    crawl: the fingerprints are computed in the crawl process."""
    _workers_get(monkeypatch, signal.SIGKILL)
    text = Article.generate("dead").text
    with caplog.at_level(logging.ERROR, logger="newscrawl.workers"):
        fps = FingerprintPool(None, 1)
    try:
        assert fps.processes == 0
        assert "fingerprint worker did not start" in caplog.text
        assert asyncio.run(fps.fingerprint(text))[0] == fingerprint(text)
    finally:
        fps.close()


def test_items_waiting_when_the_worker_is_closed_go_in_process() -> None:
    texts = [Article.generate(f"close{i}").text for i in range(4)]
    fps = FingerprintPool(None, 1)

    async def run() -> list[int | None]:
        tasks = [asyncio.ensure_future(fps.fingerprint(t)) for t in texts]
        await asyncio.sleep(0)  # all four sent to the worker, no reply read yet
        fps.close()
        return list(await asyncio.wait_for(asyncio.gather(*tasks), 30))

    try:
        assert [fp for fp, _ in asyncio.run(run())] == [fingerprint(t) for t in texts]
    finally:
        fps.close()


BURST = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from mockportal import Article
from newscrawl.simhash import IdfFormatError, fingerprint
from newscrawl.workers import WorkerPool as FingerprintPool

async def burst(fps, texts):
    return await asyncio.gather(*(fps.fingerprint(t) for t in texts))

if __name__ == "__main__":
    texts = [Article.generate(f"burst{i}").text[:300] for i in range(1500)]
    fps = FingerprintPool(None, 1)
    try:
        got = asyncio.run(burst(fps, texts))
        assert fps.processes == 1, "the worker failed"
        assert [g[0] for g in got[::100]] == [fingerprint(t) for t in texts[::100]]
    finally:
        fps.close()
    print("ok")
"""


def test_a_burst_of_texts_does_not_deadlock_the_pipes(tmp_path: Path) -> None:
    """1,500 texts submitted at once (more answers than the pipe back holds): the caller does not
    block sending while the worker blocks sending answers nobody reads. Run in a process of its
    own, so a deadlock fails the test instead of hanging the suite."""
    script = tmp_path / "burst.py"
    script.write_text(BURST, encoding="utf-8")
    tests_dir = str(Path(__file__).resolve().parent)
    try:
        proc = subprocess.run([sys.executable, str(script), tests_dir], capture_output=True,
                              text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("1,500 texts at once did not come back within 90 s: the pipes deadlocked")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


MAIN_SCRIPT = """
import os, sys
sys.path.insert(0, sys.argv[1])
with open(sys.argv[2], "a", encoding="utf-8") as fh:  # once per process that runs this script
    fh.write(f"{os.getpid()}\\n")
from newscrawl.workers import WorkerPool

if __name__ == "__main__":
    spec, path = __spec__, __file__
    pool = WorkerPool(None, 1, fingerprints=False)
    try:
        assert pool.processes == 1, "the worker did not start"
        assert (__spec__, __file__) == (spec, path), "__main__ not restored"
    finally:
        pool.close()
    print("ok")
"""


def test_the_worker_does_not_import_the_callers_main_script(tmp_path: Path) -> None:
    """A worker started by a script (the ``scrapy`` command's imports all of Scrapy) does not
    run that script's imports again: only the caller ran it."""
    script = tmp_path / "main.py"
    script.write_text(MAIN_SCRIPT, encoding="utf-8")
    ran = tmp_path / "ran.txt"
    tests_dir = str(Path(__file__).resolve().parent)
    proc = subprocess.run([sys.executable, str(script), tests_dir, str(ran)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"
    assert len(ran.read_text(encoding="utf-8").split()) == 1


def test_jobs_sent_before_the_worker_is_up_are_answered_by_it() -> None:
    """The pool does not wait for its worker to start: texts submitted at once go in the pipe
    and the worker answers them once it is up (none is lost, none runs twice)."""
    texts = [Article.generate(f"early{i}").text for i in range(60)]
    fps = FingerprintPool(None, 1)

    async def run() -> list[int | None]:
        return [fp for fp, _ in await asyncio.gather(*(fps.fingerprint(t) for t in texts))]

    try:
        assert asyncio.run(run()) == [fingerprint(t) for t in texts]
        assert fps.processes == 1
    finally:
        fps.close()


def test_worker_dead_before_its_first_message_found_by_the_event_loop(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Jobs submitted before the worker's first message, the worker dead: logged once as a
    worker that did not start, the jobs computed in the calling process."""
    _workers_get(monkeypatch, signal.SIGKILL)
    _fingerprinted_in_process([Article.generate(f"dead-early{i}").text for i in range(5)],
                              caplog, "fingerprint worker did not start")


def test_a_bad_idf_file_is_raised_in_full_when_the_version_is_asked(tmp_path: Path) -> None:
    """The worker cannot load the IDF file: asking the pool for its version raises the error
    the calling process meets with that file, not a worker failure."""
    bad = tmp_path / "idf.txt"
    bad.write_text("not an idf\n", encoding="utf-8")
    fps = FingerprintPool(str(bad), 1)
    try:
        with pytest.raises(IdfFormatError, match="expected 'word idf'"):
            _ = fps.version
    finally:
        fps.close()


LOADED = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from mockportal import Article
from newscrawl.workers import PageJob, WorkerPool

def lxml_mapped(pid):
    with open(f"/proc/{pid}/maps", encoding="utf-8") as fh:
        return "/lxml/" in fh.read()

if __name__ == "__main__":
    pool = WorkerPool(None, 1)
    try:
        fp, _ = asyncio.run(pool.fingerprint(Article.generate("loaded").text))
        assert pool.processes == 1 and fp is not None
        pid = pool._workers[0].process.pid
        print("caller", sorted(m for m in ("lxml", "trafilatura") if m in sys.modules))
        print("worker", lxml_mapped(pid))
        page = PageJob("<html><body><p>好</p></body></html>".encode(), "http://x/a/1.html",
                       "utf-8", None, None)
        asyncio.run(pool.extract(page))
        assert pool.processes == 1
        print("worker after a page", lxml_mapped(pid))
    finally:
        pool.close()
"""


def test_fingerprints_alone_load_no_extraction_library(tmp_path: Path) -> None:
    """A pool used for fingerprints only: neither the calling process nor its worker loads
    trafilatura or lxml; the worker loads them with its first page."""
    script = tmp_path / "loaded.py"
    script.write_text(LOADED, encoding="utf-8")
    tests_dir = str(Path(__file__).resolve().parent)
    proc = subprocess.run([sys.executable, str(script), tests_dir], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["caller []", "worker False", "worker after a page True"]


def test_the_crawls_pool_loads_extraction_before_its_first_page() -> None:
    """``preload_extraction`` (the crawl's pool): the worker loads lxml once started, with no
    page sent yet."""
    import time

    pool = FingerprintPool(None, 1, fingerprints=False, preload_extraction=True)
    try:
        assert pool.processes == 1
        maps = Path(f"/proc/{pool._workers[0].process.pid}/maps")
        deadline = time.monotonic() + 60
        while "/lxml/" not in maps.read_text(encoding="utf-8") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "/lxml/" in maps.read_text(encoding="utf-8")
    finally:
        pool.close()


def test_a_worker_that_never_answers_is_given_up_after_the_start_timeout(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker stopped before its first message, jobs already waiting on it: after
    START_TIMEOUT the event loop gives it up (logged once) and computes them in-process."""
    import newscrawl.workers

    _workers_get(monkeypatch, signal.SIGSTOP)
    monkeypatch.setattr(newscrawl.workers, "START_TIMEOUT", 2.0)
    _fingerprinted_in_process([Article.generate(f"stopped{i}").text for i in range(3)],
                              caplog, "fingerprint worker did not start: timeout")


def _fingerprinted_in_process(texts: list[str], caplog: pytest.LogCaptureFixture,
                              logged: str) -> None:
    """A pool whose worker never starts: every text fingerprinted in-process, ``logged`` once."""
    fps = FingerprintPool(None, 1)

    async def run() -> list[int | None]:
        return [fp for fp, _ in await asyncio.gather(*(fps.fingerprint(t) for t in texts))]

    try:
        with caplog.at_level(logging.ERROR, logger="newscrawl.workers"):
            got = asyncio.run(asyncio.wait_for(run(), 60))
        assert got == [fingerprint(t) for t in texts]
        assert caplog.text.count(logged) == 1
        assert fps.processes == 0
    finally:
        fps.close()


def _workers_get(monkeypatch: pytest.MonkeyPatch, sig: signal.Signals) -> None:
    """Every worker process started from now on is sent ``sig`` as soon as it is started."""
    start = multiprocessing.context.SpawnProcess.start

    def start_then_signal(self: multiprocessing.context.SpawnProcess) -> None:
        start(self)
        assert self.pid is not None
        os.kill(self.pid, sig)

    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "start", start_then_signal)
