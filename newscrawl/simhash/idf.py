"""IDF tables in jieba's format (``word idf`` per line, UTF-8), quantised to integers, and their
cache file (an open-addressing table of 64-bit word hashes), so a process loads the table without
parsing it.

See docs/design/fingerprint.md#idf-cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import struct
import sys
import time
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path

from newscrawl.errors import ConfigError
from newscrawl.simhash.core import feature_hash

logger = logging.getLogger(__name__)

IDF_SCALE = 1000
# Median (x IDF_SCALE) of IDF tables already validated, by the SHA-256 of their bytes: such a file
# needs no number parsing at load (a test recomputes the median with the careful parse).
# 501b70ec...: jieba 0.42.1's analyse/idf.txt.
_KNOWN_MEDIANS = {
    "501b70ec56c34d90f3f590f1918ca4b1bd617d5b46cd99bd6d17c7de6e4f80ed": 11955,
}


def default_idf_path() -> Path:
    """jieba's bundled table (found without importing jieba.analyse, which is slow to import)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("jieba is not installed: no default IDF table")
    return Path(next(iter(spec.submodule_search_locations))) / "analyse" / "idf.txt"


# The key of a word in a hashed table: the fingerprint's feature hash (BLAKE2b-64 of its UTF-8
# bytes, big-endian), so the fingerprinter looks a token up with the hash it already has.
word_hash = feature_hash


class IdfTable:
    """A loaded IDF table: ``get(word)`` is ``round(idf * IDF_SCALE)``, the median for unknown
    words.

    Backed by the parsed text (``word -> idf as written``, converted on lookup), or by the cache
    file's open-addressing table (under 2/3 full): ``keys[i]`` is the 64-bit ``word_hash`` of a
    word (0 = empty slot), ``values[i]`` its IDF; a word is looked for at slot ``hash & mask``
    and the following ones. Loading it creates no Python object per word, and a lookup is one or
    two array reads. A word that is not in the table could be taken for one that is only if
    their 64-bit BLAKE2b hashes were equal (odds about 1 in 7 * 10**13 per lookup of jieba's
    270k-word table; the same on every machine).
    """

    def __init__(
        self,
        path: str,
        digest: str,
        median: int,
        *,
        raw: dict[str, str] | None = None,
        hashed: tuple[array[int], array[int]] | None = None,
        entries: int = 0,
    ) -> None:
        if (raw is None) == (hashed is None):
            raise ValueError("IdfTable takes raw or hashed")
        self.path = path
        self.digest = digest
        self.median = median
        self._raw = raw
        self._keys, self._values = hashed if hashed is not None else (array("Q"), array("I"))
        self._mask = len(self._keys) - 1
        self._n = entries  # of a hashed table (not counted at load: it would cost start-up)

    def __len__(self) -> int:
        return len(self._raw) if self._raw is not None else self._n

    def get(self, word: str) -> int:
        """``round(idf * IDF_SCALE)`` of ``word``, the median for unknown words."""
        return self.get_hashed(word, word_hash(word) if self._raw is None else 0)

    def get_hashed(self, word: str, key: int) -> int:
        """``get(word)`` for a caller that has ``word_hash(word)`` already (a parsed table looks
        ``word`` up and ignores ``key``)."""
        if self._raw is not None:
            value = self._raw.get(word)
            return self.median if value is None else round(float(value) * IDF_SCALE)
        keys = self._keys
        mask = self._mask
        i = key & mask
        for _ in range(len(keys)):  # bounded: a table always has empty slots (checked at load)
            k = keys[i]
            if k == key:
                return self._values[i]
            if not k:
                return self.median
            i = (i + 1) & mask
        return self.median

    def probe_arrays(self) -> tuple[Sequence[int], Sequence[int], int, int]:
        """(keys, values, mask, median) for a caller that inlines the first probe of
        ``get_hashed``: ``keys[key & mask] == key`` gives the value at that slot, an empty slot
        (0) the median, any other key means probing on with ``get_hashed``. A parsed table's
        single slot holds -1, which is no key: every lookup goes to ``get_hashed``."""
        if self._raw is not None:
            return [-1], [0], 0, self.median
        return self._keys, self._values, self._mask, self.median

    def items(self) -> list[tuple[str, int]]:
        """Every (word, quantised idf), sorted by word (parsed tables only: a hashed table does
        not keep its words)."""
        if self._raw is None:
            raise TypeError("a hashed IDF table does not keep its words")
        return sorted((w, round(float(v) * IDF_SCALE)) for w, v in self._raw.items())


