# ruff: noqa: E501  (template report texts and table rows)
"""Offline comparison of near-duplicate decisions on a stream (each document against every earlier
stored one, as a crawl meets them), to choose the decision the index applies.

The stream: originals from THUCNews dev500 and the SogouCS sample, 1-2 reprints of 40 % of them
later in the stream (edits of ``evalkit.edits``), the Sohu 2021 "same event" texts as
hard negatives, and daily template reports written here (exchange rate, weather, market close,
lottery, gold price, air quality, fuel price) over 10 days. Or a stream file (JSON Lines with
``id``, ``text`` and ``group``: documents of one group are one article; ``template`` true marks a
template report) given with ``--stream``.

    python benchmarks/decision_experiments.py --corpus CORPUS_DIR            # all variants
    python benchmarks/decision_experiments.py --corpus CORPUS_DIR --write-stream s.jsonl
    python benchmarks/decision_experiments.py --stream STREAM_DIR    # make_stream.py's output

Prints one line per variant: recall, precision, wrong drops, template reports dropped.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from evalkit.edits import EDITS, EditContext  # noqa: E402
from evalkit.pairs import NEAR_IDENTICAL, char3_jaccard, load_sogou, load_thucnews  # noqa: E402

from newscrawl.simhash import get_fingerprinter  # noqa: E402
from newscrawl.simhash.sketch import (  # noqa: E402
    TextSketch,
    Thresholds,
    confirms,
    sketch,
    text_containment,
)


# --- template reports -------------------------------------------------------------------------
def _templates(rng: random.Random, days: int = 10) -> list[tuple[str, str]]:
    """(kind, text) of daily template reports, ``days`` days of each kind, in day order."""
    out: list[tuple[str, str]] = []
    cities = ["北京", "上海", "广州", "深圳", "成都", "杭州"]
    usd = 6.45
    idx = 3200.0
    gold = 380.0
    for d in range(days):
        month, day = 5, 10 + d
        up = rng.random() < 0.5
        delta = rng.randint(5, 120)
        usd += (delta if up else -delta) / 10000
        out.append(
            (
                "fx",
                (
                    f"{month}月{day}日人民币汇率中间价公布\n中国外汇交易中心{month}月{day}日公布，"
                    f"人民币对美元汇率中间价报{usd:.4f}，较前一交易日{'上调' if up else '下调'}{delta}个基点，"
                    f"人民币对欧元报{usd * 1.08 + rng.random() / 10:.4f}，对日元报{rng.uniform(4.6, 4.9):.4f}"
                    f"（100日元），对港元报{usd / 7.8 * 1.0 + rng.random() / 100:.5f}。"
                    f"分析人士认为，近期人民币汇率{'走强' if up else '走弱'}，双向波动特征明显。"
                ),
            )
        )
        hi, lo = rng.randint(18, 33), rng.randint(8, 17)
        sky = rng.choice(["晴", "多云", "阴", "小雨", "雷阵雨", "晴转多云"])
        city = cities[0]
        out.append(
            (
                "weather",
                (
                    f"{city}天气预报（{month}月{day}日）\n今天白天{sky}，最高气温{hi}℃，"
                    f"夜间{rng.choice(['晴', '多云', '阴'])}，最低气温{lo}℃，"
                    f"{rng.choice(['北', '南', '东南', '西北'])}风{rng.randint(2, 4)}级。"
                    f"明天{rng.choice(['晴', '多云', '小雨'])}，气温{lo + 1}至{hi - 1}℃。"
                    f"气象部门提醒市民注意{'防晒' if hi > 28 else '添衣'}，合理安排出行。"
                ),
            )
        )
        move = rng.uniform(-2.5, 2.5)
        idx *= 1 + move / 100
        out.append(
            (
                "market",
                (
                    f"{month}月{day}日收盘：沪指{'涨' if move > 0 else '跌'}{abs(move):.2f}%\n"
                    f"今日A股三大指数集体{'上涨' if move > 0 else '下跌'}，截至收盘，上证指数报{idx:.2f}点，"
                    f"{'涨' if move > 0 else '跌'}{abs(move):.2f}%；深证成指报{idx * 3.4:.2f}点，"
                    f"创业板指报{idx * 0.72:.2f}点。两市成交额{rng.randint(7000, 12000)}亿元，"
                    f"北向资金净{'买入' if rng.random() < 0.5 else '卖出'}{rng.uniform(5, 80):.2f}亿元。"
                    f"板块方面，{rng.choice(['半导体', '白酒', '新能源', '医药', '银行'])}板块领涨，"
                    f"{rng.choice(['地产', '煤炭', '军工', '传媒'])}板块跌幅居前。"
                ),
            )
        )
        reds = sorted(rng.sample(range(1, 34), 6))
        out.append(
            (
                "lottery",
                (
                    f"双色球第2023{50 + d:03d}期开奖结果\n本期开奖号码：红球"
                    f"{' '.join(f'{n:02d}' for n in reds)}，蓝球{rng.randint(1, 16):02d}。"
                    f"本期一等奖中出{rng.randint(1, 15)}注，单注奖金{rng.randint(500, 1000)}万元；"
                    f"二等奖中出{rng.randint(50, 200)}注，单注奖金{rng.randint(10, 30)}万元。"
                    f"本期全国销量{rng.uniform(3, 4.5):.2f}亿元，奖池累计{rng.uniform(10, 20):.2f}亿元。"
                ),
            )
        )
        gold += rng.uniform(-4, 4)
        out.append(
            (
                "gold",
                (
                    f"今日金价：{month}月{day}日黄金价格行情\n今日国内黄金现货价格为{gold:.2f}元/克，"
                    f"较昨日{'上涨' if rng.random() < 0.5 else '下跌'}{rng.uniform(0.1, 3):.2f}元。"
                    f"周大福足金饰品报价{gold + 150 + rng.randint(0, 9):.0f}元/克，"
                    f"老凤祥报价{gold + 148 + rng.randint(0, 9):.0f}元/克，"
                    f"铂金价格{rng.uniform(200, 240):.2f}元/克。国际金价报{rng.uniform(1900, 2000):.2f}美元/盎司。"
                ),
            )
        )
        aqi = rng.randint(25, 180)
        out.append(
            (
                "air",
                (
                    f"{cities[1]}{month}月{day}日空气质量日报\n今日{cities[1]}空气质量指数（AQI）为{aqi}，"
                    f"空气质量等级为{'优' if aqi <= 50 else '良' if aqi <= 100 else '轻度污染'}，"
                    f"首要污染物为{rng.choice(['PM2.5', '臭氧', 'PM10'])}。PM2.5浓度{rng.randint(10, 120)}微克/立方米，"
                    f"PM10浓度{rng.randint(20, 160)}微克/立方米。"
                    f"预计明日空气质量{rng.choice(['良', '优', '轻度污染'])}，敏感人群请减少户外活动。"
                ),
            )
        )
        p92 = 7.5 + rng.uniform(-0.3, 0.3)
        out.append(
            (
                "fuel",
                (
                    f"{month}月{day}日油价：国内油价{'上调' if up else '下调'}\n"
                    f"据国家发改委消息，自{month}月{day}日24时起，国内汽、柴油价格每吨分别"
                    f"{'提高' if up else '降低'}{rng.randint(50, 300)}元和{rng.randint(50, 300)}元。"
                    f"调整后，92号汽油每升{p92:.2f}元，95号汽油每升{p92 + 0.53:.2f}元，"
                    f"0号柴油每升{p92 - 0.3:.2f}元。加满一箱50升汽油将{'多' if up else '少'}花"
                    f"{rng.randint(3, 12)}元。"
                ),
            )
        )
    return out


@dataclass
class Entry:
    id: str
    text: str
    group: str  # documents of one group are one article
    template: bool = False


def build_stream(corpus: Path, seed: int = 7) -> list[Entry]:
    rng = random.Random(seed)
    docs = load_thucnews(corpus / "thucnews_sample/cnews.dev500.txt")
    docs += load_sogou(corpus / "sogoucs_smarty_sample/news_sohusite_xml.smarty.dat")
    texts = [d.text for d in docs]
    ctx = EditContext(others=texts)
    stream: list[Entry] = []
    # originals in a random order; a reprint is inserted 1-300 positions after its original
    order = list(range(len(docs)))
    rng.shuffle(order)
    pending: list[tuple[int, Entry]] = []
    kinds = sorted(EDITS)
    seen_text: set[str] = set()
    pos = 0
    for i in order:
        text = docs[i].text
        if text in seen_text:  # the sample's exact duplicates: one group
            continue
        seen_text.add(text)
        stream.append(Entry(f"o{i}", text, f"g{i}"))
        pos += 1
        if len(text) >= 60 and rng.random() < 0.4:
            for r in range(rng.choice((1, 1, 2))):
                kind = rng.choice(kinds)
                edited = EDITS[kind](text, rng, ctx)
                pending.append(
                    (pos + rng.randint(1, 300), Entry(f"r{i}.{r}.{kind}", edited, f"g{i}"))
                )
        due = [p for p in pending if p[0] <= pos]
        for p in due:
            stream.append(p[1])
            pending.remove(p)
    stream.extend(e for _, e in sorted(pending, key=lambda p: p[0]))
    # Sohu 2021 "same event" pairs (grade 5): different texts on one event, hard negatives
    sohu = corpus / "sohu2021_textmatch_text2vec"
    n = 0
    for path in sorted(sohu.glob("*.jsonl")) + sorted(sohu.glob("*/*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if str(row.get("label")) != "5" or n >= 120:
                continue
            a, b = row["sentence1"], row["sentence2"]
            if len(a) < 60 or len(b) < 60 or char3_jaccard(a, b) >= NEAR_IDENTICAL:
                continue
            at = rng.randrange(len(stream))
            stream.insert(at, Entry(f"s{n}a", a, f"s{n}a"))
            stream.insert(at + rng.randint(1, 50), Entry(f"s{n}b", b, f"s{n}b"))
            n += 1
    # template reports: spread over the stream, day by day
    reports = _templates(rng)
    step = len(stream) // (len(reports) + 1)
    for k, (kind, text) in enumerate(reports):
        stream.insert((k + 1) * step + k, Entry(f"t{k}.{kind}", text, f"t{k}", template=True))
    return stream


# --- decisions --------------------------------------------------------------------------------
@dataclass
class Prepared:
    entry: Entry
    fp: int | None
    sketches: dict[str, TextSketch]
    chars: int
    sk: TextSketch | None = None


Rule = Callable[[Prepared, Prepared, int], bool]
#: a rule for candidates found by the sketch's band buckets beyond max_distance (None: not looked up)
WideRule = Callable[[Prepared, Prepared, int], bool] | None


#: sketch variants: (bins, number bits, numbers with their unit character, bands)
SKETCHES = {
    "default": (32, 128, True, 2),
    "numbers without unit": (32, 128, False, 2),
    "numbers in 64 bits": (32, 64, True, 2),
    "numbers in 96 bits": (32, 96, True, 2),
    "one band": (32, 128, True, 1),
    "16 bins": (16, 128, True, 2),
}


def simulate(
    items: list[Prepared],
    max_distance: int,
    rule: Rule,
    variant: str = "k16n128",
    wide: WideRule = None,
) -> dict[str, float]:
    for it in items:
        it.sk = it.sketches[variant]
    stored: list[Prepared] = []
    first_of: set[str] = set()
    tp = fp_ = fn = tmpl = 0
    wrong: list[tuple[str, str, int]] = []
    for it in items:
        is_dup = it.entry.group in first_of
        match = None
        if it.fp is not None:
            cands = []
            for s in stored:
                d = (s.fp ^ it.fp).bit_count()  # type: ignore[operator]
                if d <= max_distance:
                    cands.append((d, s))
                elif wide is not None and any(
                    x == y and it.sk.minhash[k] == s.sk.minhash[k]  # type: ignore[union-attr]
                    for k, (x, y) in enumerate(zip(it.sk.bands, s.sk.bands, strict=True))  # type: ignore[union-attr]
                ):
                    cands.append((d, s))
            cands.sort(key=lambda c: c[0])
            for d, s in cands:
                if (rule if d <= max_distance else wide)(it, s, d):  # type: ignore[operator]
                    match = (d, s)
                    break
        if match is None:
            if it.fp is not None:
                stored.append(it)
            if is_dup:
                fn += 1
        else:
            if match[1].entry.group == it.entry.group:
                tp += 1
            else:
                fp_ += 1
                wrong.append((it.entry.id, match[1].entry.id, match[0]))
                if it.entry.template:
                    tmpl += 1
                if is_dup:
                    fn += 1
        first_of.add(it.entry.group)
    recall = tp / (tp + fn) if tp + fn else 1.0
    precision = tp / (tp + fp_) if tp + fp_ else 1.0
    return {
        "recall": recall,
        "precision": precision,
        "wrong": fp_,
        "templates": tmpl,
        "dups": tp + fn,
        "examples": wrong[:6],
    }  # type: ignore[dict-item]


def rules() -> dict[str, tuple[int, Rule, str, WideRule]]:
    def fp_only(limit: int) -> Rule:
        return lambda a, b, d: d <= limit

    def text_only(t_text: float) -> Rule:
        return lambda a, b, d: text_containment(a.sk, b.sk) >= t_text  # type: ignore[arg-type]

    def production(t: Thresholds, wide: bool) -> Rule:
        return lambda a, b, d: confirms(a.sk, b.sk, wide=wide, thresholds=t)  # type: ignore[arg-type]

    default = Thresholds()
    out: dict[str, tuple[int, Rule, str, WideRule]] = {
        "simhash alone, d<=3 (the old decision)": (3, fp_only(3), "default", None),
        "simhash alone, d<=7": (7, fp_only(7), "default", None),
        "d<=7 + 4-gram containment >= 0.75, no numbers": (7, text_only(0.75), "default", None),
        "d<=3 + sketch, no band buckets": (3, production(default, False), "default", None),
        "d<=7 + sketch, no band buckets": (7, production(default, False), "default", None),
    }
    for variant in SKETCHES:
        for md in (3, 7):
            if md == 7 and variant != "default":
                continue
            for text, wide in ((75, 55), (70, 55), (80, 55), (75, 60), (75, 50), (75, 0)):
                if variant != "default" and (text, wide) != (75, 55):
                    continue
                t = Thresholds(text=text, numbers=100, wide=wide)
                name = (
                    f"d<={md} + band buckets + sketch ({variant}): containment >= {text / 100}, "
                    f"numbers subset, band-only resemblance >= {wide / 100}"
                )
                out[name] = (md, production(t, False), variant, production(t, True))
    t = Thresholds(chance=1_000_000)  # rules 1-3: no chance check (its limit never reached)
    name = "d<=3 + band buckets + sketch (default), without the chance check"
    out[name] = (3, production(t, False), "default", production(t, True))
    return out


def _variant(text: str, bins: int, bits: int, units: bool, bands: int) -> TextSketch:
    sk = sketch(text, bins, bits, units)
    return TextSketch(sk.shingles, sk.numbers, sk.minhash, sk.bands[:bands])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, help="the dev corpus directory")
    ap.add_argument("--stream", type=Path, help="a stream JSONL (id, text, group, template)")
    ap.add_argument("--write-stream", type=Path, help="write the built stream here")
    ap.add_argument("--only", help="only variants whose name contains this")
    args = ap.parse_args()
    if args.stream and args.stream.is_dir():  # benchmarks/make_stream.py's output
        labels = {
            o["id"]: o
            for o in map(json.loads, (args.stream / "labels.jsonl").read_text("utf-8").splitlines())
        }
        entries = []
        for o in map(json.loads, (args.stream / "stream.jsonl").read_text("utf-8").splitlines()):
            label = labels[o["id"]]
            group = label["original"] or o["id"]
            entries.append(Entry(o["id"], o["text"], group, label["kind"] == "template"))
    elif args.stream:
        entries = [
            Entry(o["id"], o["text"], o.get("group", o["id"]), bool(o.get("template")))
            for o in map(json.loads, args.stream.read_text(encoding="utf-8").splitlines())
        ]
    elif args.corpus:
        entries = build_stream(args.corpus)
    else:
        ap.error("give --corpus or --stream")
    if args.write_stream:
        with args.write_stream.open("w", encoding="utf-8") as fh:
            for e in entries:
                fh.write(json.dumps(e.__dict__, ensure_ascii=False) + "\n")
    fpr = get_fingerprinter()
    items = [
        Prepared(
            e,
            fpr.fingerprint(e.text),
            {k: _variant(e.text, *v) for k, v in SKETCHES.items()},
            len(e.text),
        )
        for e in entries
    ]
    n_dup = len(entries) - len({e.group for e in entries})
    print(
        f"stream: {len(entries)} documents, {n_dup} reprints, "
        f"{sum(e.template for e in entries)} template reports"
    )
    print("| decision | recall | precision | wrong drops | template drops |")
    print("|---|---|---|---|---|")
    for name, (md, rule, variant, wide) in rules().items():
        if args.only and args.only not in name:
            continue
        r = simulate(items, md, rule, variant, wide)
        print(
            f"| {name} | {r['recall']:.3f} | {r['precision']:.4f} | {r['wrong']} | "
            f"{r['templates']} |",
            flush=True,
        )
        if r["examples"] and "-v" in sys.argv:
            print("   ", r["examples"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
