"""``newscrawl report``: an HTML page built from a real crawl of the mock portals (embedded Redis,
article store), plus records written directly for what a crawl of them does not produce (a late
original, a copy whose text is stored too), checked as HTML and as rendered by headless Chromium.
"""

from __future__ import annotations

import html
import re
import shutil
import struct
import subprocess
import time
import zlib
from pathlib import Path

import pytest
from crawlrun import FAST, IN_PROCESS, run_crawl
from mockportal import Layout, sites_toml

from newscrawl.cli import main
from newscrawl.cli.report import late_original, mark_differences
from newscrawl.connection import close_embedded, get_client
from newscrawl.index import DuplicateLog
from newscrawl.storage import ArticleStore, iter_articles

EVIL = '<script>alert("x")</script><img src=http://example.invalid/t.png>'
DEAD = "127.0.0.1:9"  # discard port: nothing listens, connection refused


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _crawled(tmp_path: Path, portals: Layout) -> Path:
    """A crawl of the two portals and a dead third site, then the records a crawl of them does
    not write: a late original with a title that is HTML, and a copy stored beside its
    original."""
    sites = tmp_path / "sites.toml"
    sites.write_text(sites_toml(portals.a, portals.b) + (
        '\n[[sites]]\nname = "dead-site"\n'
        f'start_urls = ["http://{DEAD}/"]\n'
        "article_url = '/a/\\d+\\.html$'\n"), encoding="utf-8")
    result = run_crawl(tmp_path, sites, *FAST, IN_PROCESS, "RETRY_TIMES=0")
    assert result.returncode == 0, result.log[-3000:]
    data = tmp_path / "data"
    stored = list(iter_articles(data / "articles"))
    original = next(r for r in stored if r["site"] == "portal-a")
    copy = dict(original, url=original["url"].replace("/a/", "/copy/"), site="portal-b",
                title="转载：" + str(original["title"]),
                text=str(original["text"]).replace("。", "！", 2) + "（本文转自甲网）")
    ArticleStore(data / "articles").write(copy)
    client = get_client(None, data)
    try:
        log = DuplicateLog(client)
        log.record(copy["url"], original["url"], 3, 0x1234, 0x1235, site="portal-b",
                   title=copy["title"], published_first="original")
        log.record("http://127.0.0.2/late.html", original["url"], 2, 0x2234, 0x2235,
                   site="portal-b", title=EVIL, published="2026-01-01T08:00:00+08:00",
                   original_published="2026-01-02T08:00:00+08:00", published_first="copy")
    finally:
        close_embedded(client)
    return data


def test_report_of_a_crawl_shows_sites_duplicates_late_originals_and_dead_sites(
    tmp_path: Path, portals: Layout, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _crawled(tmp_path, portals)
    out = tmp_path / "report.html"
    capsys.readouterr()
    assert main(["--data-dir", str(data), "report", "--days", "3", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"{out}: " in said and "late original(s)" in said
    page = out.read_text(encoding="utf-8")
    # self-contained: nothing fetched from anywhere, nothing that runs
    assert "<script" not in page and "<link" not in page and "@import" not in page
    assert "default-src 'none'" in page
    assert not re.search(r"<[a-z][^>]*\s(src|srcset|data)\s*=", page)  # no tag loads anything
    # the title from the web is text, escaped
    assert html.escape(EVIL) in page and EVIL not in page
    # per site: stored / dropped / failed, with today's figures of the crawl
    stored = {}
    for record in iter_articles(data / "articles"):
        stored[record["site"]] = stored.get(record["site"], 0) + 1
    today = time.strftime("%Y-%m-%d", time.gmtime())
    for site in ("portal-a", "portal-b"):
        assert f"<h3>{site}</h3>" in page
        assert f"<title>{today} stored: {stored[site]}</title>" in page
    # portal-b dropped the crawl's three cross-portal reprints (+2 records written here)
    dropped_b = re.search(rf"<title>{today} dropped: (\d+)</title>",
                          page.split("<h3>portal-b</h3>", 1)[1]).group(1)
    assert int(dropped_b) >= 2
    failed_a = re.search(rf"<title>{today} failed: (\d+)</title>",
                         page.split("<h3>portal-a</h3>", 1)[1]).group(1)
    assert int(failed_a) >= len(portals.failing)  # 404, PDF, redirect loop, oversize
    # the dead site: its last run fetched nothing
    assert re.search(r"<li class='silent'><b>dead-site</b>: 1 failed \(download 1\)", page)
    assert "exit code 0 (finished)" in page
    # near-duplicates beside their stored originals; the copy stored too: differences marked
    assert page.count("<div class='pair'>") >= 4
    assert "<ins>。</ins>" in page or "<del>！</del>" in page
    assert "<del>（本文转自甲网）</del>" in page
    assert "The text of a dropped near-duplicate is not kept" in page
    # the late original listed
    assert page.count("<tr class='late'>") == 1 and "http://127.0.0.2/late.html" in page


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (Debian: apt-get "
                    "install chromium; .ci/run installs it)")
def test_report_rendered_by_headless_chromium(
    tmp_path: Path, portals: Layout, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _crawled(tmp_path, portals)
    out = tmp_path / "report.html"
    assert main(["--data-dir", str(data), "report", "-o", str(out)]) == 0
    browser = _chromium()
    assert browser is not None
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", f"--user-data-dir={tmp_path / 'chromium'}"]
    dom = subprocess.run([*flags, "--dump-dom", out.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    # what the browser built: the sections, the bars, no element from the escaped title
    for heading in ("Last run", "Articles per site and day", "Late originals",
                    "Dropped near-duplicates"):
        assert f">{heading}</h2>" in dom
    assert "<script" not in dom and "<img" not in dom
    assert html.escape('<script>alert("x")</script>', quote=False) in dom
    assert len(re.findall(r"<rect ", dom)) >= 3 * 7 * 2  # 3 bars a day, 7 days, two sites
    assert "<del>" in dom and "<ins>" in dom
    shot = tmp_path / "report.png"
    subprocess.run([*flags, "--window-size=1000,900", f"--screenshot={shot}", out.as_uri()],
                   capture_output=True, timeout=120, check=True)
    width, height, pixels = _png_rgb(shot.read_bytes())
    assert (width, height) == (1000, 900)
    colours = {pixels[i:i + 3] for i in range(0, len(pixels), 3)}
    # the chart's stored and dropped bars are painted (the dead site has red only when known)
    for colour in ("2e7d32", "ef8f00"):
        assert bytes.fromhex(colour) in colours, f"no #{colour} pixel in the screenshot"


def test_mark_differences_and_late_original() -> None:
    left, right = mark_differences("甲乙丙<丁>", "甲乙戊<丁>")
    assert left == "甲乙<del>丙</del>&lt;丁&gt;" and right == "甲乙<ins>戊</ins>&lt;丁&gt;"
    assert late_original({"published_first": "copy"})
    assert not late_original({"published_first": "original"})
    assert not late_original({"published_first": None}) and not late_original({})


def test_report_without_a_data_dir_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--data-dir", str(tmp_path / "none"), "report", "-o", str(tmp_path / "r.html")])
    assert code == 1
    assert "no newscrawl data directory" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def _png_rgb(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and RGB bytes of an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium
    writes), without an imaging library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour_type in (2, 6) and interlace == 0
    channels = 4 if colour_type == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytearray] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    rgb = bytearray()
    for line in rows:
        for x in range(width):
            rgb += line[x * channels:x * channels + 3]
    return width, height, bytes(rgb)
