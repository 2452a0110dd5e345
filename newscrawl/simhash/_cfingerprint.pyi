from typing_extensions import Buffer

def fingerprint(
    keys: Buffer,
    values: Buffer,
    mask: int,
    median: int,
    plateau: int,
    max_count: int,
    max_share: int,
    weight_bits: int,
    cache: dict[str, bytes],
    tokens: list[str],
    /,
) -> tuple[int, int] | None: ...
def blake2b64(data: Buffer, /) -> int: ...
def cjk_text_and_gap_words(text: str, /) -> tuple[str, list[list[str]] | None]: ...
