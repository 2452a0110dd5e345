"""The near-duplicate decision on small built-in texts, through the index on a real Redis:
daily template reports (same wording, other numbers) and different articles on one topic are
kept, reprints (source line, footer, cut, dropped sentence) are dropped; and the text sketch's
own rules (newscrawl.simhash.sketch)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from newscrawl.index import IncompatibleIndexError, SimhashIndex
from newscrawl.index.simhash_index import field_of
from newscrawl.simhash import get_decision
from newscrawl.simhash.sketch import (
    DEFAULT_THRESHOLDS,
    SKETCH_BYTES,
    TextSketch,
    Thresholds,
    confirms,
    normalize,
    number_chance,
    number_containment,
    numbers_of,
    sketch,
    text_chance,
    text_containment,
)

FX = (
    "{m}月{d}日人民币汇率中间价公布\n中国外汇交易中心{m}月{d}日公布，人民币对美元汇率中间价报"
    "{usd}，较前一交易日{dir}{bp}个基点；人民币对欧元汇率中间价报{eur}，对日元报{jpy}（100日元），"
    "对港元报{hkd}，对英镑报{gbp}。市场人士表示，近期美元指数{trend}，人民币汇率在合理均衡水平上"
    "保持基本稳定，双向波动特征明显，企业和居民应树立汇率风险中性理念。"
)
WEATHER = (
    "本市天气预报（{m}月{d}日）\n今天白天{sky}，最高气温{hi}℃，夜间多云，最低气温{lo}℃，偏北风"
    "{w}级。明天{sky2}，气温{lo2}至{hi2}℃。气象台提醒，近期早晚温差较大，市民出行注意增减衣物，"
    "老人和儿童注意防寒保暖，驾车出行注意交通安全。"
)
MARKET = (
    "{m}月{d}日收盘：沪指{dir}{pct}%\n今日A股三大指数{dir2}，截至收盘，上证指数报{idx}点，深证成指报"
    "{sz}点，创业板指报{cy}点。两市成交额{vol}亿元，北向资金净{flow}{amt}亿元。板块方面，"
    "半导体板块领涨，地产板块跌幅居前，个股涨多跌少，赚钱效应一般。"
)
ARTICLE_A = (
    "私募基金年内备案规模创新高\n中国证券投资基金业协会最新数据显示，今年以来私募证券投资基金备案"
    "数量和规模均明显增长。业内人士分析认为，随着资本市场改革深化，居民财富加速向权益类资产配置，"
    "头部私募机构凭借稳定的业绩和完善的风控体系吸引了大量资金。与此同时，监管部门持续加强对私募"
    "行业的规范管理，清理不合规机构，行业集中度进一步提升。专家建议投资者选择私募产品时，重点关注"
    "管理人的投资能力、合规记录和产品风险收益特征，不要盲目追求短期高收益。"
)
ARTICLE_B = (
    "私募基金行业迎来新规\n监管部门近日发布私募投资基金监督管理办法征求意见稿，对私募基金管理人的"
    "登记条件、资金募集、投资运作和信息披露等作出细化规定。办法明确，私募基金不得向不合格投资者"
    "募集资金，不得承诺保本保收益，管理人应当建立健全内部控制制度。分析人士指出，新规有利于压实"
    "管理人责任，促进私募基金行业规范健康发展，保护投资者合法权益，长期看将推动行业优胜劣汰。"
)


def _fx(day: int, up: bool, usd: str, bp: int) -> str:
    return FX.format(m=5, d=day, usd=usd, dir="上调" if up else "下调", bp=bp,
                     eur=f"7.{day}12", jpy=f"4.{day}55", hkd=f"0.8{day}21", gbp=f"8.{day}07",
                     trend="走弱" if up else "走强")


def _weather(day: int, hi: int, lo: int) -> str:
    return WEATHER.format(m=10, d=day, sky="晴", hi=hi, lo=lo, w=3, sky2="多云",
                          lo2=lo + 1, hi2=hi - 1)


def _market(day: int, pct: str, idx: str) -> str:
    return MARKET.format(m=6, d=day, dir="涨", pct=pct, dir2="集体上涨", idx=idx,
                         sz=f"1{day}234.56", cy=f"2{day}45.67", vol=8000 + day, flow="买入",
                         amt=f"{day}.35")


def _decide(index: SimhashIndex, text: str, doc: str) -> str | None:
    analysis = get_decision().analyze(text)
    assert analysis.fingerprint is not None and analysis.sketch is not None
    match = index.check_and_add(analysis.fingerprint, doc, analysis.sketch)
    return None if match is None else match.doc_id


def _index(r: redis.Redis) -> SimhashIndex:
    return SimhashIndex(r, version=get_decision().version)


def test_daily_template_reports_are_all_kept(r: redis.Redis) -> None:
    index = _index(r)
    reports = [
        _fx(11, True, "6.4512", 35), _fx(12, False, "6.4498", 14), _fx(13, True, "6.4561", 63),
        _weather(3, 24, 12), _weather(4, 22, 11), _weather(5, 25, 13),
        _market(7, "0.52", "3215.68"), _market(8, "0.31", "3225.64"),
    ]
    for n, text in enumerate(reports):
        assert _decide(index, text, f"report-{n}") is None, f"report {n} dropped"
    # the simhash alone would have dropped some of them (digits carry no weight in it)
    fps = [get_decision().analyze(t).fingerprint for t in reports]
    assert min((a ^ b).bit_count() for a, b in zip(fps[:3], fps[1:3], strict=False)) <= 3  # type: ignore[operator]


def test_articles_on_one_topic_are_kept(r: redis.Redis) -> None:
    index = _index(r)
    assert _decide(index, ARTICLE_A, "a") is None
    assert _decide(index, ARTICLE_B, "b") is None


def test_reprints_are_dropped(r: redis.Redis) -> None:
    index = _index(r)
    original = _fx(11, True, "6.4512", 35)
    assert _decide(index, ARTICLE_A, "https://a.example/1") is None
    assert _decide(index, original, "https://fx.example/1") is None
    reprints = {
        "source": "来源：新华网 作者：王小明 责任编辑：李华\n" + ARTICLE_A,
        "footer": ARTICLE_A + "\n（本文来自澎湃新闻，转载请注明出处。文中观点仅代表作者本人。）",
        "cut": ARTICLE_A[: int(len(ARTICLE_A) * 0.85)],
        "dropped": ARTICLE_A.replace(
            "与此同时，监管部门持续加强对私募行业的规范管理，清理不合规机构，"
            "行业集中度进一步提升。",
            "",
        ),
        "width": ARTICLE_A.replace("，", ",").replace("。", "."),
    }
    for kind, text in reprints.items():
        assert _decide(index, text, f"https://b.example/{kind}") == "https://a.example/1", kind
    assert _decide(index, "【快讯】" + original + "\n责任编辑：张伟", "https://fx.example/2") == (
        "https://fx.example/1"
    )


def test_short_reprint_far_in_simhash_is_found_by_its_sketch(r: redis.Redis) -> None:
    """A short text whose fingerprint moves beyond the four-block search after an edit is found
    through the sketch's band buckets (its distance is then above max_distance)."""
    index = _index(r)
    base = ARTICLE_B
    assert _decide(index, base, "orig") is None
    edited = ("来源：界面新闻 作者：孙悦 责任编辑：徐鹏\n" + base[: int(len(base) * 0.9)]
              + "\n更多精彩内容，请下载客户端。")
    fa, fb = (get_decision().analyze(t).fingerprint for t in (base, edited))
    analysis = get_decision().analyze(edited)
    match = index.check_and_add(analysis.fingerprint, "copy", analysis.sketch)  # type: ignore[arg-type]
    assert match is not None and match.doc_id == "orig"
    assert match.distance == (fa ^ fb).bit_count() > index.max_distance  # type: ignore[operator]


