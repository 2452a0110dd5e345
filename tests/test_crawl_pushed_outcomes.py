"""The line a crawl logs on taking URLs pushed through Redis says what became of each of them
(``Took 5 URLs pushed through Redis: 1 list page ..., 2 refused (...)``), beside the stats
``newscrawl/pushed/taken`` (entries read as a URL) and ``newscrawl/pushed/refused``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from crawlrun import IN_PROCESS, run_crawl
from mockportal import Article, DailyPortal, MockPortal, html_page, list_html

from newscrawl.cli import main
from newscrawl.connection import close_embedded, get_client
from newscrawl.spiders.portal.queueing import (
    ALREADY_DONE,
    ARTICLE,
    FETCHED_AGAIN,
    LIST_PAGE,
    REFUSED,
    pushed_outcomes,
)

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS_PER_DOMAIN=8", IN_PROCESS)
KEY = "newscrawl:portal:start_urls"


@pytest.mark.parametrize(("outcomes", "text"), [
    ({ARTICLE: 2, REFUSED + "no site takes it": 1},
     "2 articles (queued with the run's article links), 1 refused (no site takes it)"),
    ({LIST_PAGE: 1, ALREADY_DONE: 1},
     "1 list page (walked from there), 1 article already done (not fetched again)"),
    ({FETCHED_AGAIN: 2}, "2 articles done before (pushed with --again: fetched once more)"),
    ({REFUSED + "not a URL": 2, REFUSED + "no site takes it": 1, ARTICLE: 1},
     "1 article (queued with the run's article links),"
     " 3 refused (1 no site takes it, 2 not a URL)"),
])
def test_pushed_outcomes_in_words(outcomes: dict[str, int], text: str) -> None:
    assert pushed_outcomes(Counter(outcomes)) == text


def test_the_log_says_what_became_of_each_pushed_url(tmp_path: Path, portal: MockPortal) -> None:
    daily = DailyPortal(portal, per_page=8, home=5)
    daily.publish(6)
    sites = tmp_path / "sites.toml"
    sites.write_text(daily.sites_toml(), encoding="utf-8")
    first = run_crawl(tmp_path, sites, *SETTINGS)
    assert first.returncode == 0, first.log[-4000:]
    portal.add_article("/a/900.html", Article.generate("pushed-900"))
    portal.set("/list/90.html", html_page(list_html("专题", [])))
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "push", "--sites", str(sites), portal.url("/a/900.html"),
                 portal.url("/list/90.html"), "http://elsewhere.invalid/a/1.html"]) == 0
    client = get_client(None, data)
    try:  # a done article (push itself does not queue it), an entry that is no URL, a lost site
        client.rpush(KEY, portal.url(daily.paths[0]), '{"url": 5}',
                     json.dumps({"url": portal.url("/a/901.html"), "site": "nosuchsite"}))
    finally:
        close_embedded(client)
    second = run_crawl(tmp_path, sites, *SETTINGS)
    assert second.returncode == 0, second.log[-4000:]
    took = [line for line in second.log.splitlines() if "URLs pushed through Redis" in line]
    assert len(took) == 1, took
    assert took[0].endswith(
        "Took 6 URLs pushed through Redis: 1 list page (walked from there), 1 article (queued"
        " with the run's article links), 1 article already done (not fetched again),"
        " 3 refused (1 no site takes it, 1 not a URL, 1 site not in the sites file)"), took[0]
    # the stats keep their meaning: taken = entries read as a URL, refused ones included
    assert second.stats["newscrawl/pushed/taken"] == 5
    assert second.stats["newscrawl/pushed/refused"] == 3
    hits = portal.hit_counts()
    assert hits["/a/900.html"] == 1 and hits[daily.paths[0]] == 1
