"""What ``newscrawl --help`` and each ``newscrawl COMMAND --help`` promise: a description for every
command, only options the command takes, and "did you mean" for a misspelt command.

The options test runs every command through :func:`newscrawl.cli.main` on a real embedded Redis
and records which of the parsed options the command reads: an option a command lists but never
reads (ignored, as ``--prefix`` on ``redis-cli`` or ``--redis-url`` on ``fingerprint`` were) makes
it fail.
"""

from __future__ import annotations

import argparse
import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from newscrawl import keys
from newscrawl.cli import _build, main
from newscrawl.cli import status as status_module
from newscrawl.cli._common import Parser
from newscrawl.connection import close_embedded, get_client

TEXT = (
    "北京时间今天上午，国家统计局发布了最新的经济数据。数据显示，今年前三季度国内生产总值同比增长"
    "百分之五点二，其中第三季度增长百分之四点九。统计局新闻发言人表示，国民经济持续恢复向好。"
)

#: read by main() itself for every command (the log level), not by the command
GLOBAL = {"help", "verbose"}


class Recording(argparse.Namespace):
    """A namespace that notes which attributes the command function (``func``) reads."""

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        state = super().__getattribute__("__dict__")
        if name == "func":

            def run(args: Any) -> Any:
                state["_active"] = True
                try:
                    return value(args)
                finally:
                    state["_active"] = False

            return run
        if state.get("_active") and not name.startswith("_"):
            state.setdefault("_reads", set()).add(name)
        return value


def _commands() -> dict[str, argparse.ArgumentParser]:
    """The commands newscrawl.cli runs (``crawl`` is listed by it and run by newscrawl._entry:
    tests/test_cli_crawl_help.py)."""
    commands = _build()[1]
    del commands["crawl"]
    return commands


def _options(parser: argparse.ArgumentParser) -> dict[str, str]:
    """dest -> the flag, for every option and positional the command parser declares."""
    return {
        a.dest: (a.option_strings[-1] if a.option_strings else a.dest)
        for a in parser._actions
        if a.dest not in GLOBAL
    }


def test_every_command_has_a_description_and_a_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser, commands = _build()
    assert commands, "no commands"
    listing = parser.format_help()
    for name, command in commands.items():
        assert command.description and command.description.strip(), f"{name}: no description"
        help_text = command.format_help()
        assert command.description.split()[0] in help_text
        # the list of commands gives each a one-line summary after its name
        line = next(ln for ln in listing.splitlines() if ln.strip().startswith(name + " "))
        assert len(line.split()) > 1, f"{name}: no summary in newscrawl --help"


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[list[str]]]:
    """For each command, argument lists that run it to the end (or to its first check) on an
    embedded Redis in a fresh data dir; together they reach every option it reads."""
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("NEWSCRAWL_DATA_DIR", raising=False)
    monkeypatch.delenv("NEWSCRAWL_REDIS_PREFIX", raising=False)
    data = tmp_path / "data"
    data.mkdir()
    client = get_client(None, str(data))
    try:
        # a live worker of another host: reset reads --force only then
        client.hset(keys.CRAWL_WORKERS.format(prefix="t", spider="portal"), "w1",
                    json.dumps({"host": "elsewhere.invalid", "pid": 1}))
        client.set(keys.CRAWL_WORKER.format(prefix="t", spider="portal", worker="w1"), "1")
    finally:
        close_embedded(client)
    text = tmp_path / "a.txt"
    text.write_text(TEXT, encoding="utf-8")
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": TEXT}, ensure_ascii=False) + "\n"
                for i in range(2)),
        encoding="utf-8",
    )
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps({"a": TEXT, "b": TEXT, "duplicate": True, "kind": "copy"}, ensure_ascii=False)
        + "\n",
        encoding="utf-8",
    )
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x", encoding="utf-8")
    redis = ["--data-dir", str(data), "--prefix", "t"]
    return {
        # the demo stops at its data dir (not a directory) after reading its options
        "demo": [["demo", "--data-dir", str(not_a_dir), "--port", "1"]],
        "status": [["status", *redis], ["status", *redis, "--json", "--watch"]],
        "report": [["report", *redis, "--days", "2", "-o", str(tmp_path / "r.html"),
                    "--store-dir", str(tmp_path / "store"), "--pairs", "3",
                    "--spider", "portal"]],
        "push": [["push", "http://a.example/1.html", "--site", "a", "--spider", "portal",
                  *redis]],
        "fingerprint": [["fingerprint", str(text), "--json"]],
        "check": [["check", str(text), *redis]],
        "dedup": [["dedup", "--jsonl", str(docs), *redis]],
        "duplicates": [["duplicates", *redis]],
        "clusters": [["clusters", *redis]],
        "stats": [["stats", *redis]],
        "prune": [["prune", "--days", "1", *redis]],
        "reset": [["reset", *redis, "--yes", "--force"]],
        "eval": [["eval", str(pairs)]],
        "redis-cli": [["redis-cli", "--data-dir", str(data), "ping"]],
    }


