"""Labelled near-duplicate pairs made from the dev corpora (format: :mod:`newscrawl.evaluation`).

Positive kinds are the edits of :mod:`evalkit.edits`; near-identical negatives are left out and
counted. docs/design/fingerprint.md#quality-evaluation.
"""

from __future__ import annotations

import os
import random
import re
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evalkit.edits import EDITS, EditContext
from newscrawl.evaluation import Pair, PairFormatError

NEAR_IDENTICAL = 0.5


@dataclass(frozen=True)
class Doc:
    text: str
    category: str = ""
    ident: str = ""


@dataclass
class PairSet:
    pairs: list[Pair] = field(default_factory=list)
    excluded: dict[str, int] = field(
        default_factory=dict
    )  # kind -> near-identical negatives left out


# --- similarity used only to keep true reprints out of the negatives -----------------------------
_DROP_RE = re.compile(r"[\W_]+")


def normalise(text: str) -> str:
    """NFKC, case folded, punctuation and spaces dropped."""
    return _DROP_RE.sub("", unicodedata.normalize("NFKC", text).casefold())


def grams(text: str) -> set[str]:
    """Character 3-grams of the normalised text."""
    t = normalise(text)
    return {t[i : i + 3] for i in range(max(len(t) - 2, 1))}


def char3_jaccard(a: str, b: str) -> float:
    ga, gb = grams(a), grams(b)
    return len(ga & gb) / len(ga | gb) if ga or gb else 1.0


# --- corpus loaders ------------------------------------------------------------------------------
THUCNEWS = "thucnews_sample/cnews.dev500.txt"  # in the dev corpus
SOGOU = "sogoucs_smarty_sample/news_sohusite_xml.smarty.dat"
SOHU = "sohu2021_textmatch_text2vec"


def load_thucnews(path: str | os.PathLike[str]) -> list[Doc]:
    """THUCNews lines ``category<TAB>text``."""
    docs = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            cat, sep, text = line.partition("\t")
            if not sep:
                raise PairFormatError(f"{path}:{n}: expected 'category<TAB>text'")
            docs.append(Doc(text=text, category=cat, ident=f"thucnews:{n}"))
    return docs


_SOGOU_RE = re.compile(
    r"<doc>.*?<url>(?P<url>.*?)</url>.*?<contenttitle>(?P<title>.*?)</contenttitle>"
    r".*?<content>(?P<content>.*?)</content>.*?</doc>",
    re.S,
)


def load_sogou(path: str | os.PathLike[str]) -> list[Doc]:
    """SogouCS pseudo-XML: text = title, newline, content; category = host; empty bodies skipped."""
    raw = Path(path).read_text(encoding="utf-8")
    docs = []
    for m in _SOGOU_RE.finditer(raw):
        body = m.group("content").strip()
        if not body:
            continue
        host = re.sub(r"^https?://([^/]+).*", r"\1", m.group("url"))
        docs.append(Doc(text=f"{m.group('title').strip()}\n{body}", category=host, ident=m["url"]))
    return docs


def _add_negative(out: PairSet, a: str, b: str, kind: str) -> None:
    if char3_jaccard(a, b) >= NEAR_IDENTICAL:
        out.excluded[kind] = out.excluded.get(kind, 0) + 1
    else:
        out.pairs.append(Pair(a, b, False, kind))


# --- generation ----------------------------------------------------------------------------------
def make_pairs(
    docs: Sequence[Doc],
    *,
    seed: int = 0,
    kinds: Sequence[str] | None = None,
    negatives_per_doc: int = 2,
    min_chars: int = 200,
) -> PairSet:
    """Positive pairs (one per doc and edit kind) and same-category negatives; deterministic.

    Docs shorter than ``min_chars`` characters are skipped (not news articles). Exact duplicate
    bodies in the corpus become ``exact`` positives and are never paired as negatives.
    """
    kinds = list(kinds) if kinds is not None else list(EDITS)
    unknown = [k for k in kinds if k not in EDITS]
    if unknown:
        raise ValueError(f"unknown edit kinds {unknown}; known: {sorted(EDITS)}")
    rng = random.Random(seed)
    usable = [d for d in docs if len(d.text) >= min_chars]
    by_text: dict[str, list[Doc]] = defaultdict(list)
    for d in usable:
        by_text[d.text].append(d)
    unique = [group[0] for group in by_text.values()]
    out = PairSet()
    for group in by_text.values():
        for dup in group[1:]:
            out.pairs.append(Pair(group[0].text, dup.text, True, "exact"))
    texts = [d.text for d in unique]
    for i, doc in enumerate(unique):
        ctx = EditContext(others=texts[:i] + texts[i + 1 :])
        for kind in kinds:
            edited = EDITS[kind](doc.text, random.Random(f"{seed}:{i}:{kind}"), ctx)
            out.pairs.append(Pair(doc.text, edited, True, kind))
    by_cat: dict[str, list[int]] = defaultdict(list)
    for i, doc in enumerate(unique):
        by_cat[doc.category].append(i)
    for i, doc in enumerate(unique):
        peers = [j for j in by_cat[doc.category] if j != i]
        for j in rng.sample(peers, min(len(peers), negatives_per_doc)):
            _add_negative(out, doc.text, unique[j].text, "same_category")
    return out


