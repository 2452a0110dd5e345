"""Tokenising text: CJK ideograph runs (for the segmenter) and other word tokens (NFKC,
case-folded; numbers and one-character words dropped).

See docs/design/fingerprint.md#how-a-text-becomes-a-fingerprint-default-configuration.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator

_CJK = "\u3400-\u4dbf\u4e00-\u9fff"
WORD_RE = re.compile(rf"[^\W_{_CJK}]+")
_SPLIT_RE = re.compile(rf"([^{_CJK}]+)")
_WORDISH_RE = re.compile(rf"[^\W\d_{_CJK}]")  # a word character that is not a decimal digit


def normalize_word(word: str) -> str:
    if not word.isascii():
        word = unicodedata.normalize("NFKC", word)
    return word.casefold()


def keep_word(word: str) -> bool:
    return len(word) > 1 and not word.isdigit()


@functools.cache
def _token_re() -> re.Pattern[str]:
    # compiled on first use: only the slow path needs it (each Unicode class costs ms to compile)
    return re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")


def split_runs(text: str) -> Iterator[tuple[bool, str]]:
    """Yield ``(is_cjk, run)`` in text order; word runs are normalised and filtered."""
    for m in _token_re().finditer(text):
        cjk = m.group("cjk")
        if cjk is not None:
            yield True, cjk
        else:
            word = normalize_word(m.group("word"))
            if keep_word(word):
                yield False, word


def cjk_text_and_gap_words(text: str) -> tuple[str, list[list[str]] | None]:
    """The CJK runs joined by single spaces, and the kept words of each gap between them.

    ``text`` is split into CJK runs and the gaps between them (``gaps[k]`` lies where the k-th
    space of the joined string is; a leading/trailing gap gives a leading/trailing space). The
    second value is ``None`` when no gap holds a kept word (the common case for Chinese news),
    else one word list per gap, so a caller can put the words back in text order.
    """
    pieces = _SPLIT_RE.split(text)
    joined = " ".join(pieces[0::2])
    # A word run made of decimal digits only is a number (NFKC keeps decimal digits decimal
    # digits), so it is dropped: only gaps with a word character that is not a decimal digit can
    # hold a kept word. Most Chinese news has digits but no such character at all.
    if not _WORDISH_RE.search(text):
        return joined, None
    search = _WORDISH_RE.search
    words = [
        [w for w in map(normalize_word, WORD_RE.findall(g)) if len(w) > 1 and not w.isdigit()]
        if search(g)
        else []
        for g in pieces[1::2]
    ]
    if not any(words):
        return joined, None
    return joined, words
