"""Daily template reports: distinct articles that share their wording and differ in numbers.

Weather, exchange rate, market close, lottery, prices, air quality, traffic, sports: one series per
outlet and wording, numbers on a random walk. docs/benchmarks.md#make_streampy-bench_streampy.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

WEEKDAYS = "一二三四五六日"


@dataclass(frozen=True)
class Report:
    """One day's report of one series."""

    series: str  # e.g. "weather/北京/a"
    kind: str  # weather, fx, market, lottery, fuel, gold, air, traffic, sports
    day: int  # 0-based day of the simulated period
    date: date
    outlet: str
    title: str
    text: str
    hour: float  # hour of the day it is published (0-24)

    @property
    def name(self) -> str:
        return f"{self.series} {self.date.isoformat()}"


_Writer = Callable[["_Series", random.Random, date], tuple[str, str]]


@dataclass
class _Series:
    kind: str
    key: str
    outlet: str
    variant: int
    hour: float
    write: _Writer
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.kind}/{self.key}/{'abc'[self.variant]}"


def _cn_date(d: date) -> str:
    return f"{d.month}月{d.day}日"


def _walk(s: _Series, name: str, start: float, step: float, lo: float, hi: float,
          rng: random.Random) -> tuple[float, float]:
    """The next value of a random walk kept in [lo, hi], and its change since the previous day."""
    prev = s.state.get(name, start)
    value = min(hi, max(lo, prev + rng.uniform(-step, step)))
    s.state[name] = value
    return value, value - prev


# --- weather ------------------------------------------------------------------------------------
_SKY = ["晴", "多云", "阴", "小雨", "阵雨", "晴转多云", "多云转阴", "阴转小雨", "雷阵雨", "小雪"]
_WIND = ["北风", "南风", "东北风", "西南风", "偏北风", "东南风"]
_WEATHER_TIPS = ["早晚温差较大，市民出行注意适时增减衣物。", "空气较为干燥，请注意补水保湿。",
                 "降雨时段路面湿滑，驾车出行请减速慢行。", "紫外线较强，外出请做好防晒措施。",
                 ""]  # fmt: skip
_CITY_BASE = {"北京": 8.0, "上海": 14.0, "广州": 22.0, "成都": 15.0, "哈尔滨": -4.0}


def _weather(s: _Series, rng: random.Random, d: date) -> tuple[str, str]:
    base = _CITY_BASE[s.key]
    hi, _ = _walk(s, "hi", base + 6, 3, base - 2, base + 14, rng)
    lo = hi - rng.randint(6, 11)
    sky, sky2, sky3 = rng.choice(_SKY), rng.choice(_SKY), rng.choice(_SKY)
    wind, lv = rng.choice(_WIND), rng.choice(["二三", "三四", "一二", "四五"])
    hi2, lo2 = round(hi + rng.uniform(-3, 3)), round(lo + rng.uniform(-3, 3))
    tip = rng.choice(_WEATHER_TIPS)
    if s.variant == 0:
        title = f"{s.key}天气：今天{sky}，最高气温{round(hi)}℃"
        text = (
            f"{title}\n{s.key}市气象台{_cn_date(d)}{rng.choice('567')}时发布天气预报："
            f"今天白天{sky}，{wind}{lv}级，最高气温{round(hi)}℃；夜间{sky2}，"
            f"最低气温{round(lo)}℃。明天白天{sky3}，气温{lo2}℃至{hi2}℃。"
            f"气象部门提醒，{tip or '请广大市民关注最新天气预报。'}"
        )
    else:
        title = f"{_cn_date(d)}{s.key}天气预报"
        text = (
            f"{title}\n据{s.key}市气象台消息，{_cn_date(d)}（星期{WEEKDAYS[d.weekday()]}），"
            f"本市天气{sky}，{wind}{lv}级，气温{round(lo)}～{round(hi)}℃，"
            f"相对湿度{rng.randint(20, 90)}%。预计{_cn_date(d + timedelta(days=1))}{sky3}，"
            f"气温{lo2}～{hi2}℃。{tip}"
        )
    return title, text


