"""The parts of an article body split around an ad or embed into sibling containers, and a
labelled line the library took from outside the body's container.

See docs/design/extraction.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import lxml.html
from lxml import etree

from newscrawl.extract.page import element_text

__all__ = ["continued", "outside_tail"]

_P_XPATH = etree.XPath("//body//p")
_NOT_WORD = re.compile(r"[\W_]+")
# Continuations of a split article body (see _continued).
_AD_NAME = re.compile(
    r"(?:^|[\s_-])(?:ads?|advert\w*|ad-?slot|ad-?container|dfp|gpt|promo\w*|sponsor\w*|embed\w*"
    r"|video|player|banner|outbrain|taboola|newsletter|inline-\w+)(?:$|[\s_-])",
    re.I,
)
_BETWEEN_MAX_CHARS = 200
_CONTINUATION_MIN_LINE = 20
_PROSE_LINE = 40  # a paragraph line is at least this long; link and name lists are shorter


def _norm_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _between_parts(el: etree._Element) -> bool:
    """An element that may sit between two parts of one article: an ad, an embed, a caption, a
    short promo (named so, or short, and without a paragraph of its own)."""
    if not isinstance(el.tag, str):
        return True  # a comment
    if _AD_NAME.search(f"{el.get('class') or ''} {el.get('id') or ''}"):
        return True
    text = _norm_line(el.text_content())
    return len(text) <= _BETWEEN_MAX_CHARS


def continued(tree: lxml.html.HtmlElement, text: str, min_chars: int) -> str:
    """``text`` with the paragraphs of its container's continuations.

    Some pages split one article into sibling containers of the same kind (two
    ``div.article-body``) around a full-width ad or embed; the library keeps one of them. A
    sibling with the container's tag and class, separated from it only by ad-like elements, is
    the same article: its lines are added before or after, in page order.
    """
    wanted = {_norm_line(ln) for ln in text.split("\n") if len(ln) >= _CONTINUATION_MIN_LINE}
    if len(wanted) < 2:
        return text
    found = [p for p in _P_XPATH(tree) if _norm_line(p.text_content()) in wanted]
    if len(found) < 2:
        return text
    container = _container(found)
    if container is None or container.tag in ("body", "html"):
        return text
    parent = container.getparent()
    if parent is None:
        return text
    if not (container.get("class") or "").strip():
        return text  # a bare <div>/<td> of a table layout: its siblings are anything
    signature = (container.tag, container.get("class"))
    siblings = list(parent)
    at = siblings.index(container)
    known = set(wanted)

    def gather(order: list[etree._Element]) -> list[str]:
        out: list[str] = []
        for sib in order:
            if isinstance(sib.tag, str) and (sib.tag, sib.get("class")) == signature:
                lines = [ln for ln in element_text(sib).split("\n")
                         if _norm_line(ln) not in known]
                prose = sum(len(ln) for ln in lines if len(ln) >= _PROSE_LINE)
                if prose * 2 < sum(len(ln) for ln in lines):
                    break  # a list of links or names, not the article's paragraphs
                out.extend(lines)
            elif not _between_parts(sib):
                break
        return out

    after = gather(siblings[at + 1 :])
    before = list(reversed(gather(list(reversed(siblings[:at])))))
    if sum(len(ln) for ln in before + after) < min_chars:
        return text
    return "\n".join([*before, text, *after])


def _start(line: str) -> str:
    return _NOT_WORD.sub("", line)[:_CONTINUATION_MIN_LINE]


def _container(found: list[etree._Element]) -> etree._Element | None:
    """The nearest element holding all of ``found`` (paragraphs in page order): the parent of
    one paragraph alone."""
    if not found:
        return None
    if len(found) == 1:
        return found[0].getparent()
    last_ancestors = set(found[-1].iterancestors())
    return next((a for a in found[0].iterancestors() if a in last_ancestors), None)


def outside_tail(tree: lxml.html.HtmlElement, text: str, is_label: Callable[[str], bool]) -> str:
    """``text`` without its last line when that line is a labelled line (``is_label``: a
    ``责任编辑：李明`` sign-off) printed outside the container of the body's paragraphs.

    The library takes such a line from around the article when the article is short, and leaves
    it out of a long one of the same template: cut, every text of a portal ends alike. A sign-off
    inside the container is part of the text and stays (docs/design/extraction.md).
    """
    lines = text.split("\n")
    if len(lines) < 2 or not is_label(lines[-1]):
        return text
    # a paragraph is known by the letters and digits it starts with (the text's lines are
    # cleaned of what the page may hold: a private-use character, a control character)
    wanted = {_start(ln) for ln in lines[:-1] if len(ln) >= _CONTINUATION_MIN_LINE}
    container = _container([p for p in _P_XPATH(tree) if _start(p.text_content()) in wanted])
    if container is None or container.tag in ("body", "html"):
        return text
    # the container's text holds the line (letters and digits, as above): it is printed inside
    if _NOT_WORD.sub("", lines[-1]) in _NOT_WORD.sub("", container.text_content()):
        return text
    return "\n".join(lines[:-1])
