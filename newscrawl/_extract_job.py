"""The extraction job a worker process runs for the spider: decode, extract, check for mojibake,
read the canonical link. A module of its own so that a process that only fingerprints (a pool
without extraction, its workers) never imports trafilatura and lxml.
See docs/design/architecture.md#worker-processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from newscrawl.extract import Article, decode_html_detailed, extract_article, has_mojibake
from newscrawl.urls import canonical_link

if TYPE_CHECKING:
    from newscrawl.workers import PageJob


@dataclass(frozen=True, slots=True)
class Extracted:
    """One page's extraction: the article (None: no article found), how the body was decoded
    (:class:`newscrawl.extract.Decoded`'s ``encoding``, ``source``, ``declared``), whether the
    title or text carries mojibake, and the page's canonical link."""

    article: Article | None
    encoding: str
    source: str
    declared: str | None
    mojibake: bool
    canonical_url: str | None


def extract_page(job: PageJob) -> Extracted:
    """Decode, extract, check for mojibake and read the canonical link: the spider's whole
    extraction of one article page (raises what decoding or extraction raises)."""
    decoded = decode_html_detailed(job.body, header_encoding=job.header_encoding,
                                   forced_encoding=job.forced_encoding)
    article = extract_article(decoded.text, job.url, selectors=job.selectors)
    found = article is not None and bool((article.text or "").strip())
    mojibake = found and article is not None and (
        has_mojibake(article.title or "") or has_mojibake(article.text))
    return Extracted(article, decoded.encoding, decoded.source, decoded.declared, mojibake,
                     canonical_link(decoded.text, job.url) if found else None)