# --- exchange rate ------------------------------------------------------------------------------
def _fx(s: _Series, rng: random.Random, d: date) -> tuple[str, str]:
    rate, change = _walk(s, "rate", 7.1046, 0.0060, 7.02, 7.26, rng)
    bp = round(abs(change) * 10000) or 1
    up = change < 0  # a lower USD/CNY central parity means the yuan is raised (上调)
    spot = rate + rng.uniform(-0.012, 0.012)
    if s.variant == 0:
        title = f"人民币中间价报{rate:.4f}，{'上调' if up else '下调'}{bp}个基点"
        text = (
            f"{title}\n中国外汇交易中心{_cn_date(d)}公布，当日人民币对美元汇率中间价报"
            f"{rate:.4f}，较前一交易日{'上调' if up else '下调'}{bp}个基点。"
            f"前一交易日，在岸人民币对美元16:30收盘报{spot:.4f}，"
            f"夜盘收报{spot + rng.uniform(-0.005, 0.005):.4f}。"
            f"{rng.choice(['', '市场人士认为，短期内人民币汇率将在合理均衡水平上保持基本稳定。'])}"
        )
    else:
        title = f"{_cn_date(d)}人民币对美元中间价{'上调' if up else '下调'}{bp}个基点"
        text = (
            f"{title}\n{s.outlet}{_cn_date(d)}电 来自中国外汇交易中心的数据显示，"
            f"{_cn_date(d)}人民币对美元汇率中间价报1美元对人民币{rate:.4f}元，"
            f"较前一交易日{'上调' if up else '下调'}{bp}个基点，"
            f"人民币对美元{'走强' if up else '走弱'}。"
            f"人民币对欧元中间价报{rate / rng.uniform(0.90, 0.94):.4f}，"
            f"对日元中间价报100日元对人民币{rate * rng.uniform(6.4, 6.9):.4f}元。"
        )
    return title, text


# --- market close -------------------------------------------------------------------------------
_SECTORS = ["半导体", "银行", "券商", "白酒", "光伏", "医药", "房地产", "汽车", "煤炭", "军工",
            "人工智能", "锂电池", "有色金属", "旅游", "传媒"]  # fmt: skip


def _market(s: _Series, rng: random.Random, d: date) -> tuple[str, str]:
    sh, dsh = _walk(s, "sh", 3250.0, 45.0, 2950.0, 3550.0, rng)
    sz, dsz = _walk(s, "sz", 10200.0, 180.0, 9000.0, 11500.0, rng)
    cy, dcy = _walk(s, "cy", 2050.0, 45.0, 1800.0, 2300.0, rng)
    amount, damount = _walk(s, "amt", 9200.0, 900.0, 6500.0, 13000.0, rng)
    pct = lambda v, dv: abs(dv) / (v - dv) * 100  # noqa: E731
    word = lambda dv: "收涨" if dv >= 0 else "收跌"  # noqa: E731
    up = rng.sample(_SECTORS, 4)
    down = rng.sample([x for x in _SECTORS if x not in up], 2)
    if min(dsh, dsz, dcy) > 0:
        together = "集体收涨"
    else:
        together = "集体收跌" if max(dsh, dsz, dcy) < 0 else "涨跌不一"
    flow = rng.choice(["买入", "卖出", ""])
    north = f"北向资金全天净{flow}{rng.randint(5, 90)}亿元。" if flow else ""
    if s.variant == 0:
        title = f"A股收评：沪指{word(dsh)}{pct(sh, dsh):.2f}%，两市成交额{amount:.0f}亿元"
        text = (
            f"{title}\n{_cn_date(d)}，A股三大指数{together}。"
            f"截至收盘，沪指{word(dsh)}{pct(sh, dsh):.2f}%，报{sh:.2f}点；深成指{word(dsz)}"
            f"{pct(sz, dsz):.2f}%，报{sz:.2f}点；创业板指{word(dcy)}{pct(cy, dcy):.2f}%，"
            f"报{cy:.2f}点。沪深两市成交额{amount:.0f}亿元，"
            f"较上一交易日{'放量' if damount > 0 else '缩量'}"
            f"{abs(damount):.0f}亿元。盘面上，{up[0]}、{up[1]}板块涨幅居前，{down[0]}、{down[1]}板块跌幅居前。"
        )
    else:
        title = f"{_cn_date(d)}收盘：沪指{word(dsh)}，{up[0]}板块走强"
        text = (
            f"{title}\n{s.outlet}讯 {_cn_date(d)}，"
            f"沪深股市{'震荡走高' if dsh > 0 else '震荡走低'}。"
            f"上证综指收于{sh:.2f}点，{'上涨' if dsh >= 0 else '下跌'}{abs(dsh):.2f}点；"
            f"深证成指收于{sz:.2f}点，{'上涨' if dsz >= 0 else '下跌'}{abs(dsz):.2f}点。"
            f"两市合计成交{amount / 10000:.2f}万亿元。{up[0]}、{up[2]}等板块表现活跃，"
            f"{down[1]}板块调整。{north}"
        )
    return title, text


