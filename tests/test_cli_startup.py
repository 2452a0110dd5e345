"""The ``newscrawl`` commands that only read Redis start without the crawl's libraries.

Scrapy, Twisted and the extraction stack cost about half a second of imports: ``status``,
``duplicates``, ``stats``, ``report`` and ``check`` are run by hand and by monitoring scripts, so
they import neither (docs/cli.md, "Adding a command"). Each command runs in one fresh process
against an embedded Redis; the modules it imported are listed after each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: top-level packages only the crawl (and ``push``, ``demo``, ``crawl``) need
CRAWL_ONLY = ("scrapy", "twisted", "trafilatura", "lxml", "scrapy_redis", "htmldate", "courlan")

SCRIPT = """
import contextlib, io, json, sys
from newscrawl.cli import main
heavy = json.loads(sys.argv[1])
for argv in json.loads(sys.argv[2]):
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    print(json.dumps([argv[0], code, sorted(set(heavy) & set(sys.modules))]))
"""


def test_commands_that_read_redis_import_no_crawl_library(tmp_path: Path) -> None:
    text = tmp_path / "article.txt"
    text.write_text("新华社北京11月29日电 " + "记者从有关部门获悉，今年以来各地稳步推进。" * 20,
                    encoding="utf-8")
    commands = [["status"], ["duplicates"], ["stats"],
                ["report", "-o", str(tmp_path / "report.html")], ["check", str(text)]]
    (tmp_path / "data").mkdir()  # an embedded Redis that no crawl wrote to yet
    env = {**os.environ, "NEWSCRAWL_DATA_DIR": str(tmp_path / "data")}
    env.pop("REDIS_URL", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(CRAWL_ONLY),
                           json.dumps(commands)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [name for name, _, _ in results] == [argv[0] for argv in commands], proc.stderr
    for name, code, imported in results:
        assert code == 0, (name, proc.stderr[-3000:])
        assert imported == [], f"newscrawl {name} imported {imported}"
