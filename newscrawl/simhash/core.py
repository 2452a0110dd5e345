"""Signature arithmetic: the stable 64-bit feature hash, the weighted vote and Hamming distance.

Bit i of a signature is ``(value >> i) & 1``; written as a string, the most significant bit comes
first. See docs/design/fingerprint.md#bit-order.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import logging
import math
import os
from collections.abc import Callable, Iterable
from types import ModuleType

logger = logging.getLogger(__name__)

BITS = 64

#: Set to 1 (or true, yes, on) to ignore the C speedups of the fingerprint path (the same results
#: from the Python code, slower): docs/design/fingerprint.md#the-c-speedups.
PURE_PYTHON_ENV = "NEWSCRAWL_PURE_PYTHON"
#: The interface version of the C extensions this Python code is written for (their ``API``;
#: raised with every change of their functions or results): one built from other sources is
#: ignored, and the Python code runs.
SPEEDUPS_API = 1
_SPEEDUPS = ("_cfingerprint", "_csketch")
_why_not: dict[str, str] = {}
_warned: set[str] = set()


def speedups_wanted() -> bool:
    """False when the environment asks for the Python code alone (PURE_PYTHON_ENV)."""
    return os.environ.get(PURE_PYTHON_ENV, "").strip().lower() in ("", "0", "false", "no", "off")


def load_speedups(name: str) -> ModuleType | None:
    """The C extension ``newscrawl.simhash.<name>``, or None when the Python code is to run: not
    built, switched off, or built from other sources (a WARNING says so once)."""
    if not speedups_wanted():
        _why_not[name] = f"{PURE_PYTHON_ENV} is set"
        return None
    try:
        module = importlib.import_module(f"newscrawl.simhash.{name}")
    except ImportError:
        _why_not[name] = "the C speedups are not built: no C compiler when it was installed?"
        return None
    stale = getattr(module, "API", None) != SPEEDUPS_API
    built = getattr(module, "__file__", None) or ""
    # an editable install: its sources beside it, changed since (a git pull without reinstalling)
    sources = [os.path.join(os.path.dirname(built), f) for f in (name + ".c", "_speedups.h")]
    newest = max((os.stat(f).st_mtime_ns for f in sources if os.path.exists(f)), default=0)
    with contextlib.suppress(OSError):
        stale = stale or newest > os.stat(built).st_mtime_ns
    if stale:
        _why_not[name] = "the C speedups are out of date: install newscrawl again"
        if name not in _warned:
            _warned.add(name)
            logger.warning("The C speedups %s were built from other sources than this"
                           " newscrawl's: the Python code runs instead (the same results, slower)."
                           " Install newscrawl again to rebuild them (pip install -e .)",
                           built)  # fmt: skip
        return None
    _why_not.pop(name, None)
    return module


def speedups_status() -> str:
    """Which code computes fingerprints and sketches, for logs and ``newscrawl --version``."""
    loaded = [name for name in _SPEEDUPS if load_speedups(name) is not None]
    if len(loaded) == len(_SPEEDUPS):
        return "C speedups"
    why = "; ".join(sorted({_why_not[name] for name in _SPEEDUPS if name not in loaded}))
    return f"Python code ({why})" if not loaded else f"C speedups in part ({why})"


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two non-negative integers."""
    if (
        not isinstance(a, int)
        or not isinstance(b, int)
        or isinstance(a, bool)
        or isinstance(b, bool)
    ):
        raise TypeError("hamming() takes two ints")
    if a < 0 or b < 0:
        raise ValueError("hamming() takes non-negative ints (unsigned signatures)")
    return (a ^ b).bit_count()


def feature_hash(token: str) -> int:
    """Stable unsigned 64-bit hash of a feature string: BLAKE2b-64 of its UTF-8 bytes, big-endian.

    Identical on every machine and process (never Python's salted ``hash()``).
    """
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "big")


