"""The C speedups of the fingerprint path give the Python code's results, bit for bit.

The Python code (``NEWSCRAWL_PURE_PYTHON=1``) is the definition. The extension is optional at
install, but on a machine with a C compiler it must have been built (a failed build is a bug).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from newscrawl.simhash import core
from newscrawl.simhash.fingerprinter import FingerprintConfig, Fingerprinter
from newscrawl.simhash.text import cjk_text_and_gap_words

try:
    from newscrawl.simhash import _cfingerprint as cfp
except ImportError:
    cfp = None

needs_c = pytest.mark.skipif(cfp is None, reason="the C speedups are not built")

WORDS = "经济 增长 统计局 国家 发布 数据 新闻 记者 北京 上海 的 了".split()
PIECES = WORDS + ["GDP", "Reuters", "２０２４", "12.5%", "ｆｕｌｌ", " ", "\n", "，", "。", "é"]


@pytest.mark.parametrize(("name", "functions"), [
    ("_cfingerprint", ("fingerprint", "blake2b64", "cjk_text_and_gap_words")),
    ("_csketch", ("dense_minima", "kept", "number_pairs")),
])  # fmt: skip
def test_built_where_a_compiler_is(name: str, functions: tuple[str, ...]) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    try:
        module = importlib.import_module(f"newscrawl.simhash.{name}")
    except ImportError:
        assert compiler is None, f"{compiler} is here, yet {name} is not built: pip's log"
    else:
        assert all(callable(getattr(module, f)) for f in functions)


@pytest.fixture(autouse=True)
def _speedups_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(core.PURE_PYTHON_ENV, raising=False)


def pair(config: FingerprintConfig | None = None) -> tuple[Fingerprinter, Fingerprinter]:
    fast, slow = Fingerprinter(config), Fingerprinter(config)
    slow._fast, slow._split = None, cjk_text_and_gap_words  # what NEWSCRAWL_PURE_PYTHON gives
    assert fast._fast is not None  # the default (hashed) IDF table takes the C path
    return fast, slow


@needs_c
@given(st.binary(max_size=400))
def test_blake2b64_is_hashlib_blake2b_8(data: bytes) -> None:
    want = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")
    assert cfp.blake2b64(data) == want


@needs_c
@pytest.mark.parametrize("n", [0, 1, 127, 128, 129, 255, 256, 257, 1000])
def test_blake2b64_block_edges(n: int) -> None:
    data = bytes(range(256)) * 4
    want = int.from_bytes(hashlib.blake2b(data[:n], digest_size=8).digest(), "big")
    assert cfp.blake2b64(data[:n]) == want


texts = st.lists(st.sampled_from(PIECES), min_size=0, max_size=600).map("".join)


@needs_c
@settings(max_examples=200, deadline=None)
@given(texts)
def test_same_fingerprints_as_python(text: str) -> None:
    fast, slow = pair()
    assert fast.analyze(text) == slow.analyze(text)


@needs_c
@pytest.mark.parametrize(
    "change",
    [{}, {"plateau": 0}, {"plateau": 3}, {"max_share": 0}, {"max_share": 100}, {"max_share": 5},
     {"max_tf": 1}, {"max_tf": 2}, {"min_tokens": 1}],
)  # fmt: skip
def test_same_fingerprints_in_every_configuration(change: dict[str, int]) -> None:
    fast, slow = pair(FingerprintConfig().replace(**change))
    for k in range(60):
        text = "".join(WORDS[(k * 7 + i * i) % len(WORDS)] * (1 + i % 4) for i in range(k * 9))
        text += " Reuters GDP" * (k % 3) + "短"
        assert fast.analyze(text) == slow.analyze(text), (change, k)


@needs_c
def test_weights_too_large_for_the_c_sums_take_the_python_code(tmp_path: Path) -> None:
    idf = tmp_path / "idf.txt"
    idf.write_text("经济 999999\n增长 1.0\n", encoding="utf-8")
    config = FingerprintConfig(idf_file=str(idf))
    fast, slow = pair(config)
    text = "经济" * 400 + "增长国家发布数据新闻记者北京上海" * 3
    toks = fast._tokens(text)
    assert fast._fast(toks) is None  # the C code declines ...
    assert fast.analyze(text) == slow.analyze(text)  # ... and the result is the same
    assert fast.analyze(text).value is not None


@needs_c
def test_pure_python_environment_variable() -> None:
    code = "from newscrawl.simhash import get_fingerprinter as g; print(g()._fast is None)"
    for value, want in (("1", "True"), ("0", "False"), ("", "False")):
        env = dict(os.environ, **{core.PURE_PYTHON_ENV: value})
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()  # fmt: skip
        assert out == want, value


@needs_c
def test_bad_arguments_are_errors_not_crashes() -> None:
    fast, _ = pair()
    with pytest.raises(TypeError):
        fast._fast(["经济", 3])
    with pytest.raises(TypeError):
        fast._fast(("经济",))
    keys, values, mask, median = fast._idf_arrays
    with pytest.raises(ValueError):
        cfp.fingerprint(keys, values, mask + 1, median, 150, 10**6, 30, 22, {}, ["经济"])


SPLIT_ALPHABET = st.sampled_from(
    list("经济增长的了〇㐀䶵一龥") + list("abcXYZ_019") + list("０９ＡＺａ²½Ⅻİßﬁ")
    + list(" \n\t，。.-") + ["\u0301", "😀", "\U00020000", "١", "٣"]
)  # fmt: skip


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.lists(SPLIT_ALPHABET, max_size=80).map("".join))
def test_same_cjk_runs_and_gap_words_as_python(text: str) -> None:
    assert cfp.cjk_text_and_gap_words(text) == cjk_text_and_gap_words(text)


def _stand_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, api: int, source_age: int) -> None:
    """A build of ``_csketch`` in ``tmp_path`` with interface ``api``, its ``.c`` source
    ``source_age`` seconds older than it (negative: newer, as after a ``git pull``)."""
    built, source = tmp_path / "_csketch.cpython-311-x86_64-linux-gnu.so", tmp_path / "_csketch.c"
    built.write_bytes(b"")
    source.write_text("/* */")
    now = built.stat().st_mtime
    os.utime(source, (now - source_age, now - source_age))
    module = types.ModuleType("newscrawl.simhash._csketch")
    module.__file__ = str(built)
    module.API = api  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "newscrawl.simhash._csketch", module)
    monkeypatch.setattr(core, "_warned", set())


@pytest.mark.parametrize(("api", "source_age"), [(core.SPEEDUPS_API + 1, 60), (None, 60),
                                                 (core.SPEEDUPS_API, -60)])  # fmt: skip
def test_speedups_built_from_other_sources_are_not_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture,
    api: int, source_age: int,
) -> None:
    _stand_in(monkeypatch, tmp_path, api, source_age)
    with caplog.at_level(logging.WARNING, logger="newscrawl.simhash.core"):
        assert core.load_speedups("_csketch") is None
        assert core.load_speedups("_csketch") is None
    assert caplog.text.count("were built from other sources") == 1  # once, with what to do
    assert "pip install -e ." in caplog.text
    assert "out of date" in core.speedups_status()


def test_speedups_of_this_source_are_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _stand_in(monkeypatch, tmp_path, core.SPEEDUPS_API, 60)
    assert core.load_speedups("_csketch") is sys.modules["newscrawl.simhash._csketch"]


@needs_c
def test_speedups_status_says_which_code_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    assert core.speedups_status() == "C speedups"
    for value in ("1", "yes", "TRUE", "on"):
        monkeypatch.setenv(core.PURE_PYTHON_ENV, value)
        assert core.speedups_status() == "Python code (NEWSCRAWL_PURE_PYTHON is set)"
    for value in ("0", "no", "false", "off", ""):
        monkeypatch.setenv(core.PURE_PYTHON_ENV, value)
        assert core.speedups_status() == "C speedups"
