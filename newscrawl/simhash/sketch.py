"""The text sketch that confirms a simhash candidate: distinct 4-gram count, b-bit minhash, a set
of numbers and two band keys, 34 bytes (no Scrapy, no Redis here). :func:`confirms` is the
decision rule the index's Lua script computes with the same arithmetic.

See docs/design/near-duplicates.md#confirmation-the-text-sketch.
"""

from __future__ import annotations

import re
import struct
import sys
import unicodedata
import zlib
from array import array
from dataclasses import dataclass
from itertools import repeat
from operator import and_, mul, rshift

from newscrawl.simhash.core import feature_hash, load_speedups

# The kept characters, the numbers and the 4-gram pass in C (_csketch.c), unless not built, out of
# date or switched off (NEWSCRAWL_PURE_PYTHON, read at import); the Python code below is the
# definition.
_c = load_speedups("_csketch")

SHINGLE = 4
#: Minhash bins, 4 bits each (b-bit minwise hashing: more bins of fewer bits estimate better
#: for the same bytes; docs/design/near-duplicates.md#why-these-choices).
BINS = 32
BIN_BITS = 4
#: Bits of the set of numbers (docs/design/near-duplicates.md#the-number-set).
NUMBER_BITS = 96
#: Largest shingle count stored (2 bytes).
MAX_SHINGLES = 0xFFFF
#: Only the first characters of a text count (as for the fingerprint).
MAX_CHARS = 100_000
#: Minhash bins whose minima also key a band bucket of the index (candidates found by the text).
BANDS = 2
SKETCH_BYTES = 2 + 2 * BANDS + NUMBER_BITS // 8 + BINS * BIN_BITS // 8

# Characters that count: CJK ideographs, letters and digits (after NFKC and case folding).
# Whitespace, punctuation and symbols are dropped, so width and punctuation edits change nothing.
_DROP_RE = re.compile(r"[\W_]+")
# A number: digits, with decimal point / thousands separators inside (NFKC has made them ASCII).
# a number with full-width digits or a full-width point/comma: two searches that each start with a
# character class (scanned fast)
_WIDE_DIGIT_RE = re.compile(r"[０-９]")
_WIDE_SEPARATOR_RE = re.compile(r"[0-9][．，][0-9]")
_KEEP_RE = re.compile(r"[^\W_]+")  # the runs _DROP_RE leaves
# The same numbers, each with the character right after it (or "" at the end), not consumed.
_NUMBER_NEXT_RE = re.compile(r"([0-9]+(?:[.,][0-9]+)*)(?=(.?))", re.DOTALL)
_EMPTY = -1
_MIX = 0x9E3779B97F4A7C15  # odd 64-bit multiplier (multiply-shift hashing)
_M64 = (1 << 64) - 1
_WORD = array("I")
# hashes per bin (expected) sorted to find the bin minima; a bin with none: about 1 % of texts
_CANDIDATES = 8


