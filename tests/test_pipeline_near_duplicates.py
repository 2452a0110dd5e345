"""Near-duplicate and storage pipelines on a real (embedded) Redis, without a crawl."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from mockportal import Article
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from newscrawl.context import CrawlContext
from newscrawl.index import DuplicateLog
from newscrawl.index.simhash_index import layout_version
from newscrawl.items import ArticleItem
from newscrawl.pipelines import (
    AlreadyStored,
    NearDuplicate,
    NearDuplicatePipeline,
    StorePipeline,
)
from newscrawl.simhash import fingerprint, hamming
from newscrawl.storage import iter_articles


def item(url: str, text: str) -> ArticleItem:
    return ArticleItem(url=url, title="t", text=text, published=None, author=None,
                       site="s", simhash=None)


def run_both(dedup: NearDuplicatePipeline, store: StorePipeline, it: ArticleItem) -> Any:
    result = asyncio.run(dedup.process_item(it))
    return store.process_item(result)


@pytest.mark.parametrize("workers", [0, 1])
def test_dedup_then_store(tmp_path: Path, workers: int) -> None:
    crawler = get_crawler(settings_dict={
        "NEWSCRAWL_DATA_DIR": str(tmp_path / "data"),
        "NEWSCRAWL_FINGERPRINT_WORKERS": workers,
    })
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    assert dedup.fingerprints.processes == workers
    store = StorePipeline.from_crawler(crawler)
    try:
        original = Article.generate("p1")
        reprint = original.reprint("乙网")
        first = run_both(dedup, store, item("http://a/1", original.text))
        assert len(first["simhash"]) == 16 and int(first["simhash"], 16) >= 0
        with pytest.raises(NearDuplicate) as info:
            run_both(dedup, store, item("http://b/1", reprint.text))
        assert info.value.original_url == "http://a/1" and info.value.distance <= 3
        with pytest.raises(NearDuplicate):  # exact copy under another URL
            run_both(dedup, store, item("http://a/copy", original.text))
        other = run_both(dedup, store, item("http://a/2", Article.generate("p2").text))
        empty = run_both(dedup, store, item("http://a/3", ""))
        assert empty["simhash"] is None
        # Indexed, then the run stopped before storing it: the next run stores it, not drops it.
        lost = Article.generate("p4").text
        asyncio.run(dedup.process_item(item("http://a/4", lost)))  # indexed, never stored
        again = run_both(dedup, store, item("http://a/4", lost))
        assert again["simhash"] == f"{fingerprint(lost):016x}"
        # Indexed and stored, then the run stopped before recording it as done: the next run
        # finds its record in the store and does not store it twice.
        with pytest.raises(AlreadyStored):
            run_both(dedup, store, item("http://a/1", original.text))
        # ... also when the page changed a little since (its stored fingerprint is looked up)
        paragraphs = original.text.split("\n")
        edits = ("\n".join(paragraphs[:i] + paragraphs[i + 1 :]) for i in range(len(paragraphs)))
        base = fingerprint(original.text)
        changed = next(t for t in edits if 0 < hamming(fingerprint(t) or 0, base or 0) <= 3)
        with pytest.raises(AlreadyStored):
            run_both(dedup, store, item("http://a/1", changed))
        stats = crawler.stats.get_stats()
        assert stats["newscrawl/dedup/checked"] == 8
        assert stats["newscrawl/dedup/unique"] == 3
        assert stats["newscrawl/dedup/near_duplicate"] == 2
        assert stats["newscrawl/dedup/no_text"] == 1
        assert stats["newscrawl/dedup/reprocessed"] == 1
        assert stats["newscrawl/dedup/already_stored"] == 2
        records = {r.url: r for r in DuplicateLog(CrawlContext.of(crawler).redis).list()}
        assert set(records) == {"http://b/1", "http://a/copy"}
        assert records["http://a/copy"].distance == 0
        assert records["http://b/1"].original_url == "http://a/1"
    finally:
        store.close()
        dedup.fingerprints.close()
        CrawlContext.of(crawler).redis.connection_pool.disconnect()
    stored = list(iter_articles(tmp_path / "data" / "articles"))
    assert [s["url"] for s in stored] == ["http://a/1", "http://a/2", "http://a/3", "http://a/4"]
    assert stored[1]["text"] == other["text"]


def test_an_article_whose_index_entry_redis_lost_is_not_stored_twice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis lost its last writes (the embedded server crashed within its fsync interval): the
    article's index entry and done record are gone, its record is in today's file. It comes
    round again, is unique to the index, and the store finds it before writing; the next crawl
    adds the lost entry again when it opens, so a reprint of it is dropped."""
    settings = {"NEWSCRAWL_DATA_DIR": str(tmp_path / "data"), "NEWSCRAWL_FINGERPRINT_WORKERS": 0}
    crawler = get_crawler(settings_dict=settings)
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)
    lost = Article.generate("lost")
    try:
        first = run_both(dedup, store, item("http://a/1", lost.text))
        run_both(dedup, store, item("http://a/2", Article.generate("kept").text))
        assert dedup.index.remove(int(first["simhash"], 16), "http://a/1")  # the lost write
        with pytest.raises(AlreadyStored):
            run_both(dedup, store, item("http://a/1", lost.text))
        stats = crawler.stats.get_stats()
        assert stats["newscrawl/dedup/unique"] == 3  # the index did not know it any more
        assert stats["newscrawl/store/already_stored"] == 1
        dedup.index.remove(int(first["simhash"], 16), "http://a/1")  # lost again
    finally:
        store.close()
        dedup.close()
        CrawlContext.of(crawler).redis.connection_pool.disconnect()

    crawler = get_crawler(settings_dict=settings)
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    with caplog.at_level(logging.WARNING, logger="newscrawl.pipelines.reconcile"):
        asyncio.run(dedup.open_spider())
    store = StorePipeline.from_crawler(crawler)
    try:
        assert "had lost 1 fingerprint(s)" in caplog.text
        assert dedup.index.count() == 2
        with pytest.raises(NearDuplicate) as info:
            run_both(dedup, store, item("http://b/1", lost.reprint("乙网").text))
        assert info.value.original_url == "http://a/1"
    finally:
        store.close()
        dedup.close()
        CrawlContext.of(crawler).redis.connection_pool.disconnect()
    assert [a["url"] for a in iter_articles(tmp_path / "data" / "articles")] == [
        "http://a/1", "http://a/2"]