def simhash_from_features(pairs: Iterable[tuple[int, float]], bits: int = BITS) -> int:
    """Signature of ``(feature hash, weight)`` pairs; see the module docstring for the convention.

    Each feature hash must be an int in ``[0, 2**bits)`` and each weight a finite number.
    No features (or all weights zero) gives 0. Integer weights are summed exactly, whatever
    their size (the fingerprinter's weights before its shift often exceed 2**53).
    """
    if not isinstance(bits, int) or bits <= 0:
        raise ValueError("bits must be a positive int")
    limit = 1 << bits
    vector: list[float] = [0] * bits
    for h, w in pairs:
        if not isinstance(h, int) or h < 0 or h >= limit:
            raise ValueError(f"feature hash {h!r} is not an int in [0, 2**{bits})")
        if not isinstance(w, int) and not math.isfinite(w):
            raise ValueError(f"feature weight {w!r} is not finite")
        for i in range(bits):
            if (h >> i) & 1:
                vector[i] += w
            else:
                vector[i] -= w
    out = 0
    for i, v in enumerate(vector):
        if v > 0:
            out |= 1 << i
    return out


# --- fast path for non-negative integer weights -------------------------------------------------
# "Lanes": a 64-bit hash h is spread into one big int with bit i of h at bit LANE*i. Then
# acc = sum(w * spread(h)) holds, in lane i, S[i] = total weight of the features whose bit i is set
# (no lane overflows while the total weight W < LANE_CAPACITY). V[i] = S[i] - (W - S[i]), so bit i
# of the signature is set iff 2*S[i] > W, i.e. S[i] >= T with T = W // 2 + 1. Adding
# 2**(LANE-1) - T to every lane sets bit LANE-1 of lane i exactly when S[i] >= T; bytes slicing
# gathers those 64 bits.
# One big-int multiply-add per feature instead of 64 Python-level additions.
LANE = 24
LANE_CAPACITY = 1 << (LANE - 1)
# The fingerprinter keeps a document's total weight below 2**WEIGHT_BITS (shifting every weight
# right by the same number of bits when needed), inside the lanes; 24-bit lanes keep the big ints
# of the vote small, and a feature whose weight is lost to the shift holds < 2**-21 of the total.
WEIGHT_BITS = LANE - 2
_LANE_ONES = sum(1 << (LANE * i) for i in range(BITS))
_SPREAD_BYTE = [sum(((b >> k) & 1) << (LANE * k) for k in range(8)) for b in range(256)]
_HIGH_BIT_TO_CHAR = bytes(ord("1") if b & 0x80 else ord("0") for b in range(256))
_LANE_BYTES = LANE // 8


# _SPREAD_CHUNK[b]: the LANE * 8 bits (little-endian bytes) of spread(b) for a byte b, so that
# spread(h) is the join of the chunks of h's bytes, least significant byte first: one C-level join
# and one int.from_bytes instead of eight shifts and ors.
_SPREAD_CHUNK = [v.to_bytes(_LANE_BYTES * 8, "little") for v in _SPREAD_BYTE]


def spread(h: int) -> int:
    """``h`` (64-bit) with bit i moved to bit ``LANE * i``."""
    return spread_digest(h.to_bytes(8, "big"))


def spread_digest(
    digest: bytes,
    _chunk: Callable[[int], bytes] = _SPREAD_CHUNK.__getitem__,
    _join: Callable[[Iterable[bytes]], bytes] = b"".join,
) -> int:
    """``spread(int.from_bytes(digest, "big"))`` for an 8-byte big-endian ``digest``."""
    return int.from_bytes(_join(map(_chunk, digest[::-1])), "little")


def simhash_from_spread(weighted: Iterable[tuple[int, int]], total: int) -> int:
    """Signature from ``(spread(h), integer weight >= 0)`` pairs whose weights sum to ``total``.

    The caller guarantees ``0 <= total < LANE_CAPACITY`` (then no lane can overflow).
    """
    acc = 0
    for s, w in weighted:
        acc += s * w
    return vote_lanes(acc, total)


def vote_lanes(acc: int, total: int) -> int:
    """Signature from lane sums ``acc`` (lane i: weight of the features with bit i set)."""
    acc += ((1 << (LANE - 1)) - (total // 2 + 1)) * _LANE_ONES
    raw = acc.to_bytes(_LANE_BYTES * BITS + 1, "little")
    top = raw[
        _LANE_BYTES - 1 : _LANE_BYTES * BITS : _LANE_BYTES
    ]  # the byte holding bit LANE - 1, per lane
    return int(top.translate(_HIGH_BIT_TO_CHAR)[::-1], 2)



