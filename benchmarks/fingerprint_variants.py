"""The fingerprint variants measured against the default (docs/design/fingerprint.md, "Alternatives
measured"), for the benchmarks only: ``bench_quality.py --variants`` and ``bench_fingerprint.py
--segmenters``. The crawl's fingerprinter (``newscrawl.simhash``) implements the chosen weighting
alone; this module keeps every variant switchable:

* ``tf``: the term-frequency factor: ``raw`` (the default: the count), ``log`` (1 + ln count),
  ``sqrt``, ``binary``; ``power`` 1, 2 or 3 (the default);
* ``shingle`` k > 1: k-token shingles as extra features; ``min_cjk_len`` > 1 drops short CJK words;
* ``segmenter``: ``rjieba`` (the default), ``jieba`` (the reference), ``jieba_fast_dat`` (only when
  installed); ``hmm=False`` switches jieba's HMM for unknown words off.

``VariantFingerprinter(VariantConfig())`` computes the default fingerprints, bit for bit, under the
default version string (``check_default`` asserts it on the texts of a run).
"""

from __future__ import annotations

import hashlib
import math
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from itertools import repeat
from operator import floordiv, mul, rshift
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from newscrawl.simhash import core  # noqa: E402
from newscrawl.simhash.fingerprinter import (  # noqa: E402
    ALGORITHM,
    FingerprintResult,
    get_fingerprinter,
    share_cap,
)
from newscrawl.simhash.idf import load_idf  # noqa: E402
from newscrawl.simhash.segmenters import Segmenter, _version  # noqa: E402
from newscrawl.simhash.text import cjk_text_and_gap_words, split_runs  # noqa: E402

TF_MODES = ("log", "raw", "sqrt", "binary")
SEGMENTERS = ("jieba", "rjieba", "jieba_fast_dat")
DEFAULT_SEGMENTER = "rjieba"
_TF_SCALE = 1000
_SHINGLE_SEP = "\x1f"
_lock = threading.Lock()


@dataclass(frozen=True)
class VariantConfig:
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

    def replace(self, **changes: Any) -> VariantConfig:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return VariantConfig(**values)


def _tf_factor(mode: str, tf: int) -> int:
    if mode == "log":
        return round(_TF_SCALE * (1.0 + math.log(tf)))
    if mode == "raw":
        return _TF_SCALE * tf
    if mode == "sqrt":
        return round(_TF_SCALE * math.sqrt(tf))
    return _TF_SCALE


class VariantFingerprinter:
    """The fingerprinter with every measured variant switchable (one configuration each)."""

    # cached token -> (spread hash, idf), two generations of at most CACHE_LIMIT tokens each
    # (about 0.42 KB per token, tokens included: ~27 MB at most)
    CACHE_LIMIT = 32_768

    def __init__(self, config: VariantConfig | None = None) -> None:
        self.config = config or VariantConfig()
        self._idf = load_idf(self.config.idf_file)
        self._segmenter = load_variant_segmenter(self.config.segmenter, self.config.hmm)
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
        return f"VariantFingerprinter({self.version!r})"

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
        toks = self._tokens(text[: self.config.max_chars])
        if not toks:
            return FingerprintResult(None, "empty", 0, 0, truncated)
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


def load_variant_segmenter(name: str, hmm: bool = True) -> Segmenter:
    """Build the named segmenter; ValueError for an unknown name, ImportError if not installed."""
    if name == "jieba":
        import jieba

        tok = jieba.dt
        with _lock:
            if not tok.initialized:
                # jieba logs "Building prefix dict ..." on its own logger at DEBUG level.
                tok.initialize()

        def cut_jieba(run: str) -> list[str]:
            return list(tok.cut(run, HMM=hmm))

        return Segmenter("jieba", _version("jieba", jieba), hmm, cut_jieba)
    if name == "rjieba":
        import rjieba

        rcut = rjieba.cut

        def cut_rjieba(run: str) -> list[str]:
            return rcut(run, hmm)

        return Segmenter("rjieba", _version("rjieba", rjieba), hmm, cut_rjieba)
    if name == "jieba_fast_dat":
        import jieba_fast_dat

        with _lock:
            jieba_fast_dat.initialize()
        fcut = jieba_fast_dat.lcut

        def cut_fast(run: str) -> list[str]:
            return fcut(run, HMM=hmm)

        return Segmenter(
            "jieba_fast_dat", _version("jieba_fast_dat", jieba_fast_dat), hmm, cut_fast
        )
    raise ValueError(f"unknown segmenter {name!r}; choose one of {', '.join(SEGMENTERS)}")


def check_default(texts: Iterable[str]) -> int:
    """Assert that the default variant equals the crawl's fingerprinter (value and version) on
    ``texts``; returns how many were compared."""
    ours, prod = VariantFingerprinter(), get_fingerprinter()
    assert ours.version == prod.version, (ours.version, prod.version)
    n = 0
    for text in texts:
        assert ours.analyze(text) == prod.analyze(text), text[:80]
        n += 1
    return n