def test_an_empty_index_is_rebuilt_from_the_store(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """The index lost everything (Redis files deleted, a new Redis) while the store holds older
    days: the pipeline refills it from the store when it opens, each record as indexed on its
    file's day, so an article met again is found stored and reprints of it are dropped."""
    import time

    from newscrawl.storage import ArticleStore, day_of

    settings = {"NEWSCRAWL_DATA_DIR": str(tmp_path / "data"), "NEWSCRAWL_FINGERPRINT_WORKERS": 0}
    articles = [Article.generate(f"old{i}") for i in range(3)]
    old = ArticleStore(tmp_path / "data" / "articles")
    for days_ago, (i, article) in zip((9, 9, 3), enumerate(articles), strict=True):
        old.write({"url": f"http://a/{i}", "title": "t", "text": article.text},
                  now=time.time() - days_ago * 86400)
    old.write({"url": "http://a/no-text", "title": "t", "text": ""}, now=time.time() - 86400 * 3)
    old.close()

    crawler = get_crawler(settings_dict=settings)
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    assert dedup.index.count() == 0  # until the pipeline opens, when the crawl starts
    with caplog.at_level(logging.INFO, logger="newscrawl.pipelines.reconcile"):
        asyncio.run(dedup.open_spider())
    store = StorePipeline.from_crawler(crawler)
    try:
        assert dedup.index.count() == 3
        assert "rebuilding the index from the store" in caplog.text
        assert "Index rebuild: " in caplog.text and "(2 of 2 files)" in caplog.text
        day9 = int(time.time() // 86400) - 9
        assert day_of(day9 * 86400) == day_of(time.time() - 9 * 86400)
        assert dedup.index.stored_day(fingerprint(articles[0].text) or 0, "http://a/0") == day9
        with pytest.raises(AlreadyStored):  # stored 9 days ago: not in the last two days' files
            run_both(dedup, store, item("http://a/0", articles[0].text))
        with pytest.raises(NearDuplicate):
            run_both(dedup, store, item("http://b/0", articles[2].reprint("乙网").text))
        assert crawler.stats.get_value("newscrawl/dedup/already_stored") == 1
        # a pipeline opened on a non-empty index does not rebuild
        caplog.clear()
        other = get_crawler(settings_dict=settings)
        reopened = NearDuplicatePipeline.from_crawler(other)
        asyncio.run(reopened.open_spider())
        reopened.close()
        CrawlContext.of(other).redis.connection_pool.disconnect()
        assert "rebuild" not in caplog.text
    finally:
        store.close()
        dedup.close()
        CrawlContext.of(crawler).redis.connection_pool.disconnect()
    assert len(list(iter_articles(tmp_path / "data" / "articles"))) == 4


def test_an_index_a_prune_emptied_is_not_rebuilt_with_what_was_pruned(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """`newscrawl prune --days 5` deleted every fingerprint (all older): the next crawl does not
    take the index for lost and add them back from the store; a record of a day the prune kept
    (stored since) is added back if the index loses it."""
    import time

    from newscrawl.storage import ArticleStore

    settings = {"NEWSCRAWL_DATA_DIR": str(tmp_path / "data"), "NEWSCRAWL_FINGERPRINT_WORKERS": 0}
    articles = [Article.generate(f"old{i}") for i in range(3)]
    crawler = get_crawler(settings_dict=settings)
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    old = ArticleStore(tmp_path / "data" / "articles")
    try:
        for days_ago, (i, article) in zip((9, 8, 7), enumerate(articles), strict=True):
            old.write({"url": f"http://a/{i}", "title": "t", "text": article.text},
                      now=time.time() - days_ago * 86400)
        asyncio.run(dedup.open_spider())  # the index rebuilt from the store: 3
        assert dedup.index.count() == 3
        assert dedup.index.prune(5) == 3 and dedup.index.count() == 0
    finally:
        dedup.close()
        CrawlContext.of(crawler).redis.connection_pool.disconnect()

    caplog.clear()
    crawler = get_crawler(settings_dict=settings)
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    try:
        with caplog.at_level(logging.INFO, logger="newscrawl.pipelines.reconcile"):
            asyncio.run(dedup.open_spider())
        assert dedup.index.count() == 0
        assert "rebuild" not in caplog.text
        # a Redis that loses everything later (the prune's record too) is rebuilt as before
        old.write({"url": "http://a/new", "title": "t", "text": Article.generate("new").text},
                  now=time.time() - 2 * 86400)
        dedup.index.client.flushall()
        asyncio.run(dedup.open_spider())
        assert dedup.index.count() == 4
    finally:
        old.close()
        dedup.close()
        CrawlContext.of(crawler).redis.connection_pool.disconnect()


def test_an_index_of_another_version_is_not_rebuilt_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from newscrawl.storage import ArticleStore

    store = ArticleStore(tmp_path / "data" / "articles")
    store.write({"url": "http://a/1", "text": Article.generate("v").text})
    store.close()
    crawler = get_crawler(settings_dict={"NEWSCRAWL_DATA_DIR": str(tmp_path / "data"),
                                         "NEWSCRAWL_FINGERPRINT_WORKERS": 0})
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    try:
        dedup.index.client.hset(dedup.index.meta_key, "version", "another/ix5")
        with caplog.at_level(logging.WARNING, logger="newscrawl.pipelines.near_duplicates"):
            asyncio.run(dedup.open_spider())  # refused when the spider opens: no crash here
        assert dedup.index.count() == 0
        assert dedup.index.stored_version() == "another/ix5"  # not rebuilt over
    finally:
        dedup.close()
        CrawlContext.of(crawler).redis.connection_pool.disconnect()


def test_end_of_crawl_closes_the_index_and_stops_the_embedded_redis(tmp_path: Path) -> None:
    """spider_closed closes the index; engine_stopped then stops the crawl's embedded Redis (the
    index leaves no connection of its own that would count as another client)."""
    from redisserver import embedded_servers
    from scrapy import signals

    data_dir = tmp_path / "data"
    crawler = get_crawler(settings_dict={
        "NEWSCRAWL_DATA_DIR": str(data_dir),
        "NEWSCRAWL_FINGERPRINT_WORKERS": 0,
    })
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    client = CrawlContext.of(crawler).redis
    try:
        result = asyncio.run(dedup.process_item(item("http://c/1", Article.generate("c").text)))
        assert result["simhash"] is not None
        assert embedded_servers(data_dir, wait=0) != []
        crawler.signals.send_catch_log(signals.spider_closed, spider=None, reason="finished")
        assert client.connection_pool._in_use_connections == set()  # noqa: SLF001
        crawler.signals.send_catch_log(signals.engine_stopped)
        assert embedded_servers(data_dir) == []
    finally:
        dedup.fingerprints.close()
        client.connection_pool.disconnect()


def test_switches(tmp_path: Path) -> None:
    with pytest.raises(NotConfigured):
        NearDuplicatePipeline.from_crawler(get_crawler(settings_dict={
            "NEWSCRAWL_DEDUP_ENABLED": False}))
    with pytest.raises(NotConfigured):
        StorePipeline.from_crawler(get_crawler(settings_dict={"NEWSCRAWL_STORE": False}))
    crawler = get_crawler(settings_dict={"NEWSCRAWL_STORE_DIR": str(tmp_path / "out")})
    store = StorePipeline.from_crawler(crawler)
    store.process_item(item("http://x/1", "正文"))
    store.close()
    assert [a["text"] for a in iter_articles(tmp_path / "out")] == ["正文"]


def test_worker_killed_falls_back_in_process(tmp_path: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    """A dead fingerprint worker: items in flight and later ones are fingerprinted in-process."""
    crawler = get_crawler(settings_dict={
        "NEWSCRAWL_DATA_DIR": str(tmp_path / "data"),
        "NEWSCRAWL_FINGERPRINT_WORKERS": 1,
    })
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    texts = [Article.generate(f"k{i}").text for i in range(6)]
    expected = [f"{fingerprint(t):016x}" for t in texts]

    async def crawl() -> list[Any]:
        first = await dedup.process_item(item("http://k/0", texts[0]))
        # The worker dies while three items are in flight, then two more arrive.
        worker = dedup.fingerprints._workers[0].process
        in_flight = [asyncio.ensure_future(dedup.process_item(item(f"http://k/{i}", texts[i])))
                     for i in (1, 2, 3)]
        await asyncio.sleep(0)
        assert worker.pid is not None
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(10)
        later = [await dedup.process_item(item(f"http://k/{i}", texts[i])) for i in (4, 5)]
        return [first, *await asyncio.gather(*in_flight), *later]

    try:
        with caplog.at_level(logging.ERROR, logger="newscrawl.workers"):
            results = asyncio.run(crawl())
        assert [r["simhash"] for r in results] == expected
        assert dedup.fingerprints.processes == 0
        assert "Fingerprint worker process failed" in caplog.text
        assert crawler.stats.get_value("newscrawl/dedup/unique") == 6
    finally:
        dedup.fingerprints.close()
        CrawlContext.of(crawler).redis.connection_pool.disconnect()


def test_worker_error_raised_for_its_item(tmp_path: Path) -> None:
    """An error in the worker is raised for that item (recomputed in-process); the worker lives."""
    crawler = get_crawler(settings_dict={
        "NEWSCRAWL_DATA_DIR": str(tmp_path / "data"),
        "NEWSCRAWL_FINGERPRINT_WORKERS": 1,
    })
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    try:
        with pytest.raises((TypeError, AttributeError)):
            asyncio.run(dedup.process_item(item("http://e/1", 12345)))  # type: ignore[arg-type]
        ok = asyncio.run(dedup.process_item(item("http://e/2", Article.generate("e").text)))
        assert ok["simhash"] is not None
        assert dedup.fingerprints.processes == 1
    finally:
        dedup.fingerprints.close()
        CrawlContext.of(crawler).redis.connection_pool.disconnect()


def test_store_contains_only_complete_records_of_that_url(tmp_path: Path) -> None:
    from newscrawl.storage import ArticleStore

    store = ArticleStore(tmp_path)
    day = 20000 * 86400.0
    store.write({"url": "http://a/1", "text": "mentions http://a/2 and \"http://a/3\""}, now=day)
    store.close()
    path = store.path_for("2024-10-04")
    assert path.exists()
    with path.open("ab") as fh:  # a torn record (the run died inside its write)
        fh.write(b'{"url": "http://a/4", "text": "cut')
    assert store.contains("http://a/1", ["2024-10-03", "2024-10-04"])
    assert not store.contains("http://a/1", ["2024-10-05"])
    assert not store.contains("http://a/2", ["2024-10-04"])  # in the text, not the url
    assert not store.contains("http://a/3", ["2024-10-04"])
    assert not store.contains("http://a/4", ["2024-10-04"])  # never completely written
    # asked with the day its fingerprint was indexed: stored that day or the day after
    assert store.already_stored("http://a/1", 20000) and store.already_stored("http://a/1", 19999)
    assert not store.already_stored("http://a/1", 19998)
    assert not store.already_stored("http://a/1", 20001)


@pytest.mark.parametrize("workers", [0, 1])
def test_pipeline_keeps_template_reports_and_drops_reprints(tmp_path: Path, workers: int) -> None:
    """The crawl makes the decision `newscrawl dedup` makes: daily reports with the same wording
    and other numbers are stored, a reprint with a source line and a footer is dropped."""
    from test_simhash_decision import ARTICLE_A, _fx

    crawler = get_crawler(settings_dict={
        "NEWSCRAWL_DATA_DIR": str(tmp_path / "data"),
        "NEWSCRAWL_FINGERPRINT_WORKERS": workers,
    })
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    try:
        for day, (usd, up, bp) in enumerate([("6.4512", True, 35), ("6.4498", False, 14)]):
            report = item(f"http://fx/{day}", _fx(11 + day, up, usd, bp))
            kept = asyncio.run(dedup.process_item(report))
            assert kept["simhash"] is not None
        asyncio.run(dedup.process_item(item("http://a/1", ARTICLE_A)))
        reprint = "来源：新华网 责任编辑：李华\n" + ARTICLE_A + "\n（本文转载自新华网。）"
        with pytest.raises(NearDuplicate) as info:
            asyncio.run(dedup.process_item(item("http://b/1", reprint)))
        assert info.value.original_url == "http://a/1"
        assert dedup.index.version == layout_version(dedup.fingerprints.version)
        assert "/sk1-" in dedup.index.version
    finally:
        dedup.close()


def test_expected_drops_are_logged_at_info() -> None:
    # Scrapy logs a DropItem at WARNING unless it says otherwise; near-duplicates and articles
    # already stored (every article again after `newscrawl reset`) are expected outcomes.
    from scrapy import Spider

    from newscrawl.logformatter import LogFormatter

    spider = Spider.from_crawler(get_crawler(Spider), name="t")
    drops = [
        AlreadyStored("http://a.test/1 is already stored"),
        NearDuplicate("near-duplicate", url="http://a.test/2", original_url="http://a.test/1",
                      distance=2),
    ]
    for exc in drops:
        result = LogFormatter().dropped({"url": "http://a.test/1"}, exc, None, spider)
        assert result["level"] == logging.INFO, type(exc).__name__


def test_an_original_met_after_its_copy_is_dropped_and_recorded_as_the_original(
        tmp_path: Path) -> None:
    """A reprint stored before its original (met first) stays the only copy: the original,
    published earlier, is dropped, counted as a late original and recorded as published first;
    a reprint met after the stored copy is dropped as usual, its record saying which copy was
    published first. Every URL in the duplicate log is one that is not in the store."""
    crawler = get_crawler(settings_dict={"NEWSCRAWL_DATA_DIR": str(tmp_path / "data"),
                                         "NEWSCRAWL_FINGERPRINT_WORKERS": 0})
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)

    def dated(url: str, text: str, published: str | None) -> ArticleItem:
        it = item(url, text)
        it["published"] = published
        it["title"] = f"title of {url}"
        return it

    try:
        original = Article.generate("first")
        reprint = original.reprint("乙网")
        stored = run_both(dedup, store, dated("http://b/r", reprint.text, "2026-11-05T09:00:00"))
        assert stored["url"] == "http://b/r"
        with pytest.raises(NearDuplicate) as info:
            run_both(dedup, store, dated("http://a/o", original.text, "2026-11-01T08:00:00"))
        assert info.value.original_url == "http://b/r"
        assert crawler.stats.get_value("newscrawl/dedup/late_original") == 1
        assert crawler.stats.get_value("newscrawl/dedup/near_duplicate") is None
        log = DuplicateLog(dedup.index.client)
        late = log.get("http://a/o")
        assert late is not None and late.original_url == "http://b/r"
        assert late.late_original
        assert late.extra["published_first"] == "duplicate"
        assert late.extra["original_title"] == "title of http://b/r"
        assert late.extra["published"] == "2026-11-01T08:00:00"
        assert late.extra["original_published"] == "2026-11-05T09:00:00"
        # a later reprint is dropped against the stored copy; its record says that came first
        with pytest.raises(NearDuplicate):
            run_both(dedup, store, dated("http://c/r", original.text, "2026-11-09T10:00:00"))
        later = log.get("http://c/r")
        assert later is not None and later.extra["published_first"] == "original"
        assert not later.late_original
        # no date on the new copy: dropped, nothing said about the order
        with pytest.raises(NearDuplicate):
            run_both(dedup, store, dated("http://d/r", original.text, None))
        undated = log.get("http://d/r")
        assert undated is not None and undated.extra["published_first"] is None
        stored_urls = {a["url"] for a in iter_articles(tmp_path / "data" / "articles")}
        assert stored_urls == {"http://b/r"}
        assert not stored_urls & {r.url for r in log.list()}
    finally:
        store.close()
        dedup.close()


def test_copies_met_out_of_publication_order_store_one(tmp_path: Path) -> None:
    """Copies met in any order: the first one checked is stored, every later one is dropped,
    whatever its date; those published before the stored copy are late originals."""
    crawler = get_crawler(settings_dict={"NEWSCRAWL_DATA_DIR": str(tmp_path / "data"),
                                         "NEWSCRAWL_FINGERPRINT_WORKERS": 0})
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)

    def dated(url: str, text: str, published: str) -> ArticleItem:
        it = item(url, text)
        it["published"] = published
        return it

    try:
        text = Article.generate("order").text
        reprint = Article.generate("order").reprint("乙网").text
        log = DuplicateLog(dedup.index.client)
        run_both(dedup, store, dated("http://a/1", text, "2026-11-28T10:23:00"))
        for url, body, when in (("http://b/1", reprint, "2026-11-15T10:58:00"),
                                ("http://c/1", text, "2026-11-15T10:50:00"),
                                ("http://d/1", text, "2026-11-29T09:00:00")):
            with pytest.raises(NearDuplicate):
                run_both(dedup, store, dated(url, body, when))
        assert {a["url"] for a in iter_articles(tmp_path / "data" / "articles")} == {
            "http://a/1"}
        assert log.get("http://b/1").late_original  # type: ignore[union-attr]
        assert log.get("http://c/1").late_original  # type: ignore[union-attr]
        assert not log.get("http://d/1").late_original  # type: ignore[union-attr]
        assert crawler.stats.get_value("newscrawl/dedup/late_original") == 2
        assert crawler.stats.get_value("newscrawl/dedup/near_duplicate") == 1
    finally:
        store.close()
        dedup.close()