# --- lottery ------------------------------------------------------------------------------------
def _lottery(s: _Series, rng: random.Random, d: date) -> tuple[str, str]:
    s.state["issue"] = s.state.get("issue", rng.randint(20, 60)) + 1
    issue = f"{d.year}{s.state['issue']:03d}"
    if s.key == "双色球":
        red = " ".join(f"{n:02d}" for n in sorted(rng.sample(range(1, 34), 6)))
        blue = f"{rng.randint(1, 16):02d}"
        first, prize = rng.randint(1, 20), rng.randint(5_000_000, 9_000_000)
        pool = rng.uniform(15, 25)
        title = f"双色球第{issue}期开奖：头奖{first}注{prize // 10000}万"
        text = (
            f"{title}\n{_cn_date(d)}晚，中国福利彩票双色球游戏进行第{issue}期开奖。"
            f"当期双色球红球号码为{red}，蓝球号码为{blue}。当期全国销量为"
            f"{rng.uniform(3.2, 4.1):.2f}亿元。当期共开出{first}注一等奖，单注奖金为{prize}元。"
            f"二等奖开出{rng.randint(80, 260)}注，单注金额{rng.randint(100000, 300000)}元。"
            f"计奖后，双色球奖池金额为{pool:.2f}亿元。"
        )
    else:
        digits = " ".join(str(rng.randint(0, 9)) for _ in range(3))
        title = f"福彩3D第{issue}期开奖号码：{digits}"
        text = (
            f"{title}\n中国福利彩票3D游戏第{issue}期开奖公告：本期开奖号码为{digits}。"
            f"本期全国销售总额{rng.randint(48_000_000, 60_000_000)}元。"
            f"单选{rng.randint(5000, 20000)}注，"
            f"每注奖金1040元；组选三{rng.randint(0, 9000)}注，每注奖金346元；"
            f"组选六{rng.randint(0, 30000)}注，每注奖金173元。{_cn_date(d)}开奖，兑奖期限为60天。"
            f"{rng.choice(['', '本期试机号为' + ''.join(rng.choices('0123456789', k=3)) + '。'])}"
        )
    return title, text


# --- fuel price ---------------------------------------------------------------------------------
def _fuel(s: _Series, rng: random.Random, d: date) -> tuple[str, str]:
    base = {"广东": 7.95, "江苏": 7.78, "山东": 7.80}[s.key]
    p92 = base + s.state.setdefault("adj", 0.0)
    if d.day % 7 == 0:  # an adjustment window
        step = rng.choice([-0.15, -0.09, 0.08, 0.12])
        s.state["adj"] += step
        p92 = base + s.state["adj"]
    rate = rng.uniform(-4, 4)
    ton = round(abs(rate) * 30 / 5) * 5 or 10
    k = s.state.get("k", 0) % 10 + 1
    s.state["k"] = k
    title = f"今日油价：{s.key}92号汽油{p92:.2f}元/升"
    lead = rng.choice(["", f"{s.outlet}讯 ", "记者从当地加油站获悉，"])
    tank = round(ton / 1000 * 0.74 * 50, 1)
    tail = rng.choice([
        "",
        f"按此测算，加满一箱50升的92号汽油将{'多' if rate > 0 else '少'}花{tank}元。",
        "车主可根据自身情况合理安排加油时间。",
    ])  # fmt: skip
    text = (
        f"{title}\n{lead}{_cn_date(d)}{s.key}油价：92号汽油{p92:.2f}元/升，"
        f"95号汽油{p92 + 0.55:.2f}元/升，"
        f"98号汽油{p92 + 2.05:.2f}元/升，0号柴油{p92 - 0.42:.2f}元/升。"
        f"据{rng.choice(['金联创', '隆众资讯', '卓创资讯'])}测算，截至本轮计价周期第{k}个工作日，"
        f"参考原油品种均价变化率为{rate:.2f}%，"
        f"对应汽柴油{'上调' if rate > 0 else '下调'}{ton}元/吨。"
        f"本轮调价窗口将于{_cn_date(d + timedelta(days=10 - k))}24时开启。{tail}"
    )
    return title, text


