"""Chinese byline patterns that the extraction library misses.

Portals print the author in the text around the article, not in metadata: ``作者：张三``,
``（记者 李四）``, ``本报记者 王五``, ``文/赵六``. :func:`author_from_lines` looks for them in the
text just before and just after the article body. The editor of a ``责任编辑：孙七`` sign-off is not
an author.
"""

from __future__ import annotations

import re

__all__ = ["AUTHOR_SEPARATOR", "BYLINE_PATTERNS", "author_from_lines", "clean_author", "cjk_share"]

# Several authors are kept in one string, joined by this separator ("张三; 李四", "Jane Doe; John
# Roe"): a space cannot separate them, English names contain spaces.
AUTHOR_SEPARATOR = "; "

_CJK = r"\u4e00-\u9fff"
# A Chinese name: 2-4 ideographs (middle dot allowed for transliterated names), ending at a
# delimiter so that "记者 张三报道" does not swallow the following word (the shortest name that
# ends at one: "周炜本报记者" is 周炜).
_NAME = rf"(?![们的在是说了表称问从对向将也都和与就被把这那近日从])[{_CJK}][{_CJK}·]{{1,3}}?"
_END = r"(?=$|[\s)）\]】/|,，、。;；:：<>\d]|摄|报道|编辑|来源|发布|发表|本报|记者|实习生|通讯员)"
_NAMES = rf"{_NAME}{_END}(?:[ \t、,，]+{_NAME}{_END})*"
_LATIN_NAME = r"[A-Za-z][\w.\-]*(?: [A-Z][\w.\-]*){0,3}(?![\w=\"'])"

# Label words: they follow or precede a byline but are not names ("作者：责任编辑：张三",
# "责任编辑：吕峥 来源：新华网"). A run of names stops at the first of them.
_NOT_NAMES = frozenset({"作者", "记者", "编辑", "责任", "责任编辑", "来源", "本报", "通讯员",
                        "实习生",
                        "摄影", "手记", "校对", "审核", "发布", "时间", "日期", "未知", "佚名",
                        "整合", "整理", "综合", "编译", "报道", "关注", "企鹅号", "原创", "转载",
                        "出处", "单位", "本人", "个人", "观点", "博客", "专栏", "文章", "最新",
                        "主页", "首页", "论坛", "帖子", "回复", "楼主", "签名", "发表于", "查看"})
# Words that begin running text after 记者/作者 ("记者获悉", "据记者采访了解", "作者本人观点"): a
# candidate starting with one of them is not a name.
_TEXT_WORDS = ("获悉", "证实", "了解", "采访", "调查", "发现", "看到", "注意到", "走访", "探访",
               "观察", "暗访", "致电", "联系", "询问", "提问", "表示", "认为", "介绍", "得知",
               "查询", "实地", "随机", "现场", "来到", "从", "在", "向", "对", "与", "和", "本人",
               "个人", "单位", "博客", "女儿", "儿子", "妻子", "丈夫", "家人", "朋友", "最新",
               "简介", "观点", "声明", "授权", "所有", "同意", "保留", "专栏", "文章")
# Characters a personal or agency name does not contain (pronouns, particles, auxiliaries).
_NOT_IN_NAMES = frozenset("我你您他她它们的了吗呢吧啊么这那请")
# Common surnames (the most frequent ~130 cover about 90 % of the population). A name printed
# straight after 记者 with no separator ("本报记者王五") must start with one: "记者获悉",
# "记者证实" are running text.
_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程"
    "苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝"
    "龚邵万钱严覃武戴莫孔向汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞"
    "左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕"
    "屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂全佟应臧"
    "闵苟邬边卞姬师和仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩明佘池查麻苑迟邝官封谈匡鞠惠荆乐冀郁胥"
    "南班储原栗燕楚鄢劳谌奚皮粟冼蔺楼盘满闻位厉伊仝区郜海阚花权强帅屠豆朴盖练廉禹井祖漆巴丰支"
    "卿国狄平计索宣晋相初门云容敬来扈晁芮都普阙浦戈伏鹿薄邸雍辜羊阿乌母裘亓修邰赫杭况那宿鲜印"
    "逯隆茹诸战慕危玉银亢嵇公哈湛宾戎勾茅利於呼居揭干但尉冶斯元束檀衣信展阴昝智幸奉植衡富尧闭由"
)
# A transliteration after a Chinese name: "周思博 (Joel Spolsky)".
_ALSO_LATIN = r"(?:[ \t]*[(（]([A-Z][A-Za-z.\-]*(?: [A-Z][A-Za-z.\-]*){0,3})[)）])?"
_IDEOGRAPH = re.compile(rf"[{_CJK}]")
# An explicit separator between a label and a name, never across lines.
_SEP = r"(?:[ \t\u3000\xa0]*[:：︱|][ \t\u3000\xa0]*|[ \t\u3000\xa0]+)"
# What stands right before 记者 in running text ("据记者", "有记者", "向记者", "接受记者"); in a
# byline it is a line start, a delimiter or the outlet ("本报记者", "澎湃新闻记者", "见习记者").
_BEFORE_REPORTER = r"(?<![据有向对让被跟和与名位些的该各多诉受请及等给])"


