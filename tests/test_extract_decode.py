"""Decoding: trust the bytes, not the declaration (pages built here; no shared corpus)."""

from __future__ import annotations

import pytest

from newscrawl.extract import decode_html, decode_html_detailed, has_mojibake, validate_encoding

ZH = "国务院发布关于进一步优化营商环境的意见，记者从发布会上了解到相关政策细节。"


def page(charset_meta: str | None, body: str = ZH) -> str:
    meta = f'<meta http-equiv="Content-Type" content="text/html; charset={charset_meta}">' \
        if charset_meta else ""
    return f"<html><head>{meta}<title>news</title></head><body><p>{body}</p></body></html>"


def test_gbk_bytes_with_wrong_meta_utf8_decode_as_gb18030() -> None:
    body = page("utf-8").encode("gbk")
    text, enc = decode_html(body)
    assert enc == "gb18030"
    assert ZH in text
    assert "\ufffd" not in text


def test_gbk_bytes_without_any_declaration() -> None:
    text, enc = decode_html(page(None).encode("gbk"))
    assert enc == "gb18030"
    assert ZH in text


def test_gbk_bytes_with_server_default_latin1_header() -> None:
    body = page(None).encode("gbk")
    d = decode_html_detailed(body, header_encoding="text/html; charset=ISO-8859-1")
    assert d.encoding == "gb18030"
    assert ZH in d.text
    assert d.declared == "cp1252"


def test_utf8_bytes_declared_gb2312_decode_as_utf8() -> None:
    text, enc = decode_html(page("gb2312").encode("utf-8"))
    assert enc == "utf-8"
    assert ZH in text


def test_gb2312_declaration_reads_as_gb18030_superset() -> None:
    # 镕 (as in 朱镕基) is in GBK but not in GB2312: a strict gb2312 decoder would fail on it.
    body = page("gb2312", "朱镕基总理视察").encode("gbk")
    text, enc = decode_html(body)
    assert enc == "gb18030"
    assert "朱镕基" in text


def test_header_bare_charset_and_header_value() -> None:
    body = page(None).encode("gbk")
    assert decode_html(body, header_encoding="gbk")[1] == "gb18030"
    assert decode_html(body, header_encoding="text/html; charset=GBK")[1] == "gb18030"


def test_forced_encoding_wins_even_over_valid_utf8() -> None:
    body = page("utf-8", "abc").encode("utf-8")
    _, enc = decode_html(body, forced_encoding="gbk")
    assert enc == "gb18030"
    big5 = page(None, "臺灣新聞").encode("big5")
    text, enc = decode_html(big5, forced_encoding="big5")
    assert "臺灣新聞" in text


def test_unknown_forced_encoding_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown encoding"):
        decode_html(b"<p>x</p>", forced_encoding="no-such-codec")
    with pytest.raises(ValueError):
        validate_encoding("")
    assert validate_encoding("GB2312") == "gb18030"


def test_western_cp1252_page_is_not_mistaken_for_chinese() -> None:
    text_in = "Café déjà vu: naïve façade, résumé. " * 20
    body = page("windows-1252", text_in).encode("cp1252")
    text, enc = decode_html(body)
    assert enc == "cp1252"
    assert "Café déjà vu" in text
    # Undeclared too: GB18030 would "decode" some of these bytes, but they are not Chinese.
    text, enc = decode_html(page(None, text_in).encode("cp1252"))
    assert "Café déjà vu" in text


def test_bad_bytes_never_raise_and_are_counted() -> None:
    good = page(None).encode("gbk")
    broken = good[:60] + b"\xff\xff\xfe" + good[60:]
    d = decode_html_detailed(broken)
    assert d.source == "fallback"
    assert d.encoding == "gb18030"
    assert d.replacements >= 1
    assert "记者从发布会上了解到" in d.text


def test_truncated_utf8_tail_is_still_utf8() -> None:
    body = page("utf-8").encode("utf-8")
    cut = body[:-30] + "新".encode()[:2]
    text, enc = decode_html(cut)
    assert enc == "utf-8"
    assert text.endswith("\ufffd")


@pytest.mark.parametrize(
    "body",
    [b"", b"%PDF-1.4\n\x00\x01\x02\xff\xfe binary", b'{"json": true}', bytes(range(256)) * 4],
)
def test_odd_inputs_decode_without_raising(body: bytes) -> None:
    text, enc = decode_html(body)
    assert isinstance(text, str)
    assert enc


def test_bom_wins() -> None:
    body = "<html><body><p>你好</p></body></html>".encode("utf-16")
    text, enc = decode_html(body)
    assert "你好" in text
    assert enc.startswith("utf-16")


