r"""One URL per article: the canonical form of article URLs (w3lib) with tracking parameters
removed, and the sites file's URL patterns matched in linear time with RE2 (:class:`UrlPattern`).
Imports neither scrapy nor redis. docs/sites.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote_plus, urljoin, urlsplit

import re2
from w3lib.url import canonicalize_url, url_query_cleaner

from newscrawl.errors import ConfigError

#: Parameters that only say where a reader came from, never which article it is. Conservative on
#: purpose: a name that some portal uses for the article itself (``id``, ``p``, ``aid``, ``f``,
#: ``tj``, ``source``, ``ref``...) is not here; add such names per site with ``drop_params``.
DEFAULT_DROP_PARAMS: tuple[str, ...] = (
    "utm_*",  # Google Analytics campaign tags (utm_source, utm_medium, utm_campaign, ...)
    "spm",  # Alibaba/Taobao-family "super position model" click tracking (sohu, youku, ...)
    "from",  # referrer tag of Chinese portals (?from=timeline, ?from=wap, ?from=singlemessage)
    "fbclid",  # Facebook click id
    "gclid",  # Google Ads click ids
    "dclid",
    "gbraid",
    "wbraid",
    "msclkid",  # Microsoft Ads click id
    "yclid",  # Yandex click id
    "igshid",  # Instagram share id
    "mc_cid",  # Mailchimp campaign / member ids
    "mc_eid",
    "_ga",  # Google Analytics cross-domain linker
    "_gl",
    "share_token",  # Toutiao/Douyin share token
)

_NAME_FORBIDDEN = re.compile(r"[\s&=#?]")


def invalid_param_name(name: str) -> str | None:
    """Why ``name`` cannot be a ``drop_params``/``keep_params`` entry, or None when it can."""
    if not name:
        return "an empty name"
    if _NAME_FORBIDDEN.search(name):
        return f"{name!r} contains whitespace, '&', '=', '#' or '?'"
    return None


def _glob(names: Iterable[str]) -> re.Pattern[str] | None:
    parts = ["".join(".*" if c == "*" else re.escape(c) for c in n.lower()) for n in names]
    return re.compile("^(?:" + "|".join(parts) + ")$") if parts else None


@dataclass(frozen=True)
class UrlRules:
    """Which query parameters to drop from a site's article URLs."""

    drop_params: tuple[str, ...] = ()  # in addition to DEFAULT_DROP_PARAMS
    keep_params: tuple[str, ...] = ()  # never dropped, even when a drop pattern matches
    _drop: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _keep: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_drop", _glob(DEFAULT_DROP_PARAMS + self.drop_params))
        object.__setattr__(self, "_keep", _glob(self.keep_params))

    def drops(self, name: str) -> bool:
        """True when the (decoded) parameter ``name`` is removed from article URLs."""
        lowered = name.lower()
        return (self._drop is not None and self._drop.match(lowered) is not None
                and (self._keep is None or self._keep.match(lowered) is None))

    def canonical(self, url: str) -> str:
        """The canonical form of an absolute article URL (see the module docstring).

        Raises ValueError for URLs that cannot be parsed (e.g. an unclosed IPv6 bracket)."""
        canonical = canonicalize_url(url, keep_fragments=False)
        query = urlsplit(canonical).query
        if not query:
            return canonical
        names = {name for name, _ in parse_qsl(query, keep_blank_values=True)}
        dropped = sorted(quote_plus(name) for name in names if self.drops(name))
        if not dropped:
            return canonical
        # canonicalize_url wrote every name with quote_plus, so the names match byte for byte
        return str(url_query_cleaner(canonical, dropped, remove=True, unique=False))


DEFAULT_RULES = UrlRules()


class UrlPatternError(ConfigError):
    """A URL pattern that is not a valid regex or uses what RE2 cannot match."""


# Python's Unicode classes for RE2, outside and inside [...] (None: not expressible there).
_UNICODE_CLASSES: dict[str, tuple[str, str | None]] = {
    "w": (r"[\p{L}\p{N}_]", r"\p{L}\p{N}_"),
    "W": (r"[^\p{L}\p{N}_]", None),
    "d": (r"\p{Nd}", r"\p{Nd}"),
    "D": (r"\P{Nd}", r"\P{Nd}"),
}


def _re2_source(pattern: str) -> str:
    r"""``pattern`` (valid for :mod:`re`) with Python's meaning of ``\w \W \d \D \Z`` in RE2."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            esc = pattern[i + 1]
            if esc in _UNICODE_CLASSES:
                outside, inside = _UNICODE_CLASSES[esc]
                if in_class and inside is None:
                    raise UrlPatternError(
                        f"uses \\{esc} inside [...], which is not supported (write [^...] instead)")
                out.append(inside if in_class else outside)  # type: ignore[arg-type]
            elif esc == "Z" and not in_class:
                out.append(r"\z")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        out.append(c)
        i += 1
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            # "[^]...]" and "[]...]": a "]" right after the opening is a literal
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":
                out.append("]")
                i += 1
    return "".join(out)


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False  # the error goes into UrlPatternError, not to stderr
    options.never_capture = True  # only whether it matches is asked
    return options


class UrlPattern:
    """A sites-file regex (``re.search`` semantics on a whole URL), matched by RE2 in linear
    time; ``pattern`` is the regex as written. :class:`UrlPatternError` when it cannot be."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise UrlPatternError(f"is not a valid regex ({exc})") from None
        try:
            self._compiled = re2.compile(_re2_source(pattern), _re2_options())
        except re2.error as exc:
            detail = exc.args[0] if exc.args else exc
            if isinstance(detail, bytes):
                detail = detail.decode("utf-8", "replace")
            raise UrlPatternError(
                f"uses a construct the linear-time matcher (RE2) does not have ({detail}):"
                " backreferences, lookahead/lookbehind, atomic groups, possessive quantifiers"
                " and the a/x/L flags cannot be used"
            ) from None
        self.pattern = pattern

    def search(self, url: str) -> Any:
        """The match anywhere in ``url`` (as :meth:`re.Pattern.search`), or None."""
        return self._compiled.search(url)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UrlPattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"UrlPattern({self.pattern!r})"

_HEAD_END = re.compile(r"</head\s*>", re.I)


def canonical_link(html: str, page_url: str) -> str | None:
    """The page's ``<link rel="canonical" href>``, resolved against ``<base href>`` and the page
    URL; None when absent, empty or not http(s). Only the ``<head>`` is parsed."""
    from parsel import Selector

    end = _HEAD_END.search(html)
    head = html[: end.end()] if end else html
    if "canonical" not in head.lower():
        return None
    try:
        selector = Selector(text=head, type="html")
    except Exception:  # an odd head must not cost the article: the field is optional
        return None
    rel_is_canonical = (
        "contains(concat(' ', normalize-space(translate(@rel,"
        " 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')), ' '), ' canonical ')"
    )
    href = (selector.xpath(f"//link[{rel_is_canonical}]/@href").get() or "").strip()
    if not href:
        return None
    base = (selector.xpath("//base/@href").get() or "").strip()
    try:
        resolved = urljoin(urljoin(page_url, base) if base else page_url, href)
    except ValueError:
        return None
    return resolved if is_http_url(resolved) else None


def is_http_url(url: str) -> bool:
    """Whether ``url`` is an absolute http(s) URL with a host (False for one that does not
    parse, e.g. ``http://[bad``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)
