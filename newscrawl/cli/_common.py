"""What the commands of ``newscrawl`` share: the common options and option types, the Redis of
the crawl, JSON output, JSON Lines input, file errors and the progress line.

Nothing here imports a command module or :mod:`newscrawl.cli` itself: the commands import this
module, and ``newscrawl/cli/__init__.py`` imports the commands.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from newscrawl.errors import NewscrawlError
from newscrawl.formats import fingerprint_hex


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` without abbreviations: ``--json`` is never taken for
    ``--jsonl``, a misspelt flag is an error (with the usage of the command it was given to).
    A value that is not one of the choices (a misspelt command) gets "did you mean" for a
    close one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Commands)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is None or value in choices or not isinstance(value, str):
            super()._check_value(action, value)
            return
        import difflib

        close = difflib.get_close_matches(value, [str(c) for c in choices], n=1, cutoff=0.6)
        if not close:
            super()._check_value(action, value)
            return
        raise argparse.ArgumentError(
            action, f"invalid choice: {value!r} (did you mean {close[0]!r}?)"
        )


class _Commands(argparse._SubParsersAction):
    """The commands: each one's ``--help`` opens with its one-line summary (``help``) unless
    it has a longer ``description``."""

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        summary = kwargs.get("help")
        if summary and not kwargs.get("description"):
            kwargs["description"] = summary[:1].upper() + summary[1:] + "."
        return super().add_parser(name, **kwargs)


class CliError(NewscrawlError):
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


def read_text(name: str, max_chars: int | None = None, encoding: str = "utf-8") -> str:
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


def hex_or_none(value: int | None) -> str | None:
    return None if value is None else fingerprint_hex(value)


def print_json(obj: Any) -> None:
    """One line of JSON; never NaN or Infinity, which are not JSON (:func:`load_json_line`
    refuses them on input; one stored by an older version is printed as null)."""
    try:
        line = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    except ValueError:
        line = json.dumps(_finite_only(obj), ensure_ascii=False, allow_nan=False)
    if not encodable(line):  # a lone surrogate (from a "\udfff" escape): printed escaped
        line = json.dumps(json.loads(line), ensure_ascii=True, allow_nan=False)
    print(line)


def encodable(value: Any) -> bool:
    """Whether every string in ``value`` (a JSON value: nested lists and objects too) can be
    encoded as UTF-8; a lone surrogate, which a ``"\\udfff"`` escape in JSON gives, cannot."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(encodable(k) and encodable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(encodable(v) for v in value)
    return True


