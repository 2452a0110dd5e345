from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from newscrawl.simhash import (
    FingerprintConfig,
    Fingerprinter,
    FingerprintResult,
    IdfFormatError,
    fingerprint,
    get_fingerprinter,
    hamming,
)

ARTICLE = (
    "新华社北京4月12日电 国家统计局今天发布数据，一季度国内生产总值同比增长百分之五点三，"
    "比上年四季度加快零点一个百分点。统计局新闻发言人表示，国民经济开局良好，工业生产稳定增长，"
    "消费市场持续恢复，固定资产投资规模扩大，就业形势总体稳定，居民收入继续增加。"
    "专家认为，随着一系列稳增长政策落地见效，经济回升向好的态势将进一步巩固。"
)
LONG_ARTICLE = ARTICLE + (
    "从行业看，高技术制造业增加值增长较快，新能源汽车、太阳能电池、服务机器人等产品产量保持两位数增长。"
    "从需求看，社会消费品零售总额稳步增加，服务零售额增速快于商品零售额，假日旅游和文化娱乐消费活跃。"
    "从区域看，东部地区经济总量继续领先，中西部地区增速较快，东北地区主要指标好于预期。"
    "与此同时，外部环境复杂性严峻性不确定性上升，部分企业经营仍面临困难，有效需求仍显不足。"
    "下一步，有关部门将加大宏观政策调控力度，着力扩大国内需求，推动经济实现质的有效提升和量的合理增长。"
)
ENGLISH = (
    "Apple unveiled the new iPhone at its Cupertino headquarters, analysts expect strong sales"
)


def test_fingerprint_is_64_bit_int() -> None:
    fp = fingerprint(ARTICLE)
    assert isinstance(fp, int) and 0 <= fp < 1 << 64
    assert fingerprint(ARTICLE) == fp
    assert get_fingerprinter().fingerprint(ARTICLE) == fp


def test_non_str_raises_type_error() -> None:
    for bad in (None, b"bytes", 12, ["a"]):
        with pytest.raises(TypeError):
            fingerprint(bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            get_fingerprinter().analyze(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "   \n\t\u3000 "])
def test_empty_reason(text: str) -> None:
    res = get_fingerprinter().analyze(text)
    assert res == FingerprintResult(None, "empty", 0, 0, False)
    assert fingerprint(text) is None


@pytest.mark.parametrize("text", ["，。！？——……", "123 456 2024", "12345", "x"])
def test_no_token_is_too_short_not_empty(text: str) -> None:
    # the text is not empty: it has too few tokens (none) for a fingerprint
    res = get_fingerprinter().analyze(text)
    assert res == FingerprintResult(None, "too_short", 0, 0, False)
    assert fingerprint(text) is None


def test_too_short_threshold_is_min_tokens() -> None:
    fp = get_fingerprinter()
    words = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
    ]
    assert fp.config.min_tokens == 10
    short = fp.analyze(" ".join(words[:9]))
    assert (short.value, short.reason, short.tokens) == (None, "too_short", 9)
    ok = fp.analyze(" ".join(words[:10]))
    assert ok.value is not None and ok.reason is None and ok.tokens == 10 and ok.features == 10