# --- gold price ---------------------------------------------------------------------------------
def _gold(s: _Series, rng: random.Random, d: date) -> tuple[str, str]:
    g, dg = _walk(s, "g", 628.0, 9.0, 560.0, 700.0, rng)
    word = "上涨" if dg >= 0 else "下跌"
    brands = {"周大福": 78, "老凤祥": 76, "周生生": 79, "六福珠宝": 77, "菜百首饰": 66}
    if s.variant == 0:
        title = f"{_cn_date(d)}金价{word}：上海金{g:.2f}元/克"
        shops = "，".join(f"{b}足金饰品{round(g) + m + rng.randint(-2, 2)}元/克"
                         for b, m in brands.items())
        text = (
            f"{title}\n{_cn_date(d)}，上海黄金交易所黄金T+D收盘报{g:.2f}元/克，较前一交易日{word}"
            f"{abs(dg):.2f}元/克，涨跌幅{dg / (g - dg) * 100:+.2f}%。品牌金店方面，{shops}。"
            f"{rng.choice(['回收价方面，黄金回收价约为' + str(round(g - 8)) + '元/克。', ''])}"
        )
    else:
        title = f"今日金价查询（{d.isoformat()}）"
        text = (
            f"{title}\n今日国际现货黄金报{g * 4.35:.2f}美元/盎司，"
            f"国内黄金9999报{g + 0.6:.2f}元/克，"
            f"黄金T+D报{g:.2f}元/克，{word}{abs(dg):.2f}元。"
            f"周大福黄金价格{round(g) + 78}元/克，老凤祥黄金价格{round(g) + 76}元/克，"
            f"中国黄金基础金价{round(g) + 5}元/克，铂金价格{rng.randint(230, 260)}元/克。"
            f"{rng.choice(['', '白银T+D报' + str(rng.randint(7200, 8200)) + '元/千克。'])}"
        )
    return title, text


# --- air quality --------------------------------------------------------------------------------
def _level(aqi: int) -> str:
    for limit, name in ((50, "优"), (100, "良"), (150, "轻度污染"), (200, "中度污染")):
        if aqi <= limit:
            return name
    return "重度污染"


def _air(s: _Series, rng: random.Random, d: date) -> tuple[str, str]:
    aqi = round(_walk(s, "aqi", 80.0, 45.0, 20.0, 230.0, rng)[0])
    main = "无" if aqi <= 50 else rng.choice(["PM2.5", "PM10", "臭氧", "二氧化氮"])
    pm = round(aqi * rng.uniform(0.5, 0.8))
    advice = ("建议儿童、老年人及心脏病、呼吸系统疾病患者减少户外活动。" if aqi > 100
              else "各类人群可正常活动。")  # fmt: skip
    title = f"{s.key}今日空气质量{_level(aqi)}，AQI{aqi}"
    text = (
        f"{title}\n据{s.key}市生态环境监测中心发布，{_cn_date(d)}全市空气质量为{_level(aqi)}，"
        f"空气质量指数（AQI）为{aqi}，首要污染物为{main}，PM2.5平均浓度为{pm}微克/立方米。"
        f"预计明天空气质量{_level(max(20, aqi + rng.randint(-40, 40)))}。"
        f"{advice}"
    )
    return title, text


# --- traffic restriction ------------------------------------------------------------------------
def _traffic(s: _Series, rng: random.Random, d: date) -> tuple[str, str]:
    pairs = ["1和6", "2和7", "3和8", "4和9", "5和0"]
    wd = d.weekday()
    lead = rng.choice(["", "据北京市交管局消息，", "记者从北京市公安局公安交通管理局获悉，"])
    extra = rng.choice(["", "外省区市进京车辆同样遵守尾号限行规定。",
                        "纯电动汽车不受尾号限行限制。"])  # fmt: skip
    if wd >= 5:
        title = f"{_cn_date(d)}北京不限行"
        text = (
            f"{title}\n{_cn_date(d)}（星期{WEEKDAYS[wd]}），北京市机动车不实行尾号限行措施。"
            f"{s.outlet}提醒，下周一限行尾号为{pairs[0]}，限行时间为7时至20时，"
            f"范围为五环路以内道路（不含五环路）。{extra}"
        )
    else:
        nums = pairs[(wd + s.state.setdefault("rot", rng.randrange(5))) % 5]
        title = f"今日限行尾号{nums}"
        text = (
            f"{title}\n{lead}{_cn_date(d)}（星期{WEEKDAYS[wd]}），北京市机动车尾号限行号码为{nums}。"
            f"限行时间为7时至20时，限行范围为五环路以内道路（不含五环路）。{extra}"
            f"{s.outlet}提醒，违反限行规定的车辆将被处以罚款，请广大车主合理安排出行。"
        )
    return title, text