def _finite_only(obj: Any) -> Any:
    if isinstance(obj, float) and obj != obj or obj in (float("inf"), float("-inf")):
        return None
    if isinstance(obj, dict):
        return {k: _finite_only(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite_only(v) for v in obj]
    return obj


class NotJson(NewscrawlError, ValueError):
    """A line that is not one JSON value newscrawl can use (message: why)."""


def _no_constant(name: str) -> Any:
    raise NotJson(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise NotJson(f"{text} is out of range for a number")
    return value


def load_json_line(raw: bytes | str) -> Any:
    """The value of one JSON line. :class:`NotJson` for what is not strict JSON: a syntax error,
    bytes that are not UTF-8, ``NaN``/``Infinity`` (Python's json reads them, and would write
    them back as invalid JSON), a number out of range, or a value nested so deep that the parser
    runs out of stack."""
    line = raw.rstrip(b"\r\n") if isinstance(raw, bytes) else raw.rstrip("\r\n")
    try:
        return json.loads(line, parse_constant=_no_constant, parse_float=_finite)
    except NotJson:
        raise
    except RecursionError:
        raise NotJson("nested too deep") from None
    except json.JSONDecodeError as exc:
        if exc.pos >= len(exc.doc.rstrip()) or exc.msg.startswith("Unterminated string"):
            raise NotJson("truncated or invalid JSON: the line ends before its JSON value does"
                          " (a line cut short?)") from None
        raise NotJson(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except (ValueError, UnicodeDecodeError) as exc:  # bytes not UTF-8, int digits limit
        raise NotJson(str(exc)) from None


def load_fingerprinter(args: argparse.Namespace) -> Any:
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
def open_redis(args: argparse.Namespace, *, create: bool = False) -> Iterator[Any]:
    """The Redis of the crawl: ``--redis-url`` / ``$REDIS_URL`` or the embedded server (whose
    data dir must exist unless ``create``: a command that writes for the next crawl)."""
    import redis

    from newscrawl.connection import (
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
        if not data_dir.is_dir() and not create:
            hint = ("run a crawl with this data directory first, or check the path"
                    if args.data_dir else
                    "run a crawl first, or pass --data-dir / --redis-url / set REDIS_URL")
            if not data_dir.is_absolute():  # run in another directory than the crawl's?
                from newscrawl._datadirs import known_data_dirs

                known = [str(path) for path in known_data_dirs()]
                if known:
                    hint += ("; the crawls run on this machine keep their data in "
                             + ", ".join(known))
            raise CliError(f"no newscrawl data directory at {data_dir} ({hint})")
    if url:
        # a first answer within 10 s (the commands after it may take up to 60 s): a server
        # that is paused or overloaded is said so at once, not after a minute
        try:
            with redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=10) as probe:
                probe.ping()
        except ValueError as exc:
            raise CliError(f"bad Redis URL {where}: {exc}") from None
        except redis.TimeoutError as exc:
            raise CliError(f"Redis ({where}) did not answer within 10 s ({exc}): is it paused,"
                           " overloaded or loading its data?") from None
        except (redis.RedisError, OSError) as exc:
            raise CliError(f"cannot reach Redis ({where}): {exc}") from None
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


#: bad lines of a JSON Lines file named one by one; the rest are counted
NAMED_BAD_LINES = 5


class JsonLines:
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
                obj = load_json_line(raw)
            except NotJson as exc:
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


# --- parser -----------------------------------------------------------------------------------
def int_at_least(minimum: int, value: str) -> int:
    """An integer option with one rule and one message: ``must be an integer >= MIN``."""
    try:
        n = int(value)
    except ValueError:
        n = minimum - 1
    if n < minimum:
        raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}: {value!r}")
    return n


def non_negative_int(value: str) -> int:
    return int_at_least(0, value)


def positive_int(value: str) -> int:
    return int_at_least(1, value)


def encoding_name(value: str) -> str:
    import codecs

    try:
        return codecs.lookup(value).name
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown encoding: {value!r}") from None


def hamming_distance(value: str) -> int:
    from newscrawl.index import MAX_SUPPORTED_DISTANCE

    n = non_negative_int(value)
    if n > MAX_SUPPORTED_DISTANCE:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_SUPPORTED_DISTANCE} (the four-block index, with its one-bit "
            "neighbour buckets, guarantees no more)"
        )
    return n


def common_options(redis: bool = True, prefix: bool = True) -> argparse.ArgumentParser:
    """Options a command takes before or after its name: ``-v``; with ``redis``, the Redis of
    the crawl (``--redis-url``, ``--data-dir`` and, with ``prefix``, ``--prefix``).

    ``newscrawl`` itself takes them all (before the command name); a command takes only those
    it uses, and one given before the name of a command that does not take it is refused."""
    common = Parser(add_help=False)
    # SUPPRESS: options may come before or after the command without overwriting each other.
    if redis:
        common.add_argument(
            "--redis-url", default=argparse.SUPPRESS, help="Redis URL (default: $REDIS_URL)"
        )
        common.add_argument(
            "--data-dir",
            default=argparse.SUPPRESS,
            help="embedded Redis data dir when no Redis URL (default: $NEWSCRAWL_DATA_DIR or "
            ".newscrawl)",
        )
    if redis and prefix:
        common.add_argument(
            "--prefix",
            default=argparse.SUPPRESS,
            help="Redis key prefix (default: $NEWSCRAWL_REDIS_PREFIX or newscrawl)",
        )
    common.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log more"
    )
    return common


def add_idf_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--idf-file", help="IDF table (default: the built-in one, as the crawl)")


def add_encoding_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--encoding",
        type=encoding_name,
        default="utf-8",
        help="encoding of the text files, e.g. gb18030 (default: utf-8)",
    )