def test_every_option_a_command_lists_is_one_it_reads(
    scenario: dict[str, list[list[str]]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    namespaces: list[Recording] = []
    parse: Callable[..., Any] = Parser.parse_known_args

    def recording_parse(self: Parser, args: Any = None, namespace: Any = None) -> Any:
        if namespace is None:
            namespace = Recording()
            namespaces.append(namespace)
        return parse(self, args, namespace)

    def stop_watching(*args: Any) -> None:
        raise KeyboardInterrupt

    class Clock:
        """The time module, but its sleep is Ctrl-C."""

        sleep = staticmethod(stop_watching)

        def __getattr__(self, name: str) -> Any:
            return getattr(time, name)

    monkeypatch.setattr(Parser, "parse_known_args", recording_parse)
    # `status --watch` ends at its first pause as at Ctrl-C (and, should it pause otherwise, at
    # an alarm: the test must not hang)
    monkeypatch.setattr(status_module, "time", Clock())
    previous = signal.signal(signal.SIGALRM, stop_watching)
    signal.alarm(60)
    try:
        _run_every_command(scenario, namespaces, capsys)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _run_every_command(scenario: dict[str, list[list[str]]], namespaces: list[Recording],
                       capsys: pytest.CaptureFixture[str]) -> None:
    commands = _commands()
    assert set(scenario) == set(commands), "a command without a scenario in this test"
    for name, runs in scenario.items():
        reads: set[str] = set()
        for argv in runs:
            namespaces.clear()
            code = main(argv)
            out, err = capsys.readouterr()
            assert "takes no" not in err and "unrecognized" not in err, err
            assert code in (0, 1, 130), (argv, code, err)
            reads |= vars(namespaces[0]).get("_reads", set())
        unread = {flag for dest, flag in _options(commands[name]).items() if dest not in reads}
        assert not unread, f"newscrawl {name} lists options it never reads: {sorted(unread)}"


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--redis-url", "redis://127.0.0.1:1", "fingerprint", "a.txt"], "--redis-url"),
        (["--prefix", "x", "eval", "pairs.jsonl"], "--prefix"),
        (["--prefix", "x", "redis-cli", "ping"], "--prefix"),
        (["--redis-url", "redis://127.0.0.1:1", "demo"], "--redis-url"),
    ],
)
def test_an_option_given_before_a_command_that_does_not_take_it_is_refused(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {argv[2]} takes no {flag}" in err


def test_demo_lists_its_own_data_dir_without_the_crawl_default() -> None:
    demo = _commands()["demo"].format_help()
    assert "--data-dir" in demo and "temporary" in demo
    assert "NEWSCRAWL_DATA_DIR" not in demo
    assert "--redis-url" not in demo and "--prefix" not in demo


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("dupliactes", "duplicates"), ("stat", "stats"), ("fingerprnt", "fingerprint"),
     ("rediscli", "redis-cli")],
)
def test_a_misspelt_command_gets_did_you_mean(
    typed: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([typed])
    assert exc.value.code == 2
    assert f"invalid choice: '{typed}' (did you mean '{meant}'?)" in capsys.readouterr().err


def test_a_command_like_no_other_gets_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["xyzzy"])
    err = capsys.readouterr().err
    assert "invalid choice: 'xyzzy'" in err and "did you mean" not in err
    assert "'duplicates'" in err  # argparse's list of the commands
