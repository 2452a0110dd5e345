"""The text sketch's C speedups give the Python code's sketches, bit for bit.

The Python code (``NEWSCRAWL_PURE_PYTHON=1``) is the definition. The extension is optional at
install, but on a machine with a C compiler it must have been built (a failed build is a bug).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from newscrawl.simhash import sketch as skmod
from newscrawl.simhash.core import PURE_PYTHON_ENV, speedups_wanted
from newscrawl.simhash.sketch import (
    _KEEP_RE,
    MAX_CHARS,
    MAX_SHINGLES,
    TextSketch,
    normalize,
    numbers_of,
    sketch,
)

try:
    from newscrawl.simhash import _csketch as csk
except ImportError:
    csk = None

needs_c = pytest.mark.skipif(csk is None, reason="the C speedups are not built")

# CJK, Latin (ASCII and not), digits, full-width forms, NFKC-expanding signs, astral code points
# (emoji, math letters, CJK extension B), punctuation, spaces and a lone surrogate (dropped).
PIECES = (
    "经济 增长 统计局 国家 发布 数据 新闻 记者 北京 上海 的 了".split()
    + ["GDP", "Reuters", "Straße", "É", "é", "ǅ", "ﬁ", "Ⅻ", "½", "㍻", "㎏", "ｶ", "ﾞ"]
    + ["２０２４", "12.5%", "1,000", "ｆｕｌｌ", "７日", "０．５"]
    + ["😀", "👍🏽", "𝒜", "𝟘", "𠀋", "𪚥", "\U0010fffd"]
    + [" ", "\n", "，", "。", "—", "\u3000", "\x00", "\ud800"]
)
texts = st.lists(st.sampled_from(PIECES), min_size=0, max_size=300).map("".join)
short_texts = st.text(
    alphabet=st.sampled_from("a5é经２😀𠀋ﬁ，Ⅻ"), min_size=0, max_size=6
)  # around the 4-gram edge, one character of each width
any_text = st.text(max_size=200)  # every code point but surrogates


def python_sketch(text: str) -> TextSketch:
    """What NEWSCRAWL_PURE_PYTHON gives (the module reads the variable once, at import)."""
    fast = skmod._c
    skmod._c = None
    try:
        return sketch(text)
    finally:
        skmod._c = fast


def both(text: str) -> tuple[bytes, bytes]:
    fast, slow = sketch(text), python_sketch(text)
    assert fast == slow
    return fast.to_bytes(), slow.to_bytes()


@needs_c
def test_the_c_path_is_taken() -> None:
    if speedups_wanted():
        assert skmod._c is csk


@needs_c
@settings(max_examples=300, deadline=None)
@given(texts)
def test_same_sketches_as_python(text: str) -> None:
    fast, slow = both(text)
    assert fast == slow


@needs_c
@settings(max_examples=200, deadline=None)
@given(short_texts)
def test_same_sketches_for_short_texts(text: str) -> None:
    fast, slow = both(text)
    assert fast == slow


@needs_c
@settings(max_examples=200, deadline=None)
@given(any_text, st.integers(min_value=1, max_value=70))
def test_dense_minima_is_python_on_any_str(text: str, bins: int) -> None:
    """Not only normalized text: any str kind (latin-1, UCS-2, UCS-4), any bin count."""
    assert csk.dense_minima(text, bins) == skmod._dense_minima(text, bins)


@needs_c
@pytest.mark.parametrize(
    "text",
    ["", "a", "ab", "abc", "abcd", "é", "éé", "经", "经济增", "经济增长", "😀", "😀😀😀", "𠀋a经é"]
    + ["aaaa", "aaaaa" * 50, "经经经经经" * 40, "😀" * 300, "ab" * 1000],
)
def test_edges_and_repeats(text: str) -> None:
    assert csk.dense_minima(text, 32) == skmod._dense_minima(text, 32)
    assert both(text)[0] == both(text)[1]


def test_empty_text_has_no_shingles() -> None:
    s = sketch("")
    assert s.shingles == 0 and s.minhash == bytes(32) and s.bands == (0, 0)
    if csk is not None:
        assert csk.dense_minima("", 32) == (0, [0] * 32)


@needs_c
def test_kept_is_the_regex_on_every_code_point() -> None:
    every = "".join(map(chr, range(0x110000)))  # surrogates included: no encoding here
    assert csk.kept(every) == "".join(_KEEP_RE.findall(every))
    assert csk.kept("") == "" and csk.kept("_ ，。") == ""


@needs_c
@settings(max_examples=200, deadline=None)
@given(any_text)
def test_kept_is_the_regex(text: str) -> None:
    assert csk.kept(text) == "".join(_KEEP_RE.findall(text))


def python_number_pairs(text: str) -> set[tuple[str, str]] | None:
    """None when the text needs NFKC first, else the Python definition's pairs."""
    if skmod._WIDE_DIGIT_RE.search(text) or skmod._WIDE_SEPARATOR_RE.search(text):
        return None
    return skmod._number_pairs(text)