def test_long_text_work_is_capped() -> None:
    fp = get_fingerprinter()
    cap = fp.config.max_chars
    head = (ARTICLE * (cap // len(ARTICLE) + 1))[:cap]
    huge = head + "完全不同的尾部内容" * (10_000_000 // 9)  # > 10 MB of text after the cap
    res = fp.analyze(huge)
    assert res.truncated
    assert res.value == fp.fingerprint(head)
    assert not fp.analyze(head).truncated


def test_huge_text_bounded_memory_and_time_in_subprocess() -> None:
    # 10 MB of text in a child limited to 60 s CPU and +400 MB address space over its idle size.
    code = textwrap.dedent(
        """
        import resource, sys
        from newscrawl.simhash import fingerprint
        fingerprint("预热文本" * 10 + " warm up words here")
        text = ("国家统计局今天发布数据 economy grows " * 400_000)[:10_000_000]
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
        fp = fingerprint(text)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - usage
        print(fp is not None, grown)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out[0] == "True"
    assert int(out[1]) < 200_000  # KiB: well under the text's own size x 20


def test_same_fingerprint_under_different_hash_seeds() -> None:
    code = (
        "import json,sys; from newscrawl.simhash import fingerprint, get_fingerprinter;"
        "t=sys.stdin.read(); print(json.dumps([fingerprint(t), get_fingerprinter().version]))"
    )
    results = []
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run(
            [sys.executable, "-c", code],
            input=ARTICLE + ENGLISH,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        )
        results.append(json.loads(proc.stdout))
    assert results[0] == results[1]
    assert results[0][0] == fingerprint(ARTICLE + ENGLISH)


def test_mixed_chinese_english_words_are_casefolded_features() -> None:
    fp = get_fingerprinter()
    toks = fp.tokens("苹果公司发布 iPhone 新品，APPLE 股价上涨")
    assert "iphone" in toks and "apple" in toks
    assert "苹果公司" in toks and "股价" in toks
    mixed = ARTICLE + ENGLISH
    assert fp.fingerprint(mixed) == fp.fingerprint(ARTICLE + ENGLISH.upper())
    assert fp.fingerprint(mixed) != fp.fingerprint(ARTICLE)
    # English alone works too.
    assert fp.fingerprint(ENGLISH + " and more news today") is not None


def test_punctuation_whitespace_numbers_do_not_count() -> None:
    fp = get_fingerprinter()
    noisy = ARTICLE.replace("，", " ，，！！ 2024 ...  \n\n 12345 ").replace("。", "。。。 ——  ")
    assert fp.fingerprint(noisy) == fp.fingerprint(ARTICLE)
    toks = fp.tokens(noisy)
    assert not any(t.isdigit() or not t.strip() for t in toks)
    # A text that is mostly numbers and punctuation: only its few words count.
    assert fp.analyze("2024，12，31；" * 500 + "经济").reason == "too_short"


def test_full_width_equals_half_width() -> None:
    fp = get_fingerprinter()
    full = ARTICLE + "深圳地铁将设立ＶＩＰ头等车厢，２０１２年起试行（ＡＢＣ）"
    half = ARTICLE + "深圳地铁将设立VIP头等车厢,2012年起试行(ABC)"
    assert fp.fingerprint(full) == fp.fingerprint(half)
    assert "vip" in fp.tokens(full)


def test_small_edit_is_near_large_change_is_far() -> None:
    fp = get_fingerprinter()
    a = fp.fingerprint(LONG_ARTICLE)
    b = fp.fingerprint(LONG_ARTICLE + "（来源：新华网 责任编辑：王小明）")
    other = fp.fingerprint(
        "湖人队在主场以一百零五比九十八击败马刺队，科比全场砍下三十二分，加索尔贡献两双，"
        "球队锁定西部第一。赛后主教练表示球员们表现出色，但季后赛才是真正的考验，球队需要保持专注。"
    )
    assert a is not None and b is not None and other is not None
    assert hamming(a, b) <= 6
    assert hamming(a, other) > 10


# Regression guard only: these values were computed by the fingerprinter before its weighting
# variants moved to benchmarks/fingerprint_variants.py; the default fingerprints (and the version,
# part of every index's version) must stay exactly these, or existing indexes stop matching.
PINNED_VERSION = "nc2/rjieba-0.2.2+hmm/t1.raw1000p3.l150.s30.c1.x100000.m10/blake2b64/idf-501b70ec"
PINNED = {
    "article": (ARTICLE, 0xF89E88F344C30A98, 61, 62),
    "long": (LONG_ARTICLE, 0xA286B9F214078A03, 135, 161),  # past the plateau
    "mixed": (LONG_ARTICLE * 4 + ENGLISH, 0xA286B9F204078A03, 148, 657),
    "dominant": ((ARTICLE + "统计局") * 30, 0xC51CEB7C544A8AAC, 61, 1890),  # share cap
    "english": (ENGLISH * 2, 0xD58932089FDB900D, 14, 25),
    "max_tf": (LONG_ARTICLE + "的" * 90_000, 0x9CC7BAD0898AA465, 135, 90161),  # count > max_tf
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_default_fingerprints_and_version_are_pinned(name: str) -> None:
    text, value, features, tokens = PINNED[name]
    fp = get_fingerprinter()
    assert fp.version == PINNED_VERSION
    result = fp.analyze(text)
    assert (result.value, result.features, result.tokens) == (value, features, tokens)


def test_version_changes_with_parameters() -> None:
    base = Fingerprinter(FingerprintConfig())
    assert base.version == get_fingerprinter().version
    seen = {base.version}
    for change in ({"max_tf": 10}, {"plateau": 100}, {"max_share": 20}, {"min_tokens": 5}):
        v = Fingerprinter(FingerprintConfig().replace(**change)).version
        assert v not in seen
        seen.add(v)


def test_user_idf_file(tmp_path: Path) -> None:
    idf = tmp_path / "idf.txt"
    idf.write_text("统计局 1.0\n经济 1.0\n增长 20.0\n", encoding="utf-8")
    user = get_fingerprinter(idf_file=str(idf))
    default = get_fingerprinter()
    assert user.version != default.version
    w = user.weights(ARTICLE)
    assert w["增长"] > w["经济"]  # the user's table counts
    idf.write_text("统计局 1.0\n经济 1.0\n增长 20.5\n", encoding="utf-8")
    assert Fingerprinter(FingerprintConfig(idf_file=str(idf))).version != user.version


def test_bad_idf_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("经济 1.0\n这一行没有数字\n", encoding="utf-8")
    with pytest.raises(IdfFormatError, match=r"bad.txt:2"):
        Fingerprinter(FingerprintConfig(idf_file=str(bad)))
    with pytest.raises(FileNotFoundError):
        Fingerprinter(FingerprintConfig(idf_file=str(tmp_path / "missing.txt")))


@pytest.mark.parametrize("repeat", [1, 3, 40_000])
def test_fast_vote_equals_reference_vote_on_the_weights(repeat: int) -> None:
    # The fingerprint is exactly simhash_from_features over (feature_hash(feature), weight);
    # repeat=40_000 makes counts so large that the weights get shifted into the lanes.
    from newscrawl.simhash import feature_hash, simhash_from_features

    fp = get_fingerprinter()
    text = (LONG_ARTICLE + ENGLISH) * repeat
    weights = fp.weights(text)
    assert all(isinstance(w, int) and w >= 0 for w in weights.values())
    # the vote shifts every weight right by the same bits when the total reaches 2**22
    shift = max(0, sum(weights.values()).bit_length() - 22)
    expected = simhash_from_features(
        (feature_hash(f), float(w >> shift)) for f, w in weights.items()
    )
    assert fp.fingerprint(text) == expected


def test_default_weights_are_cubed_tfidf_in_the_lead() -> None:
    fp = get_fingerprinter()
    assert (fp.config.plateau, fp.config.max_share) == (150, 30)
    toks = fp.tokens(ARTICLE)
    assert len(toks) < 150  # all of ARTICLE is in the plateau: plain counts
    w = fp.weights(ARTICLE)
    n = toks.count("统计局")
    idf = round(float(_jieba_idf("统计局")) * 1000)
    assert w["统计局"] == (n * idf) ** 3


def test_tokens_after_the_plateau_count_less() -> None:
    fp = Fingerprinter(FingerprintConfig(plateau=20, max_share=0))
    toks = fp.tokens(LONG_ARTICLE)
    assert len(toks) > 60
    idf = fp._idf.get  # noqa: SLF001 - the IDF as the fingerprinter quantises it
    w = fp.weights(LONG_ARTICLE)
    for tok in set(toks):
        expected = sum(
            1000 if i < 20 else 1000 * 20 // (i + 1) for i, t in enumerate(toks) if t == tok
        )
        assert w[tok] == (idf(tok) * expected // 1000) ** 3, tok
    # the same token is worth more in the lead than at the end
    lead = toks[0]
    tail = next(t for t in reversed(toks) if toks.count(t) == 1)
    assert toks.count(lead) == 1 and toks.index(tail) > 50
    assert w[lead] / idf(lead) ** 3 > 10 * (w[tail] / idf(tail) ** 3)


def test_tokens_are_in_text_order_with_words_in_their_place() -> None:
    fp = get_fingerprinter()
    text = "苹果公司发布 iPhone 新品，APPLE 股价上涨 Q3 2024年 vision pro 上市"
    toks = fp.tokens(text)
    assert toks.index("iphone") < toks.index("apple") < toks.index("股价") < toks.index("vision")
    assert toks.index("新品") < toks.index("apple") and toks[-1] == "上市"
    assert toks[0] == "苹果公司" or toks[0] == "苹果"
    # same tokens as the one-run-at-a-time reference path
    from newscrawl.simhash.text import split_runs

    ref: list[str] = []
    for is_cjk, run in split_runs(text):
        ref.extend(fp._segmenter.cut(run) if is_cjk else [run])  # noqa: SLF001
    assert toks == ref
    assert fp.tokens("  iPhone 苹果 ") == ["iphone", "苹果"]


def test_share_cap_is_exact_and_maximal() -> None:
    import random

    from newscrawl.simhash.fingerprinter import share_cap

    rng = random.Random(5)
    for _ in range(500):
        ws = [rng.randint(0, 10 ** rng.randint(1, 12)) for _ in range(rng.randint(4, 30))]
        pct = rng.choice([10, 25, 30, 50])
        cap = share_cap(ws, pct)
        if cap is None:
            assert max(ws) * 100 <= pct * sum(ws)
            continue
        capped = [min(w, cap) for w in ws]
        if len(ws) * pct > 100:  # reachable share
            assert max(capped) * 100 <= pct * sum(capped)
            bigger = [min(w, cap + 1) for w in ws]
            assert max(bigger) * 100 > pct * sum(bigger)  # the largest cap that works
    assert share_cap([5, 5, 5], 30) == 5  # unreachable share: the features vote alike
    assert share_cap([7], 30) == 7
    assert share_cap([9, 1, 1, 1, 1], 0) is None


def test_one_dominant_word_does_not_decide_every_bit() -> None:
    # Articles sharing one connector in 40% of their sentences: without the share cap, cubed
    # weights let that word alone decide the signature, so unrelated articles collide.
    import random

    rng = random.Random(3)
    words = [w for w in LONG_ARTICLE.replace("，", "。").split("。") if w]
    nouns = [
        "钢铁",
        "桥梁",
        "稻米",
        "航班",
        "港口",
        "芯片",
        "疫苗",
        "电网",
        "森林",
        "邮轮",
        "棉花",
        "地铁",
        "海关",
        "电池",
        "油田",
        "牧场",
        "高铁",
        "卫星",
        "渔业",
        "茶叶",
    ]
    texts = []
    for k in range(12):
        sents = []
        for j in range(20):
            base = rng.choice(words)
            topic = nouns[(k * 7 + j) % len(nouns)] + nouns[(k * 3 + j * 5) % len(nouns)]
            sents.append(("踔厉奋发" if j % 5 < 2 else "") + topic + base)
        texts.append("。".join(sents) + "。")
    capped = get_fingerprinter()
    uncapped = Fingerprinter(FingerprintConfig(max_share=0))
    w = capped.weights(texts[0])
    assert max(w.values()) / sum(w.values()) <= 0.30 + 1e-9  # (+ the shift's rounding)

    def close_pairs(fp: Fingerprinter) -> int:
        vals = [fp.fingerprint(t) for t in texts]
        assert all(v is not None for v in vals)
        return sum(
            hamming(a, b) <= 3  # type: ignore[arg-type]
            for i, a in enumerate(vals)
            for b in vals[i + 1 :]
        )

    # the articles also share sentences of LONG_ARTICLE, so a few close pairs are fair
    assert close_pairs(uncapped) >= 50  # of 66: the connector decides the signature
    assert close_pairs(capped) <= 10


def _jieba_idf(word: str) -> str:
    from newscrawl.simhash.idf import default_idf_path

    for line in default_idf_path().read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if parts and parts[0] == word:
            return parts[1]
    raise AssertionError(f"{word} not in jieba's IDF table")


def test_idf_file_comments_blank_lines_and_median(tmp_path: Path) -> None:
    from newscrawl.simhash.idf import load_idf

    idf = tmp_path / "idf.txt"
    idf.write_text("# my table\n\nc# 5.0\n经济 1.0\n增长 3.0\n", encoding="utf-8")
    table = load_idf(idf)
    assert table.get("c#") == 5000 and table.get("经济") == 1000
    assert table.get("没有这个词") == table.median == 3000
    idf.write_text("经济 1.0 2.0\n", encoding="utf-8")
    with pytest.raises(IdfFormatError, match="idf.txt:1: expected 'word idf'"):
        load_idf(idf)
    idf.write_text("经济 -1\n", encoding="utf-8")
    with pytest.raises(IdfFormatError, match="out of range"):
        load_idf(idf)


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize(
    ("content", "error"),
    [
        # field counts add up (4 fields, 2 lines) but line 1 has three and line 2 one
        ("经济 1.0 增长\n2.0\n", "idf.txt:1: expected 'word idf'"),
        # NaN anywhere (a min/max range check misses it unless it comes first)
        ("经济 5.0\n中国 nan\n发展 3.0\n", "idf.txt:2: idf 'nan' out of range"),
        ("经济 5.0\n中国 inf\n", "idf.txt:2: idf 'inf' out of range"),
        # a comment line with two fields is a comment, not the word "#"
        ("经济 5.0\n# note\n中国 x\n", "idf.txt:3: idf 'x' is not a number"),
    ],
)
def test_idf_file_without_blank_lines_is_checked_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, error: str, cache: bool
) -> None:
    from newscrawl.simhash.idf import load_idf

    monkeypatch.setenv("NEWSCRAWL_CACHE_DIR", str(tmp_path / "cache") if cache else "")
    idf = tmp_path / "idf.txt"
    idf.write_text(content, encoding="utf-8")
    with pytest.raises(IdfFormatError, match=error):
        load_idf(idf)


def test_known_idf_table_shortcut_equals_the_careful_parse() -> None:
    # load_idf skips number parsing for a table whose bytes it has validated before; the entries
    # and the median must be exactly what the careful line-by-line parse gives.
    from newscrawl.simhash.idf import _KNOWN_MEDIANS, _parse_lines, default_idf_path, load_idf

    path = default_idf_path()
    table = load_idf(path, cache_dir=None)
    data = path.read_bytes()
    import hashlib

    assert hashlib.sha256(data).hexdigest() in _KNOWN_MEDIANS
    careful = _parse_lines(path, data.decode("utf-8"))
    values = sorted(float(v) for v in careful.values())
    assert table.median == round(values[len(values) // 2] * 1000)
    assert table.items() == sorted((w, round(float(v) * 1000)) for w, v in careful.items())


def test_idf_cache_file_gives_the_same_table(tmp_path: Path) -> None:
    # The parsed table is kept in a cache file named by the source's SHA-256; a second load reads
    # it (an open-addressing table of word hashes) and gives every word exactly the parsed value,
    # unknown words the median, and the same digest.
    from newscrawl.simhash.idf import default_idf_path, load_idf, word_hash

    path = default_idf_path()
    parsed = load_idf(path, cache_dir=None)
    first = load_idf(path, cache_dir=tmp_path)  # parses, writes the cache, gives its table
    (cache,) = tmp_path.glob("idf-*.bin")
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    assert cache.name == f"idf-{sha}.v5.bin"
    cached = load_idf(path, cache_dir=tmp_path)
    items = parsed.items()
    assert [(w, first.get(w)) for w, _ in items] == items
    assert len(cached) == len(parsed) == len(items) > 200_000
    assert [(w, cached.get(w)) for w, _ in items] == items
    assert [cached.get_hashed(w, word_hash(w)) for w, _ in items[:1000]] == [
        v for _, v in items[:1000]
    ]
    assert (cached.median, cached.digest) == (parsed.median, parsed.digest)
    for word in ("统计局", "的", "没有这个词", "", "\uffff", "a", "经济增长率之谜"):
        assert cached.get(word) == parsed.get(word)
    with pytest.raises(TypeError):
        cached.items()  # a hashed table keeps no words
    # a cache file of another format version (an older newscrawl sharing the directory) is
    # neither read nor rewritten
    other = tmp_path / f"idf-{sha}.bin"
    other.write_bytes(b"NCIDF3\0\0 another version's file")
    assert load_idf(path, cache_dir=tmp_path).get("统计局") == parsed.get("统计局")
    assert other.read_bytes() == b"NCIDF3\0\0 another version's file"
    other.unlink()
    # a user table gets its own cache file; a changed file another one
    user = tmp_path / "idf.txt"
    user.write_text("经济 1.0\n增长 3.0\n", encoding="utf-8")
    assert load_idf(user, cache_dir=tmp_path).get("增长") == 3000
    assert load_idf(user, cache_dir=tmp_path).get("增长") == 3000  # from its cache
    user.write_text("经济 1.0\n增长 4.0\n", encoding="utf-8")
    assert load_idf(user, cache_dir=tmp_path).get("增长") == 4000
    assert len(list(tmp_path.glob("idf-*.bin"))) == 3


def test_idf_cache_broken_or_unwritable_falls_back_to_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from newscrawl.simhash.idf import load_idf

    user = tmp_path / "idf.txt"
    user.write_text("经济 1.0\n增长 3.0\n发展 2.0\n", encoding="utf-8")
    cdir = tmp_path / "cache"
    load_idf(user, cache_dir=cdir)
    (cache,) = cdir.glob("idf-*.bin")
    good = cache.read_bytes()
    (n,) = struct.unpack_from("<I", good, 8)
    (median,) = struct.unpack_from("<I", good, 12)
    header_edits = (  # the header is under the CRC too
        good[:8] + struct.pack("<I", n + 1) + good[12:],
        good[:12] + struct.pack("<I", median + 1000) + good[16:],
    )
    for broken in (b"", b"garbage", good[:-3], good[:20], b"X" + good[1:], *header_edits):
        cache.write_bytes(broken)
        table = load_idf(user, cache_dir=cdir)
        got = [(w, table.get(w)) for w in ("发展", "经济", "增长", "其他")]
        assert got == [("发展", 2000), ("经济", 1000), ("增长", 3000), ("其他", 2000)]
        assert table.median == 2000
        assert cache.read_bytes() == good  # rewritten whole
    # a cache "directory" that is a file: no cache, same table
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    assert load_idf(user, cache_dir=blocker / "sub").get("发展") == 2000
    # the environment variable; empty = no cache
    monkeypatch.setenv("NEWSCRAWL_CACHE_DIR", str(tmp_path / "env"))
    load_idf(user)
    assert list((tmp_path / "env").glob("idf-*.bin"))
    monkeypatch.setenv("NEWSCRAWL_CACHE_DIR", "")
    before = set(tmp_path.rglob("*"))
    load_idf(user)
    assert set(tmp_path.rglob("*")) == before


def _reference_fingerprint(fp: Fingerprinter, text: str) -> int | None:
    """The documented default weighting, one token at a time (slow, obviously right)."""
    from newscrawl.simhash import feature_hash, simhash_from_features
    from newscrawl.simhash.fingerprinter import share_cap

    c = fp.config
    toks = fp.tokens(text)
    if len(toks) < c.min_tokens:
        return None
    counts: dict[str, int] = {}
    for i, t in enumerate(toks):
        weight = 1000 if not c.plateau or i < c.plateau else 1000 * c.plateau // (i + 1)
        counts[t] = counts.get(t, 0) + weight
    idf = fp._idf.get  # noqa: SLF001 - the IDF as the fingerprinter quantises it
    w = {t: (idf(t) * min(n, 1000 * c.max_tf) // 1000) ** 3 for t, n in counts.items()}
    cap = share_cap(list(w.values()), c.max_share)
    if cap is not None:
        w = {t: min(x, cap) for t, x in w.items()}
    shift = max(0, sum(w.values()).bit_length() - 22)  # total weight < 2**22
    return simhash_from_features((feature_hash(t), float(x >> shift)) for t, x in w.items())


def test_fast_path_equals_the_per_token_reference() -> None:
    # Texts in the plateau, past it, with English words between CJK runs, with a dominant word
    # (share cap) and long enough to need the shift; default and other parameters.
    import random

    rng = random.Random(3)
    sentences = [s + "。" for s in LONG_ARTICLE.split("。") if s]
    texts = [ARTICLE, LONG_ARTICLE, LONG_ARTICLE * 4 + ENGLISH, (ARTICLE + "统计局") * 30]
    for _ in range(20):
        picked = rng.choices(sentences, k=rng.randint(2, 40))
        texts.append(" Apple iPhone ".join(picked) if rng.random() < 0.5 else "".join(picked))
    configs = [
        FingerprintConfig(),
        FingerprintConfig(plateau=0, max_share=0),
        FingerprintConfig(plateau=7, max_share=10, max_tf=2),
    ]
    for config in configs:
        fp = Fingerprinter(config)
        for text in texts:
            assert fp.fingerprint(text) == _reference_fingerprint(fp, text)


def test_token_cache_size_does_not_change_fingerprints() -> None:
    # A cache of 2 tokens per generation evicts and promotes all the time; same fingerprints.
    texts = [ARTICLE, LONG_ARTICLE, ENGLISH * 3, ARTICLE + ENGLISH, LONG_ARTICLE[::-1]] * 2
    expected = [Fingerprinter().fingerprint(t) for t in texts]
    tiny = Fingerprinter()
    tiny.CACHE_LIMIT = 2
    assert [tiny.fingerprint(t) for t in texts] == expected
    assert len(tiny._cache) <= 2 and len(tiny._old_cache) <= 2  # noqa: SLF001


def test_tokens_equal_the_run_by_run_reference_on_random_mixed_text() -> None:
    # Digits of several scripts (ASCII, full-width, Arabic-Indic, superscript), letters, the
    # ligature U+FB01 (NFKC makes it two letters), CJK, punctuation and spaces, in random order:
    # the one-call tokenizer (with its "no letter, no kept word" shortcut) equals split_runs.
    import random

    from newscrawl.simhash.text import split_runs

    fp = get_fingerprinter()
    alphabet = list("0123456789０１２٣²½ⅫabcXYZＡＢ\ufb01_-，。 、\n")
    alphabet += list("新闻统计局发布数据上涨")
    rng = random.Random(9)
    for _ in range(300):
        text = "".join(rng.choices(alphabet, k=rng.randint(0, 60)))
        ref: list[str] = []
        for is_cjk, run in split_runs(text):
            ref.extend(fp._segmenter.cut(run) if is_cjk else [run])  # noqa: SLF001
        assert fp.tokens(text) == ref, text


def test_idf_cache_not_written_when_word_hashes_collide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cache is an open-addressing table keyed by 64-bit word hashes; if two words of a table
    # ever had the same hash it could not tell them apart, so no cache is written and the parsed
    # table is used (here forced with a hash that collides for every word).
    from newscrawl.simhash import idf

    user = tmp_path / "idf.txt"
    user.write_text("经济 1.0\n增长 3.0\n发展 2.0\n", encoding="utf-8")
    monkeypatch.setattr(idf, "word_hash", lambda word: 7)
    table = idf.load_idf(user, cache_dir=tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("idf-*.bin"))
    assert [table.get(w) for w in ("经济", "增长", "发展", "其他")] == [1000, 3000, 2000, 2000]


def test_idf_cache_with_a_valid_crc_but_impossible_table_neither_crashes_nor_hangs(
    tmp_path: Path,
) -> None:
    # Files no writer of ours produces, but whose CRC is right: too few slots (parsed again), or
    # every slot taken (lookups of unknown words still end, with the median).
    import zlib

    from newscrawl.simhash import idf

    user = tmp_path / "idf.txt"
    user.write_text("经济 1.0\n增长 3.0\n发展 2.0\n", encoding="utf-8")
    cdir = tmp_path / "cache"
    idf.load_idf(user, cache_dir=cdir)
    (cache,) = cdir.glob("idf-*.bin")

    def craft(n: int, slots: int, keys: list[int]) -> None:
        body = struct.pack(f"<{slots}Q", *keys) + struct.pack(f"<{slots}H", *([1000] * slots))
        header = idf._CACHE_HEADER.pack(idf._CACHE_MAGIC, n, 2000, 2, slots)
        crc = idf._CACHE_CRC.pack(zlib.crc32(body, zlib.crc32(header)))
        cache.write_bytes(header + crc + body)

    craft(0, 0, [])
    assert idf.load_idf(user, cache_dir=cdir).get("增长") == 3000  # rejected: parsed again
    craft(0, 16, list(range(1, 17)))  # full: no empty slot to end a probe
    table = idf.load_idf(user, cache_dir=cdir)
    assert table.get("没有这个词") == 2000
    assert table.get_hashed("x", 5) == 1000


def test_idf_source_digest_is_remembered_only_for_a_settled_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process finds the cache of an unchanged source without hashing it again: the source's
    # SHA-256 is remembered with its stat, and trusted only while the stat is the same. A file
    # changed less than _SETTLED_NS before it was hashed is not remembered.
    from newscrawl.simhash import idf

    user = tmp_path / "idf.txt"
    user.write_text("经济 1.0\n增长 3.0\n", encoding="utf-8")
    cdir = tmp_path / "cache"
    assert idf.load_idf(user, cache_dir=cdir).get("增长") == 3000
    assert not list(cdir.glob("idf-source-*"))  # just written: not settled
    monkeypatch.setattr(idf, "_SETTLED_NS", 0)
    assert idf.load_idf(user, cache_dir=cdir).get("增长") == 3000
    (memo,) = cdir.glob("idf-source-*.txt")
    sha = hashlib.sha256(user.read_bytes()).hexdigest()
    assert memo.read_text(encoding="utf-8").endswith("\0" + sha)
    # the memo is what names the cache file: pointed at another table's cache, it is trusted
    other = tmp_path / "other.txt"
    other.write_text("经济 1.0\n增长 5.0\n", encoding="utf-8")
    idf.load_idf(other, cache_dir=cdir)
    other_sha = hashlib.sha256(other.read_bytes()).hexdigest()
    stamp = memo.read_text(encoding="utf-8").rsplit("\0", 1)[0]
    memo.write_text(f"{stamp}\0{other_sha}", encoding="utf-8")
    assert idf.load_idf(user, cache_dir=cdir).get("增长") == 5000
    # any change of the source (its stat) makes the memo stale: hashed and read again
    user.write_text("经济 1.0\n增长 4.0\n增加 2.0\n", encoding="utf-8")
    assert idf.load_idf(user, cache_dir=cdir).get("增长") == 4000
    assert memo.read_text(encoding="utf-8").endswith(
        "\0" + hashlib.sha256(user.read_bytes()).hexdigest()
    )
    memo.write_text("garbage", encoding="utf-8")
    assert idf.load_idf(user, cache_dir=cdir).get("增长") == 4000
