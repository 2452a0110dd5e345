"""Per-site selector overrides: ``{"title"|"text"|"published"|"author": "<css or xpath>"}``.

A value starting with ``/`` or ``(`` is XPath, anything else is CSS (translated to XPath by
cssselect). CSS pseudo-elements ``::text`` and ``::attr(name)`` are accepted (parsel's dialect).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from cssselect import SelectorError
from lxml import etree
from parsel.csstranslator import HTMLTranslator

__all__ = ["SELECTOR_KEYS", "compile_selector", "validate_selectors"]

SELECTOR_KEYS = frozenset({"title", "text", "published", "author"})

#: other names users give the fields, for the message about an unknown key
_MEANT = {"body": "text", "content": "text", "article": "text", "main": "text",
          "date": "published", "time": "published", "pubdate": "published",
          "published_at": "published", "publish_time": "published", "byline": "author",
          "authors": "author", "headline": "title", "heading": "title"}

_css = HTMLTranslator()


def _is_xpath(value: str) -> bool:
    return value.startswith(("/", "("))


@lru_cache(maxsize=512)
def compile_selector(value: str) -> etree.XPath:
    """Compile a CSS or XPath selector to an lxml XPath; ValueError when it is not valid."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("empty selector")
    value = value.strip()
    if _is_xpath(value):
        xpath = value
    else:
        try:
            xpath = _css.css_to_xpath(value)
        except (SelectorError, SyntaxError) as exc:
            raise ValueError(f"invalid CSS selector {value!r}: {exc}") from exc
    try:
        return etree.XPath(xpath)
    except etree.XPathSyntaxError as exc:
        raise ValueError(f"invalid XPath {value!r}: {exc}") from exc


def validate_selectors(mapping: Mapping[str, str] | None) -> None:
    """Check a site's selector overrides up front; ValueError naming the bad key."""
    if mapping is None:
        return
    if not isinstance(mapping, Mapping):
        raise ValueError(f"selectors must be a table/mapping, not {type(mapping).__name__}")
    for key, value in mapping.items():
        if key not in SELECTOR_KEYS:
            meant = _MEANT.get(str(key).lower())
            raise ValueError(
                f"selectors: unknown key {key!r} ("
                + (f'did you mean "{meant}"? ' if meant else "")
                + f"allowed: {', '.join(sorted(SELECTOR_KEYS))})"
            )
        if not isinstance(value, str):
            raise ValueError(f"selectors.{key}: must be a string, not {type(value).__name__}")
        try:
            compile_selector(value)
        except ValueError as exc:
            raise ValueError(f"selectors.{key}: {exc}") from exc
