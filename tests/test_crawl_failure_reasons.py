"""The reason a failed download is counted under (``newscrawl/download/failed/<reason>``).

Real exception instances as Scrapy 2.19's download handlers and middlewares raise them (Scrapy
wraps Twisted's errors in its own; other handlers may raise Twisted's directly).
"""

from __future__ import annotations

import pytest
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
    UnsupportedURLSchemeError,
)
from scrapy.http import Request, Response
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet import error as tx
from twisted.python.failure import Failure

from newscrawl.middlewares.redirects import RedirectLoop
from newscrawl.middlewares.robots import RobotsForbidden
from newscrawl.spiders.portal import failure_reason


@pytest.mark.parametrize(("exc", "reason"), [
    (CannotResolveHostError("no such host"), "dns"),
    (tx.DNSLookupError("no such host"), "dns"),
    (DownloadTimeoutError("took longer than 30 s"), "timeout"),
    (tx.TimeoutError(), "timeout"),
    (tx.TCPTimedOutError(), "timeout"),
    (DownloadConnectionRefusedError("refused"), "connection_refused"),
    (tx.ConnectionRefusedError(), "connection_refused"),
    (DownloadFailedError("connection lost"), "connection_lost"),
    (ResponseDataLossError("data loss"), "data_loss"),
    (DownloadCancelledError("over maxsize"), "too_large"),
    (UnsupportedURLSchemeError("ftp"), "unsupported_scheme"),
    (RobotsForbidden("Forbidden by robots.txt"), "robots_forbidden"),
    (RedirectLoop("redirect loop: /a -> /b -> /a"), "redirect_loop"),
    (IgnoreRequest("something else"), "ignored"),
    # the type decides, not the words in the message
    (IgnoreRequest("a redirect to robots.txt"), "ignored"),
    (ValueError("unexpected"), "other"),
])
def test_failure_reason_by_exception_type(exc: BaseException, reason: str) -> None:
    assert failure_reason(Failure(exc)) == reason


def test_http_error_reason_is_its_status() -> None:
    response = Response("http://example.test/", status=503, request=Request("http://example.test/"))
    assert failure_reason(Failure(HttpError(response, "Ignoring non-200 response"))) == "http_503"
