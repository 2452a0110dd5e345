"""``newscrawl push``: URLs for the crawl to fetch, through Redis (scrapy-redis's
``<spider>:start_urls`` convention, under the key prefix)."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag

from newscrawl import keys
from newscrawl._datadirs import check_new_data_dir, check_new_data_dir_for_a_command
from newscrawl.cli._common import CliError, open_redis
from newscrawl.connection import resolve_data_dir, resolve_redis_url
from newscrawl.exitcodes import ExitCode
from newscrawl.formats import plural
from newscrawl.keys import Keys
from newscrawl.sites import (
    PushedRoute,
    Site,
    SitesError,
    default_sites_path,
    load_sites,
    route_pushed,
)
from newscrawl.urls import is_http_url


def _sites(path: str | None) -> tuple[dict[str, Site] | None, str]:
    """The sites of the crawl's sites file (``--sites``, else NEWSCRAWL_SITES, else
    ``sites.toml`` here or next to scrapy.cfg) and its path; None when no such file exists (an
    explicit path that cannot be read is an error)."""
    given = path or os.environ.get("NEWSCRAWL_SITES")
    where = Path(given) if given else default_sites_path()
    if not given and not where.exists():
        return None, str(where)
    try:
        return {site.name: site for site in load_sites(where)}, str(where)
    except SitesError as exc:
        raise CliError(f"{exc} (--sites: the crawl's sites file, to check the URLs against)") \
            from None


def _done_days(client: Any, prefix: str, spider: str, urls: list[str]) -> list[int | None]:
    """The day (days since 1970) each URL was last recorded done, None when it is not: the
    crawl's done records, keyed by Scrapy's request fingerprint of the URL (an article's as its
    site's rules make it, when the sites file is known)."""
    # here, not at the top: every newscrawl command imports this module
    from scrapy import Request
    from scrapy.utils.request import RequestFingerprinter

    from newscrawl.scheduling.dupefilter import fingerprint8, seen_target

    fingerprinter, names = RequestFingerprinter(), Keys(prefix, spider)
    pipe = client.pipeline(transaction=False)
    for url in urls:
        pipe.zscore(*seen_target(names, fingerprint8(fingerprinter, Request(urldefrag(url)[0]))))
    return [None if day is None else int(day) for day in pipe.execute()]


def cmd_push(args: argparse.Namespace) -> int:
    urls = [u.strip() for u in args.urls]
    for url in urls:
        if not is_http_url(url):
            raise CliError(f"not an http(s) URL: {url!r}")
    if args.site is not None and (not args.site or "\n" in args.site):
        raise CliError(f"not a site name: {args.site!r}")
    if not args.spider or ":" in args.spider or "*" in args.spider:
        raise CliError(f"not a spider name: {args.spider!r}")
    entries = []
    for url in urls:
        fields: dict[str, Any] = {"url": url}
        if args.site is not None:
            fields["site"] = args.site
        if args.again:
            fields["again"] = True
        entries.append(url if len(fields) == 1 else json.dumps(fields, ensure_ascii=False))
    sites, sites_path = _sites(args.sites)
    routes = [PushedRoute("article", url) if sites is None
              else route_pushed(sites, url, args.site) for url in urls]
    key = keys.CRAWL_START_URLS.format(prefix=args.prefix, spider=args.spider)
    if not resolve_redis_url(args.redis_url):
        try:  # as the crawl: not a new data directory for a crawl whose data is elsewhere
            if sites is not None:
                check_new_data_dir(Path(sites_path), resolve_data_dir(args.data_dir),
                                   what="this command")
            else:
                check_new_data_dir_for_a_command(resolve_data_dir(args.data_dir),
                                                 what="this command")
        except ValueError as exc:
            raise CliError(f"nothing queued: {exc}") from None
    with open_redis(args, create=True) as client:
        # a list page is fetched by every run that reaches it; a refused URL by none
        days = [day if route.kind == "article" else None for route, day in zip(
            routes, _done_days(client, args.prefix, args.spider, [r.url for r in routes]),
            strict=True)]
        # a done article is not queued unless fetched again: the crawl's dupefilter drops it
        queued = [entry for entry, day in zip(entries, days, strict=True)
                  if day is None or args.again]
        waiting = client.rpush(key, *queued) if queued else 0
        from newscrawl.faults import evicting

        evicts = evicting(client)
    done = len(urls) - len(queued)
    if queued:
        print(f"queued {plural(len(queued), 'URL')} for the crawl ({waiting} waiting in {key}):"
              " the running crawl takes them within a second, else the next one"
              + (f"; {done} done, not queued" if done else ""))
    else:
        print(f"queued no URL: {'the URL is' if done == 1 else f'all {done} URLs are'} done"
              " (push with --again to fetch a done article once more)")
    if sites is None:
        print(f"(not checked against a sites file: no {sites_path}; --sites PATH names it)")
    if evicts is not None:
        print(f"newscrawl: warning: this Redis's maxmemory-policy is {evicts[0]} (maxmemory"
              f" {evicts[1]} bytes): it may delete what was queued, and the crawl does not start"
              " on it; set maxmemory-policy noeviction", file=sys.stderr)
    for url, route in zip(urls, routes, strict=True):
        if route.kind is None:
            print(f"newscrawl: warning: {url}: {route.why} ({sites_path}): the crawl refuses it"
                  " unless it reads another sites file (queued all the same)", file=sys.stderr)
    epoch = datetime.date(1970, 1, 1)
    for url, day in zip(urls, days, strict=True):
        if day is None:
            continue
        when = epoch + datetime.timedelta(days=day)
        if args.again:
            print(f"{url}: done on {when} (stored, dropped or given up on); the crawl that takes"
                  " it fetches it once more")
        else:
            print(f"{url}: done on {when} (stored, dropped or given up on): not queued, the"
                  " crawl does not fetch it again; push it with --again to fetch it once more")
    return ExitCode.OK


def add_push(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "push", parents=[common],
        help="URLs for the running crawl, or the next, to fetch",
        description="Queue URLs for the crawl through Redis ({prefix}:{spider}:start_urls, "
        "scrapy-redis's convention; `redis-cli LPUSH newscrawl:portal:start_urls URL` does the "
        "same). Each is matched to the site of the sites file that takes it (allowed_domains, "
        "then article_url or follow_url) and fetched as an article or a list page, with the "
        "crawl's politeness, dupefilter and near-duplicate check; a URL no site takes is "
        "refused by the crawl with a WARNING. An article that is done is not fetched again "
        "unless --again is given; push says which URLs are done and does not queue them.")
    p.add_argument("urls", nargs="+", metavar="URL", help="http(s) URLs")
    p.add_argument("--site", default=None, metavar="NAME",
                   help="the site (sites-file name) the URLs belong to (default: the first "
                   "site that takes each)")
    p.add_argument("--again", action="store_true",
                   help="fetch an article that is done (stored, dropped as a near-duplicate or "
                   "given up on after NEWSCRAWL_MAX_ATTEMPTS days of failures) once more: its "
                   "done record is deleted when the crawl takes it. An article stored before "
                   "is found in the store and not stored twice")
    p.add_argument("--sites", default=None, metavar="PATH",
                   help="the crawl's sites file, to check the URLs against (default: "
                   "NEWSCRAWL_SITES, else sites.toml here or next to scrapy.cfg; none found: "
                   "not checked)")
    p.add_argument("--spider", default="portal", help="the spider's name (default: portal)")
    p.set_defaults(func=cmd_push)