@dataclass(frozen=True)
class TextSketch:
    shingles: int  # distinct 4-grams (at most MAX_SHINGLES)
    numbers: int  # NUMBER_BITS-bit set of the numbers
    minhash: bytes  # one value per bin: the lowest BIN_BITS bits of its minimum
    bands: tuple[int, ...] = ()  # BANDS 16-bit band bucket values (bits 8-23 of bins 0, 1)

    def to_bytes(self) -> bytes:
        """``shingles`` (2 bytes), ``bands`` (2 bytes each), ``numbers``, ``minhash``."""
        bands = self.bands or (0,) * BANDS
        return (
            min(self.shingles, MAX_SHINGLES).to_bytes(2, "big")
            + b"".join(b.to_bytes(2, "big") for b in bands)
            + self.numbers.to_bytes(NUMBER_BITS // 8, "big")
            + bytes(  # two bins a byte, the even bin in the high nibble
                (self.minhash[i] << 4) | self.minhash[i + 1] for i in range(0, BINS, 2)
            )
        )

    @classmethod
    def from_bytes(cls, raw: bytes) -> TextSketch:
        if len(raw) != SKETCH_BYTES:
            raise ValueError(f"a sketch has {SKETCH_BYTES} bytes, got {len(raw)}")
        at = 2 + 2 * BANDS
        return cls(
            shingles=int.from_bytes(raw[:2], "big"),
            bands=tuple(int.from_bytes(raw[2 + 2 * k : 4 + 2 * k], "big") for k in range(BANDS)),
            numbers=int.from_bytes(raw[at : at + NUMBER_BITS // 8], "big"),
            minhash=bytes(v for b in raw[at + NUMBER_BITS // 8 :] for v in (b >> 4, b & 15)),
        )


def normalize(text: str) -> str:
    """NFKC, case-folded, with everything but letters, digits and ideographs removed.

    The characters are dropped first (NFKC of what is left is then cheap: mostly ideographs
    already in normal form) and once more if NFKC made new ones (e.g. a fraction slash)."""
    head = text[:MAX_CHARS]
    # what _DROP_RE.sub("", head) leaves, faster
    kept = _c.kept(head) if _c is not None else "".join(_KEEP_RE.findall(head))
    norm = unicodedata.normalize("NFKC", kept)
    if norm != kept:
        norm = _DROP_RE.sub("", norm)
    return norm.casefold()


def _mixed(crcs: list[int]) -> list[int]:
    """``((crc * _MIX) & _M64) >> 32`` for every 32-bit ``crc``: CRC-32 alone is linear (a poor
    min-wise hash), multiply-shift mixes it.

    All of them with one big-int multiply: the CRCs are packed into 128-bit lanes (crc * _MIX
    has 96 bits, so no lane carries into the next), and the 32-bit word at bits 32-63 of each
    lane of the product is that lane's hash."""
    if _WORD.itemsize != 4:  # not seen on a supported platform: one multiply per CRC
        return list(map(rshift, map(and_, map(mul, crcs, repeat(_MIX)), repeat(_M64)), repeat(32)))
    lanes = array("I", bytes(16 * len(crcs)))
    lanes[0::4] = array("I", crcs)
    if sys.byteorder == "big":
        lanes.byteswap()
    product = array("I")
    product.frombytes((int.from_bytes(lanes, "little") * _MIX).to_bytes(16 * len(crcs), "little"))
    if sys.byteorder == "big":
        product.byteswap()
    return product[1::4].tolist()


def _bin_minima(ascending: list[int], bins: int) -> list[int]:
    """The lowest hash // bins of each bin (hash % bins), _EMPTY for a bin without a hash."""
    mins = [_EMPTY] * bins
    left = bins
    for h in ascending:  # a bin's first hash is its minimum
        b = h % bins
        if mins[b] == _EMPTY:
            mins[b] = h // bins
            left -= 1
            if not left:
                break
    return mins


def _number_pairs(text: str) -> set[tuple[str, str]]:
    """Each number of ``text`` with the character right after it ("" at the end)."""
    # full-width digits, or a full-width point/comma in a number
    if _WIDE_DIGIT_RE.search(text) or _WIDE_SEPARATOR_RE.search(text):
        text = unicodedata.normalize("NFKC", text)
    return set(_NUMBER_NEXT_RE.findall(text))


def numbers_of(text: str, units: bool = True) -> set[str]:
    """The distinct numbers of ``text`` (full-width digits count as digits), without
    thousands separators and leading zeros; with ``units``, each followed by the letter or
    ideograph right after it, if any ("7日" and "7时" are different numbers)."""
    part = text[:MAX_CHARS]
    pairs = _c.number_pairs(part) if _c is not None else None
    if pairs is None:
        pairs = _number_pairs(part)
    out = set()
    # each distinct (number, next character) once: a text repeats its numbers
    for number, after in pairs:
        n = number.replace(",", "")
        head, dot, tail = n.partition(".")
        token = (head.lstrip("0") or "0") + (dot + tail if tail else "")
        if units and after.isalpha():
            token += after.casefold()
        out.add(token)
    return out


def _gram_minima(norm: str, bins: int) -> tuple[int, list[int]]:
    """The number of distinct 4-grams of ``norm`` (the whole text as one gram if shorter) and the
    smallest ``hash // bins`` of each bin ``hash % bins`` (_EMPTY for a bin without a gram), the
    hash of a gram being the mixed CRC-32 of its UTF-32-LE bytes."""
    # 4-grams as 16-byte pieces of the UTF-32 text (fixed width), cut out in C: the grams that
    # start at byte offset k, k + 16, k + 32, ... are one struct.unpack from k, for k = 0, 4, 8, 12
    raw = norm.encode("utf-32-le")
    width = 4 * SHINGLE
    grams: set[bytes] = set()
    for offset in range(0, width, 4):
        count = (len(raw) - offset) // width
        if count:
            grams.update(struct.unpack(f"{width}s" * count, raw[offset : offset + width * count]))
    if not grams and raw:
        grams = {raw}
    hashes = _mixed(list(map(zlib.crc32, grams)))
    mins = None
    if len(hashes) > _CANDIDATES * bins:
        # Only the smallest hashes can be bin minima: sort those below a bound that keeps about
        # _CANDIDATES per bin. If a bin has none of them (rare), every hash is sorted.
        bound = (_CANDIDATES * bins << 32) // len(hashes)
        mins = _bin_minima(sorted(filter(bound.__gt__, hashes)), bins)
    if mins is None or _EMPTY in mins:
        mins = _bin_minima(sorted(hashes), bins)
    return len(grams), mins


def _dense_minima(norm: str, bins: int) -> tuple[int, list[int]]:
    """:func:`_gram_minima`'s count and bin minima, densified: an empty bin borrows the next
    non-empty bin's minimum (rotation, offset); all 0 without a gram."""
    count, mins = _gram_minima(norm, bins)
    dense = [0] * bins
    if count:
        for i in range(bins):
            j = i
            while mins[j % bins] == _EMPTY:
                j += 1
            dense[i] = (mins[j % bins] + (j - i) * 0x9E3779B1) & 0xFFFFFFFF
    return count, dense


def sketch(
    text: str, bins: int = BINS, number_bits: int = NUMBER_BITS, units: bool = True
) -> TextSketch:
    """The sketch of ``text`` (any text: an empty one has 0 shingles)."""
    norm = normalize(text)
    if _c is not None and bins >= 1:
        count, dense = _c.dense_minima(norm, bins)
    else:
        count, dense = _dense_minima(norm, bins)
    out = bytes(map(((1 << BIN_BITS) - 1).__and__, dense))
    bits = 0
    for n in numbers_of(text, units):
        bits |= 1 << (feature_hash(n) % number_bits)
    return TextSketch(
        shingles=min(count, MAX_SHINGLES),
        numbers=bits,
        minhash=out,
        bands=tuple((v >> 8) & 0xFFFF for v in dense[:BANDS]),
    )


@dataclass(frozen=True)
class Thresholds:
    """When a candidate's sketch confirms the query's (percent, and a chance per million; chosen
    on the stream benchmarks, see docs/design/near-duplicates.md)."""

    text: int = 75  # estimated containment of the smaller text's 4-grams in the other
    numbers: int = 100  # share of the smaller number set found in the other (none: passes)
    wide: int = 55  # resemblance a candidate found beyond the simhash search also needs
    # The evidence must also be unlikely for two distinct texts: the chance that a pair whose
    # smaller text has only ``support`` % of its 4-grams in the other matches as many minhash
    # bins, times the chance that the smaller number set falls inside the other's by accident
    # (from the larger set's fill), must be at most ``chance`` per million.
    support: int = 30
    chance: int = 1000

    def label(self) -> str:
        return f"c{self.text}n{self.numbers}w{self.wide}s{self.support}p{self.chance}"


DEFAULT_THRESHOLDS = Thresholds()


def _same_bins(a: TextSketch, b: TextSketch) -> int:
    return sum(x == y for x, y in zip(a.minhash, b.minhash, strict=True))


def resemblance(a: TextSketch, b: TextSketch) -> float:
    """Estimated Jaccard resemblance of the two texts' 4-gram sets (b-bit correction)."""
    same = _same_bins(a, b)
    r = 1.0 / (1 << BIN_BITS)
    return max(0.0, (same / len(a.minhash) - r) / (1 - r))


def text_containment(a: TextSketch, b: TextSketch) -> float:
    """Estimated share of the smaller text's 4-grams found in the other."""
    j = resemblance(a, b)
    small = min(a.shingles, b.shingles)
    if small == 0:
        return 0.0
    return min(1.0, j * (a.shingles + b.shingles) / (1 + j) / small)


def number_containment(a: TextSketch, b: TextSketch) -> float:
    """Share of the smaller number set's bits set in the other (1.0 when either has none)."""
    na, nb = a.numbers.bit_count(), b.numbers.bit_count()
    small = min(na, nb)
    if small == 0:
        return 1.0
    return (a.numbers & b.numbers).bit_count() / small


def binomial_tail(n: int, k: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), 0 < p < 1, with the index script's exact operations
    (the same doubles in the same order, so Python and Lua agree to the last bit)."""
    q = 1.0 - p
    term = 1.0
    for _ in range(n):
        term = term * q
    total = 0.0
    for i in range(n + 1):
        if i >= k:
            total = total + term
        term = term * (n - i) / (i + 1) * p / q
    return total


def text_chance(a: TextSketch, b: TextSketch, support: int = DEFAULT_THRESHOLDS.support) -> float:
    """The chance that two texts match at least as many minhash bins as ``a`` and ``b`` do when
    only ``support`` % of the smaller one's 4-grams are in the other, at their length ratio.

    The containment estimate multiplies the resemblance's error by about 1 + the length ratio:
    a 500-character text against a 6,000-character one on the same topic shares 1-2 bins by
    chance (one in 16 for any pair), and 4-6 such bins already read as a containment of 0.9-1.0.
    This chance says whether the bins support containment at all: it is small for a reprint of
    similar length, and stays large when the longer text is many times longer."""
    small, big = sorted((a.shingles, b.shingles))
    if small == 0:
        return 1.0
    j0 = support * small / (100 * (small + big) - support * small)
    r = 1.0 / (1 << BIN_BITS)
    return binomial_tail(len(a.minhash), _same_bins(a, b), r + (1 - r) * j0)


def number_chance(a: TextSketch, b: TextSketch) -> float:
    """The chance that the smaller number set's bits all fall among the larger set's by
    accident: the larger set's fill to the power of the smaller set's bits (1.0 without numbers).
    A nearly full set holds any few bits: its subset test tells nothing."""
    small, big = sorted((a.numbers.bit_count(), b.numbers.bit_count()))
    fill = big / NUMBER_BITS
    out = 1.0
    for _ in range(small):
        out = out * fill
    return out


def confirms(
    a: TextSketch, b: TextSketch, *, wide: bool = False, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> bool:
    """Whether ``a`` and ``b`` are one article: the rule the index script applies to a candidate
    (``wide``: found by a band bucket beyond the simhash search). Same arithmetic as the script."""
    j = resemblance(a, b)
    if wide and j * 100 < thresholds.wide:
        return False
    if a.shingles == 0 or b.shingles == 0 or text_containment(a, b) * 100 < thresholds.text:
        return False
    na, nb = a.numbers.bit_count(), b.numbers.bit_count()
    small = min(na, nb)
    both = (a.numbers & b.numbers).bit_count()
    if small and both * 100 < thresholds.numbers * small:
        return False
    chance = text_chance(a, b, thresholds.support) * number_chance(a, b)
    return chance * 1_000_000 <= thresholds.chance
