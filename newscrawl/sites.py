"""The sites file (TOML): which portals ``scrapy crawl portal`` crawls. Its mistakes raise one
:class:`SitesError` listing each, naming the file, the site and the key. Keys: docs/sites.md.
"""

from __future__ import annotations

import codecs
import difflib
import json
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urldefrag, urlsplit

from newscrawl.errors import ConfigError
from newscrawl.urls import (
    UrlPattern,
    UrlPatternError,
    UrlRules,
    invalid_param_name,
    is_http_url,
)

DEFAULT_MAX_LIST_PAGES = 100
DEFAULT_STOP_AFTER_KNOWN = 1
# No max_list_depth by default: max_list_pages and stop_after_known bound a walk (a fixed depth
# silently lost the articles of busy days).
DEFAULT_MAX_LIST_DEPTH: int | None = None
DEFAULT_SITES_FILE = "sites.toml"
T = TypeVar("T")

_REQUIRED = ("name", "start_urls", "article_url")
_OPTIONAL = ("follow_url", "allowed_domains", "max_list_depth", "max_list_pages",
             "stop_after_known", "selectors", "encoding", "concurrency", "delay", "rank")
# sitemaps, feeds and article URL canonicalization (parsed by _parse_sources)
_SOURCES = ("sitemap_urls", "feed_urls", "drop_params", "keep_params")
_KNOWN = _REQUIRED + _OPTIONAL + _SOURCES
ROBOTS = "robots"  # sitemap_urls entry: the Sitemap: lines of robots.txt
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: how close (difflib ratio) an unknown key must be to a known one to be suggested: typos
#: (``artcle_url``, ``max_pages``, ``sitemap``) pass, unrelated words (``urls``, ``deny``) do not
SUGGEST_CUTOFF = 0.7


class SitesError(ConfigError):
    """A sites file that cannot be used (missing, bad TOML, bad keys or values). ``mistakes``
    holds one line per mistake; the message is that line alone when there is one."""

    def __init__(self, cause: str, advice: str = "", *, message: str | None = None,
                 mistakes: Sequence[str] = ()) -> None:
        super().__init__(cause, advice, message=message)
        self.mistakes: tuple[str, ...] = tuple(mistakes) or (str(self),)

    @classmethod
    def listing(cls, path: str, mistakes: Sequence[str]) -> SitesError:
        """One error for every mistake found in the sites file at ``path``: the mistake alone,
        or a line counting them followed by one indented line each."""
        if len(mistakes) == 1:
            return cls(mistakes[0])
        lines = "".join(f"\n  {line}" for line in mistakes)
        return cls(f"sites file {path}: {len(mistakes)} mistakes{lines}", mistakes=mistakes)


def _suggestion(key: str, candidates: Sequence[str]) -> str | None:
    """The candidate ``key`` is most likely a typo of, if one is close enough."""
    close = difflib.get_close_matches(key.lower(), candidates, n=1, cutoff=SUGGEST_CUTOFF)
    return close[0] if close else None


