"""``newscrawl crawl -h``: newscrawl's usage and what the command is, then the options it shares
with ``scrapy crawl`` (whose own ``-h`` stays Scrapy's); no crawl starts. Run as the console
script runs it (``python -m newscrawl._entry``), in a directory without ``scrapy.cfg``."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from crawlrun import REPO
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.settings import Settings

from newscrawl.commands.crawl import USAGE, wants_help


def run(args: list[str], cwd: Path, *,
        module: str = "newscrawl._entry") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SCRAPY_SETTINGS_MODULE", "REDIS_URL", "NEWSCRAWL_DATA_DIR")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def scrapy_crawl_options() -> list[str]:
    """Every option string of Scrapy's own ``scrapy crawl``."""
    parser = argparse.ArgumentParser(conflict_handler="resolve")
    command = ScrapyCrawlCommand()
    command.settings = Settings()
    command.add_options(parser)
    return [s for action in parser._actions for s in action.option_strings]


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["portal", "--help"],
                                  ["-a", "sites=my-sites.toml", "--he"]])
def test_newscrawl_crawl_help_is_newscrawl_usage_then_the_options(
        tmp_path: Path, args: list[str]) -> None:
    done = run(["crawl", *args], tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"usage: {USAGE}\n"), out[:200]
    assert "scrapy crawl [options] <spider>" not in out
    about, options = out.split("\noptions:\n", 1)
    flat = " ".join(about.split())
    for words in ("`scrapy crawl portal` run in-process", "SIGTERM and SIGINT",
                  "SCRAPY_SETTINGS_MODULE defaults to newscrawl.settings", "-a sites=FILE",
                  "-s NAME=VALUE", "docs/operations.md", "newscrawl --help"):
        assert words in flat, (words, about)
    listed = options.split()
    for option in scrapy_crawl_options():
        assert option in listed or f"{option}," in listed, (option, options)
    assert "(default: INFO)" in options  # the project's LOG_LEVEL, as `scrapy crawl -h` says
    # nothing started: no embedded Redis data directory, no log
    assert not (tmp_path / ".newscrawl").exists() and not done.stderr


def test_scrapy_crawl_help_stays_scrapys(tmp_path: Path) -> None:
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = newscrawl.settings\n",
                                         encoding="utf-8")
    done = run(["crawl", "-h"], tmp_path, module="scrapy")
    assert done.returncode == 0, done.stderr
    assert "scrapy crawl [options] <spider>" in done.stdout
    assert "newscrawl crawl" not in done.stdout


@pytest.mark.parametrize(("args", "expected"), [
    (["-s", "LOG_LEVEL=DEBUG"], False),
    ([], False),
    (["--", "-h"], False),
    (["--hel"], True),
    (["-s", "X=1", "-h"], True),
    (["--h"], True),
    (["-a", "help=1"], False),
])
def test_which_arguments_ask_for_help(args: list[str], expected: bool) -> None:
    assert wants_help(args) is expected


@pytest.mark.parametrize("module", ["newscrawl._entry", "newscrawl.cli"])
def test_newscrawl_help_lists_crawl_among_the_commands(tmp_path: Path, module: str) -> None:
    # `newscrawl --help` (and `python -m newscrawl.cli`, which runs the same entry point) lists
    # the crawl with the other commands, and `crawl --help` reaches the crawl's own help
    done = run(["--help"], tmp_path, module=module)
    assert done.returncode == 0, done.stderr
    commands = done.stdout.split("COMMAND\n", 1)[1].split("\noptions:", 1)[0]
    assert commands.split()[0] == "crawl", commands
    crawl_help = run(["crawl", "--help"], tmp_path, module=module)
    assert crawl_help.stdout.startswith(f"usage: {USAGE}\n"), crawl_help.stdout[:200]


def test_a_scrapy_cfg_naming_its_own_settings_module_is_obeyed(tmp_path: Path) -> None:
    # a project of the user's own: its scrapy.cfg's settings module, not newscrawl.settings
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = mysettings\n", encoding="utf-8")
    (tmp_path / "mysettings.py").write_text(
        "import sys\nsys.stderr.write('mysettings loaded\\n')\nfrom newscrawl.settings import *\n",
        encoding="utf-8")
    done = run(["crawl", "--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "mysettings loaded" in done.stderr