# Labels of the people a byline names: "记者 张三 通讯员 李四", "本报实习生 刘五 本报记者 王六".
_REPORTER = r"(?:见习|实习|特约|首席)?记者|实习生|通讯员"
_RUN_LABEL = re.compile(rf"(?:本报|本台|本刊|本网)?(?:{_REPORTER})")
# A further label and names right after a reporter byline: its names belong to the same byline.
_CHAIN = re.compile(rf"\s*(?:本报|本台|本刊|本网)?(?:{_REPORTER}){_SEP}?({_NAMES})")


def _reporter(label: str) -> str:
    return rf"{_BEFORE_REPORTER}(?:{label})"


# Patterns in order of preference, each with the zones it applies to (see author_from_lines).
# A name printed straight after its label with no separator must start with a surname. The first
# pattern that yields a name wins.
_PATTERNS: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (re.compile(rf"作\s*者(?:{_SEP}|[ \t]*[\[【(（][ \t]*)({_NAMES}|{_LATIN_NAME}){_ALSO_LATIN}"),
     frozenset({"before", "head", "tail", "after"})),
    (re.compile(rf"[（(]\s*[{_CJK}]{{0,8}}?记者{_SEP}?({_NAMES})\s*[)）]"),
     frozenset({"before", "head", "tail", "after"})),
    (re.compile(rf"{_reporter(_REPORTER)}{_SEP}?({_NAMES})"),
     frozenset({"before", "head", "tail", "after"})),
    (re.compile(rf"(?:^|\s)文\s*[/／|]\s*({_NAMES})"), frozenset({"before", "head", "tail"})),
    # a bare "编辑：" line, the weakest: the labelled pages name such an editor as the author when
    # the page names no writer; a "责任编辑" sign-off never is
    (re.compile(rf"(?<!责任)编辑\s*[:：]\s*({_NAMES}|{_LATIN_NAME})"),
     frozenset({"before", "head", "tail", "after"})),
)


_IDEOGRAPHS = re.compile("[\u4e00-\u9fff]")


def cjk_share(text: str) -> float:
    """Share of CJK ideographs among the non-space characters of ``text``."""
    chars = "".join(text[:5000].split())
    if not chars:
        return 0.0
    return len(_IDEOGRAPHS.findall(chars)) / len(chars)


def is_cjk_name(name: str) -> bool:
    """A Chinese personal or agency name, not a word of running text or a label."""
    return (
        name not in _NOT_NAMES
        and not name.startswith(_TEXT_WORDS)
        and not any(c in _NOT_IN_NAMES for c in name)
    )


# A reporter label glued in front of a name ("记者王明", "本报记者王五"), a name left after it.
_GLUED_LABEL = re.compile(r"(?:本报|特约|实习)?(?:记者|通讯员)(?=..)")


def _names(run: str, *, surname_needed: bool) -> list[str]:
    """The names in a run such as ``张三 李四``, stopping at the first word that is not a name."""
    out: list[str] = []
    for word in re.split(r"[\s、,，]+", run.strip()):
        if not word:
            continue
        cjk = re.fullmatch(rf"[{_CJK}·]+", word) is not None
        if cjk and _RUN_LABEL.fullmatch(word):
            continue  # "记者 张三 通讯员 李四": the next label of the same byline
        glued = _GLUED_LABEL.match(word) if cjk else None
        if glued is not None and word[glued.end()] in _SURNAMES:
            word = word[glued.end():]  # "作者：记者王明": the label glued to the name
        if cjk and not is_cjk_name(word):
            break
        if cjk and surname_needed and word[0] not in _SURNAMES:
            break
        out.append(word)
    return out


def _chained(zone: str, pos: int) -> list[str]:
    """The names of the reporter labels that follow a byline at ``pos`` ("… 通讯员 李四")."""
    out: list[str] = []
    while (m := _CHAIN.match(zone, pos)) is not None:
        names = _names(m.group(1), surname_needed=False)
        if not names:
            break
        out += names
        pos = m.end(1)
    return out


# The first three patterns name the writer (作者, 记者); the others (文/, 编辑) are weaker: the
# caller may prefer page metadata to them.
BYLINE_PATTERNS = 3