@dataclass(frozen=True)
class Site:
    """One portal of the sites file, validated."""

    name: str
    start_urls: tuple[str, ...]
    article_url: UrlPattern | None  # None only for a sitemap/feed-only site
    follow_url: UrlPattern | None = None
    allowed_domains: tuple[str, ...] = ()
    max_list_depth: int | None = DEFAULT_MAX_LIST_DEPTH
    max_list_pages: int = DEFAULT_MAX_LIST_PAGES
    stop_after_known: int = DEFAULT_STOP_AFTER_KNOWN
    selectors: Mapping[str, str] = field(default_factory=dict)
    encoding: str | None = None
    sitemap_urls: tuple[str, ...] = ()
    sitemap_robots: tuple[str, ...] = ()  # robots.txt URLs whose Sitemap: lines are read
    feed_urls: tuple[str, ...] = ()
    url_rules: UrlRules = field(default_factory=UrlRules)
    # politeness overrides for the whole cluster (None: CONCURRENT_REQUESTS_PER_DOMAIN and
    # DOWNLOAD_DELAY)
    concurrency: int | None = None
    delay: float | None = None
    #: order of the site's article links among those of other sites with the same date (or
    #: none): lower first (default: the site's position in the file, from 1)
    rank: int = 1

    def too_deep(self, depth: int) -> bool:
        """Whether a list page at ``depth`` (start pages: 0) is beyond ``max_list_depth``."""
        return self.max_list_depth is not None and depth > self.max_list_depth

    def is_article(self, url: str) -> bool:
        return self.article_url is not None and self.article_url.search(url) is not None

    def article_link(self, url: str, *, listed: bool = False) -> str | None:
        """The canonical URL (:meth:`UrlRules.canonical`) of ``url`` when it is an article page
        of this site, else None. ``article_url`` is tried on the URL as given and on its
        canonical form; a URL ``listed`` in a sitemap or feed is an article when it matches or
        when the site has no ``article_url``. Raises ValueError for an unparsable URL."""
        canonical = self.url_rules.canonical(url)
        if listed and self.article_url is None:
            return canonical
        if self.is_article(url) or (canonical != url and self.is_article(canonical)):
            return canonical
        return None

    def is_list(self, url: str) -> bool:
        return self.follow_url is not None and self.follow_url.search(url) is not None

    def allows(self, url: str) -> bool:
        """True when the URL's host is one of ``allowed_domains`` or a subdomain of one."""
        host = (urlsplit(url).hostname or "").lower()
        if not host:
            return False
        return any(host == d or host.endswith("." + d) for d in self.allowed_domains)


def _where(path: str, index: int, name: str | None) -> str:
    site = f'site "{name}"' if name else f"site #{index + 1}"
    return f"sites file {path}: {site}"


#: what to do about a regex in double quotes, where TOML reads backslashes as escapes
SINGLE_QUOTES_HINT = (
    "write regexes in single quotes, where TOML keeps backslashes as written: "
    "article_url = '/news/\\d+\\.html$'"
)
_CONTROL_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def follow_pattern(site: Site) -> str:
    """The pattern of ``site``'s ``follow_url`` ("" when it has none)."""
    return site.follow_url.pattern if site.follow_url is not None else ""


def quote_regex(pattern: str) -> str:
    """A regex as it is written in the sites file: in TOML's single quotes, each backslash once
    (``repr`` doubles them, which is not what the user wrote)."""
    if "'" not in pattern and "\n" not in pattern:
        return f"'{pattern}'"
    return f"'''{pattern}'''"


def _regex(value: Any, where: str, key: str) -> UrlPattern:
    if not isinstance(value, str) or not value:
        raise SitesError(f'{where}: key "{key}" must be a non-empty string (a regex)')
    controls = sorted({_CONTROL_ESCAPES[c] for c in value if c in _CONTROL_ESCAPES})
    if controls:  # "\b" in double quotes is a backspace to TOML, not a word boundary
        raise SitesError(
            f'{where}: key "{key}" holds {", ".join(controls)} read by TOML as control '
            f"character(s) (in double quotes a backslash starts an escape): {SINGLE_QUOTES_HINT}"
        )
    try:
        return UrlPattern(value)
    except UrlPatternError as exc:
        raise SitesError(f'{where}: key "{key}" {exc}: {quote_regex(value)}') from None


def _str_list(value: Any, where: str, key: str) -> list[str]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        raise SitesError(f'{where}: key "{key}" must be a non-empty list of strings'
                         + _bracket_hint(value))
    return [v.strip() for v in value]


def _bracket_hint(value: Any) -> str:
    """For a string where a list is needed: how to write it (a JSON list is TOML too)."""
    if not isinstance(value, str) or not value:
        return ""
    return f" (write it in brackets: {json.dumps([value], ensure_ascii=False)})"


def _quoted_number(value: Any) -> str:
    """What to add to a message asking for a number when ``value`` is a string: TOML's quotes
    make ``"5"`` a string."""
    if not isinstance(value, str):
        return ""
    try:
        float(value)
    except ValueError:
        return f", not the string {value!r}"
    return f", not the string {value!r} (write it without quotes)"