def test_without_a_sketch_the_fingerprint_alone_decides(r: redis.Redis) -> None:
    index = SimhashIndex(r)
    a, b = (get_decision().analyze(_fx(d, True, "6.4512", 35)).fingerprint for d in (11, 12))
    assert a is not None and b is not None
    assert index.check_and_add(a, "x") is None
    match = index.check_and_add(b, "y")
    assert ((a ^ b).bit_count() <= 3) == (match is not None)


def test_sketch_round_trip_and_rules() -> None:
    s = sketch(ARTICLE_A)
    raw = s.to_bytes()
    assert len(raw) == SKETCH_BYTES
    assert TextSketch.from_bytes(raw) == s
    assert confirms(s, sketch(ARTICLE_A + "\n声明：本文转载自网易新闻，版权归原作者所有。"))
    assert text_containment(s, sketch(ARTICLE_B)) < 0.3
    assert not confirms(sketch(_fx(11, True, "6.4512", 35)), sketch(_fx(12, False, "6.4498", 14)))
    # numbers keep their unit character; full-width digits and separators are normalised
    assert numbers_of("３月７日7时，1,000元") == {"3月", "7日", "7时", "1000元"}
    assert number_containment(sketch("共有100人参加"), sketch("共有100人参加，另有50人缺席")) == 1.0


