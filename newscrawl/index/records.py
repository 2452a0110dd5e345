"""The index's bucket layout in Python: a fingerprint's blocks and fields, and the codec of the
block-0 records (day, doc id, sketch) that ``lua/lib.lua`` writes. Every Python reader of bucket
records goes through here. Layout: docs/design/index.md#layout-what-a-fingerprint-costs.
"""

from __future__ import annotations

from typing import NamedTuple

from newscrawl.simhash.sketch import SKETCH_BYTES

FINGERPRINT_BITS = 64
BLOCKS = 4
BLOCK_BITS = 16
#: The blocks whose hashes hold the text sketch's two band entries (8-byte fields beside the
#: blocks' 6-byte ones).
BAND_BLOCKS = (2, 3)
#: Doc id prefixes a record with a sketch leaves out, by its code byte (code = position + 1).
DOC_PREFIXES = ("", "https://", "http://", "https://www.", "http://www.")
_PREFIX_OF_CODE = {code: p.encode("ascii") for code, p in enumerate(DOC_PREFIXES, 1)}

#: The storage layout's version, part of every version the index records, so an index written
#: in another layout is refused, not misread.
INDEX_LAYOUT = "ix5"


class Record(NamedTuple):
    """One doc's record in a block-0 value."""

    day: int
    doc_id: str
    sketch: bytes | None


def layout_version(version: str | None) -> str | None:
    """The version an index records and checks for ``version``: ``"<version>/<INDEX_LAYOUT>"``
    (None: unchecked)."""
    return None if version is None else f"{version}/{INDEX_LAYOUT}"


def text(value: bytes | str) -> str:
    """A Redis reply as str (bytes decoded as UTF-8, undecodable bytes replaced)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def check_fingerprint(fingerprint: int) -> int:
    """``fingerprint`` if it is an unsigned 64-bit int, else ValueError/TypeError."""
    if isinstance(fingerprint, bool) or not isinstance(fingerprint, int):
        raise TypeError(f"fingerprint must be an int, not {type(fingerprint).__name__}")
    if not 0 <= fingerprint < 1 << FINGERPRINT_BITS:
        raise ValueError(f"fingerprint must be an unsigned 64-bit int, got {fingerprint}")
    return fingerprint


def blocks_of(fingerprint: int) -> tuple[int, int, int, int]:
    """The four 16-bit blocks, most significant first."""
    f = check_fingerprint(fingerprint)
    return ((f >> 48) & 0xFFFF, (f >> 32) & 0xFFFF, (f >> 16) & 0xFFFF, f & 0xFFFF)


def field_of(fingerprint: int, block: int) -> bytes:
    """The field of ``fingerprint`` in its bucket hash of ``block`` (0-3): its six bytes outside
    that block (the bucket's key holds the other two), big-endian."""
    raw = check_fingerprint(fingerprint).to_bytes(8, "big")
    return raw[: 2 * block] + raw[2 * block + 2 :]


def split_records(raw: bytes | str) -> list[bytes]:
    """The records of a block-0 value: the value itself, or, when several docs are stored with
    the same fingerprint, ``b"\\0"`` then ``(<2-byte big-endian length><record>)*`` (no record
    starts with byte 0)."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8")
    if not data or data[0] != 0:
        return [data]
    out: list[bytes] = []
    pos = 1
    while pos + 2 <= len(data):
        n = int.from_bytes(data[pos : pos + 2], "big")
        out.append(data[pos + 2 : pos + 2 + n])
        pos += 2 + n
    return out


def parse_record(raw: bytes | str) -> tuple[int, str, bytes | None] | None:
    """(day, doc id, sketch or None) of a record ``"<day>:<doc id>"`` or ``<code><2-byte
    day><sketch><doc id less the code's prefix>``; None when unreadable."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8")
    prefix = _PREFIX_OF_CODE.get(data[0]) if data else None
    if prefix is not None:
        if len(data) < 3 + SKETCH_BYTES:
            return None
        day = int.from_bytes(data[1:3], "big")
        return day, text(prefix + data[3 + SKETCH_BYTES :]), data[3 : 3 + SKETCH_BYTES]
    cut = data.find(b":")
    if cut < 0:
        return None
    try:
        day = int(data[:cut].decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    return day, text(data[cut + 1 :]), None


def records_of(raw: bytes | str | None) -> list[Record]:
    """The readable records of a block-0 value (None: no value), in the order stored."""
    if raw is None:
        return []
    return [Record(*r) for part in split_records(raw) if (r := parse_record(part)) is not None]


def find_record(raw: bytes | str | None, doc_id: str) -> Record | None:
    """The record of ``doc_id`` in a block-0 value, or None."""
    return next((r for r in records_of(raw) if r.doc_id == doc_id), None)


def glob_escape(pattern_text: str) -> str:
    """``pattern_text`` with SCAN's glob characters escaped."""
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in pattern_text)