# --- sports results -----------------------------------------------------------------------------
_TEAMS = ["广东宏远", "辽宁本钢", "浙江稠州", "上海久事", "北京首钢", "新疆伊力特", "山东高速",
          "深圳马可波罗", "浙江广厦", "青岛国信", "北京控股", "天津先行者"]  # fmt: skip
_PLAYERS = ["赵继伟", "胡明轩", "王哲林", "吴前", "孙铭徽", "周琦", "张镇麟", "郭艾伦",
            "阿不都沙拉木"]  # fmt: skip


def _sports(s: _Series, rng: random.Random, d: date) -> tuple[str, str]:
    s.state["round"] = s.state.get("round", rng.randint(20, 30)) + 1
    a, b = rng.sample(_TEAMS, 2)
    sa, sb = rng.randint(95, 125), rng.randint(85, 118)
    if sa == sb:
        sa += 3
    win, lose = (a, b) if sa > sb else (b, a)
    player = rng.choice(_PLAYERS)
    title = f"CBA战报：{a}{sa}比{sb}{b}"
    text = (
        f"{title}\n{_cn_date(d)}晚，CBA常规赛第{s.state['round']}轮继续进行，{a}主场迎战{b}。"
        f"最终{win}以{max(sa, sb)}比{min(sa, sb)}战胜{lose}。"
        f"四节比分为{'、'.join(f'{rng.randint(18, 34)}-{rng.randint(18, 34)}' for _ in range(4))}。"
        f"{player}全场砍下{rng.randint(12, 36)}分{rng.randint(2, 12)}个篮板"
        f"{rng.randint(1, 10)}次助攻。"
    )
    return title, text


def _series(rng: random.Random) -> list[_Series]:
    spec: list[tuple[str, str, str, int, _Writer]] = [
        ("weather", "北京", "北京日报", 0, _weather),
        ("weather", "上海", "新民晚报", 1, _weather),
        ("weather", "广州", "南方都市报", 0, _weather),
        ("fx", "美元", "证券时报", 0, _fx),
        ("fx", "美元", "新华社", 1, _fx),
        ("market", "A股", "东方财富网", 0, _market),
        ("market", "A股", "中国证券报", 1, _market),
        ("lottery", "双色球", "中国福彩网", 0, _lottery),
        ("lottery", "福彩3D", "中国福彩网", 0, _lottery),
        ("fuel", "广东", "汽车之家", 0, _fuel),
        ("fuel", "江苏", "汽车之家", 0, _fuel),
        ("gold", "上海金", "金投网", 0, _gold),
        ("gold", "金店", "中金在线", 1, _gold),
        ("air", "北京", "北京青年报", 0, _air),
        ("air", "成都", "华西都市报", 0, _air),
        ("traffic", "北京", "北京交通广播", 0, _traffic),
        ("sports", "CBA", "新浪体育", 0, _sports),
    ]
    return [_Series(kind, key, outlet, variant, rng.uniform(6, 22), fn)
            for kind, key, outlet, variant, fn in spec]


def daily_reports(days: int = 10, *, start: date = date(2026, 3, 2),
                  seed: int = 1) -> Iterator[Report]:
    """Every series' report for each of ``days`` consecutive days from ``start`` (day by day)."""
    rng = random.Random(seed)
    series = _series(rng)
    for day in range(days):
        d = start + timedelta(days=day)
        for s in series:
            if s.kind == "lottery" and s.key == "双色球" and d.weekday() not in (1, 3, 6):
                continue  # drawn on Tuesdays, Thursdays and Sundays
            title, text = s.write(s, rng, d)
            hour = min(23.9, max(0.1, s.hour + rng.uniform(-0.5, 0.5)))
            yield Report(s.name, s.kind, day, d, s.outlet, title, text, hour)
