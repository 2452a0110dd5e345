"""A redirect loop (``/a -> /b -> /a``) raised as :class:`RedirectLoop`, so the spider's
errback counts it (``newscrawl/download/failed/redirect_loop``) instead of the dupefilter ending it
silently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urljoin

from scrapy.exceptions import IgnoreRequest
from w3lib.url import safe_url_string

if TYPE_CHECKING:
    from scrapy.http import Request, Response


class RedirectLoop(IgnoreRequest):
    """A 3xx pointing back into its own redirect chain (reason ``redirect_loop``)."""


class RedirectLoopMiddleware:
    """Sits just closer to the downloader than Scrapy's RedirectMiddleware (600)."""

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if response.status not in (301, 302, 303, 307, 308):
            return response
        location = response.headers.get(b"Location")
        if not location:
            return response
        target = safe_url_string(urljoin(request.url, location.decode("latin-1")))
        chain = [*request.meta.get("redirect_urls", []), request.url]
        if target in chain:
            raise RedirectLoop(f"redirect loop: {' -> '.join([*chain, target])}")
        return response
