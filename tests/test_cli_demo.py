"""``newscrawl demo``: the real command, run twice on one data directory from another directory."""

from __future__ import annotations

import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from redisserver import embedded_servers

REPO = Path(__file__).resolve().parent.parent
SITE = REPO / "newscrawl" / "demo" / "site"  # the portal's files, served as they are


def _title(page: Path) -> str:
    raw = page.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("gbk")  # article 1006: GBK bytes under a wrong declaration
    found = re.search(r"<h1>(.*?)</h1>", text)
    assert found, page
    return html.unescape(found.group(1))


TITLES = {"/" + str(p.relative_to(SITE)): _title(p) for p in sorted(SITE.glob("news/*/*.html"))}
ORIGINALS = [p for p in TITLES if "/100" in p]
REPRINTS = {"/news/20261119/2001.html": "/news/20261116/1002.html",
            "/news/20261120/2002.html": "/news/20261118/1005.html"}


def demo(cwd: Path, *argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("REDIS_URL", None)
    return subprocess.run([sys.executable, "-m", "newscrawl.cli", "demo", *argv], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def stored(data: Path) -> list[dict[str, object]]:
    return [json.loads(line) for path in sorted((data / "articles").glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()]


def test_demo_twice_crawls_then_fetches_nothing_again(tmp_path: Path) -> None:
    data = tmp_path / "demo-data"
    elsewhere = tmp_path / "elsewhere"  # not the repository: settings found without scrapy.cfg
    elsewhere.mkdir()
    first = demo(elsewhere, "--data-dir", str(data))
    assert first.returncode == 0, first.stdout + first.stderr
    # not recorded among this user's crawls: no crawl could have meant its directory
    record = Path(os.environ["NEWSCRAWL_CACHE_DIR"]) / "data-dirs.json"
    assert str(data.resolve()) not in (record.read_text() if record.exists() else "")
    out = first.stdout
    port = json.loads((data / "demo.json").read_text())["port"]
    base = f"http://127.0.0.1:{port}"
    assert f"a sample portal of 9 article pages on {base}/" in out
    assert "3 start/list pages fetched, 9 article pages fetched, 0 already done" in out
    assert "7 articles stored this run, 7 in all:" in out
    for path in ORIGINALS:
        assert f"{TITLES[path]}    {path}" in out
    assert "2 near-duplicates dropped this run (not stored), 2 recorded in all:" in out
    for reprint, original in REPRINTS.items():
        assert f"{TITLES[reprint]}    {reprint}\n    near-duplicate of {original}" in out
    assert f"newscrawl --data-dir {data} duplicates" in out
    articles = stored(data)
    assert sorted(str(a["url"]) for a in articles) == sorted(base + p for p in ORIGINALS)
    by_url = {a["url"]: a for a in articles}
    gbk = by_url[base + "/news/20261118/1006.html"]  # GBK bytes, declared iso-8859-1
    assert gbk["title"] == TITLES["/news/20261118/1006.html"]
    assert "茶农杨大姐" in str(gbk["text"])
    sites = (data / "demo-sites.toml").read_text(encoding="utf-8")
    assert 'allowed_domains = ["127.0.0.1"]' in sites and f'"{base}/"' in sites
    assert embedded_servers(data) == []  # the crawl's and the demo's embedded Redis stopped

    second = demo(elsewhere, "--data-dir", str(data))
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"on {base}/" in second.stdout  # the same port: the done records key the URLs
    # the start page and list page 1 (nothing new there: the walk stops), no article page
    assert "2 start/list pages fetched, 0 article pages fetched, 7 already done" in second.stdout
    assert "0 articles stored this run, 7 in all\n" in second.stdout
    assert "0 near-duplicates dropped this run (not stored), 2 recorded in all\n" in second.stdout
    assert len(stored(data)) == 7
    assert embedded_servers(data) == []

    # the documented recipe for the last run's per-site figures, after the run
    recipes = [line.split("   #")[0] for line in
               (REPO / "docs" / "redis-keys.md").read_text(encoding="utf-8").splitlines()
               if "the last run's per-site figures" in line]
    assert len(recipes) == 1
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("REDIS_URL", None)
    shell = (f'newscrawl() {{ "{sys.executable}" -m newscrawl.cli --data-dir "{data}" "$@"; }}\n'
             + recipes[0])
    done = subprocess.run(["bash", "-c", shell], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    figures = dict(zip(lines[::2], lines[1::2], strict=True))
    assert figures.get("demo/stored", "0") == "0", done.stdout  # the second run stored nothing
    assert int(figures.get("demo/pages/start", "0")) == 1, done.stdout
    assert embedded_servers(data) == []


def test_demo_port_in_use_and_foreign_directory(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        (data / "demo.json").write_text(json.dumps({"port": port, "runs": 1}))
        done = demo(tmp_path, "--data-dir", str(data))
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr
    assert "the incremental run needs the same one" in done.stderr
    other = tmp_path / "crawl-data"
    other.mkdir()
    (other / "redis.db").write_bytes(b"")
    done = demo(tmp_path, "--data-dir", str(other))
    assert done.returncode == 1 and "is not empty and holds no demo" in done.stderr
    assert list(other.iterdir()) == [other / "redis.db"]


def test_demo_interrupted_leaves_no_process(tmp_path: Path) -> None:
    data = tmp_path / "d"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("REDIS_URL", None)
    # SIGINT at its default in the demo even when this test runs in a background job (which
    # starts with SIGINT ignored, and Python then installs no KeyboardInterrupt handler)
    proc = subprocess.Popen([sys.executable, "-m", "newscrawl.cli", "demo", "--data-dir",
                             str(data)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("crawling:"):
                break
        # interrupt the crawl in full flight: once its Redis is up, or after 2 s at the latest
        # (a whole demo crawl takes 3 s or more, most of it starting up: a longer wait could
        # see it finish first on a fast host, and there would be nothing left to interrupt)
        deadline = time.monotonic() + 2
        while not embedded_servers(data, wait=0) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the demo finished before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert embedded_servers(data) == []


def test_the_report_counts_failed_pages(tmp_path: Path) -> None:
    """Pages that failed (here: every article's item processing) are counted in the summary with
    where their causes are, not only in the log."""
    import io

    from newscrawl.demo.portal import SamplePortal
    from newscrawl.demo.run import LOG_FILE, _report

    def report(stats: dict[str, int]) -> str:
        out = io.StringIO()
        _report(out, tmp_path, SamplePortal.load(), "http://127.0.0.1:1", 1.0, 9, stats, [],
                set(), [], 0.0)  # fmt: skip
        return out.getvalue()

    got = report({"newscrawl/sites/demo/failed": 9, "newscrawl/sites/other/failed": 1})
    assert f"10 pages failed: the log has each one's cause ({tmp_path / LOG_FILE})" in got
    assert "pages failed" not in report({})
