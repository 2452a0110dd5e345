"""Turn response bytes into text: trust the bytes, not the charset declaration.

Chinese portals often declare ``gb2312`` on UTF-8 pages, or declare nothing (or the web
server's default ``ISO-8859-1``) on GBK pages. :func:`decode_html` therefore tries strict decodes
in this order and takes the first that fits:

1. ``forced_encoding`` (a per-site option) -- always wins, decoded with replacement characters;
2. a byte-order mark;
3. UTF-8 (strict; a multi-byte character cut off by a size cap at the very end is tolerated);
4. the declared encoding (HTTP header first, then ``<meta>``), when it is a multi-byte CJK encoding
   that decodes strictly (``gb2312``/``gbk`` are read as their superset ``gb18030``);
5. GB18030 (strict), when the result looks like Chinese (most non-ASCII characters are in the
   GB2312 common set; Western text misread as GB18030 is not);
6. piece by piece: the page is cut after every ``>`` and newline (neither byte occurs inside a
   UTF-8 or GB18030 character) and each piece is decoded as UTF-8, else as the multi-byte
   encoding (the declared CJK one, or GB18030), else with the fewer replacement characters of the
   two. It is taken when at most 2 % of the non-ASCII characters are damaged and the multi-byte
   pieces look like Chinese: a GB page with a few stray bytes, or a page mixing UTF-8 and GBK
   paragraphs (``source="mixed"``). This comes before a single-byte declaration, which a
   multi-byte page passes by accident (``iso-8859-1``/``cp1252`` decode almost any bytes);
7. the declared encoding when it decodes strictly (single-byte encodings such as ``cp1252``);
8. otherwise the candidate (UTF-8, GB18030, declared, ``cp1252``) that needs the fewest replacement
   characters; a WARNING names the page's encoding problem when the result shows mojibake.

It never raises on bad bytes: undecodable bytes become U+FFFD and are counted in
:attr:`Decoded.replacements`. Only an unknown ``forced_encoding`` name raises (a configuration
error, see :func:`validate_encoding`). :func:`has_mojibake` tells whether a decoded text still shows
the marks of a wrong decoding (the spider counts the articles that do).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
)

logger = logging.getLogger(__name__)

__all__ = ["Decoded", "decode_html", "decode_html_detailed", "has_mojibake", "validate_encoding"]

# Multi-byte CJK encodings: a strict decode with one of them rarely succeeds by accident.
_CJK_MULTIBYTE = frozenset(
    {"gb18030", "big5hkscs", "big5", "cp950", "cp932", "shift_jis", "euc_jp", "cp949", "euc_kr",
     "iso2022_jp", "hz"}
)
# Share of non-ASCII characters that must be GB2312 characters for an undeclared GB18030 guess.
_GB_PLAUSIBLE_SHARE = 0.8
# How many characters to sample for that check (enough for a stable share, cheap on huge pages).
_GB_SAMPLE_CHARS = 200_000
# Fallback: when this share of non-ASCII characters is damaged, the candidate is wrong (a
# Western page read as UTF-8 damages ~100%, a Chinese page with a few bad bytes ~1-5%).
_FALLBACK_DAMAGE = 0.3
# Piece-by-piece decoding is taken when at most this share of the non-ASCII characters is damaged
# (a few stray bytes in a GB page; a wrong decoding damages 30-100 %).
_STRAY_DAMAGE = 0.02
# Cut points for piece-by-piece decoding: after ">" and newline, bytes that never occur inside a
# UTF-8 or GB18030 multi-byte character.
_PIECE = re.compile(rb"[^>\n]*(?:[>\n]|$)")
# Marks of a wrong decoding in a text: a run of replacement characters, or UTF-8 read as
# Latin-1/cp1252 (a lead byte shown as "Ã", "å", "æ"... followed by a continuation byte shown as
# "©", "€", "‹"...). One pair can be legitimate ("Â«"), so it takes a few.
_REPLACEMENT_RUN = re.compile("\ufffd{2,}")
_LATIN1_PAIR = re.compile(
    "[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192"
    "\u02c6\u02dc\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a"
    "\u20ac\u2122]"
)
_MOJIBAKE_PAIRS = 3
# A UTF-8 character is at most 4 bytes: an error this close to the end is a truncated character.
_UTF8_TAIL = 4


@dataclass(frozen=True, slots=True)
class Decoded:
    """Result of :func:`decode_html_detailed`.

    ``source`` says which rule chose the encoding: ``forced``, ``bom``, ``utf-8``, ``declared``,
    ``gb18030`` (bytes look like Chinese) or ``fallback`` (nothing decoded cleanly).
    ``declared`` is the (resolved) declared encoding, if any. ``replacements`` counts U+FFFD
    characters introduced by decoding.
    """

    text: str
    encoding: str
    source: str
    declared: str | None
    replacements: int


def validate_encoding(name: str) -> str:
    """Return the codec name a ``forced_encoding`` value resolves to; ValueError if unknown."""
    resolved = resolve_encoding(name) if name else None
    if resolved is None:
        raise ValueError(f"unknown encoding {name!r}")
    return resolved


def decode_html(
    body: bytes,
    *,
    header_encoding: str | None = None,
    forced_encoding: str | None = None,
) -> tuple[str, str]:
    """Decode an HTML response body; return ``(text, encoding used)``.

    ``header_encoding`` is the charset from the HTTP ``Content-Type`` header: either the bare
    charset (``"gbk"``) or the whole header value (``"text/html; charset=gbk"``).
    """
    d = decode_html_detailed(body, header_encoding=header_encoding, forced_encoding=forced_encoding)
    return d.text, d.encoding


def _header_charset(value: str | None) -> str | None:
    if not value:
        return None
    if "=" in value or ";" in value or "/" in value:
        enc = http_content_type_encoding(value)
    else:
        enc = resolve_encoding(value.strip().strip("\"'"))
    return enc


def _strict(body: bytes, encoding: str) -> str | None:
    try:
        return body.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def _utf8(body: bytes) -> str | None:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(body) - _UTF8_TAIL and exc.reason == "unexpected end of data":
            return body[: exc.start].decode("utf-8", errors="strict") + "\ufffd"
        return None


def _looks_chinese(text: str) -> bool:
    """True when most non-ASCII characters are GB2312 (common simplified Chinese) characters."""
    sample = text[:_GB_SAMPLE_CHARS]
    non_ascii = [c for c in sample if ord(c) > 0x7F and c != "\ufffd"]
    if not non_ascii:
        return False
    in_gb2312 = 0
    for c in non_ascii:
        try:
            c.encode("gb2312")
        except UnicodeEncodeError:
            continue
        in_gb2312 += 1
    return in_gb2312 >= _GB_PLAUSIBLE_SHARE * len(non_ascii)


def has_mojibake(text: str) -> bool:
    """True when ``text`` shows the marks of a wrong decoding: a run of two or more U+FFFD, or at
    least three UTF-8 sequences read as Latin-1/cp1252 (``Ã©``, ``åˆ``, ``â€œ``)."""
    if _REPLACEMENT_RUN.search(text):
        return True
    pairs = 0
    for _ in _LATIN1_PAIR.finditer(text):
        pairs += 1
        if pairs >= _MOJIBAKE_PAIRS:
            return True
    return False


def _by_pieces(body: bytes, multibyte: str) -> tuple[str, int, int, int] | None:
    """Decode ``body`` piece by piece (see the module docstring, rule 6).

    Returns (text, replacement characters, non-ASCII pieces read as UTF-8, pieces read with
    ``multibyte``), or None when the result is too damaged or the multi-byte pieces do not look
    like Chinese.
    """
    out: list[str] = []
    wide: list[str] = []  # pieces read with the multi-byte encoding
    bad = 0
    utf8_pieces = 0
    for m in _PIECE.finditer(body):
        piece = m.group()
        if not piece:
            continue
        if piece.isascii():
            out.append(piece.decode("ascii"))
            continue
        text = _strict(piece, "utf-8")
        if text is not None:
            utf8_pieces += 1
            out.append(text)
            continue
        text = _strict(piece, multibyte)
        if text is None:
            as_utf8, bad_utf8 = _replace(piece, "utf-8")
            as_wide, bad_wide = _replace(piece, multibyte)
            text, n = (as_wide, bad_wide) if bad_wide <= bad_utf8 else (as_utf8, bad_utf8)
            bad += n
            if text is as_utf8:
                utf8_pieces += 1
                out.append(text)
                continue
        wide.append(text)
        out.append(text)
    result = "".join(out)
    if bad > _STRAY_DAMAGE * max(1, _non_ascii(result)):
        return None
    if wide and multibyte == "gb18030" and not _looks_chinese("".join(wide)):
        return None
    return result, bad, utf8_pieces, len(wide)


def _non_ascii(text: str) -> int:
    return len(text) - len(text.encode("ascii", errors="ignore"))


def _replace(body: bytes, encoding: str) -> tuple[str, int]:
    text = body.decode(encoding, errors="replace")
    return text, text.count("\ufffd")


def decode_html_detailed(
    body: bytes,
    *,
    header_encoding: str | None = None,
    forced_encoding: str | None = None,
) -> Decoded:
    """Like :func:`decode_html` but also report why the encoding was chosen and the damage."""
    if not isinstance(body, bytes | bytearray | memoryview):
        raise TypeError(f"body must be bytes, not {type(body).__name__}")
    body = bytes(body)
    header = _header_charset(header_encoding)
    meta = html_body_declared_encoding(body) if body else None
    declared = header or meta

    if forced_encoding:
        enc = validate_encoding(forced_encoding)
        text, bad = _replace(body, enc)
        return Decoded(text, enc, "forced", declared, bad)

    if not body:
        return Decoded("", declared or "utf-8", "utf-8", declared, 0)

    bom_enc, bom_len = read_bom(body)
    if bom_enc is not None and bom_len is not None:
        enc = resolve_encoding(bom_enc) or bom_enc
        text, bad = _replace(body[len(bom_len) :], enc)
        return Decoded(text, enc, "bom", declared, bad)

    text_or_none = _utf8(body)
    if text_or_none is not None:
        return Decoded(text_or_none, "utf-8", "utf-8", declared, text_or_none.count("\ufffd")
                       - body.count(b"\xef\xbf\xbd"))

    # Not UTF-8. Candidates in order of trust.
    declared_list = [e for e in dict.fromkeys((header, meta)) if e and e != "utf-8"]
    for enc in declared_list:
        if enc in _CJK_MULTIBYTE:
            text_or_none = _strict(body, enc)
            if text_or_none is not None:
                return Decoded(text_or_none, enc, "declared", declared, 0)

    gb = _strict(body, "gb18030")
    if gb is not None and _looks_chinese(gb):
        return Decoded(gb, "gb18030", "gb18030", declared, 0)

    multibyte = next((e for e in declared_list if e in _CJK_MULTIBYTE), "gb18030")
    pieces = _by_pieces(body, multibyte)
    if pieces is not None:
        text, bad, n_utf8, n_wide = pieces
        if n_utf8 and n_wide:
            logger.debug("UTF-8 and %s mixed on one page: decoded piece by piece", multibyte)
            return Decoded(text, "utf-8" if n_utf8 >= n_wide else multibyte, "mixed", declared,
                           bad)
        enc = multibyte if n_wide else "utf-8"
        return Decoded(text, enc, "declared" if enc in declared_list else enc, declared, bad)

    for enc in declared_list:
        if enc not in _CJK_MULTIBYTE:
            text_or_none = _strict(body, enc)
            if text_or_none is not None:
                return Decoded(text_or_none, enc, "declared", declared, 0)

    # Nothing decodes cleanly: least damage wins; ties go to the earlier (more trusted) candidate.
    # GB18030 only counts when the result looks like Chinese; cp1252 (never fails) is the last
    # resort for undeclared Western pages, when every candidate damages > 30% of non-ASCII chars.
    best: tuple[str, int, str] | None = None
    for enc in dict.fromkeys([*declared_list, "utf-8", "gb18030"]):
        text, bad = _replace(body, enc)
        if enc == "gb18030" and not _looks_chinese(text):
            continue
        if best is None or bad < best[1]:
            best = (text, bad, enc)
    if best is None or best[1] > _FALLBACK_DAMAGE * max(1, _non_ascii(best[0])):
        text, bad = _replace(body, "cp1252")
        best = (text, bad, "cp1252")
    text, bad, enc = best
    if has_mojibake(text):
        logger.warning("no encoding reads this page (declared %s): %s with %d replacement "
                       "characters shows mojibake", declared or "nothing", enc, bad)
    else:
        logger.debug("no clean decoding; %s with %d replacement characters", enc, bad)
    return Decoded(text, enc, "fallback", declared, bad)
