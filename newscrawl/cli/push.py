"""``newscrawl push``: URLs for the crawl to fetch, through Redis (scrapy-redis's
``<spider>:start_urls`` convention, under the key prefix)."""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import urlsplit

from newscrawl import keys
from newscrawl.cli._common import CliError, open_redis
from newscrawl.exitcodes import ExitCode
from newscrawl.formats import plural


def cmd_push(args: argparse.Namespace) -> int:
    urls = [u.strip() for u in args.urls]
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CliError(f"not an http(s) URL: {url!r}")
    if args.site is not None and (not args.site or "\n" in args.site):
        raise CliError(f"not a site name: {args.site!r}")
    if not args.spider or ":" in args.spider or "*" in args.spider:
        raise CliError(f"not a spider name: {args.spider!r}")
    entries = [url if args.site is None else json.dumps({"url": url, "site": args.site},
                                                          ensure_ascii=False)
               for url in urls]
    key = keys.CRAWL_START_URLS.format(prefix=args.prefix, spider=args.spider)
    with open_redis(args, create=True) as client:
        waiting = client.rpush(key, *entries)
    print(f"queued {plural(len(urls), 'URL')} for the crawl ({waiting} waiting in {key}): the"
          " running crawl takes them within a second, else the next one")
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
        "refused by the crawl with a WARNING.")
    p.add_argument("urls", nargs="+", metavar="URL", help="http(s) URLs")
    p.add_argument("--site", default=None, metavar="NAME",
                   help="the site (sites-file name) the URLs belong to (default: the first "
                   "site that takes each)")
    p.add_argument("--spider", default="portal", help="the spider's name (default: portal)")
    p.set_defaults(func=cmd_push)
