"""Decoding and article extraction for news pages. Imports no scrapy.

Public API::

    from newscrawl.extract import decode_html, extract_article, Article, ExtractionError
    text, encoding = decode_html(body, header_encoding=..., forced_encoding=...)
    article = extract_article(text, url, selectors={"title": "h1.headline"})  # Article | None
"""

from __future__ import annotations

from newscrawl.extract.article import (
    MAX_HTML_CHARS,
    MIN_BODY_CHARS,
    Article,
    ExtractionError,
    extract_article,
)
from newscrawl.extract.decode import (
    Decoded,
    decode_html,
    decode_html_detailed,
    has_mojibake,
    validate_encoding,
)
from newscrawl.extract.selectors import SELECTOR_KEYS, validate_selectors

__all__ = [
    "MAX_HTML_CHARS",
    "MIN_BODY_CHARS",
    "SELECTOR_KEYS",
    "Article",
    "Decoded",
    "ExtractionError",
    "decode_html",
    "decode_html_detailed",
    "has_mojibake",
    "extract_article",
    "validate_encoding",
    "validate_selectors",
]
