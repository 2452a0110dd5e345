"""Items produced by the ``portal`` spider."""

from __future__ import annotations

import scrapy


class ArticleItem(scrapy.Item):
    """One extracted article.

    ``url`` is the canonical form of the page's URL (:mod:`newscrawl.urls`: fragment and tracking
    parameters dropped, query sorted). ``canonical_url`` is the page's own
    ``<link rel="canonical">`` resolved against the page URL, None when the page has none.
    ``simhash`` is set by the near-duplicate pipeline (16 lowercase hex digits), or None when the
    text has no fingerprint or deduplication is off. ``source`` is the outlet the page names as
    where its text comes from (``来源：新华社`` -> ``新华社``), None when it names none or only
    itself (:mod:`newscrawl.extract.source`).
    """

    url = scrapy.Field()
    title = scrapy.Field()
    text = scrapy.Field()
    published = scrapy.Field()
    author = scrapy.Field()
    site = scrapy.Field()
    simhash = scrapy.Field()
    canonical_url = scrapy.Field()
    source = scrapy.Field()


ARTICLE_FIELDS: tuple[str, ...] = (
    "url", "title", "text", "published", "author", "site", "simhash", "canonical_url", "source",
)
