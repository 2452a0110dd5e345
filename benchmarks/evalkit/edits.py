"""Reprint edits: one deterministic function per edit kind, ``edit(text, rng, ctx) -> text``.

The kinds and their magnitudes: docs/design/fingerprint.md#quality-evaluation.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

SENTENCE_RE = re.compile(r"[^。！？!?；;\n]*(?:[。！？!?；;]+[”’」』）)]*|\n|$)")

SITES = [
    "新华网", "人民网", "央视网", "中国新闻网", "澎湃新闻", "新浪新闻", "腾讯新闻", "网易新闻",
    "搜狐新闻", "凤凰网", "环球时报", "南方都市报", "北京青年报", "光明网", "中国日报网",
    "界面新闻",
]  # fmt: skip
NAMES = ["王小明", "李华", "张伟", "刘洋", "陈静", "杨帆", "赵磊", "黄丽", "周杰", "吴敏", "徐鹏",
         "孙悦"]  # fmt: skip
FOOTERS = [
    "（本文来自{site}，转载请注明出处。文中观点仅代表作者本人，不代表本站立场。）",
    "声明：本文转载自{site}，版权归原作者所有，如有侵权请联系删除。",
    "更多精彩内容，请下载{site}客户端，或关注{site}官方微信公众号。",
    "【免责声明】本文仅代表作者个人观点，与{site}无关。其原创性以及文中陈述文字和内容未经本站证实。",
    "（编辑：{name}）欢迎关注{site}，获取更多新闻资讯。扫描二维码下载客户端，随时随地看新闻。",
]
COMMON_CJK = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过"
    "子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体"
    "制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内"
)
HEADLINE_CHARS = 24

Edit = Callable[[str, random.Random, "EditContext"], str]


@dataclass
class EditContext:
    """Other articles of the corpus: donors of sentences and headlines (never the edited text)."""

    others: Sequence[str] = field(default_factory=list)

    def other(self, rng: random.Random, not_text: str) -> str:
        for _ in range(10):
            if not self.others:
                break
            cand = self.others[rng.randrange(len(self.others))]
            if cand != not_text:
                return cand
        return "据悉，相关部门正在进一步调查此事，具体情况将在近日公布。"


def sentences(text: str) -> list[str]:
    """The text cut after sentence-ending punctuation; ``"".join(sentences(t)) == t``."""
    parts = [m.group(0) for m in SENTENCE_RE.finditer(text) if m.group(0)]
    return parts if parts else [text]


def _headline_span(text: str) -> int:
    nl = text.find("\n")
    if 0 < nl <= 80:
        return nl
    return min(HEADLINE_CHARS, len(text) // 4)


def source_line(text: str, rng: random.Random, ctx: EditContext) -> str:
    site, editor, author = rng.choice(SITES), rng.choice(NAMES), rng.choice(NAMES)
    line = f"来源：{site} 作者：{author} 责任编辑：{editor}"
    return f"{line}\n{text}" if rng.random() < 0.5 else f"{text}\n{line}"


def footer(text: str, rng: random.Random, ctx: EditContext) -> str:
    tpl = rng.choice(FOOTERS)
    return text + "\n" + tpl.format(site=rng.choice(SITES), name=rng.choice(NAMES))


def drop_sentence(text: str, rng: random.Random, ctx: EditContext) -> str:
    sents = sentences(text)
    if len(sents) < 3:
        return text[: len(text) * 9 // 10]
    del sents[rng.randrange(1, len(sents))]
    return "".join(sents)


def insert_sentence(text: str, rng: random.Random, ctx: EditContext) -> str:
    donor = [s for s in sentences(ctx.other(rng, text)) if len(s) >= 12] or [
        "据悉，此事仍在调查中。"
    ]
    sents = sentences(text)
    pos = rng.randrange(1, len(sents) + 1)
    sents.insert(pos, rng.choice(donor))
    return "".join(sents)


HEADLINE_TAGS = ["【快讯】", "重磅！", "（图）", "最新：", "独家｜", "（组图）", "！", "【热点】"]


def headline(text: str, rng: random.Random, ctx: EditContext) -> str:
    """Reword the headline as portals do: drop one of its parts, reorder parts, add a tag."""
    span = _headline_span(text)
    head, body = text[:span], text[span:]
    parts = [p for p in re.split(r"[\s，,：:！!？?|｜]+", head) if p]
    if len(parts) >= 2 and rng.random() < 0.5:
        del parts[rng.randrange(len(parts))]
    elif len(parts) >= 2:
        rng.shuffle(parts)
    elif parts and len(parts[0]) > 6:
        cut = rng.randrange(2, len(parts[0]) // 2)
        parts[0] = parts[0][cut:] if rng.random() < 0.5 else parts[0][:-cut]
    tag = rng.choice(HEADLINE_TAGS)
    new = " ".join(parts)
    new = tag + new if tag.startswith(("【", "最", "独", "重")) else new + tag
    return new + body


_TO_FULL = {c: chr(ord(c) + 0xFEE0) for c in map(chr, range(0x21, 0x7F))}
_TO_HALF = {"，": ",", "。": ".", "：": ":", "；": ";", "！": "!", "？": "?", "（": "(", "）": ")",
            "“": '"', "”": '"', "、": ","}  # fmt: skip


def width(text: str, rng: random.Random, ctx: EditContext) -> str:
    return "".join(_TO_FULL.get(c) or _TO_HALF.get(c) or c for c in text)


def typos(text: str, rng: random.Random, ctx: EditContext) -> str:
    chars = list(text)
    cjk = [i for i, c in enumerate(chars) if "\u4e00" <= c <= "\u9fff"]
    for i in rng.sample(cjk, min(len(cjk), rng.randint(2, 4))):
        chars[i] = rng.choice(COMMON_CJK.replace(chars[i], ""))
    return "".join(chars)


def truncate(text: str, rng: random.Random, ctx: EditContext) -> str:
    keep = int(len(text) * (1 - rng.uniform(0.05, 0.20)))
    cut = text[:keep]
    ends = [m.end() for m in re.finditer(r"[。！？!?]", cut)]
    if ends and ends[-1] >= keep * 0.8:
        return cut[: ends[-1]]
    return cut


EDITS: dict[str, Edit] = {
    "source_line": source_line,
    "footer": footer,
    "drop_sentence": drop_sentence,
    "insert_sentence": insert_sentence,
    "headline": headline,
    "width": width,
    "typos": typos,
    "truncate": truncate,
}


BASE_KINDS = tuple(EDITS)


def combo(text: str, rng: random.Random, ctx: EditContext) -> str:
    first, second = rng.sample(BASE_KINDS, 2)
    return EDITS[second](EDITS[first](text, rng, ctx), rng, ctx)


EDITS["combo"] = combo


# --- further reprint edits met in a crawl stream (benchmarks/make_stream.py) -------------------
# Kept out of ``EDITS`` so the pair benchmark (every kind of ``EDITS`` on every article) keeps
# its tables; ``STREAM_EDITS`` holds these and the reprint edits of ``EDITS`` a stream uses.
TAGS = ["【独家】", "[组图]", "【视频】", "（组图）", "[图]", "突发！", "【权威发布】",
        "（附视频）"]  # fmt: skip
CAPTIONS = [
    "（图为活动现场。{site}记者 {name} 摄）",
    "图片来源：视觉中国",
    "（资料图）",
    "▲图为现场照片。图片来源：{site}",
    "图：{name}/摄",
    "（{site}发 {name} 摄）",
]
EDITOR_LINES = ["（责任编辑：{name}）", "[责任编辑:{name}]", "编辑：{name}", "【编辑:{name}】",
                "（原标题：{head}）"]  # fmt: skip
EDITOR_NOTES = [
    "编者按：{head}一事引发广泛关注。本网今起推出系列报道，敬请关注。",
    "【编者按】近日，{head}。为此，记者进行了采访，现将有关情况整理如下，供读者参考。",
    "编者按：本文转自{site}，文章观点仅代表作者本人，供读者参考。",
]


def _short_headline(text: str) -> str:
    """A headline-like start of ``text``: its first line's first clause (6-20 characters)."""
    head = text.strip().split("\n", 1)[0][:40]
    first = re.split(r"[\s，,。！？!?：:；;]", head)[0]
    return first[:20] if len(first) >= 6 else head[:16]


