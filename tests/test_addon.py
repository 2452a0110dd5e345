"""The Scrapy add-on (newscrawl/addon.py, docs/addon.md) in another Scrapy project.

The end-to-end test writes a minimal Scrapy project into tmp_path (its own ``scrapy.cfg``, a
settings module with nothing but ``ADDONS``, its own spider yielding plain dicts and its own
``scrapy.Item`` class with ``url`` and ``text``) and runs it with a real ``scrapy crawl`` against
a mock portal on 127.0.0.1, on the embedded Redis the add-on defaults to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import scrapy
from mockportal import Article, MockPortal, html_page, list_html
from scrapy.utils.test import get_crawler

from newscrawl.items import ARTICLE_FIELDS, ArticleItem
from newscrawl.pipelines.store import StorePipeline
from newscrawl.storage import ArticleStore, iter_articles

REPO = Path(__file__).resolve().parent.parent
ADDON = {"newscrawl.addon.Newscrawl": 0}

SPIDER = '''
import scrapy


class Story(scrapy.Item):
    url = scrapy.Field()
    text = scrapy.Field()
    headline = scrapy.Field()


class NewsSpider(scrapy.Spider):
    name = "news"

    def __init__(self, start: str = "", **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]

    def parse(self, response):
        for href in response.css("li a::attr(href)").getall():
            yield response.follow(href, self.parse_article)

    def parse_article(self, response):
        text = "\\n".join(response.css("div.content p::text").getall())
        if "/s/" in response.url:  # its own Item class: no site, title or simhash field
            yield Story(url=response.url, text=text, headline=response.css("h1::text").get())
        else:
            yield {"url": response.url, "text": text}
'''


def write_project(root: Path) -> Path:
    """A Scrapy project that knows nothing of newscrawl but the add-on's name."""
    (root / "newsproj" / "spiders").mkdir(parents=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = newsproj.settings\n", encoding="utf-8")
    (root / "newsproj" / "__init__.py").write_text("", encoding="utf-8")
    (root / "newsproj" / "settings.py").write_text(
        textwrap.dedent(f"""\
            SPIDER_MODULES = ["newsproj.spiders"]
            ADDONS = {ADDON!r}
            """),
        encoding="utf-8",
    )
    (root / "newsproj" / "spiders" / "__init__.py").write_text("", encoding="utf-8")
    (root / "newsproj" / "spiders" / "news.py").write_text(SPIDER, encoding="utf-8")
    return root


def crawl(project: Path, start: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    for name in ("SCRAPY_SETTINGS_MODULE", "REDIS_URL", "NEWSCRAWL_DATA_DIR",
                 "NEWSCRAWL_REDIS_PREFIX"):
        env.pop(name, None)  # the project's own settings and the add-on's defaults only
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start={start}",
           # end soon after the queue is drained (the default waits 10 s for other workers)
           "-s", "NEWSCRAWL_IDLE_EXIT_SECONDS=0.5"]
    return subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True,
                          timeout=180)


def test_another_project_gets_scheduling_dedup_and_storage_from_one_line(
    tmp_path: Path, portal: MockPortal
) -> None:
    originals = [Article.generate(f"addon-{n}") for n in range(3)]
    articles = {"/a/1.html": originals[0], "/a/2.html": originals[1], "/s/3.html": originals[2],
                "/s/4.html": originals[0].reprint("别家网")}
    for path, article in articles.items():
        portal.add_article(path, article)
    portal.set("/", html_page(list_html("新闻", list(articles))))
    project = write_project(tmp_path / "project")

    first = crawl(project, portal.url("/"))
    log = first.stdout + first.stderr
    assert first.returncode == 0, log[-4000:]
    assert "Spider closed (finished)" in log, log[-4000:]
    # the embedded Redis and the article store, in the project's working directory
    store_dir = project / ".newscrawl" / "articles"
    records = list(iter_articles(store_dir))
    stored = Counter(r["url"] for r in records)
    assert max(stored.values()) == 1, stored
    assert {portal.url("/a/2.html"), portal.url("/s/3.html")} <= set(stored)
    group = {portal.url("/a/1.html"), portal.url("/s/4.html")}
    assert len(group & set(stored)) == 1, f"reprint group {group}: stored {sorted(stored)}"
    assert len(stored) == 3, stored
    for record in records:  # the item's own fields, the fingerprint where it could take it
        assert record["text"]
        if "/s/" in record["url"]:
            assert set(record) == {"url", "text", "headline"}
        else:
            assert set(record) == {"url", "text", "simhash"}
            assert len(record["simhash"]) == 16
    assert "near-duplicate of" in log
    assert all(portal.hit_counts()[path] == 1 for path in articles)

    # Next day: one new article on the list page; nothing fetched or stored twice.
    portal.add_article("/a/5.html", Article.generate("addon-5"))
    portal.add_link("/", "/a/5.html")
    second = crawl(project, portal.url("/"))
    log = second.stdout + second.stderr
    assert second.returncode == 0, log[-4000:]
    hits = portal.hit_counts()
    assert {path: hits[path] for path in articles} == dict.fromkeys(articles, 1)
    assert hits["/a/5.html"] == 1
    assert hits["/"] == 2  # the start page is visited on every run
    stored = Counter(r["url"] for r in iter_articles(store_dir))
    assert max(stored.values()) == 1, stored
    assert set(stored) - {portal.url("/a/5.html")} == {r["url"] for r in records}


def settings_of(settings: dict[str, Any], spidercls: type[scrapy.Spider] | None = None) -> Any:
    return get_crawler(spidercls or scrapy.Spider, settings_dict=settings).settings


