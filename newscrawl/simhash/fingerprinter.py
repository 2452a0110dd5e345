"""The document fingerprint: normalise -> tokens -> weighted features -> 64-bit simhash.

The default configuration (first 100,000 characters, rjieba on the CJK runs, position-weighted
cubed TF-IDF with a 30 % share cap, BLAKE2b-64 feature hashes) and why each choice was made:
docs/design/fingerprint.md.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from itertools import compress, islice, repeat
from operator import floordiv, is_, mul, rshift
from typing import Any

from newscrawl.simhash import core
from newscrawl.simhash.idf import load_idf
from newscrawl.simhash.segmenters import load_segmenter
from newscrawl.simhash.text import cjk_text_and_gap_words, split_runs

logger = logging.getLogger(__name__)

ALGORITHM = "nc2"  # nc2: total weight shifted below 2**22 (nc1: 2**46)
_TF_SCALE = 1000
# The feature part of the version string: raw term frequency capped at max_tf, cubed TF-IDF, single
# tokens ("t1"), every CJK word ("c1"): the weighting chosen by measurement.
_FEATURES = "t1.raw{max_tf}p3.l{plateau}.s{max_share}.c1.x{max_chars}.m{min_tokens}"


@dataclass(frozen=True)
class FingerprintConfig:
    """The parameters of the weight ``(count * idf) ** 3`` (the power is fixed)."""

    idf_file: str | None = None
    max_tf: int = 1000  # counts above this count as this
    plateau: int = 150  # tokens 0..P-1 count 1, token i >= P counts P/(i+1); 0 = no position weight
    max_share: int = 30  # percent: no feature weighs more than this share of the total; 0 = no cap
    max_chars: int = 100_000  # only the first max_chars characters of a text count
    min_tokens: int = 10  # fewer tokens -> no fingerprint (reason "too_short")

    def __post_init__(self) -> None:
        for name in ("max_tf", "max_chars", "min_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.plateau, int) or self.plateau < 0:
            raise ValueError(f"plateau must be an int >= 0, got {self.plateau!r}")
        if not isinstance(self.max_share, int) or not 0 <= self.max_share <= 100:
            raise ValueError(f"max_share must be a percentage in [0, 100], got {self.max_share!r}")

    def replace(self, **changes: Any) -> FingerprintConfig:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return FingerprintConfig(**values)


@dataclass(frozen=True)
class FingerprintResult:
    value: int | None  # the 64-bit signature, or None
    reason: str | None  # why there is no signature: "empty" or "too_short"; None when value is set
    features: int  # number of distinct features that voted
    tokens: int = 0  # number of tokens counted
    truncated: bool = False  # True when the text was longer than max_chars


def share_cap(weights: list[int], percent: int) -> int | None:
    """The largest cap c such that, with every weight w replaced by min(w, c), no weight is above
    ``percent`` % of the new total; None when no weight needs capping (or ``percent`` is 0).

    Exact integer water-filling: with the k largest weights capped, c = p * rest / (100 - p * k),
    rest being the sum of the others. When it cannot be met (fewer than 100 / p features), the
    largest weights are capped at the k-th largest, so the features vote alike.
    """
    if not percent or not weights:
        return None
    total = sum(weights)
    if max(weights) * 100 <= percent * total:
        return None
    ordered = sorted(weights, reverse=True)
    rest = total
    for k in range(1, len(ordered) + 1):
        rest -= ordered[k - 1]
        den = 100 - percent * k
        if den <= 0 or k == len(ordered):
            return ordered[k - 1]
        c = percent * rest // den
        if ordered[k] <= c:
            return c
    return None  # not reached


class Fingerprinter:
    """Computes fingerprints for one configuration. Thread-safe; keeps a bounded token cache."""

    # cached token -> (spread hash, idf), two generations of at most CACHE_LIMIT tokens each
    CACHE_LIMIT = 32_768

    def __init__(self, config: FingerprintConfig | None = None) -> None:
        self.config = config or FingerprintConfig()
        self._idf = load_idf(self.config.idf_file)
        self._segmenter = load_segmenter()
        self._max_count = self.config.max_tf * _TF_SCALE
        self._decay_table: list[int] = []
        self._cache: dict[str, tuple[int, int]] = {}
        self._old_cache: dict[str, tuple[int, int]] = {}
        self._idf_arrays = self._idf.probe_arrays()
        self._fast = None
        self._split: Callable[[str], tuple[str, list[list[str]] | None]]
        self._split = cjk_text_and_gap_words
        _cfingerprint = core.load_speedups("_cfingerprint")
        if _cfingerprint is not None:
            keys, values, mask, median = self._idf_arrays
            if isinstance(keys, array) and isinstance(values, array):  # a hashed table
                self._fast = functools.partial(
                    _cfingerprint.fingerprint, keys, values, mask, median, self.config.plateau,
                    self._max_count, self.config.max_share, core.WEIGHT_BITS, {},
                )  # fmt: skip
                self._split = _cfingerprint.cjk_text_and_gap_words
        c = self.config
        features = _FEATURES.format(
            max_tf=c.max_tf,
            plateau=c.plateau,
            max_share=c.max_share,
            max_chars=c.max_chars,
            min_tokens=c.min_tokens,
        )
        self.version = (
            f"{ALGORITHM}/{self._segmenter.label}/{features}/blake2b64/idf-{self._idf.digest}"
        )

    def __repr__(self) -> str:
        return f"Fingerprinter({self.version!r})"

    # -- tokens --------------------------------------------------------------------------------
    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text`` that count (after normalisation, filtering and truncation)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        return self._tokens(text[: self.config.max_chars])

    def _tokens(self, text: str) -> list[str]:
        """Kept tokens in text order (the order matters for the position weights)."""
        cut = self._segmenter.cut
        # All CJK runs go to the segmenter in one call (joined by spaces: the segmenters cut each
        # space-separated block on its own and give back one " " token per space). The words of
        # the gaps between the runs are put back at their spaces, so the order is the text's.
        cjk, gap_words = self._split(text)
        if not cjk.strip():
            return [w for ws in gap_words or () for w in ws]
        cut_tokens = cut(cjk)
        if gap_words is None:
            return list(filter(" ".__ne__, cut_tokens))
        if cut_tokens.count(" ") == len(gap_words) and "" not in cut_tokens:
            # Most gaps hold no kept word: drop the spaces in C, then put the words of the few
            # other gaps in place (the g-th space sits at index pos, so pos - g tokens precede
            # it once the spaces are gone), last gap first so earlier positions stay valid.
            out = list(filter(" ".__ne__, cut_tokens))
            index = cut_tokens.index
            inserts: list[tuple[int, list[str]]] = []
            pos = -1
            for g, words in enumerate(gap_words):
                pos = index(" ", pos + 1)
                if words:
                    inserts.append((pos - g, words))
            for at, words in reversed(inserts):
                out[at:at] = words
            return out
        out = []
        gap = 0
        for w in cut_tokens:
            if w == " ":
                if gap < len(gap_words):
                    out.extend(gap_words[gap])
                gap += 1
            elif w:
                out.append(w)
        if gap != len(gap_words):  # a segmenter that does not keep spaces: slow, safe path
            out = []
            for is_cjk, run in split_runs(text):
                if is_cjk:
                    out.extend(w for w in cut(run) if w)
                else:
                    out.append(run)
        return out

    # -- features ------------------------------------------------------------------------------
    def _fill_entries(
        self, keys: list[str], entries: list[tuple[int, int] | None]
    ) -> list[tuple[int, int]]:
        """``entries`` with each None (a token not in the current cache) filled: from the old
        cache generation, else computed (spread hash, IDF), and put in the current one.

        The cache has two generations: when the current one is full it becomes the old one (the
        previous old one is dropped), and a token found in the old one moves back, so frequent
        tokens stay cached while memory stays bounded. Only the missing tokens go through the
        Python loop (picked out, and merged back, in C); a new token's IDF is the first probe of
        the hashed table, inline, in the common case."""
        missing = list(compress(keys, map(is_, entries, repeat(None))))
        old_get = self._old_cache.get
        blake2b = hashlib.blake2b
        chunk = core._SPREAD_CHUNK.__getitem__
        join = b"".join
        from_bytes = int.from_bytes
        probe = self._idf.get_hashed
        slots, values, mask, median = self._idf_arrays
        new: dict[str, tuple[int, int]] = {}
        for token in missing:
            e = old_get(token)
            if e is None:
                digest = blake2b(token.encode("utf-8"), digest_size=8).digest()
                key = from_bytes(digest, "big")  # word_hash(token)
                i = key & mask
                slot = slots[i]
                if slot == key:
                    idf = values[i]
                elif slot:  # another word in the first slot (or a parsed table): probe on
                    idf = probe(token, key)
                else:
                    idf = median
                e = (from_bytes(join(map(chunk, digest[::-1])), "little"), idf)
            new[token] = e
        cache = self._cache
        limit = self.CACHE_LIMIT
        if len(cache) + len(new) > limit:
            self._old_cache = cache
            self._cache = cache = {}
        cache.update(new if len(new) <= limit else islice(new.items(), limit))
        return list(map(new.get, keys, entries))  # type: ignore[arg-type]

    def weights(self, text: str) -> dict[str, int]:
        """Feature -> its integer weight, for ``text`` (for inspection and tests). The vote shifts
        all of them right by the same number of bits when their total reaches 2**22."""
        keys, _, ws = self._features(self.tokens(text))
        return dict(zip(keys, ws, strict=True))

    def _counts(self, toks: list[str]) -> dict[str, int]:
        """Token -> its (position-weighted) count, in thousandths.

        With ``plateau`` P > 0, token i (0-based, text order) counts 1 while i < P and P / (i + 1)
        after that, so the lead (headline, first paragraphs) counts fully and a cut or an added
        tail moves less weight.
        """
        p = self.config.plateau
        if not p or len(toks) <= p:
            return {t: n * _TF_SCALE for t, n in Counter(toks).items()}
        tail = toks[p:]
        counts = dict.fromkeys(tail, 0)  # every tail token present: one += per token below
        head = Counter(toks[:p])
        counts.update(zip(head, map(mul, head.values(), repeat(_TF_SCALE)), strict=False))
        for t, d in zip(tail, self._decay(len(toks)), strict=False):
            counts[t] += d
        return counts

    def _decay(self, n: int) -> list[int]:
        """``[_TF_SCALE * P // (i + 1) for i in range(P, n)]``, from a table grown on demand."""
        table = self._decay_table
        p = self.config.plateau
        if len(table) < n - p:
            table = [_TF_SCALE * p // (i + 1) for i in range(p, max(n, 2 * len(table) + p))]
            self._decay_table = table
        return table

    def _features(self, toks: list[str]) -> tuple[list[str], tuple[int, ...], list[int]]:
        """(features, their spread hashes, their integer weights), after the share cap, in
        matching order.

        Per-feature work runs in C where it can (``map`` over ``operator`` functions, one
        ``dict.get`` per token through ``map``); the arithmetic is the same integer arithmetic as
        ``(idf * min(count, 1000 * max_tf) // 1000) ** 3`` (count in thousandths), token by token,
        so the weights (and fingerprints) are the same.
        """
        p = self.config.plateau
        plain = not p or len(toks) <= p  # no position weights: plain counts, in units
        counts = Counter(toks) if plain else self._counts(toks)
        keys = list(counts)
        found = list(map(self._cache.get, keys))
        entries = self._fill_entries(keys, found) if None in found else found
        spreads, idfs = zip(*entries, strict=True)
        cvals = counts.values()
        if plain and max(cvals) * _TF_SCALE <= self._max_count:
            # (idf * (n * 1000) // 1000) ** 3 == (idf * n) ** 3
            ws = list(map(pow, map(mul, idfs, cvals), repeat(3)))
        else:
            tfs: Iterable[int] = cvals
            if plain:
                tfs = map(mul, cvals, repeat(_TF_SCALE))
            if max(cvals) * (_TF_SCALE if plain else 1) > self._max_count:
                tfs = map(min, tfs, repeat(self._max_count))
            ws = list(map(pow, map(floordiv, map(mul, idfs, tfs), repeat(_TF_SCALE)), repeat(3)))
        cap = share_cap(ws, self.config.max_share)
        if cap is not None:
            ws = list(map(min, ws, repeat(cap)))
        return keys, spreads, ws

    # -- fingerprint ---------------------------------------------------------------------------
    def analyze(self, text: str) -> FingerprintResult:
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        truncated = len(text) > self.config.max_chars
        if not text or text.isspace():
            return FingerprintResult(None, "empty", 0, 0, truncated)
        toks = self._tokens(text[: self.config.max_chars])
        if len(toks) < self.config.min_tokens:
            return FingerprintResult(None, "too_short", 0, len(toks), truncated)
        if self._fast is not None:
            fast = self._fast(toks)
            if fast is not None:  # else weights too large for the C sums: the Python code
                return FingerprintResult(fast[0], None, fast[1], len(toks), truncated)
        keys, spreads, ws = self._features(toks)
        # Keep the total weight inside the lanes of the fast vote (below 2**WEIGHT_BITS): if it
        # is too large, every weight is shifted right by the same number of bits (deterministic;
        # the cubed weights of most articles need it).
        total = sum(ws)
        shift = total.bit_length() - core.WEIGHT_BITS
        if shift > 0:
            ws = list(map(rshift, ws, repeat(shift)))
            total = sum(ws)
        value = core.vote_lanes(sum(map(mul, spreads, ws)), total)
        return FingerprintResult(value, None, len(keys), len(toks), truncated)

    def fingerprint(self, text: str) -> int | None:
        return self.analyze(text).value


@functools.lru_cache(maxsize=16)
def _cached(idf_file: str | None) -> Fingerprinter:
    return Fingerprinter(FingerprintConfig(idf_file=idf_file))


def get_fingerprinter(*, idf_file: str | os.PathLike[str] | None = None) -> Fingerprinter:
    """The default-configuration Fingerprinter (optionally with another IDF file), cached."""
    path = os.path.abspath(os.fspath(idf_file)) if idf_file is not None else None
    return _cached(path)


def fingerprint(text: str) -> int | None:
    """Fingerprint of ``text`` with the default configuration (what the crawl pipeline applies)."""
    return get_fingerprinter().fingerprint(text)