def _band_entries(r: redis.Redis) -> int:
    """Band entries: the 8-byte fields of the block 2 and 3 hashes (block entries have six)."""
    return sum(
        len(f) == 8 for k in r.scan_iter(match="newscrawl:simhash:[23]:*") for f in r.hkeys(k)
    )


def test_sketch_records_round_trip_remove_and_prune(r: redis.Redis) -> None:
    """A fingerprint stored with a sketch: its record reads back (stored_day, used by the
    pipeline's re-processing check), and remove() and prune() delete its band entries too."""
    now = [1_700_000_000.0]
    index = SimhashIndex(r, version=get_decision().version, clock=lambda: now[0])
    a, b = (get_decision().analyze(t) for t in (ARTICLE_A, ARTICLE_B))
    assert index.check_and_add(a.fingerprint, "https://a.example/1", a.sketch) is None  # type: ignore[arg-type]
    assert index.stored_day(a.fingerprint, "https://a.example/1") == int(now[0] // 86400)  # type: ignore[arg-type]
    assert index.stored_day(a.fingerprint, "https://other.example/") is None  # type: ignore[arg-type]
    assert _band_entries(r) == 2
    assert index.remove(a.fingerprint, "https://a.example/1")  # type: ignore[arg-type]
    assert _band_entries(r) == 0 and index.count() == 0
    index.add(b.fingerprint, "https://b.example/1", b.sketch)  # type: ignore[arg-type]
    now[0] += 40 * 86400
    assert index.prune(30) == 1
    assert _band_entries(r) == 0 and index.count() == 0
    # a repeated call (a retry after a lost reply) finds its own entry, adds nothing
    assert index.check_and_add(b.fingerprint, "u", b.sketch) is None  # type: ignore[arg-type]
    again = index.check_and_add(b.fingerprint, "u", b.sketch)  # type: ignore[arg-type]
    assert again is not None and again.doc_id == "u" and again.distance == 0
    assert index.count() == 1


def test_sketch_record_is_compact_and_reads_back_every_doc_id(r: redis.Redis) -> None:
    """A record with a sketch keeps its day in two bytes and a URL's scheme (and www.) as one
    code byte; every doc id reads back whole (matches, stored_day, remove by doc id, prune)."""
    now = [1_700_000_000.0]
    day = int(now[0] // 86400)
    index = SimhashIndex(r, version=get_decision().version, clock=lambda: now[0])
    a = get_decision().analyze(ARTICLE_A)
    assert a.fingerprint is not None and a.sketch is not None
    doc_ids = {
        "https://www.a.example/1": 4 + len("a.example/1"),
        "http://www.b.example/2": 4 + len("b.example/2"),
        "https://c.example/3": 4 + len("c.example/3"),
        "http://d.example/4": 4 + len("d.example/4"),
        "https:/e": 4 + len("https:/e"),
        "42": 4 + len("42"),
        "ftp://www.f/": 4 + len("ftp://www.f/"),
    }
    for doc_id, extra in doc_ids.items():
        assert index.check_and_add(a.fingerprint, doc_id, a.sketch) is None
        record = r.hget(index.bucket_keys(a.fingerprint)[0], field_of(a.fingerprint, 0))
        assert record is not None and len(record) == len(a.sketch) - 1 + extra
        assert int.from_bytes(record[1:3], "big") == day
        assert index.stored_day(a.fingerprint, doc_id) == day
        match = index.check_and_add(a.fingerprint ^ 1, "other", a.sketch)
        assert match is not None and match.doc_id == doc_id
        # band check values are small decimal numbers
        assert {len(v) for k in r.scan_iter(match="newscrawl:simhash:[23]:*")
                for f, v in r.hgetall(k).items() if len(f) == 8} <= {1, 2}
        assert not index.remove(a.fingerprint, doc_id + "x")
        assert index.remove(a.fingerprint, doc_id)
        assert _band_entries(r) == 0 and index.count() == 0
    index.add(a.fingerprint, "https://www.g.example/7", a.sketch)
    now[0] += 40 * 86400
    assert index.prune(30) == 1
    assert _band_entries(r) == 0 and index.count() == 0


def test_distinct_texts_with_one_fingerprint_each_keep_their_record(r: redis.Redis) -> None:
    """Daily template reports share one simhash (digits carry no weight) and their sketches
    tell them apart: each is stored under that fingerprint, and a reprint of ANY of them (not
    just the last stored) is found as its duplicate; remove and prune take one record out."""
    now = [1_700_000_000.0]
    day = int(now[0] // 86400)
    index = SimhashIndex(r, version=get_decision().version, clock=lambda: now[0])
    texts = [_fx(11, True, "6.4512", 35), _fx(12, False, "6.4498", 14),
             _fx(13, True, "6.4561", 63)]
    found = [get_decision().analyze(t) for t in texts]
    fp = found[0].fingerprint
    assert fp is not None and all(a.fingerprint == fp for a in found)
    docs = [f"https://fx.example/{n}" for n in range(3)]
    for doc, a in zip(docs, found, strict=True):
        assert index.check_and_add(fp, doc, a.sketch) is None
    assert index.count() == 1  # one fingerprint, three records
    assert [index.stored_day(fp, doc) for doc in docs] == [day] * 3
    reprints = [get_decision().analyze(f"来源：新华社\n{t}\n（责任编辑：王明）") for t in texts]
    for doc, a in zip(docs, reprints, strict=True):
        assert a.fingerprint is not None and a.sketch is not None
        match = index.check_and_add(a.fingerprint, "https://copy.example/", a.sketch)
        assert match is not None and match.doc_id == doc
        assert [m.doc_id for m in index.query(fp, a.sketch)] == [doc]
    # the same doc checked again finds its own record (a retry), adds nothing
    assert index.check_and_add(fp, docs[0], found[0].sketch).doc_id == docs[0]  # type: ignore[union-attr]
    assert not index.remove(fp, "https://copy.example/")
    assert index.remove(fp, docs[1])
    assert index.stored_day(fp, docs[1]) is None
    assert [index.stored_day(fp, doc) for doc in (docs[0], docs[2])] == [day, day]
    assert index.check_and_add(fp, "https://copy.example/0", reprints[0].sketch).doc_id == docs[0]  # type: ignore[union-attr]
    assert index.remove(fp, docs[0]) and index.remove(fp, docs[2])
    assert index.count() == 0 and _band_entries(r) == 0
    # prune drops the expired record only; the fingerprint goes with its last record
    index.add(fp, docs[0], found[0].sketch)
    now[0] += 20 * 86400
    index.add(fp, docs[1], found[1].sketch)
    now[0] += 15 * 86400
    assert index.prune(30) == 0
    assert index.stored_day(fp, docs[0]) is None and index.stored_day(fp, docs[1]) == day + 20
    assert index.check_and_add(fp, "https://copy.example/1", reprints[1].sketch).doc_id == docs[1]  # type: ignore[union-attr]
    assert index.check_and_add(fp, "https://copy.example/0", reprints[0].sketch) is None
    now[0] += 40 * 86400
    assert index.prune(30) == 1
    assert index.count() == 0 and _band_entries(r) == 0


def test_retention_drops_one_expired_record_of_a_shared_fingerprint(r: redis.Redis) -> None:
    now = [1_700_000_000.0]
    index = SimhashIndex(r, version=get_decision().version, retention_days=30,
                         clock=lambda: now[0])
    a, b, c = (get_decision().analyze(_fx(d, True, f"6.45{d}", d)) for d in (11, 12, 13))
    fp = a.fingerprint
    assert fp is not None and b.fingerprint == fp == c.fingerprint
    assert index.check_and_add(fp, "a", a.sketch) is None
    now[0] += 20 * 86400
    assert index.check_and_add(fp, "b", b.sketch) is None
    now[0] += 15 * 86400  # "a" expired
    assert index.check_and_add(fp, "c", c.sketch) is None
    assert index.stored_day(fp, "a") is None  # dropped by the check that read it
    assert index.stored_day(fp, "b") is not None and index.stored_day(fp, "c") is not None
    # check_many: the same decisions, each record found by its own reprint
    found = index.check_many([(fp, "x", b.sketch), (fp, "y", c.sketch)], add=False)
    assert [m.doc_id if m else None for m in found] == ["b", "c"]


# --- a short article against a long one on its topic -----------------------------------------
# A fund-industry brief, a long read on the fund industry closing with a table of share prices
# (its 96-bit number set nearly full), and a market brief. Written for these tests; the bylines
# and the table's seed are ones for which 4-5 minhash bins of the short text match the long one's
# by chance, so the containment estimate of the bins alone reads 0.84-0.87 (true: 0.02-0.03).
FUND_BRIEF = (
    "公募基金发行回暖 权益类产品受青睐\n"
    "记者从多家基金公司了解到，近期公募基金发行市场明显回暖，权益类产品重新受到投资者青睐。"
    "业内人士表示，随着市场情绪修复，银行渠道的基金销售有所好转，部分明星基金经理管理的新产品"
    "在短时间内完成募集。不过也有基金公司提醒，投资者不宜追涨杀跌，应当根据自身风险承受能力"
    "选择合适的产品，避免将短期闲置资金投入波动较大的股票型基金。分析人士认为，居民储蓄向资本"
    "市场转移是一个长期过程，基金公司需要在投资者教育和持续营销方面下更多功夫，提升持有人的"
    "实际获得感，而不是一味追求发行规模。另有券商研究员指出，费率改革落地后，基金行业的竞争"
    "将更多转向投研能力和服务质量，中小基金公司面临的压力有所加大。"
)
LONG_HEAD = (
    "基金行业深度观察：从规模竞赛到投研能力之争\n"
    "过去几年，公募基金行业经历了从高速扩张到理性调整的完整周期。在市场上涨阶段，爆款基金频出，"
    "一些产品在一天之内募集数百亿元，基金经理的个人品牌被反复放大；而当市场转入震荡，净值回撤让"
    "不少持有人损失惨重，赎回压力随之而来。行业内部开始反思，过度依赖营销驱动的发展模式难以为继。"
    "监管层面，费率改革分步推进，管理费和托管费率下调，销售环节的尾随佣金也受到约束。多位基金"
    "公司高管坦言，费率下行压缩了利润空间，倒逼公司把资源集中到研究和投资本身。与此同时，指数化"
    "投资快速发展，交易型开放式指数基金的规模持续攀升，被动产品凭借低成本和透明度吸引了大量机构"
    "资金。主动管理型产品则面临证明自身超额收益能力的考验。从渠道看，互联网平台的基金销售占比逐年"
    "提高，年轻投资者更习惯在手机上完成申购和定投，但也更容易受到短期排行榜的影响频繁交易。有研究"
    "显示，基金赚钱而基民不赚钱的现象，很大程度上源于持有期过短和择时失误。为此，不少公司推出了"
    "投顾服务，尝试帮助客户建立长期配置的习惯。外资机构的进入也在改变竞争格局，多家全资控股的外资"
    "公募已经获批开业，它们在量化投资和资产配置方面积累的经验，对本土公司形成一定压力。业内普遍"
    "认为，未来行业集中度将进一步提高，头部公司凭借品牌和平台优势扩大份额，而特色鲜明的中小公司"
    "也有机会在细分领域突围。\n以下为近期部分上市公司股价表现：\n"
)
MARKET_BRIEF = (
    "两市成交放量 基金重仓股走强\n"
    "周三沪深两市震荡走高，上证指数收报3087点，上涨0.8%，深证成指上涨1.2%，两市全天成交8652亿元，"
    "较前一交易日明显放量，北向资金净流入56亿元。盘面上，基金重仓的白酒、医药和新能源板块集体走强，"
    "券商板块午后拉升，部分个股涨停。分析人士认为，近期公募基金发行回暖，增量资金入场预期升温，"
    "市场风险偏好有所修复，但在经济数据公布前，资金仍以结构性配置为主，追高需谨慎。"
)
SYLLABLES = "华东南北中新金瑞宏远恒泰安康盛鑫海天润丰嘉祥永利德信"
TRADES = ["科技", "能源", "证券", "医药", "银行", "电气", "材料", "传媒", "物流", "化工", "机械",
          "地产", "食品", "环保", "通信"]  # fmt: skip


def _long_read(seed: int, lines: int = 180) -> str:
    """LONG_HEAD and a table of ``lines`` share prices (about 5,800 characters)."""
    rows = []
    for i in range(lines):
        name = (SYLLABLES[(i * 7 + seed) % len(SYLLABLES)]
                + SYLLABLES[(i * 11 + 3 + seed) % len(SYLLABLES)]
                + TRADES[(i * 5 + seed) % len(TRADES)])  # fmt: skip
        price = 3 + (i * 37 + seed) % 90 + ((i * 13) % 100) / 100
        pct = ((i * 29 + seed) % 200 - 100) / 10
        vol = 1 + (i * 17) % 40 + ((i * 3) % 10) / 10
        rows.append(f"{name}收报{price:.2f}元，{'上涨' if pct >= 0 else '下跌'}{abs(pct):.1f}%，"
                    f"成交{vol:.1f}亿元。")  # fmt: skip
    return LONG_HEAD + "".join(rows)


def _true_containment(small: str, big: str) -> float:
    def grams(t: str) -> set[str]:
        n = normalize(t)
        return {n[i : i + 4] for i in range(len(n) - 3)}

    a, b = grams(small), grams(big)
    return len(a & b) / len(a)


SHORT_FUND = FUND_BRIEF + "（记者 李华，校对 林晓）"
SHORT_MARKET = MARKET_BRIEF + "（记者 王明，编辑 罗军）"
LONG_FUND = _long_read(121)
LONG_MARKET = _long_read(24)
# the rule without the chance check: the bins' containment estimate and the number subset alone
BINS_AND_SUBSET_ONLY = Thresholds(chance=1_000_000)


def test_short_article_is_not_confirmed_by_chance_bins_of_a_long_one() -> None:
    """The containment estimate is not trusted beyond what the bins support at the length ratio."""
    short, long = sketch(SHORT_FUND), sketch(LONG_FUND)
    assert long.shingles > 8 * short.shingles
    assert short.numbers == 0  # the number set has nothing to say: the text alone decides
    assert _true_containment(SHORT_FUND, LONG_FUND) < 0.1
    assert text_containment(short, long) >= 0.75  # what 4-5 chance bins read as
    assert confirms(short, long, thresholds=BINS_AND_SUBSET_ONLY)
    assert text_chance(short, long) > 0.01
    assert not confirms(short, long)
    assert not confirms(long, short)
    # a reprint of the short text of about its length is still confirmed
    reprint = sketch("来源：经济日报\n" + SHORT_FUND + "\n（本文转载自财经频道）")
    assert text_chance(short, reprint) < 1e-6
    assert confirms(short, reprint)


def test_a_nearly_full_number_set_confirms_nothing() -> None:
    """The number subset test counts only as much as the larger set's fill lets it."""
    short, long = sketch(SHORT_MARKET), sketch(LONG_MARKET)
    assert short.numbers.bit_count() == 5 and long.numbers.bit_count() >= 90
    assert number_containment(short, long) == 1.0  # a nearly full set holds any five bits
    assert _true_containment(SHORT_MARKET, LONG_MARKET) < 0.1
    assert confirms(short, long, thresholds=BINS_AND_SUBSET_ONLY)
    assert number_chance(short, long) > 0.8
    assert not confirms(short, long)
    # the same text evidence with a sparse number set holding the short text's numbers (five
    # numbers with their units among ten: unlikely by accident) is confirmed
    sparse = replace(long, numbers=short.numbers | (0b11111 << 40))
    assert sparse.numbers.bit_count() == 10 and number_containment(short, sparse) == 1.0
    assert number_chance(short, sparse) < 1e-4
    assert confirms(short, sparse)


def test_index_keeps_a_short_and_a_long_article_nominated_by_one_fingerprint(
    r: redis.Redis,
) -> None:
    """The index's script applies the same rule: both texts stored with the same fingerprint
    (the simhash nominates the pair at distance 0), in either order, are both kept."""
    fp = 0x5A5A_1234_9ABC_0F0F
    orders = {"a": (LONG_FUND, SHORT_FUND), "b": (SHORT_FUND, LONG_FUND),
              "c": (LONG_MARKET, SHORT_MARKET), "d": (SHORT_MARKET, LONG_MARKET)}  # fmt: skip
    for prefix, order in orders.items():
        index = SimhashIndex(r, prefix=prefix, version=get_decision().version)
        for n, text in enumerate(order):
            assert index.check_and_add(fp, f"doc-{n}", sketch(text).to_bytes()) is None, prefix
    # a reprint of the short one, with that fingerprint, is still dropped
    copy = "来源：经济日报\n" + SHORT_FUND
    index = SimhashIndex(r, prefix="e", version=get_decision().version)
    assert index.check_and_add(fp, "long", sketch(LONG_FUND).to_bytes()) is None
    assert index.check_and_add(fp, "short", sketch(SHORT_FUND).to_bytes()) is None
    match = index.check_and_add(fp, "copy", sketch(copy).to_bytes())
    assert match is not None and match.doc_id == "short"


def test_index_of_the_previous_decision_is_refused_and_the_rebuild_recipe_keeps_both(
    r: redis.Redis, tmp_path: Path
) -> None:
    """The decision's version names the new check (an index confirmed without it is refused),
    and the rebuild recipe of docs/operations.md keeps the short and the long article."""
    version = get_decision().version
    assert version.endswith("-" + DEFAULT_THRESHOLDS.label()) and "s30p1000" in version
    previous = version.replace(DEFAULT_THRESHOLDS.label(), "c75n100w55")
    SimhashIndex(r, version=previous).add(1, "https://old.example/1")
    with pytest.raises(IncompatibleIndexError):
        _decide(_index(r), SHORT_FUND, "https://new.example/1")
    articles = tmp_path / "old" / "articles"
    articles.mkdir(parents=True)
    rows = [("https://a.example/long", LONG_FUND), ("https://b.example/short", SHORT_FUND),
            ("https://c.example/copy", "来源：经济日报\n" + SHORT_FUND)]  # fmt: skip
    for n, (url, text) in enumerate(rows):
        line = json.dumps({"url": url, "title": "", "text": text}, ensure_ascii=False)
        (articles / f"2026-03-0{n + 1}.jsonl").write_text(line + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    command = (
        f"cat {articles}/*.jsonl | {sys.executable} -m newscrawl.cli"
        f" --data-dir {tmp_path / 'new'} dedup --jsonl -"
    )
    done = subprocess.run(
        command, shell=True, capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert [o["duplicate_of"] for o in out] == [None, None, "https://b.example/short"]


def test_index_script_and_python_agree_on_the_chance_check(r: redis.Redis) -> None:
    """``confirms`` is the reference of the script's rule: the same decision on pairs around the
    chance limit (lengths 1-20x apart, 0-32 equal bins, sparse to full number sets)."""
    rng = random.Random(7)
    index = SimhashIndex(r, version=get_decision().version)
    decided: Counter[tuple[bool, bool]] = Counter()
    for i in range(300):
        small = rng.randint(30, 3000)
        big = min(65535, int(small * rng.choice([1, 1.3, 2, 4, 8, 13, 20])))
        bins = bytes(rng.randrange(16) for _ in range(32))
        same = rng.randint(0, 32)
        other = bytes(b if k < same else (b + 1 + rng.randrange(15)) % 16
                      for k, b in enumerate(bins))  # fmt: skip
        nums = rng.getrandbits(96) & rng.getrandbits(96) & rng.getrandbits(96)
        extra = rng.getrandbits(96)
        if rng.random() < 0.5:  # else nearly full
            extra &= rng.getrandbits(96) & rng.getrandbits(96)
        full = nums | extra
        if rng.random() < 0.3:
            nums = 0
        a = TextSketch(shingles=small, numbers=nums, minhash=bins, bands=(i, i))
        b = TextSketch(shingles=big, numbers=full, minhash=other, bands=(i, i))
        fp = rng.getrandbits(64)
        index.add(fp, f"doc-{i}", b.to_bytes())
        found = [m.doc_id for m in index.query(fp, a.to_bytes())]
        assert (f"doc-{i}" in found) == confirms(a, b), (i, small, big, same)
        decided[confirms(a, b), confirms(a, b, thresholds=Thresholds(chance=1_000_000))] += 1
    # the sample holds pairs the chance check turns down, and pairs confirmed either way
    assert decided[False, True] >= 5 and decided[True, True] >= 10