def author_from_lines(
    *, before: str = "", head: str = "", tail: str = "", after: str = "",
    patterns: int | None = None,
) -> str | None:
    """The first byline found, trying each pattern over its zones before the next pattern.

    Zones: ``before`` (page text between title and body), ``head`` / ``tail`` (first / last
    lines of the body), ``after`` (page text just below the body). Several names are joined with
    :data:`AUTHOR_SEPARATOR`. ``patterns`` limits the search to the first so many patterns
    (:data:`BYLINE_PATTERNS`: the writer's byline only).
    """
    zones = {"before": before, "head": head, "tail": tail, "after": after}
    for pattern, where in _PATTERNS[:patterns]:
        for name in ("before", "head", "tail", "after"):
            zone = zones[name]
            if name not in where or not zone:
                continue
            for m in pattern.finditer(zone):
                glued = m.start(1) > 0 and _IDEOGRAPH.match(zone[m.start(1) - 1]) is not None
                names = _names(m.group(1), surname_needed=glued)
                latin = m.group(2) if m.re.groups >= 2 else None
                if len(names) == 1 and latin:
                    names[0] = f"{names[0]} ({latin})"
                if names and any(label in m.group(0) for label in ("记者", "实习生", "通讯员")):
                    names += [n for n in _chained(zone, m.end(1)) if n not in names]
                if names:
                    return AUTHOR_SEPARATOR.join(names)
    return None


# Labels in front of a name in an author field ("作者：记者 刘洋", "By Jane Doe", "Analysis by X").
_LABEL_PREFIX = re.compile(
    r"^(?:(?:作\s*者|记\s*者|本报记者|特约记者|通讯员|(?:责任)?编\s*辑|来\s*源|撰\s*文)\s*[:：︱|/／]?\s*"
    r"|(?:文|图|摄影?)\s*[:：︱|/／]\s*)+|^(?:[A-Za-z ]{0,30}?\bby|written by|words by)\s+",
    re.I,
)
# An English author part that is a job title or an affiliation, not a person
# ("AP National Political Writer", "CNN Editor-at-large").
_JOB_TITLE = re.compile(
    r"\b(?:writer|editor|editors|reporter|reporters|correspondent|contributor|columnist|staff"
    r"|producer|analyst|team|desk|at-large|bureau|newsroom)\b",
    re.I,
)
_JUNK_PARTS = frozenset({"name", "email", "email com", "e-mail", "com", "username", "admin",
                         "administrator", "editor", "staff", "unknown", "anonymous", "guest"})
_NAME_PARTICLES = frozenset({"de", "van", "von", "der", "den", "da", "del", "della", "di", "du",
                             "la", "le", "bin", "binti", "al", "el", "y", "dos", "das", "ter"})
_CLAUSE = re.compile(r"\s+(?:is|was|has|are|and|for|in|at|on|writes|reports|covers)\s.*$")


def _clean_part(part: str) -> str | None:
    part = _LABEL_PREFIX.sub("", part.strip()).strip(" \t:：,，|")
    if not part:
        return None
    if re.search(rf"[{_CJK}]", part):
        names = _names(part, surname_needed=False)
        return AUTHOR_SEPARATOR.join(names) if names else None
    part = _CLAUSE.sub("", part)  # "Phil Helsel is a reporter" -> "Phil Helsel"
    words = part.split()
    if not words or part.lower() in _JUNK_PARTS or _JOB_TITLE.search(part):
        return None
    if any(w[0].islower() and w.lower() not in _NAME_PARTICLES for w in words):
        return None  # running text, not a name
    return part


def clean_author(value: str | None) -> str | None:
    """An author field cleaned to names: labels stripped, job titles, common words and running
    text dropped, several names joined with :data:`AUTHOR_SEPARATOR`; None when nothing is left.

    A field holding several labelled parts ("作者：未知 责任编辑：张三") is read like a byline.
    """
    if not value:
        return None
    value = re.sub(r"\s+", " ", value).strip()
    if re.search(r"(?:作\s*者|编\s*辑)\s*[:：].*(?:作\s*者|编\s*辑)\s*[:：]", value):
        return author_from_lines(before=value)
    parts = [p for p in (_clean_part(x) for x in re.split(r"\s*[;；]\s*|\s+(?:and|&)\s+", value))
             if p]
    names = list(dict.fromkeys(n for p in parts for n in p.split(AUTHOR_SEPARATOR)))
    unique = {n.lower(): n for n in reversed(names)}  # "Jane Doe; JANE DOE" -> "Jane Doe"
    return AUTHOR_SEPARATOR.join(n for n in names if unique.get(n.lower()) == n) or None
