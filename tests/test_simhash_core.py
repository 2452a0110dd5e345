from __future__ import annotations

import random

import pytest

from newscrawl.simhash import Fingerprinter, core, feature_hash, hamming, simhash_from_features


def vec_to_int(vec: tuple[int, ...]) -> int:
    """(+1/-1 per bit, most significant bit first) -> int, the documented convention."""
    out = 0
    for v in vec:
        out = (out << 1) | (1 if v > 0 else 0)
    return out


def test_worked_example_3_bits() -> None:
    # Features h(w1..w5) with weights d = (1, 2, 0, 3, 0): vector (-4, -2, 6), signature 001.
    hashes = [(1, -1, 1), (-1, 1, 1), (1, -1, -1), (-1, -1, 1), (1, 1, -1)]
    weights = [1, 2, 0, 3, 0]
    pairs = [(vec_to_int(h), float(w)) for h, w in zip(hashes, weights, strict=True)]
    assert [p[0] for p in pairs] == [0b101, 0b011, 0b100, 0b001, 0b110]
    assert simhash_from_features(pairs, bits=3) == 0b001
    # Integer fast path agrees.
    assert core.simhash_from_features(pairs, bits=3) == 1


def test_vote_by_hand_each_bit() -> None:
    # bit 0: +2 -1 = +1 -> 1; bit 1: -2 +1 = -1 -> 0; bit 2: -2 -1 -> 0; tie -> 0
    assert simhash_from_features([(0b001, 2.0), (0b010, 1.0)], bits=3) == 0b001
    assert simhash_from_features([(0b1, 1.0), (0b0, 1.0)], bits=1) == 0  # tie gives 0
    assert simhash_from_features([], bits=64) == 0


def _int_weights(weights: dict[int, int]) -> int:
    """The fingerprinter's lane path (simhash_from_spread) for integer weights, the reference
    path when the total does not fit its lanes."""
    total = sum(weights.values())
    if total >= core.LANE_CAPACITY:
        return simhash_from_features(weights.items())
    return core.simhash_from_spread(((core.spread(h), w) for h, w in weights.items()), total)


def test_integer_weights_are_summed_exactly() -> None:
    # +2**53 + 1 - 2**53 = +1: floats would lose the 1 (2**53 + 1 is not a double) and tie at 0
    assert simhash_from_features([(1, 2**53), (1, 1), (0, 2**53)], bits=1) == 1
    assert _int_weights({1: 2**53, 3: 1, 0: 2**53}) & 1 == 1
    # an int too large for a float is still a finite weight
    assert simhash_from_features([(1, 10**400), (0, 10**400 - 1)], bits=1) == 1


def test_simhash_rejects_bad_features() -> None:
    with pytest.raises(ValueError):
        simhash_from_features([(8, 1.0)], bits=3)
    with pytest.raises(ValueError):
        simhash_from_features([(-1, 1.0)])
    with pytest.raises(ValueError):
        simhash_from_features([(1, float("nan"))])
    with pytest.raises(ValueError):
        simhash_from_features([(1, 1.0)], bits=0)


def test_fast_integer_path_matches_reference() -> None:
    rng = random.Random(7)
    for n in (1, 2, 3, 17, 300):
        for _ in range(50):
            weights = {
                rng.getrandbits(64): rng.choice([0, 1, rng.randrange(10**9)]) for _ in range(n)
            }
            assert _int_weights(weights) == simhash_from_features(weights.items())


def test_identical_features_give_the_features_hash() -> None:
    h = feature_hash("新闻")
    assert simhash_from_features([(h, 3.0)]) == h
    assert _int_weights({h: 3}) == h


def test_hamming() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0b1011, 0b0001) == 2
    assert hamming(0, (1 << 64) - 1) == 64
    with pytest.raises(TypeError):
        hamming(1.0, 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        hamming(-1, 2)


def test_feature_hash_is_stable_64_bit() -> None:
    # BLAKE2b-64 of the UTF-8 bytes: pinned so that a change of hash function cannot go unnoticed.
    import hashlib

    expected = int.from_bytes(hashlib.blake2b("中国".encode(), digest_size=8).digest(), "big")
    assert feature_hash("中国") == expected
    assert 0 <= feature_hash("x") < 1 << 64
    assert feature_hash("a") != feature_hash("b")


def test_spread_moves_bit_i_to_lane_i() -> None:
    # The table-driven spread equals its definition (bit i of h at bit LANE * i), and so does the
    # spread the fingerprinter computes (inline, from the BLAKE2b digest) for a token's feature.
    def reference(h: int) -> int:
        return sum(1 << (core.LANE * i) for i in range(64) if (h >> i) & 1)

    rng = random.Random(11)
    for h in [0, 1, 1 << 63, (1 << 64) - 1] + [rng.getrandbits(64) for _ in range(300)]:
        assert core.spread(h) == reference(h)
    fp = Fingerprinter()
    for token in ["新闻", "iphone", "x" * 300, "\x1f"]:
        assert fp._fill_entries([token], [None])[0][0] == reference(feature_hash(token))  # noqa: SLF001
