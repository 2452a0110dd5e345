"""The document fingerprint: normalise -> tokens -> weighted features -> 64-bit simhash.

Default configuration (chosen by measurement, see docs/design/fingerprint.md):

1. Only the first ``max_chars`` (100,000) characters count, so any input costs bounded time/memory.
2. NFKC + case folding; CJK runs are segmented (``rjieba`` by default, ``jieba`` is the reference),
   other letter/digit runs are words; pure numbers, 1-character non-CJK tokens, punctuation and
   whitespace are dropped (see ``newscrawl.simhash.text``).
3. Each distinct token is a feature, weighted ``(count * idf(token)) ** 3`` (cubed TF-IDF) with
   jieba's IDF table (median IDF for unknown words), in integers (IDF x 1000, rounded). The count
   is position-weighted: the first ``plateau`` (150) tokens count 1, token i after that counts
   150 / (i + 1), so truncation and text added at the end move less weight while the headline and
   the lead keep full weight. Then no feature may hold more than ``max_share`` (30 %) of the total
   weight (exact integer water-filling, ``share_cap``): the salient words dominate the vote, which
   makes the signature survive reprint edits, but no single word decides all 64 bits (measured in
   docs/design/fingerprint.md).
4. Feature hash: BLAKE2b-64 of the token's UTF-8 bytes; the weighted vote of ``core``.

Texts with fewer than ``min_tokens`` (10) tokens get no fingerprint: ``reason="too_short"``,
also with no token at all (punctuation or numbers only); ``"empty"`` only for a text that is
empty or whitespace.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from itertools import repeat
from operator import floordiv, mul, rshift
from typing import Any

from newscrawl.simhash import core
from newscrawl.simhash.idf import load_idf
from newscrawl.simhash.segmenters import SEGMENTERS, load_segmenter
from newscrawl.simhash.text import cjk_text_and_gap_words, split_runs

logger = logging.getLogger(__name__)

ALGORITHM = "nc2"  # nc2: total weight shifted below 2**22 (nc1: 2**46)
TF_MODES = ("log", "raw", "sqrt", "binary")
DEFAULT_SEGMENTER = "rjieba"
_TF_SCALE = 1000
_SHINGLE_SEP = "\x1f"


@dataclass(frozen=True)
class FingerprintConfig:
    segmenter: str = DEFAULT_SEGMENTER
    hmm: bool = True
    idf_file: str | None = None
    tf: str = "raw"  # term-frequency factor: raw = count, log = 1 + ln(count), sqrt, binary
    max_tf: int = 1000  # counts above this count as this
    power: int = 3  # weight = (tf_factor * idf) ** power; 3 lets the salient words dominate
    plateau: int = 150  # tokens 0..P-1 count 1, token i >= P counts P/(i+1); 0 = no position weight
    max_share: int = 30  # percent: no feature weighs more than this share of the total; 0 = no cap
    shingle: int = 1  # 1 = single tokens; k > 1 adds k-token shingles as extra features
    min_cjk_len: int = 1  # CJK words shorter than this are dropped (1 keeps all)
    max_chars: int = 100_000  # only the first max_chars characters of a text count
    min_tokens: int = 10  # fewer tokens -> no fingerprint (reason "too_short")

    def __post_init__(self) -> None:
        if self.segmenter not in SEGMENTERS:
            raise ValueError(f"unknown segmenter {self.segmenter!r}; choose one of {SEGMENTERS}")
        if self.tf not in TF_MODES:
            raise ValueError(f"unknown tf mode {self.tf!r}; choose one of {TF_MODES}")
        if self.power not in (1, 2, 3):
            raise ValueError(f"power must be 1, 2 or 3, got {self.power!r}")
        for name in ("max_tf", "shingle", "min_cjk_len", "max_chars", "min_tokens"):
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


def _tf_factor(mode: str, tf: int) -> int:
    if mode == "log":
        return round(_TF_SCALE * (1.0 + math.log(tf)))
    if mode == "raw":
        return _TF_SCALE * tf
    if mode == "sqrt":
        return round(_TF_SCALE * math.sqrt(tf))
    return _TF_SCALE


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
    # (about 0.42 KB per token, tokens included: ~27 MB at most)
    CACHE_LIMIT = 32_768

    def __init__(self, config: FingerprintConfig | None = None) -> None:
        self.config = config or FingerprintConfig()
        self._idf = load_idf(self.config.idf_file)
        self._segmenter = load_segmenter(self.config.segmenter, self.config.hmm)
        self._tf_table = [0] + [
            _tf_factor(self.config.tf, tf) for tf in range(1, self.config.max_tf + 1)
        ]
        self._max_count = self.config.max_tf * _TF_SCALE
        self._decay_table: list[int] = []
        self._cache: dict[str, tuple[int, int]] = {}
        self._old_cache: dict[str, tuple[int, int]] = {}
        self._raw_tf = self.config.tf == "raw"
        c = self.config
        features = (
            f"t{c.shingle}.{c.tf}{c.max_tf}p{c.power}.l{c.plateau}.s{c.max_share}"
            f".c{c.min_cjk_len}.x{c.max_chars}.m{c.min_tokens}"
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
        min_cjk = self.config.min_cjk_len
        # All CJK runs go to the segmenter in one call (joined by spaces: the segmenters cut each
        # space-separated block on its own and give back one " " token per space). The words of
        # the gaps between the runs are put back at their spaces, so the order is the text's.
        cjk, gap_words = cjk_text_and_gap_words(text)
        if not cjk.strip():
            return [w for ws in gap_words or () for w in ws]
        cut_tokens = cut(cjk)
        if gap_words is None:
            if min_cjk > 1:
                return [w for w in cut_tokens if len(w) >= min_cjk and w != " "]
            return list(filter(" ".__ne__, cut_tokens))
        if min_cjk <= 1 and cut_tokens.count(" ") == len(gap_words) and "" not in cut_tokens:
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
            elif len(w) >= min_cjk:
                out.append(w)
        if gap != len(gap_words):  # a segmenter that does not keep spaces: slow, safe path
            out = []
            for is_cjk, run in split_runs(text):
                if is_cjk:
                    out.extend(w for w in cut(run) if len(w) >= min_cjk)
                else:
                    out.append(run)
        return out

    # -- features ------------------------------------------------------------------------------
    def _entry(self, token: str) -> tuple[int, int]:
        """(spread hash, idf) of one token, through the cache (see ``_fill_entries``)."""
        return self._cache.get(token) or self._fill_entries([token], [None])[0]

    def _fill_entries(
        self, keys: list[str], entries: Sequence[tuple[int, int] | None]
    ) -> list[tuple[int, int]]:
        """``entries`` with each None (a token not in the current cache) filled: from the old
        cache generation, else computed (spread hash, IDF), and put in the current one.

        The cache has two generations: when the current one is full it becomes the old one (the
        previous old one is dropped), and a token found in the old one moves back, so frequent
        tokens stay cached while memory stays bounded. One loop with local names (new tokens are
        most of the work of a cold process)."""
        old_get = self._old_cache.get
        idf_get = self._idf.get_hashed
        blake2b = hashlib.blake2b
        chunk = core._SPREAD_CHUNK.__getitem__
        join = b"".join
        from_bytes = int.from_bytes
        out: list[tuple[int, int]] = []
        append = out.append
        for e, token in zip(entries, keys, strict=True):
            if e is None:
                e = old_get(token)
                if e is None:
                    digest = blake2b(token.encode("utf-8"), digest_size=8).digest()
                    e = (
                        from_bytes(join(map(chunk, digest[::-1])), "little"),
                        idf_get(token, from_bytes(digest, "big")),  # word_hash(token)
                    )
                cache = self._cache
                if len(cache) >= self.CACHE_LIMIT:
                    self._old_cache = cache
                    self._cache = cache = {}
                    old_get = self._old_cache.get
                cache[token] = e
            append(e)
        return out

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
        counts = {t: n * _TF_SCALE for t, n in Counter(toks[:p]).items()}
        decay = self._decay(len(toks))
        get = counts.get
        for t, d in zip(toks[p:], decay, strict=False):
            counts[t] = get(t, 0) + d
        return counts

    def _decay(self, n: int) -> list[int]:
        """``[_TF_SCALE * P // (i + 1) for i in range(P, n)]``, from a table grown on demand."""
        table = self._decay_table
        p = self.config.plateau
        if len(table) < n - p:
            table = [_TF_SCALE * p // (i + 1) for i in range(p, max(n, 2 * len(table) + p))]
            self._decay_table = table
        return table

    def _tf(self, count: int) -> int:
        """The term-frequency factor (x _TF_SCALE) of a count given in thousandths."""
        c = min(count, self._max_count)
        if c % _TF_SCALE == 0:
            return self._tf_table[c // _TF_SCALE]
        mode = self.config.tf
        if mode == "raw":
            return c
        if mode == "log":
            return max(0, round(_TF_SCALE * (1.0 + math.log(c / _TF_SCALE))))
        if mode == "sqrt":
            return round(_TF_SCALE * math.sqrt(c / _TF_SCALE))
        return _TF_SCALE

    def _features(self, toks: list[str]) -> tuple[list[str], tuple[int, ...], list[int]]:
        """(features, their spread hashes, their integer weights), after the share cap, in
        matching order.

        Per-feature work runs in C where it can (``map`` over ``operator`` functions, one
        ``dict.get`` per token through ``map``); the arithmetic is the same integer arithmetic as
        ``(idf * tf(count) // 1000) ** power``, so the weights (and fingerprints) are unchanged.
        """
        power = self.config.power
        p = self.config.plateau
        plain = not p or len(toks) <= p  # no position weights: plain counts, in units
        counts = Counter(toks) if plain else self._counts(toks)
        keys = list(counts)
        found = list(map(self._cache.get, keys))
        entries = self._fill_entries(keys, found) if None in found else found
        spreads, idfs = zip(*entries, strict=True)
        cvals = counts.values()
        if plain and self._raw_tf and max(cvals) * _TF_SCALE <= self._max_count:
            # (idf * (n * 1000) // 1000) ** power == (idf * n) ** power
            ws = list(map(pow, map(mul, idfs, cvals), repeat(power)))
        else:
            tfs: Iterable[int] = cvals
            if plain:
                tfs = map(mul, cvals, repeat(_TF_SCALE))
            if not self._raw_tf or max(cvals) * (_TF_SCALE if plain else 1) > self._max_count:
                tfs = map(self._tf, tfs)
            ws = list(
                map(pow, map(floordiv, map(mul, idfs, tfs), repeat(_TF_SCALE)), repeat(power))
            )
        k = self.config.shingle
        if k > 1 and len(toks) >= k:  # shingles: plain counts (no position weights)
            grams = Counter(_SHINGLE_SEP.join(toks[i : i + k]) for i in range(len(toks) - k + 1))
            gram_spreads = []
            for gram, n in grams.items():
                idf = sum(self._entry(t)[1] for t in gram.split(_SHINGLE_SEP)) // k
                keys.append(gram)
                gram_spreads.append(self._entry(gram)[0])
                ws.append((idf * self._tf(n * _TF_SCALE) // _TF_SCALE) ** power)
            spreads += tuple(gram_spreads)
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
def _cached(idf_file: str | None, segmenter: str | None) -> Fingerprinter:
    config = FingerprintConfig(
        segmenter=segmenter or DEFAULT_SEGMENTER,
        idf_file=idf_file,
    )
    return Fingerprinter(config)


def get_fingerprinter(
    *, idf_file: str | os.PathLike[str] | None = None, segmenter: str | None = None
) -> Fingerprinter:
    """The default-configuration Fingerprinter (optionally other IDF file or segmenter), cached."""
    path = os.path.abspath(os.fspath(idf_file)) if idf_file is not None else None
    return _cached(path, segmenter)


def fingerprint(text: str) -> int | None:
    """Fingerprint of ``text`` with the default configuration (what the crawl pipeline applies)."""
    return get_fingerprinter().fingerprint(text)
