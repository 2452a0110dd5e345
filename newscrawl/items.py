"""Items produced by the ``portal`` spider."""

from __future__ import annotations

import scrapy


class ArticleItem(scrapy.Item):
    """One extracted article.

    ``simhash`` is set by the near-duplicate pipeline (16 lowercase hex digits), or None when the
    text has no fingerprint or deduplication is off.
    """

    url = scrapy.Field()
    title = scrapy.Field()
    text = scrapy.Field()
    published = scrapy.Field()
    author = scrapy.Field()
    site = scrapy.Field()
    simhash = scrapy.Field()


ARTICLE_FIELDS: tuple[str, ...] = (
    "url", "title", "text", "published", "author", "site", "simhash",
)
