"""Near-duplicate and storage pipelines on a real (embedded) Redis, without a crawl."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mockportal import Article
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from newscrawl.crawler_redis import redis_for_crawler
from newscrawl.index import DuplicateLog
from newscrawl.items import ArticleItem
from newscrawl.pipelines import NearDuplicate, NearDuplicatePipeline, StorePipeline
from newscrawl.storage import iter_articles


def item(url: str, text: str) -> ArticleItem:
    return ArticleItem(url=url, title="t", text=text, published=None, author=None,
                       site="s", simhash=None)


def run_both(dedup: NearDuplicatePipeline, store: StorePipeline, it: ArticleItem) -> Any:
    result = asyncio.run(dedup.process_item(it))
    return store.process_item(result)


def test_dedup_then_store(tmp_path: Path) -> None:
    crawler = get_crawler(settings_dict={
        "NEWSCRAWL_DATA_DIR": str(tmp_path / "data"),
        "NEWSCRAWL_FINGERPRINT_WORKERS": 0,
    })
    dedup = NearDuplicatePipeline.from_crawler(crawler)
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
        # The same URL again (a worker died after indexing, before storing): stored, not dropped.
        again = run_both(dedup, store, item("http://a/1", original.text))
        assert again["simhash"] == first["simhash"]
        stats = crawler.stats.get_stats()
        assert stats["newscrawl/dedup/checked"] == 5
        assert stats["newscrawl/dedup/unique"] == 2
        assert stats["newscrawl/dedup/near_duplicate"] == 2
        assert stats["newscrawl/dedup/no_text"] == 1
        assert stats["newscrawl/dedup/reprocessed"] == 1
        records = {r.url: r for r in DuplicateLog(redis_for_crawler(crawler)).list()}
        assert set(records) == {"http://b/1", "http://a/copy"}
        assert records["http://a/copy"].distance == 0
        assert records["http://b/1"].original_url == "http://a/1"
    finally:
        store.close()
        dedup.fingerprints.close()
        redis_for_crawler(crawler).connection_pool.disconnect()
    stored = list(iter_articles(tmp_path / "data" / "articles"))
    assert [s["url"] for s in stored] == ["http://a/1", "http://a/2", "http://a/3", "http://a/1"]
    assert stored[1]["text"] == other["text"]


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