number_texts = st.text(alphabet=st.sampled_from("0123456789.,．，０５ a日经😀\n"), max_size=40)


@needs_c
@settings(max_examples=400, deadline=None)
@given(number_texts)
def test_number_pairs_is_the_regex(text: str) -> None:
    assert csk.number_pairs(text) == python_number_pairs(text)


@needs_c
@pytest.mark.parametrize(
    "text",
    ["", "7", "a1,2.3.", "1..2,,3,4 5\n6", "v2.0_7日", "007.50", "1,000,000.5元", "x9", "9\n"]
    + ["１", "1．2", "1，2", "．1", "1．", "12,345.6７", "é1", "😀3😀"],
)
def test_number_pairs_edges(text: str) -> None:
    assert csk.number_pairs(text) == python_number_pairs(text)
    fast = numbers_of(text)
    skmod._c, c = None, skmod._c
    try:
        assert fast == numbers_of(text)
    finally:
        skmod._c = c


@needs_c
@pytest.mark.parametrize("kind", ["ascii", "latin1", "ucs2", "ucs4"])
def test_huge_texts(kind: str) -> None:
    """Past MAX_CHARS and past MAX_SHINGLES distinct grams, for each str kind."""
    alphabet = {
        "ascii": "abcdefghijklmnopqrstuvwxyz0123456789",
        "latin1": "abcdeéèàùç0123456789",
        "ucs2": "经济增长统计局国家发布数据新闻记者北京上海abc",
        "ucs4": "经济增长统计局国家发布数据新闻😀𝒜𠀋𪚥abc",
    }[kind]
    rng = random.Random(kind)
    text = "".join(rng.choices(alphabet, k=MAX_CHARS + 5_000))
    norm = normalize(text)
    count, mins = csk.dense_minima(norm, 32)
    assert (count, mins) == skmod._dense_minima(norm, 32)
    assert count > MAX_SHINGLES
    fast, slow = both(text)
    assert fast == slow and int.from_bytes(fast[:2], "big") == MAX_SHINGLES


@needs_c
def test_nfkc_longer_than_max_chars() -> None:
    """NFKC can make the normalized text longer than MAX_CHARS (one ligature, three letters)."""
    text = "ﬃﬄaﬁ经ǆ" * (MAX_CHARS // 6)
    assert len(normalize(text)) > MAX_CHARS
    fast, slow = both(text)
    assert fast == slow


@needs_c
@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((b"abcd", 32), TypeError),
        ((bytearray(b"abcd"), 32), TypeError),
        ((None, 32), TypeError),
        (("abcd", "32"), TypeError),
        (("abcd", 32.0), TypeError),
        (("abcd",), TypeError),
        (("abcd", 32, 1), TypeError),
        (("abcd", 0), ValueError),
        (("abcd", -1), ValueError),
        (("abcd", 2**70), OverflowError),
        (("abcd", 2**62), MemoryError),
    ],
)
def test_bad_arguments(args: tuple[object, ...], error: type[Exception]) -> None:
    with pytest.raises(error):
        csk.dense_minima(*args)


@needs_c
@pytest.mark.parametrize("name", ["kept", "number_pairs"])
@pytest.mark.parametrize("args", [(b"12",), (None,), (12,), (), ("12", "34")])
def test_bad_arguments_of_the_text_scans(name: str, args: tuple[object, ...]) -> None:
    with pytest.raises(TypeError):
        getattr(csk, name)(*args)


@needs_c
def test_memory_is_freed_on_every_path() -> None:
    """The copies and tables go back on success and on failure (PyMem memory is traced)."""
    latin, wide = "abcdé" * 400, "经济😀增长" * 400  # a UCS-4 copy for latin-1; none for UCS-4

    def calls() -> int:
        failed = 0
        for text in (latin, wide):
            csk.dense_minima(text, 32)
            csk.kept(text)
            csk.number_pairs(text + "12.5 ３")
            # 2**59 bins fail after the copy is made, 2**62 before
            for bins in (2**59, 2**62):
                try:
                    csk.dense_minima(text, bins)
                except MemoryError:
                    failed += 1
        return failed

    assert calls() == 4  # and warmed up
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(100):
            calls()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 4_000, grown  # one leaked copy of the latin-1 text: 8,000 bytes


SAMPLE = "新华社北京３月５日电 国家统计局发布数据，GDP增长5.2%。Reuters 😀 𠀋"


def sketch_in_subprocess(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != PURE_PYTHON_ENV}
    if env_value is not None:
        env[PURE_PYTHON_ENV] = env_value
    code = (
        "import sys; from newscrawl.simhash import sketch as m;"
        "print(m._c is None, m.sketch(sys.argv[1]).to_bytes().hex())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, SAMPLE], env=env, capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    return out.stdout.strip()


@needs_c
def test_the_environment_switch() -> None:
    unset, zero, off = (sketch_in_subprocess(v) for v in (None, "0", "1"))
    want = sketch(SAMPLE).to_bytes().hex()
    assert unset == zero == f"False {want}"
    assert off == f"True {want}"
