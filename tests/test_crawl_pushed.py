"""URLs pushed through Redis (``newscrawl push``, ``redis-cli LPUSH <prefix>:portal:start_urls``):
real ``scrapy crawl portal`` runs against a mock portal, before a run and during one."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from crawlrun import IN_PROCESS, run_crawl, start_crawl, stored_urls, wait_for
from mockportal import Article, DailyPortal, MockPortal, html_page, list_html

from newscrawl.cli import main
from newscrawl.connection import close_embedded, get_client

pytestmark = pytest.mark.slow

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS_PER_DOMAIN=8", IN_PROCESS)
KEY = "newscrawl:portal:start_urls"


def hidden(portal: MockPortal) -> tuple[str, list[str]]:
    """An article and a list page with two articles that no page of the portal links to."""
    portal.add_article("/a/900.html", Article.generate("pushed-900"))
    inner = ["/a/901.html", "/a/902.html"]
    for n, path in enumerate(inner):
        portal.add_article(path, Article.generate(f"pushed-{901 + n}"))
    portal.set("/list/90.html", html_page(list_html("专题", inner)))
    return "/a/900.html", inner


def test_urls_pushed_before_a_run_are_fetched_by_it(
        tmp_path: Path, portal: MockPortal, capsys: pytest.CaptureFixture[str]) -> None:
    daily = DailyPortal(portal, per_page=8, home=5)
    daily.publish(6)
    article, inner = hidden(portal)
    sites = tmp_path / "sites.toml"
    sites.write_text(daily.sites_toml(), encoding="utf-8")
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "push", "--sites", str(sites), portal.url(article),
                 portal.url("/list/90.html"), "http://elsewhere.invalid/a/1.html"]) == 0
    out, err = capsys.readouterr()
    assert "queued 3 URLs" in out
    # told at once, as the crawl will say it (the URL is queued: the crawl's file may differ)
    assert err.splitlines() == [
        "newscrawl: warning: http://elsewhere.invalid/a/1.html: no site of the sites file takes"
        f" it (allowed_domains, article_url, follow_url) ({sites}): the crawl refuses it unless"
        " it reads another sites file (queued all the same)"]
    client = get_client(None, data)
    try:  # what redis-cli LPUSH does, and an entry that is no URL
        client.lpush(KEY, json.dumps({"url": portal.url("/a/3.html"), "site": "daily"}))
        client.rpush(KEY, '{"url": 5}')
    finally:
        close_embedded(client)
    result = run_crawl(tmp_path, sites, *SETTINGS)
    assert result.returncode == 0, result.log[-4000:]
    stored = stored_urls(tmp_path)
    assert set(stored) == {portal.url(p) for p in [*daily.paths, article, *inner]}
    assert all(n == 1 for n in stored.values())
    assert portal.hit_counts()["/a/3.html"] == 1  # pushed and linked: fetched once
    assert result.stats["newscrawl/pushed/taken"] == 4
    assert result.stats["newscrawl/pushed/refused"] == 2
    warnings = [line for line in result.log.splitlines() if "Pushed URL" in line]
    assert len(warnings) == 1 and "elsewhere.invalid" in warnings[0]
    client = get_client(None, data)
    try:
        assert client.llen(KEY) == 0
    finally:
        close_embedded(client)


def test_a_url_pushed_during_a_run_is_fetched_by_it(
        tmp_path: Path, portal: MockPortal, capsys: pytest.CaptureFixture[str]) -> None:
    daily = DailyPortal(portal, per_page=8, home=5)
    daily.publish(6)
    portal.delay(daily.paths[:2], 3.0)  # keeps the run going
    article, _ = hidden(portal)
    sites = tmp_path / "sites.toml"
    sites.write_text(daily.sites_toml(), encoding="utf-8")
    from redisserver import RedisServer

    with RedisServer(tmp_path / "redis", persist=False) as srv:
        worker = start_crawl(tmp_path, sites, *SETTINGS, redis_url=srv.url,
                             log_path=tmp_path / "crawl.log")
        try:
            wait_for(lambda: portal.hit_counts().get(daily.paths[0], 0) >= 1, timeout=60,
                     what="the run fetching articles")
            assert main(["--redis-url", srv.url, "push", "--site", "daily",
                         portal.url(article)]) == 0
            started = time.monotonic()
            result = worker.wait(timeout=120)
        finally:
            worker.kill()
    assert result.returncode == 0, result.log[-4000:]
    assert portal.url(article) in stored_urls(tmp_path)
    assert time.monotonic() - started < 120


def test_push_says_when_it_cannot_check_the_urls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no sites.toml here, no scrapy.cfg above
    monkeypatch.delenv("NEWSCRAWL_SITES", raising=False)
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "push", "http://a.example/n/1.html"]) == 0
    assert "(not checked against a sites file: no sites.toml; --sites PATH names it)" \
        in capsys.readouterr().out
    # a sites file named but unreadable is an error, and nothing is queued
    assert main(["--data-dir", data, "push", "--sites", str(tmp_path / "nope.toml"),
                 "http://a.example/n/2.html"]) == 1
    assert "no such file" in capsys.readouterr().err
    # a URL that does not parse is one line, not a traceback, and nothing is queued
    assert main(["--data-dir", data, "push", "http://a.example/n/3.html", "http://[bad"]) == 1
    assert "newscrawl: error: not an http(s) URL: 'http://[bad'" in capsys.readouterr().err
    client = get_client(None, data)
    try:
        assert client.lrange(KEY, 0, -1) == [b"http://a.example/n/1.html"]
    finally:
        close_embedded(client)