def _hash_table(items: list[tuple[str, int]]) -> tuple[array[int], array[int]] | None:
    """The open-addressing table of ``items`` (under 2/3 full), or None when it cannot
    represent them exactly: two words with the same 64-bit hash, a word hashing to 0 (the empty
    mark), or a platform without 8-byte array items."""
    slots = 1 << max(4, (3 * len(items) // 2).bit_length())  # at most 2/3 full
    biggest = max((v for _, v in items), default=0)
    keys = array("Q", bytes(8 * slots))
    values = array(
        "H" if biggest < 1 << 16 else "I", bytes(slots * (2 if biggest < 1 << 16 else 4))
    )
    if keys.itemsize != 8 or values.itemsize not in (2, 4):
        return None
    mask = slots - 1
    for word, value in items:
        key = word_hash(word)
        if not key:
            return None
        i = key & mask
        while keys[i]:
            if keys[i] == key:
                return None
            i = (i + 1) & mask
        keys[i] = key
        values[i] = value
    return keys, values


class IdfFormatError(ConfigError):
    """An IDF table that cannot be read; the message names the file and line."""


_NO_CACHE_DIR = object()
_CACHE_MAGIC = b"NCIDF5\0\0"
# in the file name too, so processes of two newscrawl versions sharing a cache directory (a
# rolling upgrade) each keep their own file instead of rewriting each other's on every start
_CACHE_FORMAT = "v5"
# magic, entries, median, bytes per value, slots; then the CRC-32 of all that and the body (so a
# changed header field fails the check too). Body: the keys (8 bytes each), then the values.
_CACHE_HEADER = struct.Struct("<8sIIBI")
_CACHE_CRC = struct.Struct("<I")


def default_cache_dir() -> Path | None:
    """``$NEWSCRAWL_CACHE_DIR`` (empty: no cache), else ``$XDG_CACHE_HOME/newscrawl``, else
    ``~/.cache/newscrawl``; None when there is no home directory either."""
    env = os.environ.get("NEWSCRAWL_CACHE_DIR")
    if env is not None:
        return Path(env) if env else None
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "newscrawl"
    try:
        return Path.home() / ".cache" / "newscrawl"
    except RuntimeError:
        return None


def load_idf(
    path: str | os.PathLike[str] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None | object = _NO_CACHE_DIR,
) -> IdfTable:
    """Load a jieba-format IDF file (the bundled jieba table when ``path`` is None).

    Lines are ``word idf``; blank lines and lines starting with ``#`` are skipped. Any other line
    that is not exactly two fields with a number in [0, 1e6) raises IdfFormatError (file:line).
    ``cache_dir`` (default: ``default_cache_dir()``; None: no cache) holds the parsed table.
    """
    p = Path(path) if path is not None else default_idf_path()
    where = default_cache_dir() if cache_dir is _NO_CACHE_DIR else cache_dir
    if not isinstance(where, (str, os.PathLike)):
        data = p.read_bytes()
        return _parse(p, data, hashlib.sha256(data).hexdigest())
    cdir = Path(where)
    sha = _remembered_sha(cdir, p)
    if sha is not None:
        table = _read_cache(cdir / f"idf-{sha}.{_CACHE_FORMAT}.bin", p, sha)
        if table is not None:
            return table
    data = p.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    cache = cdir / f"idf-{sha}.{_CACHE_FORMAT}.bin"
    table = _read_cache(cache, p, sha)
    if table is None:
        table = _parse(p, data, sha)
        hashed = _write_cache(cache, table)
        if hashed is not None:  # the table later processes read from the cache, as they do
            table = IdfTable(table.path, table.digest, table.median, hashed=hashed,
                             entries=len(table))  # fmt: skip
    _remember_sha(cdir, p, sha)
    return table


# The SHA-256 of a source file is remembered beside the cache with the file's path, size, inode,
# modification and change times: a process whose file still has them finds its cache without
# reading and hashing the source. Only a file unchanged for a while when it was hashed is
# remembered (as git treats its index), so a rewrite within one tick of the clock is not missed.
_SETTLED_NS = 2_000_000_000


def _source_memo(cdir: Path, source: Path) -> tuple[Path, str, int] | None:
    """(memo file, the source's stamp, its last change in ns), or None (no such file)."""
    try:
        where = os.path.abspath(source)
        st = os.stat(where)
    except OSError:
        return None
    name = hashlib.blake2b(where.encode("utf-8", "surrogateescape"), digest_size=10).hexdigest()
    stamp = f"{where}\0{st.st_size}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_ctime_ns}"
    memo = cdir / f"idf-source-{name}.{_CACHE_FORMAT}.txt"
    return memo, stamp, max(st.st_mtime_ns, st.st_ctime_ns)


def _read_memo(memo: Path) -> tuple[str, str] | None:
    try:
        stamp, sha = memo.read_text(encoding="utf-8").rsplit("\0", 1)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return (stamp, sha) if re.fullmatch("[0-9a-f]{64}", sha) else None


def _remembered_sha(cdir: Path, source: Path) -> str | None:
    found = _source_memo(cdir, source)
    memo = _read_memo(found[0]) if found is not None else None
    return memo[1] if memo is not None and found is not None and memo[0] == found[1] else None


def _remember_sha(cdir: Path, source: Path, sha: str) -> None:
    found = _source_memo(cdir, source)
    if found is None or time.time_ns() - found[2] < _SETTLED_NS:
        return
    memo, stamp, _ = found
    if _read_memo(memo) != (stamp, sha):
        _write_atomic(memo, f"{stamp}\0{sha}".encode())


def _read_cache(cache: Path, source: Path, sha: str) -> IdfTable | None:
    try:
        blob = cache.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.debug("IDF cache %s unreadable (%s): parsing %s", cache, exc, source)
        return None
    head = _CACHE_HEADER.size + _CACHE_CRC.size
    try:
        table = _decode_cache(blob, head, source, sha) if len(blob) >= head else None
    except (ValueError, UnicodeDecodeError, struct.error):
        table = None
    if table is not None:
        return table
    logger.debug("IDF cache %s is not a valid cache file: parsing %s", cache, source)
    return None


def _decode_cache(blob: bytes, head: int, source: Path, sha: str) -> IdfTable | None:
    magic, n, median, size, slots = _CACHE_HEADER.unpack_from(blob)
    (crc,) = _CACHE_CRC.unpack_from(blob, _CACHE_HEADER.size)
    body = memoryview(blob)[head:]
    if (
        magic != _CACHE_MAGIC
        or size not in (2, 4)
        or slots < 16
        or slots & (slots - 1)
        or 2 * slots < 3 * n
    ):
        return None
    if len(body) != slots * (8 + size):
        return None
    if zlib.crc32(body, zlib.crc32(blob[: _CACHE_HEADER.size])) != crc:
        return None
    keys, values = array("Q"), array("H" if size == 2 else "I")
    if (keys.itemsize, values.itemsize) != (8, size):
        return None
    keys.frombytes(body[: slots * 8])
    values.frombytes(body[slots * 8 :])
    if sys.byteorder == "big":
        keys.byteswap()
        values.byteswap()
    return IdfTable(str(source), sha[:8], median, hashed=(keys, values), entries=n)


def _write_cache(cache: Path, table: IdfTable) -> tuple[array[int], array[int]] | None:
    """Write the hashed form of the parsed ``table`` to ``cache`` (when it can be written) and
    return it; None when the table cannot be hashed exactly."""
    items = table.items()
    hashed = _hash_table(items)
    if hashed is None:  # a hash collision or an unusual platform: no cache (never seen)
        logger.debug("IDF table %s cannot be hashed exactly: no cache file", table.path)
        return None
    keys, values = hashed
    n = len(items)
    if sys.byteorder == "big":
        keys, values = array(keys.typecode, keys), array(values.typecode, values)
        keys.byteswap()
        values.byteswap()
    body = keys.tobytes() + values.tobytes()
    header = _CACHE_HEADER.pack(_CACHE_MAGIC, n, table.median, values.itemsize, len(keys))
    header += _CACHE_CRC.pack(zlib.crc32(body, zlib.crc32(header)))
    _write_atomic(cache, header + body)
    return hashed


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (a reader sees no file or the whole file)."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # only when writing: saves its import in every process that reads

        with tempfile.NamedTemporaryFile(
            "wb", dir=path.parent, prefix=path.name + ".", suffix=".tmp", delete=False
        ) as fh:
            tmp = fh.name
            fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        logger.debug("IDF cache %s not written: %s", path, exc)
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


# a line that is not "<word> <idf>": blank, a comment, one or three fields (the end of the text,
# after a final newline, is not a line)
_NOT_WORD_IDF_LINE = re.compile(r"^(?!\Z)(?!(?!#)\S+[ \t]+\S+[ \t]*\r?$)", re.MULTILINE)


def _parse(p: Path, data: bytes, sha: str) -> IdfTable:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IdfFormatError(f"{p}: IDF file is not UTF-8: {exc}") from exc
    known = _KNOWN_MEDIANS.get(sha)
    if known is not None:  # the same bytes were validated before: no number parsing
        fields = text.split()
        table = dict(zip(fields[::2], fields[1::2], strict=True))
        return IdfTable(str(p), sha[:8], known, raw=table)
    raw: dict[str, str] = {}
    values: list[float] = []
    # Fast path for a clean file: every line exactly "word idf" (no blank or comment lines, no
    # line with one or three fields), checked by one regex search; then one split.
    if _NOT_WORD_IDF_LINE.search(text) is None:
        fields = text.split()
        raw = dict(zip(fields[::2], fields[1::2], strict=True))
        try:
            values = list(map(float, raw.values()))
        except ValueError:
            values = []
        # (a comparison with NaN is false, so NaN goes to the careful parse and its error)
        if not all(0.0 <= v < 1e6 for v in values):
            values = []
    if not values:  # careful line-by-line parse; raises IdfFormatError on the first bad line
        raw = _parse_lines(p, text)
        values = [float(v) for v in raw.values()]
    if not values:
        raise IdfFormatError(f"{p}: IDF file has no entries")
    values.sort()
    return IdfTable(str(p), sha[:8], round(values[len(values) // 2] * IDF_SCALE), raw=raw)


def _parse_lines(p: Path, text: str) -> dict[str, str]:
    raw: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) != 2:
            raise IdfFormatError(f"{p}:{lineno}: expected 'word idf', got {line[:80]!r}")
        try:
            idf = float(parts[1])
        except ValueError:
            raise IdfFormatError(f"{p}:{lineno}: idf {parts[1]!r} is not a number") from None
        if not (0.0 <= idf < 1e6):
            raise IdfFormatError(f"{p}:{lineno}: idf {parts[1]!r} out of range [0, 1e6)")
        raw[parts[0]] = parts[1]
    return raw