def _int(raw: Mapping[str, Any], key: str, default: int, minimum: int, where: str) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SitesError(f'{where}: key "{key}" must be an integer >= {minimum}'
                         + _quoted_number(value))
    return value


def _validate_selectors(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise SitesError(f'{where}: key "selectors" must be a table of strings')
    from newscrawl.extract import validate_selectors

    mistakes = []
    for key, selector in value.items():  # each bad one, not only the first
        try:
            validate_selectors({key: selector})
        except ValueError as exc:
            mistakes.append(f'{where}: key "selectors": {exc}')
    if mistakes:
        raise SitesError(mistakes[0], mistakes=mistakes)
    return dict(value)


def _unknown(what: str, key: str, meant: str | None, otherwise: str) -> str:
    """The mistake of an unknown ``key``: the known one it is a typo of, else ``otherwise``."""
    hint = f'did you mean "{meant}"?' if meant is not None else otherwise
    return f'unknown {what} "{key}" ({hint})'


def _missing_keys(raw: Mapping[str, Any], meant: set[str]) -> list[str]:
    """The required keys ``raw`` lacks, but for those an unknown key of it is a typo of (in
    ``meant``): that typo is one mistake, reported once."""
    missing = []
    if "name" not in raw and "name" not in meant:
        missing.append('missing required key "name"')
    if not ({"start_urls", "sitemap_urls", "feed_urls"} & (set(raw) | meant)):
        missing.append('missing required key "start_urls" (or give "sitemap_urls" or "feed_urls")')
    if "start_urls" in raw and "article_url" not in raw and "article_url" not in meant:
        missing.append('missing required key "article_url"'
                       ' (required with "start_urls": it tells article links from others)')
    return missing


def parse_site(raw: Any, index: int, path: str) -> Site:
    """Validate one ``[[sites]]`` table: :class:`SitesError` listing each unknown and missing
    key, and each bad value."""
    if not isinstance(raw, dict):
        raise SitesError(f"{_where(path, index, None)}: each [[sites]] entry must be a table")
    name = raw.get("name")
    where = _where(path, index, name if isinstance(name, str) else None)
    # the unknown keys in the file's order, each with the known key it is a typo of
    unknown = {key: _suggestion(key, _KNOWN) for key in raw if key not in _KNOWN}
    known = f'known keys: {", ".join(_KNOWN)}'
    mistakes = [f"{where}: {_unknown('key', key, meant, known)}"
                for key, meant in unknown.items()]
    meant_keys = {meant for meant in unknown.values() if meant is not None}
    mistakes += [f"{where}: {missing}" for missing in _missing_keys(raw, meant_keys)]
    try:
        site = _checked_site(raw, index, where)
    except SitesError as exc:
        mistakes.extend(exc.mistakes)
    if mistakes:
        raise SitesError.listing(path, mistakes)
    return site


class _Mistakes(list[str]):
    """The mistakes of one entry, gathered so that a bad value does not hide the next ones."""

    def check(self, check: Callable[[], T], fallback: T) -> T:
        """``check()``, or ``fallback`` with its mistake kept, so the later keys are checked too."""
        try:
            return check()
        except SitesError as exc:
            self.extend(exc.mistakes)
            return fallback


def _checked_site(raw: Mapping[str, Any], index: int, where: str) -> Site:
    """The :class:`Site` of an entry's values; :class:`SitesError` listing every bad value (the
    caller reports unknown and missing keys)."""
    mistakes = _Mistakes()
    checked = mistakes.check

    name = raw.get("name", "")
    if "name" in raw and (not isinstance(name, str) or not _NAME_RE.match(name)):
        mistakes.append(
            f'{where}: key "name" must be a string of letters, digits, "_", "." or "-"')
    given = raw.get("start_urls")
    # a bad list: its good URLs stand in, so that the keys read with it are checked too
    candidates = [given] if isinstance(given, str) else given if isinstance(given, list) else []
    start_urls = checked(lambda: _url_list(given, where, "start_urls"),
                         [u.strip() for u in candidates if isinstance(u, str)
                          and is_http_url(u.strip())]) if "start_urls" in raw else []
    article_url = checked(lambda: _regex(raw["article_url"], where, "article_url"), None) \
        if "article_url" in raw else None
    sources = _parse_sources(raw, where, start_urls, mistakes)
    follow_url = checked(lambda: _regex(raw["follow_url"], where, "follow_url"), None) \
        if "follow_url" in raw else None
    domains: list[str]
    if "allowed_domains" in raw:
        domains = checked(lambda: _domains(raw["allowed_domains"], where), [])
    else:
        configured = start_urls + list(sources["sitemap_urls"]) + list(sources["feed_urls"])
        domains = sorted({(urlsplit(u).hostname or "").lower() for u in configured})
    max_pages = checked(lambda: _int(raw, "max_list_pages", DEFAULT_MAX_LIST_PAGES, 1, where),
                        DEFAULT_MAX_LIST_PAGES)
    stop_after_known = checked(
        lambda: _int(raw, "stop_after_known", DEFAULT_STOP_AFTER_KNOWN, 1, where),
        DEFAULT_STOP_AFTER_KNOWN)
    depth = (checked(lambda: _int(raw, "max_list_depth", 0, 0, where), None)
             if "max_list_depth" in raw else DEFAULT_MAX_LIST_DEPTH)
    selectors: dict[str, str] = checked(
        lambda: _validate_selectors(raw["selectors"], where), {}) if "selectors" in raw else {}
    encoding = checked(lambda: _encoding(raw.get("encoding"), where), None)
    concurrency = checked(lambda: _int(raw, "concurrency", 1, 1, where), None) \
        if "concurrency" in raw else None
    rank = checked(lambda: _int(raw, "rank", index + 1, 1, where), index + 1)
    delay = raw.get("delay")
    if delay is not None and (isinstance(delay, bool) or not isinstance(delay, (int, float))
                              or not 0 <= delay <= 3600):
        mistakes.append(f'{where}: key "delay" must be a number of seconds from 0 to 3600'
                        + _quoted_number(delay))
    if mistakes:
        raise SitesError.listing(where, mistakes)
    return Site(
        name=name,
        start_urls=tuple(start_urls),
        article_url=article_url,
        follow_url=follow_url,
        allowed_domains=tuple(domains),
        max_list_depth=depth,
        max_list_pages=max_pages,
        stop_after_known=stop_after_known,
        selectors=selectors,
        encoding=encoding,
        concurrency=concurrency,
        delay=float(delay) if delay is not None else None,
        rank=rank,
        **sources,
    )


def _domains(value: Any, where: str) -> list[str]:
    domains = [d.lower().lstrip(".") for d in _str_list(value, where, "allowed_domains")]
    for d in domains:
        if "/" in d or ":" in d:
            raise SitesError(f'{where}: key "allowed_domains": give host names, not URLs: {d!r}')
    return domains


def _encoding(encoding: Any, where: str) -> str | None:
    if encoding is None:
        return None
    if not isinstance(encoding, str):
        raise SitesError(f'{where}: key "encoding" must be a string')
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise SitesError(f'{where}: key "encoding": unknown encoding {encoding!r}') from None
    try:  # a codec of bytes to bytes or str to str (rot13, base64, zlib) decodes no page
        b"a".decode(name, "ignore")
    except LookupError:
        raise SitesError(f'{where}: key "encoding": {name!r} is not a text encoding'
                         " (e.g. utf-8, gb18030, big5)") from None
    return name


def _url_list(value: Any, where: str, key: str, *, allow: tuple[str, ...] = ()) -> list[str]:
    urls = _str_list(value, where, key)
    bad = [url for url in urls if url not in allow and not is_http_url(url)]
    if len(bad) == 1:
        raise SitesError(f'{where}: key "{key}": not an http(s) URL: {bad[0]!r}')
    if bad:
        raise SitesError(f'{where}: key "{key}": not http(s) URLs: '
                         + ", ".join(repr(url) for url in bad))
    return list(dict.fromkeys(urls))


def _param_names(value: Any, where: str, key: str) -> tuple[str, ...]:
    names = _str_list(value, where, key)
    for name in names:
        problem = invalid_param_name(name)
        if problem:
            raise SitesError(f'{where}: key "{key}": not a query parameter name: {problem}')
    return tuple(names)


def _parse_sources(raw: Mapping[str, Any], where: str, start_urls: list[str],
                   mistakes: _Mistakes) -> dict[str, Any]:
    """``sitemap_urls``, ``feed_urls``, ``drop_params``, ``keep_params`` as Site fields; each bad
    value goes to ``mistakes``."""
    checked = mistakes.check

    def sitemap_list() -> list[str]:
        value = raw["sitemap_urls"]
        if value == ROBOTS:
            value = [ROBOTS]
        elif (not isinstance(value, list) or not value
              or not all(isinstance(v, str) and v.strip() for v in value)):
            raise SitesError(f'{where}: key "sitemap_urls" must be a non-empty list of URLs'
                             f' or "{ROBOTS}"' + _bracket_hint(value))
        return _url_list(value, where, "sitemap_urls", allow=(ROBOTS,))

    none: list[str] = []
    sitemaps = checked(sitemap_list, none) if "sitemap_urls" in raw else []
    feeds = checked(lambda: _url_list(raw["feed_urls"], where, "feed_urls"), none) \
        if "feed_urls" in raw else []
    robots: list[str] = []
    if ROBOTS in sitemaps:
        sitemaps.remove(ROBOTS)
        hosts = start_urls or feeds
        if not hosts and "start_urls" not in raw and "feed_urls" not in raw:
            # (given but bad: that mistake is listed already)
            mistakes.append(f'{where}: key "sitemap_urls": "{ROBOTS}" reads the robots.txt of'
                            ' the start URLs\' hosts, but the site has no "start_urls"'
                            ' (or "feed_urls")')
        for url in hosts:
            parts = urlsplit(url)
            robots.append(f"{parts.scheme}://{parts.netloc}/robots.txt")
    no_names: tuple[str, ...] = ()
    drop = checked(lambda: _param_names(raw["drop_params"], where, "drop_params"), no_names) \
        if "drop_params" in raw else no_names
    keep = checked(lambda: _param_names(raw["keep_params"], where, "keep_params"), no_names) \
        if "keep_params" in raw else no_names
    return {
        "sitemap_urls": tuple(sitemaps),
        "sitemap_robots": tuple(dict.fromkeys(robots)),
        "feed_urls": tuple(feeds),
        "url_rules": UrlRules(drop_params=drop, keep_params=keep),
    }


#: the hint for ``[sites]`` (a table) where ``[[sites]]`` (an array of tables) is meant
ARRAY_OF_TABLES_HINT = "each site starts with [[sites]] (two pairs of brackets), not [sites]"


def parse_sites(data: Mapping[str, Any], path: str = "<sites>") -> list[Site]:
    """Validate a parsed sites document (the dict :func:`tomllib.loads` returns): one
    :class:`SitesError` listing the mistakes of every entry (:func:`parse_site`), unknown
    top-level keys and duplicate names."""
    mistakes = [f"sites file {path}: "
                + _unknown("top-level key", key, _suggestion(key, ["sites"]),
                           "expected only [[sites]] tables")
                for key in data if key != "sites"]
    raw_sites = data.get("sites")
    sites: list[Site] = []
    if isinstance(raw_sites, dict):  # [sites]: one table, where each site is an [[sites]] entry
        mistakes.append(f"sites file {path}: no [[sites]] entries; {ARRAY_OF_TABLES_HINT}")
    elif not isinstance(raw_sites, list) or not raw_sites:
        if raw_sites is not None or not mistakes:  # else the unknown key is where they went
            mistakes.append(f"sites file {path}: no [[sites]] entries")
    else:
        seen: dict[str, int] = {}
        names = [raw.get("name") if isinstance(raw, dict) else None for raw in raw_sites]
        for index, raw in enumerate(raw_sites):
            name = names[index]
            try:
                sites.append(parse_site(raw, index, path))
            except SitesError as exc:
                if isinstance(name, str) and names.count(name) > 1:
                    # entries sharing a name: say which one each mistake is of
                    own = _where(path, index, name)
                    mistakes.extend(m.replace(own, f"{own} (#{index + 1})", 1)
                                    for m in exc.mistakes)
                else:
                    mistakes.extend(exc.mistakes)
            if isinstance(name, str) and _NAME_RE.match(name):
                if name in seen:
                    mistakes.append(f'{_where(path, index, name)}: key "name": duplicate name'
                                    f' (entries #{seen[name] + 1} and #{index + 1} of [[sites]])')
                seen.setdefault(name, index)
    if mistakes:
        raise SitesError.listing(path, mistakes)
    return sites


def load_sites(path: str | Path) -> list[Site]:
    """Read and validate a sites file; :class:`SitesError` on any problem."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise SitesError(f"no such file: {p} (the sites file)") from None
    except OSError as exc:
        raise SitesError(f"sites file {p}: cannot be read ({exc.strerror})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SitesError(f"sites file {p}: not UTF-8 ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        hint = f"; {SINGLE_QUOTES_HINT}" if "Unescaped '\\'" in str(exc) else ""
        if "Cannot declare ('sites',) twice" in str(exc):  # two [sites] tables
            hint = f"; {ARRAY_OF_TABLES_HINT}"
        raise SitesError(f"sites file {p}: invalid TOML: {exc}{hint}") from None
    return parse_sites(data, str(p))


@dataclass(frozen=True)
class PushedRoute:
    """What the crawl makes of a pushed URL: a list page or an article (``url`` the one it
    fetches: an article's canonical URL) of ``site``, or refused with ``why`` (and ``short``,
    its few words for the summary)."""

    kind: str | None  # "list", "article" or None (refused)
    url: str
    site: Site | None = None
    why: str = ""
    short: str = ""


def route_pushed(sites: Mapping[str, Site], url: str, name: str | None) -> PushedRoute:
    """The site that takes a URL pushed for the crawl (``name``: the one it names, else the
    first in file order whose host and rules take it), and as what: the start URLs and
    ``follow_url`` make a list page, ``article_url`` an article (any URL of its hosts for a
    site with no ``article_url``, read from sitemaps or feeds alone). ``newscrawl push`` and
    the crawl decide the same way."""
    if name is not None and name not in sites:
        return PushedRoute(None, url, why=f"site {name!r} is not in the sites file",
                           short="site not in the sites file")
    candidates = [sites[name]] if name is not None else list(sites.values())
    url = urldefrag(url)[0]
    for site in candidates:
        try:
            if not url.startswith(("http://", "https://")) or not site.allows(url):
                continue
            if url in site.start_urls or site.is_list(url):
                return PushedRoute("list", url, site)
            if url in site.sitemap_urls or url in site.feed_urls:
                return PushedRoute(None, url, why=f"a sitemap or feed of site {site.name}: every"
                                   " run reads it", short="a sitemap or feed")
            # a site read from sitemaps or feeds alone (no article_url): any URL of its hosts
            # is an article, as any URL they list is
            article = site.article_link(url, listed=True)
        except ValueError:
            return PushedRoute(None, url, why="not a valid URL", short="not a valid URL")
        if article is not None:
            return PushedRoute("article", article, site)
        if name is not None:
            return PushedRoute(None, url, why=f"neither article_url nor follow_url of site"
                                              f" {name} matches it", short="no rule of its site")
    return PushedRoute(None, url, why="no site of the sites file takes it (allowed_domains,"
                                      " article_url, follow_url)", short="no site takes it")


def default_sites_path() -> Path:
    """``sites.toml`` in the working directory, else next to the closest ``scrapy.cfg``."""
    here = Path(DEFAULT_SITES_FILE)
    if here.exists():
        return here
    try:
        from scrapy.utils.conf import closest_scrapy_cfg

        cfg = closest_scrapy_cfg()
    except ImportError:  # pragma: no cover
        cfg = ""
    if cfg:
        return Path(cfg).parent / DEFAULT_SITES_FILE
    return here
