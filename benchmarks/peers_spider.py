"""The peer crawlers of bench_peers.py, run with ``scrapy runspider``: A, plain Scrapy with the same
trafilatura call as newscrawl; B, the same on scrapy-redis with the seeds' recipe (baselines.py)
and an HGETALL scan. Settings: ``PEERS_OUT``, ``PEERS_ARTICLE``, ``PEERS_LIST``, ``REDIS_URL``.
docs/benchmarks.md#bench_peerspy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import scrapy
import trafilatura
from scrapy.exceptions import DropItem

MAX_DISTANCE = 3
KEY = "peers:simhash"


class PeerSpider(scrapy.Spider):
    name = "peer"

    def __init__(self, start: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = start.split(",")  # one or more start pages

    def parse(self, response: Any) -> Iterator[scrapy.Request]:
        article = re.compile(self.settings.get("PEERS_ARTICLE"))
        listing = re.compile(self.settings.get("PEERS_LIST"))
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if article.search(url):
                yield scrapy.Request(url, self.parse_article)
            elif listing.search(url):
                yield scrapy.Request(url, self.parse)

    def parse_article(self, response: Any) -> Iterator[dict[str, Any]]:
        doc = trafilatura.bare_extraction(
            response.text,
            url=response.url,
            with_metadata=True,
            include_comments=False,
            include_tables=True,
            favor_precision=True,
            date_extraction_params={"original_date": True, "extensive_search": False},
        )
        text = (getattr(doc, "text", None) or "").strip() if doc is not None else ""
        if text:
            yield {"url": response.url, "title": getattr(doc, "title", None), "text": text}


class StorePipeline:
    """Every item that reaches it, as one JSON line."""

    def open_spider(self, spider: scrapy.Spider) -> None:
        self.out = open(spider.settings.get("PEERS_OUT"), "a", encoding="utf-8")  # noqa: SIM115

    def close_spider(self, spider: scrapy.Spider) -> None:
        self.out.close()

    def process_item(self, item: dict[str, Any], spider: scrapy.Spider) -> dict[str, Any]:
        self.out.write(json.dumps({"url": item["url"], "kept": True}) + "\n")
        return item


class SeedsDedupPipeline:
    """jieba top-20 TF-IDF keywords -> simhash -> HGETALL scan of every stored fingerprint."""

    def open_spider(self, spider: scrapy.Spider) -> None:
        import redis
        from baselines import SeedsRecipe  # variant B only: A stays plain Scrapy

        self.fingerprint = SeedsRecipe().fingerprint
        self.client = redis.Redis.from_url(spider.settings.get("REDIS_URL"))
        self.log = open(spider.settings.get("PEERS_OUT"), "a", encoding="utf-8")  # noqa: SIM115

    def close_spider(self, spider: scrapy.Spider) -> None:
        self.log.close()

    def process_item(self, item: dict[str, Any], spider: scrapy.Spider) -> dict[str, Any]:
        fp = self.fingerprint(item["text"])
        if fp is None:
            return item
        for key, url in self.client.hgetall(KEY).items():
            if (int(key, 16) ^ fp).bit_count() <= MAX_DISTANCE:
                original = url.decode() if isinstance(url, bytes) else url
                self.log.write(json.dumps({"url": item["url"], "duplicate_of": original}) + "\n")
                raise DropItem(f"near-duplicate of {original}")
        self.client.hset(KEY, f"{fp:016x}", item["url"])
        return item
