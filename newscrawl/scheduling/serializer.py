"""Safe (pickle-free) serialization of Scrapy requests for the Redis queue.

A queue entry is UTF-8 JSON. Reading one never imports or calls anything chosen by the entry:
the request class is one of :data:`ALLOWED_CLASSES`, callbacks and errbacks are looked up by name
on the running spider (and must be callables defined there), everything else is plain data that
is type-checked. An entry that does not parse raises :class:`SerializationError` (the queue moves
it to the dead-letter key).

Fields kept: url, method, headers, body (base64), cookies, meta (the JSON-safe subset), encoding,
priority, callback/errback names, dont_filter, flags, cb_kwargs. Meta values that JSON cannot
represent (objects, bytes, ...) are left out and reported to the caller so they can be counted.

This module provides ``dumps``/``loads`` (the serializer interface of scrapy-redis) on dicts.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.http import FormRequest, JsonRequest, XmlRpcRequest

if TYPE_CHECKING:
    from scrapy import Spider

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1

#: Request classes an entry may name (``_class``); anything else is rejected.
ALLOWED_CLASSES: dict[str, type[Request]] = {}


def _allowed_classes() -> dict[str, type[Request]]:
    if not ALLOWED_CLASSES:
        for cls in (FormRequest, JsonRequest, XmlRpcRequest):
            ALLOWED_CLASSES[cls.__module__ + "." + cls.__name__] = cls
    return ALLOWED_CLASSES


#: Meta keys never written to Redis: per-process state of Scrapy or of this scheduler.
TRANSIENT_META = frozenset(
    {"download_slot", "download_latency", "_slot", "download_timeout_handle"}
)
PRIVATE_META_PREFIX = "_newscrawl"

#: Attribute set on callables that wrap a spider method (see scheduler.py).
WRAPPED_ATTR = "_newscrawl_wrapped"


class SerializationError(ValueError):
    """A request cannot be written, or a queue entry cannot be read back."""


def _json_safe(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _method_name(spider: Spider | None, func: Any, what: str) -> str | None:
    if func is None:
        return None
    if isinstance(func, str):
        return func
    func = getattr(func, WRAPPED_ATTR, func)
    if func is None:  # the scheduler's tracking errback of a request that had none
        return None
    if spider is not None and getattr(func, "__self__", None) is spider:
        name = getattr(func, "__name__", None)
        if isinstance(name, str) and getattr(spider, name, None) == func:
            return name
    raise SerializationError(
        f"{what} {func!r} is not a method of the spider; only spider methods can be queued"
    )


def request_to_dict(request: Request, spider: Spider | None) -> tuple[dict[str, Any], list[str]]:
    """A JSON-safe dict of ``request`` and the meta keys that had to be left out."""
    dropped: list[str] = []
    meta: dict[str, Any] = {}
    for key, value in request.meta.items():
        if not isinstance(key, str):
            dropped.append(repr(key))
            continue
        if key in TRANSIENT_META or key.startswith(PRIVATE_META_PREFIX):
            continue
        if _json_safe(value):
            meta[key] = value
        else:
            dropped.append(key)
    cb_kwargs = dict(request.cb_kwargs)
    if not _json_safe(cb_kwargs):
        raise SerializationError(f"cb_kwargs of {request.url} are not JSON-serializable")
    cookies = request.cookies
    if not _json_safe(cookies):
        raise SerializationError(f"cookies of {request.url} are not JSON-serializable")
    headers: dict[str, list[str]] = {}
    for name, values in request.headers.items():
        header = name.decode("latin-1") if isinstance(name, bytes) else str(name)
        headers[header] = [
            v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in (values or [])
        ]
    d: dict[str, Any] = {
        "url": request.url,
        "method": request.method,
        "headers": headers,
        "body": base64.b64encode(request.body or b"").decode("ascii"),
        "cookies": cookies,
        "meta": meta,
        "encoding": request.encoding,
        "priority": int(request.priority),
        "callback": _method_name(spider, request.callback, "callback"),
        "errback": _method_name(spider, request.errback, "errback"),
        "dont_filter": bool(request.dont_filter),
        "flags": [str(f) for f in request.flags],
        "cb_kwargs": cb_kwargs,
    }
    if type(request) is not Request:
        cls_name = type(request).__module__ + "." + type(request).__name__
        if cls_name not in _allowed_classes():
            logger.debug("Queuing %s as a plain Request (body and headers kept)", cls_name)
        else:
            d["_class"] = cls_name
    return d, dropped


def dumps(obj: dict[str, Any]) -> bytes:
    """Encode an entry dict (JSON, UTF-8, compact)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def loads(data: bytes | str) -> dict[str, Any]:
    """Decode an entry written by :func:`dumps`; raise :class:`SerializationError` otherwise."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        obj = json.loads(text, parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SerializationError(f"not a JSON queue entry: {exc}") from None
    if not isinstance(obj, dict):
        raise SerializationError("queue entry is not a JSON object")
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _expect(d: dict[str, Any], key: str, types: type | tuple[type, ...], default: Any) -> Any:
    value = d.get(key, default)
    if not isinstance(value, types):
        raise SerializationError(f"field {key!r} has type {type(value).__name__}")
    return value


def _spider_method(spider: Spider, name: Any, what: str) -> Callable[..., Any] | None:
    if name is None:
        return None
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("__"):
        raise SerializationError(f"{what} {name!r} is not a method name")
    method = getattr(spider, name, None)
    if method is None or not callable(method) or getattr(method, "__self__", None) is not spider:
        raise SerializationError(f"{what} {name!r} is not a method of spider {spider.name!r}")
    return method


def request_from_dict(d: Any, spider: Spider) -> Request:
    """Rebuild a request from :func:`request_to_dict` output, validating every field."""
    if not isinstance(d, dict):
        raise SerializationError("request is not a JSON object")
    url = _expect(d, "url", str, None)
    method = _expect(d, "method", str, "GET")
    raw_headers = _expect(d, "headers", dict, {})
    headers: dict[str, list[str]] = {}
    for key, values in raw_headers.items():
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SerializationError(f"header {key!r} is not a list of strings")
        headers[key] = values
    try:
        body = base64.b64decode(_expect(d, "body", str, ""), validate=True)
    except (ValueError, TypeError) as exc:
        raise SerializationError(f"body is not base64: {exc}") from None
    meta = _expect(d, "meta", dict, {})
    cb_kwargs = _expect(d, "cb_kwargs", dict, {})
    flags = _expect(d, "flags", list, [])
    if not all(isinstance(f, str) for f in flags):
        raise SerializationError("flags must be strings")
    priority = _expect(d, "priority", int, 0)
    if isinstance(priority, bool):
        raise SerializationError("priority must be an integer")
    dont_filter = d.get("dont_filter", False)
    if not isinstance(dont_filter, bool):
        raise SerializationError("dont_filter must be a boolean")
    encoding = _expect(d, "encoding", str, "utf-8")
    cookies = d.get("cookies") or {}
    if not isinstance(cookies, dict | list):
        raise SerializationError("cookies must be an object or a list")
    cls: type[Request] = Request
    if "_class" in d:
        name = d["_class"]
        allowed = _allowed_classes()
        if name not in allowed:
            raise SerializationError(f"request class {name!r} is not allowed")
        cls = allowed[name]
    callback = _spider_method(spider, d.get("callback"), "callback")
    errback = _spider_method(spider, d.get("errback"), "errback")
    try:
        return cls(
            url=url,
            method=method,
            headers=headers,
            body=body,
            cookies=cookies,
            meta=meta,
            encoding=encoding,
            priority=priority,
            callback=callback,
            errback=errback,
            dont_filter=dont_filter,
            flags=flags,
            cb_kwargs=cb_kwargs,
        )
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"invalid request: {exc}") from None
