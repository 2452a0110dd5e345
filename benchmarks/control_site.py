"""A tiny portal, spider and pipeline for the scrapy-redis control run (control_kill_worker.py).

The same spider runs under scrapy-redis 0.9.1 and under newscrawl's scheduler, so the two can be
compared side by side (the tests use the real ``portal`` spider and tests/conftest.py instead).

The pytest process serves the portal (stdlib ``http.server`` on 127.0.0.1, port 0); the
workers are real ``scrapy crawl schedtest`` processes that import this module as a spider module
(``SPIDER_MODULES=control_site``) and store items by RPUSHing their URL to ``schedtest:stored``
in the crawl's Redis.

Portal: ``/`` links to ``/list/0`` .. ``/list/{L-1}``; every list page links to the next list
page and to its articles ``/a/{i}-{j}``. Articles can be slowed down (``article_delay``) and made
to fail with 503 (``fail_paths``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import scrapy
from scrapy.http import Request, Response

TESTS = Path(__file__).resolve().parent  # this folder (benchmarks/), on the workers' path
REPO = TESTS.parent
STORED_KEY = "schedtest:stored"


class Portal:
    def __init__(self, lists: int = 3, articles: int = 5, article_delay: float = 0.0) -> None:
        self.lists = lists
        self.articles = articles
        self.article_delay = article_delay
        self.fail_paths: set[str] = set()
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()
        portal = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                with portal.lock:
                    portal.hits[self.path] += 1
                    failing = self.path in portal.fail_paths
                status, body = portal.page(self.path)
                if failing:
                    status, body = 503, "<html><body>busy</body></html>"
                elif self.path.startswith("/a/") and portal.article_delay:
                    time.sleep(portal.article_delay)
                data = body.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def article_paths(self) -> list[str]:
        return [f"/a/{i}-{j}" for i in range(self.lists) for j in range(self.articles)]

    def page(self, path: str) -> tuple[int, str]:
        if path == "/":
            links = "".join(f'<a href="/list/{i}">l</a>' for i in range(self.lists))
            return 200, f"<html><body>{links}</body></html>"
        m = re.fullmatch(r"/list/(\d+)", path)
        if m and int(m.group(1)) < self.lists:
            i = int(m.group(1))
            links = f'<a href="/list/{(i + 1) % self.lists}">next</a>'
            links += "".join(f'<a href="/a/{i}-{j}">a</a>' for j in range(self.articles))
            return 200, f"<html><body>{links}</body></html>"
        if re.fullmatch(r"/a/\d+-\d+", path):
            return 200, f"<html><head><title>{path}</title></head><body>text</body></html>"
        return 404, "<html><body>not found</body></html>"

    def article_hits(self) -> Counter[str]:
        with self.lock:
            return Counter({p: n for p, n in self.hits.items() if p.startswith("/a/")})

    def __enter__(self) -> Portal:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- the spider and pipeline (imported by the worker processes) ----------------------------------


class StoreToRedis:
    """Stores an item by RPUSHing its URL to ``schedtest:stored`` in the crawl's Redis."""

    def __init__(self, crawler: Any) -> None:
        from newscrawl.context import CrawlContext

        context = CrawlContext.of(crawler)
        self.redis = context.redis
        self.retry = context.retry

    @classmethod
    def from_crawler(cls, crawler: Any) -> StoreToRedis:
        return cls(crawler)

    # Idempotent per delivery: a retry after a lost reply (Redis restarted between executing the
    # command and answering) must not store twice, but a second delivery of the same article
    # (a scheduler bug) must show up as a duplicate. So: one token per process_item call.
    STORE_LUA = """
    if redis.call('SADD', KEYS[2], ARGV[2]) == 1 then redis.call('RPUSH', KEYS[1], ARGV[1]) end
    """

    def process_item(self, item: Any) -> Any:
        token = os.urandom(8).hex()
        store = self.redis.register_script(self.STORE_LUA)
        self.retry.call(store, keys=[STORED_KEY, STORED_KEY + ":tokens"], args=[item["url"], token])
        return item


class SchedTestSpider(scrapy.Spider):
    name = "schedtest"
    custom_settings = {
        "ITEM_PIPELINES": {f"{__name__}.StoreToRedis": 100},
        "ROBOTSTXT_OBEY": False,
        "AUTOTHROTTLE_ENABLED": False,
        "RETRY_TIMES": 1,
        "RETRY_HTTP_CODES": [503],
        "DOWNLOAD_TIMEOUT": 20,
        "LOG_LEVEL": "INFO",
        "CONCURRENT_REQUESTS": 8,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    }

    async def start(self) -> AsyncIterator[Any]:
        base = self.settings.get("SCHEDTEST_BASE")
        yield Request(base + "/", callback=self.parse_page, errback=self.on_error,
                      priority=10, meta={"newscrawl_kind": "start", "newscrawl_depth": 0})

    def parse_page(self, response: Response) -> Iterator[Request]:
        for href in response.css("a::attr(href)").getall():
            if href.startswith("/list/"):
                yield response.follow(href, callback=self.parse_page, errback=self.on_error,
                                      priority=10, meta={"newscrawl_kind": "list"})
            elif href.startswith("/a/"):
                yield response.follow(href, callback=self.parse_article, errback=self.on_error,
                                      meta={"newscrawl_kind": "article"})

    def parse_article(self, response: Response) -> Iterator[dict[str, Any]]:
        yield {"url": response.url, "title": response.css("title::text").get()}

    def on_error(self, failure: Any) -> None:
        self.logger.info("request failed: %s", failure.value)


# --- running workers -----------------------------------------------------------------------------


def worker_cmd(base: str, *settings: str) -> list[str]:
    cmd = [sys.executable, "-m", "scrapy", "crawl", "schedtest",
           "-s", f"SCHEDTEST_BASE={base}", "-s", "SPIDER_MODULES=control_site"]
    for s in settings:
        cmd += ["-s", s]
    return cmd


def worker_env(redis_url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "SCRAPY_SETTINGS_MODULE": "newscrawl.settings",
        "REDIS_URL": redis_url,
        "PYTHONPATH": os.pathsep.join([str(TESTS), str(REPO), env.get("PYTHONPATH", "")]),
    })
    env.update(extra or {})
    return env


FAST = (
    "NEWSCRAWL_IDLE_EXIT_SECONDS=1",
    "NEWSCRAWL_LEASE_SECONDS=3",
    "NEWSCRAWL_REDIS_RETRY_SECONDS=10",
)


def start_worker(base: str, redis_url: str, log: Path, *settings: str) -> subprocess.Popen[bytes]:
    out = open(log, "wb")  # noqa: SIM115 - closed by the child's exit
    return subprocess.Popen(worker_cmd(base, *FAST, *settings), cwd=REPO,
                            env=worker_env(redis_url), stdout=out, stderr=subprocess.STDOUT)


def run_worker(base: str, redis_url: str, log: Path, *settings: str,
               timeout: float = 60) -> tuple[int, str]:
    proc = start_worker(base, redis_url, log, *settings)
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        raise AssertionError(f"worker did not finish in {timeout} s:\n{log.read_text()}") from None
    return code, log.read_text(errors="replace")


def stats_of(log: str) -> dict[str, Any]:
    sys.path.insert(0, str(TESTS))
    from crawlrun import parse_stats

    return parse_stats(log)