def tag(text: str, rng: random.Random, ctx: EditContext) -> str:
    """A headline tag such as "【独家】" or "[组图]", before or after the headline."""
    t = rng.choice(TAGS)
    if rng.random() < 0.6:
        return t + text
    span = _headline_span(text)
    return text[:span] + t + text[span:]


def editor_line(text: str, rng: random.Random, ctx: EditContext) -> str:
    """An editor's line ("（责任编辑：张伟）", "（原标题：...）") appended."""
    line = rng.choice(EDITOR_LINES).format(name=rng.choice(NAMES), head=_short_headline(text))
    return f"{text}\n{line}" if rng.random() < 0.7 else f"{text}{line}"


def caption(text: str, rng: random.Random, ctx: EditContext) -> str:
    """One or two image captions inserted at sentence boundaries."""
    sents = sentences(text)
    for _ in range(rng.randint(1, 2)):
        cap = rng.choice(CAPTIONS).format(site=rng.choice(SITES), name=rng.choice(NAMES))
        sents.insert(rng.randrange(1, len(sents) + 1), "\n" + cap + "\n")
    return "".join(sents)


def related_reading(text: str, rng: random.Random, ctx: EditContext) -> str:
    """A "相关阅读" list of 3-5 headlines of other articles appended."""
    heads = list(dict.fromkeys(_short_headline(ctx.other(rng, text)) for _ in range(5)))
    heads = heads[: rng.randint(3, 5)]
    label = rng.choice(["相关阅读：", "【相关阅读】", "延伸阅读", "相关新闻：", "推荐阅读"])
    bullet = rng.choice(["", "·", "▪ ", "> "])
    return text + "\n" + label + "\n" + "\n".join(bullet + h for h in heads)


def editor_note(text: str, rng: random.Random, ctx: EditContext) -> str:
    """An editor's note ("编者按：...") put before the text."""
    note = rng.choice(EDITOR_NOTES).format(head=_short_headline(text), site=rng.choice(SITES))
    return note + "\n" + text


STREAM_EDITS: dict[str, Edit] = {
    "source_line": source_line,
    "editor_line": editor_line,
    "footer": footer,
    "related_reading": related_reading,
    "caption": caption,
    "tag": tag,
    "headline": headline,
    "editor_note": editor_note,
    "drop_sentence": drop_sentence,
    "truncate": truncate,
    "typos": typos,
    "width": width,
}
