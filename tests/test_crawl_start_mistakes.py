"""Mistakes on the ``scrapy crawl portal`` command line are said plainly: an unknown ``-a``
argument or a bad ``-s`` value stops the crawl with one line naming it (exit 1, no traceback); a
relative data directory is logged as an absolute path, with a WARNING when it starts empty in a
directory without scrapy.cfg."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from crawlrun import IN_PROCESS, crawl_command, crawl_env, run_crawl, start_crawl, wait_for
from mockportal import Article, MockPortal, html_page, list_html


def start_errors(tmp_path: Path, *extra: str) -> tuple[int, str]:
    proc = subprocess.run(crawl_command(None, ()) + list(extra), cwd=tmp_path,
                          env=crawl_env(tmp_path, None), capture_output=True, text=True,
                          timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def test_an_unknown_spider_argument_names_the_known_ones(tmp_path: Path) -> None:
    code, log = start_errors(tmp_path, "-a", "site=my.toml")
    assert code == 1, log[-3000:]
    assert "unknown spider argument -a site=... (the portal spider takes -a sites=FILE)" in log
    assert "Traceback" not in log
    assert "Crawling" not in log  # no sites file was read, no crawl started


@pytest.mark.parametrize("setting,message", [
    ("NEWSCRAWL_REDIS_RETRY_SECONDS=abc",
     "setting NEWSCRAWL_REDIS_RETRY_SECONDS = 'abc' is not a number"),
    ("NEWSCRAWL_SITEMAP_MAX_ENTRIES=many",
     "setting NEWSCRAWL_SITEMAP_MAX_ENTRIES = 'many' is not an integer"),
    ("NEWSCRAWL_STORE=maybe", "setting NEWSCRAWL_STORE = 'maybe' is not a boolean"),
    ("NEWSCRAWL_LEASE_SECONDS=-5", "NEWSCRAWL_LEASE_SECONDS must not be negative"),
    ("NEWSCRAWL_MAX_DISTANCE=99", "setting NEWSCRAWL_MAX_DISTANCE = 99 is out of range"),
    ("NEWSCRAWL_FINGERPRINT_WORKERS=-3",
     "setting NEWSCRAWL_FINGERPRINT_WORKERS = -3 must not be negative"),
    ("NEWSCRAWL_MAX_ATTEMPTS=2.5", "setting NEWSCRAWL_MAX_ATTEMPTS = '2.5' is not an integer"),
    # a misspelled name would leave the setting at its default without a word
    ("NEWSCRAWL_DEDUP_ENABLE=False",
     "unknown setting NEWSCRAWL_DEDUP_ENABLE (did you mean NEWSCRAWL_DEDUP_ENABLED?)"),
    # read from the environment only: as a setting it would be silently ignored
    ("NEWSCRAWL_CACHE_DIR=/tmp/idf",
     "NEWSCRAWL_CACHE_DIR is read from the environment only, not from the settings: set the"
     " environment variable NEWSCRAWL_CACHE_DIR for the crawl instead"),
])
def test_a_bad_setting_is_one_line_naming_it(tmp_path: Path, setting: str, message: str) -> None:
    code, log = start_errors(tmp_path, "-s", setting)
    assert code == 1, log[-3000:]
    errors = [line for line in log.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and message in errors[0], log[-3000:]
    assert "Traceback" not in log and "Task exception" not in log


@pytest.mark.parametrize("content,message", [
    (None, "NEWSCRAWL_IDF_FILE: cannot read"),
    ("新闻 abc\n", "NEWSCRAWL_IDF_FILE: "),
])
def test_an_unreadable_idf_file_is_one_line_naming_the_setting(
        tmp_path: Path, content: str | None, message: str) -> None:
    idf = tmp_path / "idf.txt"
    if content is not None:
        idf.write_text(content, encoding="utf-8")
    code, log = start_errors(tmp_path, "-s", f"NEWSCRAWL_IDF_FILE={idf}")
    assert code == 1, log[-3000:]
    errors = [line for line in log.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and message in errors[0], log[-3000:]
    assert "Traceback" not in log and "Task exception" not in log


def test_a_relative_data_directory_is_logged_absolute_and_warned_about_once(
        tmp_path: Path, portal: MockPortal) -> None:
    portal.set("/", html_page(list_html("首页", [])))
    sites = tmp_path / "sites.toml"
    sites.write_text(f'[[sites]]\nname = "p"\nstart_urls = ["{portal.url("/")}"]\n'
                     "article_url = '/a/\\d+\\.html$'\n", encoding="utf-8")
    cache = str(tmp_path / "cache")  # this user's record of data directories, empty
    # this user's first crawl: a new data directory is no news
    elsewhere = {"NEWSCRAWL_DATA_DIR": "elsewhere", "NEWSCRAWL_CACHE_DIR": cache}
    very_first = run_crawl(tmp_path, sites, IN_PROCESS, env=elsewhere)
    assert very_first.returncode == 0, very_first.log[-3000:]
    assert f"INFO: Started a new data directory {tmp_path / 'elsewhere'}" in very_first.log
    assert "new, empty data directory" not in very_first.log
    # a new relative data directory while this user's crawls keep data elsewhere (another
    # sites file's: the same one's would be refused): warned about, the others named
    sites.rename(tmp_path / "renamed.toml")
    sites = tmp_path / "renamed.toml"
    env = {"NEWSCRAWL_DATA_DIR": "state", "NEWSCRAWL_CACHE_DIR": cache}
    absolute = str(tmp_path / "state")
    first = run_crawl(tmp_path, sites, IN_PROCESS, env=env)
    assert first.returncode == 0, first.log[-3000:]
    assert f"with data in {absolute} " in first.log
    warnings = [line for line in first.log.splitlines()
                if "WARNING" in line and "new, empty data directory" in line]
    assert len(warnings) == 1 and absolute in warnings[0] and "scrapy.cfg" in warnings[0] \
        and f"keep theirs in {tmp_path / 'elsewhere'}" in warnings[0], warnings
    second = run_crawl(tmp_path, sites, IN_PROCESS, env=env)
    assert second.returncode == 0, second.log[-3000:]
    assert "new, empty data directory" not in second.log
    # the directory's Redis files lost, its article store kept: not "knows nothing"
    portal.add_article("/a/1.html", Article.generate("lost-redis"))
    portal.set("/", html_page(list_html("首页", ["/a/1.html"])))
    assert run_crawl(tmp_path, sites, IN_PROCESS, env=env).returncode == 0
    for path in (tmp_path / "state").iterdir():
        if path.name.startswith(("redis.db", "appendonly")):
            path.unlink()
    lost = run_crawl(tmp_path, sites, IN_PROCESS, env=env)
    assert lost.returncode == 0, lost.log[-3000:]
    warnings = [line for line in lost.log.splitlines() if "WARNING" in line and "empty" in line]
    assert len(warnings) == 1 and "holds 1 day file(s)" in warnings[0] \
        and "not stored again" in warnings[0] and "knows nothing" not in warnings[0], warnings
    assert lost.stats["newscrawl/dedup/already_stored"] == 1, lost.log[-3000:]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "scrapy.cfg").write_text("[settings]\ndefault = newscrawl.settings\n")
    in_project = run_crawl(tmp_path, sites, IN_PROCESS,
                           env={"NEWSCRAWL_DATA_DIR": "other/state", "NEWSCRAWL_CACHE_DIR": cache})
    assert in_project.returncode == 0, in_project.log[-3000:]
    assert "new, empty data directory" not in in_project.log  # created beside a scrapy.cfg


def test_a_worker_joining_a_live_crawl_says_it_joined_not_that_the_data_is_new(
        tmp_path: Path, portal: MockPortal) -> None:
    # the first worker's embedded Redis has written no redis.db yet when the second one opens
    # the data dir: only its keys tell that the directory is not new
    # slow enough that the first worker is still at it when the second one has started up
    paths = [f"/a/{i}.html" for i in range(24)]
    for i, path in enumerate(paths):
        portal.add_article(path, Article.generate(f"join-{i}"))
    portal.set("/", html_page(list_html("首页", paths)))
    portal.delay(paths, 1.0)
    sites = tmp_path / "sites.toml"
    sites.write_text(f'[[sites]]\nname = "p"\nstart_urls = ["{portal.url("/")}"]\n'
                     "article_url = '/a/\\d+\\.html$'\n", encoding="utf-8")
    # relative, no scrapy.cfg beside it, this user's first crawl: said once, at INFO
    env = {"NEWSCRAWL_DATA_DIR": "state", "NEWSCRAWL_CACHE_DIR": str(tmp_path / "cache")}
    settings = ("CONCURRENT_REQUESTS=1", "NEWSCRAWL_IDLE_EXIT_SECONDS=5", IN_PROCESS)
    first = start_crawl(tmp_path, sites, *settings, log_path=tmp_path / "first.log", env=env)
    second = None
    try:
        wait_for(lambda: sum(portal.hit_counts().get(p, 0) for p in paths) >= 1, timeout=60,
                 what="the first worker fetching articles")
        second = start_crawl(tmp_path, sites, *settings, log_path=tmp_path / "second.log",
                             env=env)
        started = second
        wait_for(lambda: "crawl run" in started.log(), timeout=90, what="the second worker")
        portal.delay(paths, 0)  # it has joined (or started a run of its own): finish quickly
        joined = second.wait(timeout=120)
        done = first.wait(timeout=120)
    finally:
        first.kill()
        if second is not None:
            second.kill()
    assert done.returncode == 0 and joined.returncode == 0, joined.log[-3000:]
    assert done.log.count("Started a new data directory") == 1, done.log[-3000:]
    assert "Joined crawl run" in joined.log, joined.log[-3000:]
    assert "new data directory" not in joined.log, joined.log[-3000:]
    assert "new, empty data directory" not in done.log + joined.log


def test_a_misspelt_scrapy_setting_is_a_warning_naming_scrapys(tmp_path: Path) -> None:
    # the crawl then stops at the missing sites file; the warning comes before it
    code, log = start_errors(tmp_path, "-s", "CONCURENT_REQUESTS=8", "-s", "LOG_LEVL=DEBUG")
    warnings = [line for line in log.splitlines() if "WARNING" in line and "did you mean" in line]
    assert any("setting CONCURENT_REQUESTS is none of Scrapy's (did you mean "
               "CONCURRENT_REQUESTS?)" in line for line in warnings), log[-3000:]
    assert any("LOG_LEVL" in line and "LOG_LEVEL?" in line for line in warnings), log[-3000:]
    assert len(warnings) == 2, warnings


def test_only_names_close_to_scrapys_are_taken_for_misspellings() -> None:
    from scrapy.settings import Settings

    from newscrawl.context import misspelt_scrapy_settings

    settings = Settings({"CONCURRENT_REQUESTS": 8, "SCHEDULER_PERSIST": True,
                         "DUPEFILTER_KEY": "x", "REDIS_URL": "redis://h", "MY_OWN_THING": 1,
                         "ROBOTSTXT_OBBEY": False, "DOWNLAOD_DELAY": 1})
    assert sorted(misspelt_scrapy_settings(settings)) == [
        ("DOWNLAOD_DELAY", "DOWNLOAD_DELAY"), ("ROBOTSTXT_OBBEY", "ROBOTSTXT_OBEY")]


def test_a_crawl_started_in_another_directory_is_refused_instead_of_starting_over(
        tmp_path: Path, portal: MockPortal) -> None:
    """The default data directory is relative to the working directory: a cron line without
    `cd` would start a new, empty crawl of the same sites file and fetch every article again.
    Refused (exit 1, both directories named, nothing fetched); on purpose with an absolute
    NEWSCRAWL_DATA_DIR, and from the project directory as before."""
    portal.add_article("/a/1.html", Article.generate("once"))
    portal.set("/", html_page(list_html("首页", ["/a/1.html"])))
    project, elsewhere = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    elsewhere.mkdir()
    sites = project / "sites.toml"
    sites.write_text(f'[[sites]]\nname = "p"\nstart_urls = ["{portal.url("/")}"]\n'
                     "article_url = '/a/\\d+\\.html$'\n", encoding="utf-8")
    env = {"NEWSCRAWL_DATA_DIR": "", "NEWSCRAWL_CACHE_DIR": str(tmp_path / "cache")}
    first = run_crawl(project, sites, IN_PROCESS, env=env)
    assert first.returncode == 0, first.log[-3000:]
    assert (project / ".newscrawl" / "redis.db").exists()
    hits = portal.hit_counts()
    refused = run_crawl(elsewhere, sites, IN_PROCESS, env=env)
    assert refused.returncode == 1, refused.log[-3000:]
    data, new = project / ".newscrawl", elsewhere / ".newscrawl"
    assert (f"the crawl of {sites} keeps its data in {data}, and this crawl would start a new,"
            f" empty data directory {new}") in refused.log
    assert f"Run it in {project}, or set NEWSCRAWL_DATA_DIR={data}" in refused.log
    assert portal.hit_counts() == hits and not new.exists()
    status = subprocess.run([sys.executable, "-m", "newscrawl.cli", "status"], cwd=elsewhere,
                            env=crawl_env(elsewhere, None, env), capture_output=True, text=True,
                            timeout=60)
    assert status.returncode == 1 and not new.exists()
    assert (f"no newscrawl data directory at .newscrawl (run a crawl first, or pass --data-dir /"
            f" --redis-url / set REDIS_URL; the crawls run on this machine keep their data in"
            f" {data})") in status.stderr
    push = subprocess.run([sys.executable, "-m", "newscrawl.cli", "push", "--sites", str(sites),
                           portal.url("/a/1.html")], cwd=elsewhere,
                          env=crawl_env(elsewhere, None, env), capture_output=True, text=True,
                          timeout=60)
    assert push.returncode == 1 and not new.exists(), push.stderr
    assert f"nothing queued: the crawl of {sites} keeps its data in {data}, and this command" \
        in push.stderr
    # no sites file to go by: any data directory recorded on this machine
    push = subprocess.run([sys.executable, "-m", "newscrawl.cli", "push",
                           portal.url("/a/1.html")], cwd=elsewhere,
                          env=crawl_env(elsewhere, None, env), capture_output=True, text=True,
                          timeout=60)
    assert push.returncode == 1 and not new.exists(), push.stderr
    assert (f"nothing queued: this command would start a new, empty data directory {new}"
            in push.stderr and f"keep their data in {data}: run it there" in push.stderr)
    assert run_crawl(project, sites, IN_PROCESS, env=env).returncode == 0
    on_purpose = run_crawl(elsewhere, sites, IN_PROCESS,
                           env={**env, "NEWSCRAWL_DATA_DIR": str(new)})
    assert on_purpose.returncode == 0, on_purpose.log[-3000:]
    assert on_purpose.stats["newscrawl/store/stored"] == 1  # a second crawl, as asked
    # from a third directory: the crawl run most often is named first, the other beside it
    third = tmp_path / "third"
    third.mkdir()
    again = run_crawl(third, sites, IN_PROCESS, env=env)
    assert again.returncode == 1, again.log[-3000:]
    assert f"keeps its data in {data} (also in {new}), and this crawl" in again.log
    assert f"Run it in {project}, or set NEWSCRAWL_DATA_DIR={data};" in again.log
    # the advice taken from the third directory: the crawl still runs in the project's data,
    # and a later mistake there is still sent to the project (not to where it was refused)
    advised = run_crawl(third, sites, IN_PROCESS, env={**env, "NEWSCRAWL_DATA_DIR": str(data)})
    assert advised.returncode == 0, advised.log[-3000:]
    assert "until now" not in advised.log
    again = run_crawl(third, sites, IN_PROCESS, env=env)
    assert again.returncode == 1 and f"Run it in {project}, or set" in again.log, again.log
    # another crawl's existing data directory: runs, with a WARNING naming the crawl's own
    other = tmp_path / "other"
    other.mkdir()
    (other / "sites.toml").write_text(sites.read_text(encoding="utf-8").replace(
        'name = "p"', 'name = "q"'), encoding="utf-8")
    assert run_crawl(other, other / "sites.toml", IN_PROCESS, env=env).returncode == 0
    mixed = run_crawl(other, sites, IN_PROCESS, env=env)
    assert mixed.returncode == 0, mixed.log[-3000:]
    assert (f"The crawl of {sites} kept its data in {data}, {new} until now; this run keeps it"
            f" in {other / '.newscrawl'}") in mixed.log
