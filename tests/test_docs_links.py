"""The documentation holds together and speaks to users.

* Every relative link in README.md, CONTRIBUTING.md and ``docs/**/*.md`` resolves: the file (or
  directory) exists and a ``#anchor`` names a heading of the target, slugged as GitHub does.
* Nothing in the repository narrates its own history ("session 3", "run C", "review found",
  "before this change") or names a path of a development machine (``/work/...``, ``/home/...``).

``docs/_incoming/`` (notes waiting to be folded into the reference) is left out of both checks.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SELF = Path(__file__).resolve()
INCOMING = REPO / "docs" / "_incoming"


def _incoming(path: Path) -> bool:
    return INCOMING in path.parents


def doc_files() -> list[Path]:
    files = [REPO / "README.md", REPO / "CONTRIBUTING.md"]
    files += sorted(p for p in (REPO / "docs").rglob("*.md") if not _incoming(p))
    return [p for p in files if p.is_file()]


# --- markdown parsing -----------------------------------------------------------------------
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target) or [text](target "title"); images too. Text may hold `code` and brackets.
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out = []
    fenced = False
    for no, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((no, line))
    return out


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = _INLINE_CODE.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in ("L", "N") or cat == "Mn":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


_HTML_ANCHOR = re.compile(r'<a id="([^"]+)"></a>')


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        result.update(_HTML_ANCHOR.findall(line))  # <a id="x"></a>: an anchor GitHub keeps
        m = _HEADING.match(line)
        if not m:
            continue
        slug = github_slug(m.group(2))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        result.add(slug if n == 0 else f"{slug}-{n}")
    return result


def links(path: Path) -> list[tuple[int, str]]:
    found = []
    for no, line in prose_lines(path.read_text(encoding="utf-8")):
        bare = _INLINE_CODE.sub("", line)  # `[x](y)` inside inline code is not a link
        found += [(no, m.group(1)) for m in _LINK.finditer(bare)]
        m = _REF_DEF.match(bare)
        if m:
            found.append((no, m.group(1)))
    return found


def broken_links(path: Path, root: Path = REPO) -> list[str]:
    problems = []
    for no, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:, ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(root)}:{no}: {target}"
        if not dest.exists():
            problems.append(f"{where}: no such file")
        elif anchor and dest.is_file() and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: no heading with anchor #{anchor}")
    return problems


# --- links ----------------------------------------------------------------------------------
def test_the_documentation_files_exist() -> None:
    names = {str(p.relative_to(REPO)) for p in doc_files()}
    for required in ("README.md", "CONTRIBUTING.md", "docs/settings.md", "docs/sites.md",
                     "docs/cli.md", "docs/redis-keys.md", "docs/operations.md",
                     "docs/benchmarks.md"):
        assert required in names
    assert any(n.startswith("docs/design/") for n in names)


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


def test_link_check_finds_a_broken_file_and_a_broken_anchor(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text(
        "# Only `heading` here\n\n## Sub: part (two)\n", encoding="utf-8"
    )
    doc = tmp_path / "a.md"
    doc.write_text(
        "# Title\n"
        "[ok](b.md) [ok](b.md#only-heading-here) [ok](b.md#sub-part-two) [ok](#title)\n"
        "[web](https://example.com/x) `[code](missing.md)`\n"
        "```\n[fenced](missing.md)\n```\n"
        "[gone](missing.md) [bad anchor](b.md#nope) [bad local](#nothing)\n",
        encoding="utf-8",
    )
    assert broken_links(doc, root=tmp_path) == [
        "a.md:7: missing.md: no such file",
        "a.md:7: b.md#nope: no heading with anchor #nope",
        "a.md:7: #nothing: no heading with anchor #nothing",
    ]


def test_github_slugs() -> None:
    assert github_slug("Try it offline: `newscrawl demo`") == "try-it-offline-newscrawl-demo"
    assert github_slug("robots.txt for the first requests") == "robotstxt-for-the-first-requests"
    slug = github_slug("max_distance 4-7: neighbour buckets")
    assert slug == "max_distance-4-7-neighbour-buckets"
    assert github_slug("Why distance ≤ 3 stops near 0.87") == "why-distance--3-stops-near-087"


# --- no history narration, no machine paths --------------------------------------------------
# Written so that these sources do not match themselves.
NARRATION = [
    re.compile(r"\bsession[ -]?\d", re.I),  # "session 3", "session-2 code"
    re.compile(r"\bruns? (?:S\d-)?[A-H](?=[\s,;:.)]|$)"),  # "run C", "runs F, E", "run S4-A"
    re.compile(r"\breview\s+found\b", re.I),
    re.compile(r"\b(?:before|after)\s+this\s+change\b", re.I),
    re.compile(r"\bthe\s+issue\s+asks\b", re.I),
]
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|root|home|Users)/")
# In the documentation not even a scratch file in /tmp: examples use relative paths.
DOC_TMP = re.compile(r"(?<![\w.~-])/tmp/")
# Paths inside the container image, not of a development machine.
ALLOWED_PATHS = {"Dockerfile": ("/home/newscrawl", "/root/.cache")}

SCANNED = ["README.md", "CONTRIBUTING.md", "docs", "newscrawl", "benchmarks", "tests", "deploy",
           "docker-compose.yml", "Dockerfile"]


def scanned_files() -> list[Path]:
    out = []
    for name in SCANNED:
        root = REPO / name
        paths = [root] if root.is_file() else sorted(root.rglob("*"))
        for p in paths:
            # this file holds examples of what it looks for
            if not p.is_file() or "__pycache__" in p.parts or _incoming(p) or p == SELF:
                continue
            try:
                p.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue  # binary
            out.append(p)
    return out


def narration_hits(path: Path, text: str) -> list[str]:
    rel = str(path.relative_to(REPO))
    is_doc = path.suffix == ".md"
    hits = []
    for no, line in enumerate(text.splitlines(), 1):
        for pattern in NARRATION:
            m = pattern.search(line)
            if m:
                hits.append(f"{rel}:{no}: history: {m.group(0)!r}")
        for m in MACHINE_PATH.finditer(line):
            if not any(line.startswith(ok, m.start()) for ok in ALLOWED_PATHS.get(rel, ())):
                hits.append(f"{rel}:{no}: machine path: {line[m.start():m.start() + 30]!r}")
        if is_doc:
            m = DOC_TMP.search(line)
            if m:
                hits.append(f"{rel}:{no}: /tmp path in the documentation")
    return hits


def test_no_history_narration_or_machine_paths() -> None:
    hits = []
    for path in scanned_files():
        hits += narration_hits(path, path.read_text(encoding="utf-8"))
    assert hits == []


@pytest.mark.parametrize(
    "line",
    [
        "Run H on the session-3 code", "measured in session 4", "runs F, E on a quiet host",
        "(run C)", "run S4-A", "a code review found this", "Before this change it was slower",
        "as the issue asks", "python bench.py --corpus /work/shared/corpus/dev",
        "see /home/alice/newscrawl", "cd /Users/bob", "/root/data",
    ],
)
def test_narration_patterns_catch(line: str) -> None:
    assert narration_hits(REPO / "newscrawl" / "x.py", line)


@pytest.mark.parametrize(
    "line",
    [
        "the same-run A/B for a speed change", "start_new_session=True", "each run visits",
        "runs against a real redis-server", "Run it again", "unix:///path/redis.sock",
        "/srv/newscrawl/.newscrawl", "os.path.join(home, 'work')", "a control run with telnet",
    ],
)
def test_narration_patterns_spare(line: str) -> None:
    assert narration_hits(REPO / "newscrawl" / "x.py", line) == []