# Two paragraphs whose GBK bytes avoid the five bytes cp1252 leaves undefined, so a strict cp1252
# decode of them succeeds (as a wrong single-byte header invites).
ZH2 = "分行业看，工业生产稳步回升，服务业持续恢复，消费市场保持活跃，就业形势总体稳定。"


def test_gb_declaration_beats_single_byte_header_despite_stray_bytes() -> None:
    html = page("gb2312", ZH + "</p><p>" + ZH2)
    body = html.encode("gbk").replace(b"</p><p>", b"</p>\xfe<p>")  # one stray byte, as real pages
    assert not {0x81, 0x8D, 0x8F, 0x90, 0x9D} & set(body)
    d = decode_html_detailed(body, header_encoding="text/html; charset=iso-8859-1")
    assert d.encoding == "gb18030"
    assert ZH in d.text and ZH2 in d.text
    assert d.replacements == 1


def test_undeclared_gb_page_with_stray_bytes_under_a_latin1_header() -> None:
    body = page(None, ZH + "\n" + ZH2).encode("gbk").replace(b"\n", b"\n\xfe ")
    d = decode_html_detailed(body, header_encoding="iso-8859-1")
    assert d.encoding == "gb18030"
    assert ZH in d.text and ZH2 in d.text


def test_page_mixing_utf8_and_gbk_paragraphs_is_decoded_piece_by_piece() -> None:
    head = '<html><head><meta charset="utf-8"><title>创意产业</title></head><body>'
    body = (head.encode("utf-8") + f"<p>{ZH}</p>".encode()
            + f"<p>{ZH2}</p>".encode("gbk") + f"<p>{ZH}</p>".encode("gbk")
            + b"</body></html>")
    d = decode_html_detailed(body)
    assert d.source == "mixed"
    assert "<title>创意产业</title>" in d.text
    assert d.text.count(ZH) == 2 and ZH2 in d.text
    assert d.replacements == 0
    assert not has_mojibake(d.text)


def test_western_latin1_page_still_reads_as_its_single_byte_header() -> None:
    text = "Le café de la gare a rouvert ses portes après trois années de travaux à Nîmes. " * 3
    body = f"<html><body><p>{text}</p></body></html>".encode("cp1252")
    d = decode_html_detailed(body, header_encoding="text/html; charset=iso-8859-1")
    assert d.encoding == "cp1252"
    assert text in d.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("åˆ›æ„\ufffdäº§ä¸šå›­åŒºçš„å‘å±•", True),  # UTF-8 Chinese read as cp1252
        ("Ã©tÃ© Ã  Paris, Ã§a va", True),  # UTF-8 French read as Latin-1
        ("损坏的字节\ufffd\ufffd\ufffd在这里", True),
        (ZH, False),
        ("Le café de la gare, à Nîmes, a rouvert « enfin ».", False),
        ("One stray \ufffd replacement and a × sign.", False),
    ],
)
def test_has_mojibake(text: str, expected: bool) -> None:
    assert has_mojibake(text) is expected


def test_a_page_no_encoding_reads_is_named_in_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # UTF-8 and GBK inside one paragraph: no piece decodes cleanly either way
    body = (b'<html><head><meta charset="utf-8"></head><body>'
            + b"".join(b"<p>" + ZH.encode() + ZH2.encode("gbk") + b"</p>" for _ in range(3))
            + b"</body></html>")
    with caplog.at_level("WARNING", logger="newscrawl.extract.decode"):
        d = decode_html_detailed(body)
    assert d.source == "fallback"
    assert has_mojibake(d.text)
    assert any("mojibake" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


@pytest.mark.parametrize(("body", "cut"), [
    ("<html><body><p>全文。</p></body></html>\n".encode(), False),
    # no closing tags (as some dataset copies and old templates), but it ends at a tag
    ("<html><body><div><p>全文。</p></div>\n\n".encode(), False),
    # text after the closing tag (a CMS's comment or a stray byte): closed all the same
    ("<HTML><BODY><p>全文。</p></BODY></HTML>\n0".encode(), False),
    ("<html><body><p>全文到这里".encode(), True),
    ("<html><body><p>全文".encode()[:-1], True),  # inside a UTF-8 character
    ("<html>\n<body class=x><p>全文".encode("gbk")[:-1], True),  # inside a GBK character
    ("<html><body><p>全文</p><a href='/x".encode(), True),  # inside a tag
    ("纯文本的文章，没有标签".encode(), False),  # not HTML: not judged
    (b"", False),
])
def test_a_page_cut_short_is_told_by_its_end(body: bytes, cut: bool) -> None:
    from newscrawl.extract.page import cut_short

    assert cut_short(body) is cut
