"""The text sketch's 4-gram minima, by array operations and by the loop, against the definition
written out plainly (newscrawl.simhash.sketch): distinct 4-grams of the normalised text, CRC-32
of each one's UTF-32-LE bytes, multiply-shift mixed, the minimum of each bin."""

from __future__ import annotations

import random
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from newscrawl.simhash.sketch import (
    BINS,
    _minima_arrays,
    _minima_loop,
    normalize,
    sketch,
)


def definition(norm: str, bins: int) -> tuple[int, list[int]]:
    grams = {norm[i : i + 4] for i in range(len(norm) - 3)} or ({norm} if norm else set())
    mins = [-1] * bins
    for g in grams:
        h = ((zlib.crc32(g.encode("utf-32-le")) * 0x9E3779B97F4A7C15) % 2**64) >> 32
        b, q = h % bins, h // bins
        if mins[b] == -1 or q < mins[b]:
            mins[b] = q
    return len(grams), mins


ALPHABET = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于年月日0123456789abcXYZ"


def texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choice(ALPHABET[: rng.randint(2, len(ALPHABET))]) for _ in range(n))
        for n in [rng.choice((0, 1, 3, 4, 5, 20, 60, 300, 3000)) for _ in range(count)]
    ]


@pytest.mark.parametrize("bins", [BINS, 7, 64])
def test_array_and_loop_minima_are_the_definition(bins: int) -> None:
    checked = 0
    for text in texts(bins, 300):
        norm = normalize(text)
        want = definition(norm, bins)
        assert _minima_loop(norm, bins) == want, norm
        arrays = _minima_arrays(norm, bins)
        if len(norm) >= 4:
            assert arrays == want, norm
            checked += 1
        else:
            assert arrays is None
    assert checked > 150


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",))))
def test_array_minima_of_any_bmp_text(text: str) -> None:
    norm = normalize(text)
    if len(norm) >= 4:
        assert _minima_arrays(norm, BINS) == definition(norm, BINS)


def test_text_beyond_the_bmp_takes_the_loop_with_the_same_sketch() -> None:
    text = "中国外汇交易中心𠀀公布人民币对美元汇率中间价" * 3
    norm = normalize(text)
    assert "𠀀" in norm and _minima_arrays(norm, BINS) is None
    assert _minima_loop(norm, BINS) == definition(norm, BINS)
    assert sketch(text).shingles == definition(norm, BINS)[0]