def test_a_projects_own_settings_win_over_the_addons_defaults() -> None:
    plain = settings_of({})
    assert plain.get("NEWSCRAWL_LEASE_SECONDS") is None  # only the add-on sets these
    settings = settings_of({
        "ADDONS": ADDON,
        "NEWSCRAWL_MAX_DISTANCE": 5,
        "LOG_FORMATTER": "scrapy.logformatter.LogFormatter",
        "ITEM_PIPELINES": {"newscrawl.pipelines.store.StorePipeline": None,
                           "scrapy.pipelines.files.FilesPipeline": 100},
    })
    assert settings.getint("NEWSCRAWL_MAX_DISTANCE") == 5
    assert settings.get("LOG_FORMATTER") == "scrapy.logformatter.LogFormatter"
    assert settings.getint("NEWSCRAWL_LEASE_SECONDS") == 120  # not set by the project: default
    assert settings.get("SCHEDULER") == "newscrawl.scheduling.scheduler.Scheduler"
    assert settings.get("NEWSCRAWL_URL_FIELD") == "url"
    pipelines = {k if isinstance(k, str) else f"{k.__module__}.{k.__qualname__}": v
                 for k, v in settings.getdict("ITEM_PIPELINES").items()}
    assert pipelines == {
        "newscrawl.pipelines.store.StorePipeline": None,  # switched off by the project
        "scrapy.pipelines.files.FilesPipeline": 100,
        "newscrawl.pipelines.near_duplicates.NearDuplicatePipeline": 300,
    }


def test_a_spiders_custom_settings_win_over_the_addons_defaults() -> None:
    class Spider(scrapy.Spider):
        name = "s"
        custom_settings = {"NEWSCRAWL_IDLE_EXIT_SECONDS": 2, "SCHEDULER_PERSIST": False}

    settings = settings_of({"ADDONS": ADDON}, Spider)
    assert settings.getfloat("NEWSCRAWL_IDLE_EXIT_SECONDS") == 2
    assert settings.getbool("SCHEDULER_PERSIST") is False


def store_pipeline(tmp_path: Path, **settings: Any) -> StorePipeline:
    crawler = get_crawler(scrapy.Spider, settings_dict={
        "ADDONS": ADDON, "NEWSCRAWL_STORE_DIR": str(tmp_path), **settings})
    return StorePipeline.from_crawler(crawler)


def test_an_article_item_is_stored_with_every_article_field_in_order(tmp_path: Path) -> None:
    pipe = store_pipeline(tmp_path)
    pipe.process_item(ArticleItem(url="https://example.com/a", text="正文", site="s"))
    pipe.close()
    line = next(tmp_path.glob("*.jsonl")).read_text(encoding="utf-8")
    record = json.loads(line)
    assert tuple(record) == ARTICLE_FIELDS
    assert record["site"] == "s" and record["title"] is None


def test_items_with_other_field_names_are_stored_and_found(tmp_path: Path) -> None:
    class Story(scrapy.Item):
        body = scrapy.Field()
        link = scrapy.Field()

    pipe = store_pipeline(tmp_path, NEWSCRAWL_URL_FIELD="link", NEWSCRAWL_TEXT_FIELD="body")
    pipe.process_item(Story(body="正文", link="https://example.com/b"))
    with pytest.raises(scrapy.exceptions.DropItem, match="no 'link' field"):
        pipe.process_item({"body": "no URL"})
    pipe.close()
    path = next(tmp_path.glob("*.jsonl"))
    assert list(json.loads(path.read_text(encoding="utf-8"))) == ["link", "body"]
    store = ArticleStore(tmp_path, url_field="link")
    assert store.contains("https://example.com/b", [path.stem])
    assert not ArticleStore(tmp_path).contains("https://example.com/b", [path.stem])


def test_dataclass_items_with_other_field_names_go_through_both_pipelines(tmp_path: Path) -> None:
    import asyncio
    from dataclasses import dataclass

    from newscrawl.context import CrawlContext
    from newscrawl.pipelines import AlreadyStored, NearDuplicate, NearDuplicatePipeline

    @dataclass
    class Story:
        link: str | None
        body: str

    crawler = get_crawler(scrapy.Spider, settings_dict={
        "ADDONS": ADDON, "NEWSCRAWL_DATA_DIR": str(tmp_path / "data"),
        "NEWSCRAWL_FINGERPRINT_WORKERS": 0,
        "NEWSCRAWL_URL_FIELD": "link", "NEWSCRAWL_TEXT_FIELD": "body"})
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)

    def both(story: Story) -> Any:
        return store.process_item(asyncio.run(dedup.process_item(story)))

    original = Article.generate("dataclass-1")
    try:
        kept = both(Story("http://a/1", original.text))
        with pytest.raises(NearDuplicate):
            both(Story("http://b/1", original.reprint("乙网").text))
        with pytest.raises(AlreadyStored):  # found in the store by its "link" field
            both(Story("http://a/1", original.text))
        with pytest.raises(scrapy.exceptions.DropItem, match="no 'link' field"):
            both(Story(None, original.text))
    finally:
        store.close()
        dedup.fingerprints.close()
        CrawlContext.of(crawler).redis.connection_pool.disconnect()
    assert kept == Story("http://a/1", original.text)  # no simhash field to set
    stats = crawler.stats.get_stats()
    assert stats["newscrawl/dedup/no_url"] == 1
    assert stats["newscrawl/dedup/near_duplicate"] == 1
    records = list(iter_articles(tmp_path / "data" / "articles"))
    assert records == [{"link": "http://a/1", "body": original.text}]
