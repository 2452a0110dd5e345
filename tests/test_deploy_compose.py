"""docker-compose.yml, Dockerfile and .dockerignore checked as data (no Docker engine needed).

Each test names one deployment requirement and fails if the file stops meeting it.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
ENV_EXAMPLE = ROOT / ".env.example"
START_SH = ROOT / "deploy" / "redis" / "start.sh"

# DOWNLOAD_TIMEOUT in newscrawl/settings.py is 30 s: a worker needs more than that to stop cleanly.
MIN_STOP_GRACE_S = 60

_VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[?-])(?P<arg>[^}]*))?\}")


class MissingVariable(Exception):
    pass


def interpolate(value: str, env: dict[str, str]) -> str:
    """The subset of compose's variable interpolation this file uses: ${V}, ${V:-d}, ${V:?err}."""

    def repl(m: re.Match[str]) -> str:
        name, op, arg = m.group("name"), m.group("op"), m.group("arg")
        current = env.get(name)
        if op in (":?", "?"):
            if not current:
                raise MissingVariable(f"{name}: {arg}")
            return current
        if op in (":-", "-"):
            return current if current else (arg or "")
        return current or ""

    return _VAR.sub(repl, value)


def parse_duration(text: str) -> float:
    """Compose duration ('90s', '1m30s', '2m') in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * units[u] for n, u in parts)


def env_of(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def volume_targets(service: dict[str, Any]) -> dict[str, str]:
    """target path -> source (named volume or host path) for short and long volume syntax."""
    out: dict[str, str] = {}
    for vol in service.get("volumes") or []:
        if isinstance(vol, str):
            parts = vol.split(":")
            out[parts[1]] = parts[0]
        else:
            out[vol["target"]] = vol.get("source", "")
    return out


def published_host_ips(service: dict[str, Any]) -> list[str]:
    ips = []
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            ips.append(port.get("host_ip", ""))
            continue
        text = str(port)
        # HOST_IP:HOST_PORT:CONTAINER_PORT has 3 parts; anything shorter binds every interface.
        parts = text.rsplit(":", 2)
        ips.append(parts[0] if len(parts) == 3 else "")
    return ips


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(data, dict) and "services" in data
    return data


@pytest.fixture(scope="module")
def redis_svc(compose: dict[str, Any]) -> dict[str, Any]:
    return compose["services"]["redis"]


@pytest.fixture(scope="module")
def crawler_svc(compose: dict[str, Any]) -> dict[str, Any]:
    return compose["services"]["crawler"]


def redis_conf_directives(redis_svc: dict[str, Any]) -> dict[str, str]:
    """The directives of the redis.conf file mounted into the redis service."""
    targets = volume_targets(redis_svc)
    conf_source = targets["/usr/local/etc/redis/redis.conf"]
    path = (ROOT / conf_source).resolve()
    directives: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        directives[key.lower()] = value.strip().strip('"')
    return directives


def test_compose_header_points_to_the_operations_doc() -> None:
    header = []
    for line in COMPOSE.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    links = re.findall(r"(docs/[\w/.-]+\.md)(?:#([\w-]+))?", "\n".join(header))
    assert ("docs/operations.md", "docker-compose-cluster") in links, header
    for doc, anchor in links:
        text = (ROOT / doc).read_text(encoding="utf-8")
        slugs = {
            re.sub(r"[^\w\- ]", "", m.lower()).strip().replace(" ", "-")
            for m in re.findall(r"^#+ (.+)$", text, flags=re.M)
        }
        assert not anchor or anchor in slugs, (doc, anchor)
    assert any("sites.toml" in line and "read-only" in line for line in header), header


# --- redis -------------------------------------------------------------------------------------


def test_redis_uses_official_image_pinned_to_a_major(redis_svc: dict[str, Any]) -> None:
    image = redis_svc["image"]
    assert re.fullmatch(r"redis:\d+(\.\d+)?(-alpine|-bookworm)?", image), image
    assert "build" not in redis_svc


def test_redis_config_file_and_start_script_are_mounted_read_only(
    redis_svc: dict[str, Any],
) -> None:
    host_files = [vol for vol in redis_svc["volumes"]
                  if isinstance(vol, str) and vol.startswith("./")]
    assert len(host_files) >= 2, redis_svc["volumes"]  # redis.conf and start.sh
    for vol in host_files:
        source, target, mode = vol.split(":")
        assert (ROOT / source).is_file(), source
        assert mode == "ro", vol
    command = redis_svc["command"]
    command = shlex.split(command) if isinstance(command, str) else command
    assert command[-1] == "/usr/local/etc/redis/start.sh"
    assert "/usr/local/etc/redis/start.sh" in volume_targets(redis_svc)


def test_redis_aof_everysec(redis_svc: dict[str, Any]) -> None:
    conf = redis_conf_directives(redis_svc)
    assert conf["appendonly"] == "yes"
    assert conf["appendfsync"] == "everysec"
    assert conf["dir"] == "/data"


def test_redis_never_evicts(redis_svc: dict[str, Any]) -> None:
    assert redis_conf_directives(redis_svc)["maxmemory-policy"] == "noeviction"


def test_redis_listpack_limits_suit_the_simhash_index(redis_svc: dict[str, Any]) -> None:
    from newscrawl.index.simhash_index import COMPACT_HASH_CONFIG

    conf = redis_conf_directives(redis_svc)
    # At least what the index asks for (it cannot CONFIG SET as the crawler's ACL user).
    assert COMPACT_HASH_CONFIG
    for name, wanted in COMPACT_HASH_CONFIG.items():
        listpack_name = name.replace("ziplist", "listpack")
        assert int(conf[listpack_name]) >= wanted, name
    assert int(conf["hash-max-listpack-entries"]) >= 512
    assert int(conf["hash-max-listpack-value"]) >= 256


def test_redis_password_comes_from_a_required_variable(redis_svc: dict[str, Any]) -> None:
    env = env_of(redis_svc)
    assert env["REDIS_PASSWORD"].startswith("${REDIS_PASSWORD:?")
    with pytest.raises(MissingVariable):
        interpolate(env["REDIS_PASSWORD"], {})
    with pytest.raises(MissingVariable):
        interpolate(env["REDIS_PASSWORD"], {"REDIS_PASSWORD": ""})
    # The start script refuses to run without it and switches the passwordless default user off.
    script = START_SH.read_text(encoding="utf-8")
    assert 'if [ -z "${REDIS_PASSWORD:-}" ]' in script
    assert "--user default off resetpass" in script


def test_env_example_ships_no_secret_and_env_is_never_committed_or_built() -> None:
    values = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    assert values["REDIS_PASSWORD"] == ""
    assert values.get("REDIS_OPS_PASSWORD", "") == ""
    gitignore = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".env" in [line.strip() for line in gitignore]
    assert ignored_by_docker(".env")
    assert ignored_by_docker(".env.production")


def test_redis_port_published_on_loopback_only(redis_svc: dict[str, Any]) -> None:
    ips = published_host_ips(redis_svc)
    assert ips, redis_svc.get("ports")  # (the check below needs a published port to look at)
    for ip in ips:
        assert ip == "127.0.0.1", f"Redis published beyond loopback: {redis_svc['ports']}"


def test_no_other_service_publishes_a_port(compose: dict[str, Any]) -> None:
    others = {name: svc for name, svc in compose["services"].items() if name != "redis"}
    assert "crawler" in others, sorted(compose["services"])
    for name, svc in others.items():
        assert not svc.get("ports"), name


def test_redis_data_on_a_named_volume(compose: dict[str, Any], redis_svc: dict[str, Any]) -> None:
    source = volume_targets(redis_svc)["/data"]
    assert source in (compose.get("volumes") or {}), source


def test_redis_healthcheck_authenticates_without_showing_the_password(
    redis_svc: dict[str, Any],
) -> None:
    check = redis_svc["healthcheck"]
    test = check["test"]
    text = " ".join(test) if isinstance(test, list) else test
    assert "redis-cli" in text and "ping" in text.lower()
    assert "--user newscrawl" in text
    assert "PONG" in text  # an error reply (NOAUTH/WRONGPASS) must not count as healthy
    assert "PASSWORD" not in text and " -a " not in text and "--pass" not in text
    env = env_of(redis_svc)
    assert env["REDISCLI_AUTH"] == env["REDIS_PASSWORD"]


# --- crawler -----------------------------------------------------------------------------------


def test_crawler_is_built_from_the_repo_dockerfile(crawler_svc: dict[str, Any]) -> None:
    build = crawler_svc["build"]
    context = build if isinstance(build, str) else build.get("context", ".")
    dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
    assert (ROOT / context / dockerfile).resolve() == DOCKERFILE


def test_crawler_can_be_scaled(crawler_svc: dict[str, Any]) -> None:
    assert "container_name" not in crawler_svc
    assert not crawler_svc.get("ports")


def test_crawler_runs_the_portal_spider(crawler_svc: dict[str, Any]) -> None:
    command = crawler_svc["command"]
    command = shlex.split(command) if isinstance(command, str) else command
    assert command == ["newscrawl", "crawl"]  # scrapy crawl portal, signals held from the start


def test_crawler_redis_url_carries_the_acl_user_and_password(
    crawler_svc: dict[str, Any],
) -> None:
    raw = env_of(crawler_svc)["REDIS_URL"]
    with pytest.raises(MissingVariable):
        interpolate(raw, {})
    secret = "0123456789abcdef0123456789abcdef"
    url = urlsplit(interpolate(raw, {"REDIS_PASSWORD": secret}))
    assert url.scheme == "redis"
    assert url.hostname == "redis"
    assert url.port == 6379
    assert url.password == secret
    # The user of the URL is the one start.sh creates with the REDIS_PASSWORD digest.
    script = START_SH.read_text(encoding="utf-8")
    assert re.search(rf"--user {url.username} on \"#\$\{{crawler_hash\}}\"", script), url.username


def test_crawler_waits_for_a_healthy_redis(crawler_svc: dict[str, Any]) -> None:
    assert crawler_svc["depends_on"]["redis"]["condition"] == "service_healthy"


def test_crawler_stop_grace_period_exceeds_download_timeout(crawler_svc: dict[str, Any]) -> None:
    from newscrawl import settings

    grace = parse_duration(str(crawler_svc["stop_grace_period"]))
    assert grace >= MIN_STOP_GRACE_S
    assert grace > 2 * settings.DOWNLOAD_TIMEOUT


def test_crawler_data_dir_is_a_named_volume(
    compose: dict[str, Any], crawler_svc: dict[str, Any]
) -> None:
    data_dir = env_of(crawler_svc)["NEWSCRAWL_DATA_DIR"]
    source = volume_targets(crawler_svc)[data_dir]
    assert source in (compose.get("volumes") or {})
    assert dockerfile_env()["NEWSCRAWL_DATA_DIR"] == data_dir


def _deploy_texts() -> dict[str, str]:
    files = [COMPOSE, ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
             *sorted((ROOT / "deploy").rglob("*"))]
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in files if p.is_file()
            and "_incoming" not in p.parts and "__pycache__" not in p.parts}


def test_one_command_scales_the_crawlers() -> None:
    """`docker compose up --scale crawler=N` without the service name also starts the other
    services in the foreground; every place says the same command, naming the crawler service."""
    commands = [
        (name, m.group(0))
        for name, text in _deploy_texts().items()
        for m in re.finditer(r"docker compose up(?: -d)? --scale crawler=\d+(?: [\w-]+)?", text)
    ]
    assert len(commands) >= 3, commands  # the compose header, operations.md, the cron file
    for name, command in commands:
        assert command.endswith(" crawler"), (name, command)


def _compose_cli_recipes() -> list[list[str]]:
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text[text.index("## The newscrawl command on the cluster"):]
    section = section[: section.index("\n## ", 1)]
    return [shlex.split(line.split("#", 1)[0].split(">", 1)[0])
            for line in section.splitlines() if line.startswith("docker compose run")]


def test_the_compose_cli_recipe_runs_newscrawl_commands_the_crawler_image_can_run(
    crawler_svc: dict[str, Any],
) -> None:
    from newscrawl.cli import build_parser

    recipes = _compose_cli_recipes()
    assert len(recipes) >= 3, recipes
    env = env_of(crawler_svc)
    assert "REDIS_URL" in env and env["NEWSCRAWL_DATA_DIR"] in volume_targets(crawler_svc)
    parser = build_parser()
    used = set()
    for argv in recipes:
        service_at = argv.index("crawler")
        assert argv[:3] == ["docker", "compose", "run"] and "--rm" in argv[3:service_at], argv
        assert argv[service_at + 1] == "newscrawl", argv  # the image's console script
        args = parser.parse_args(argv[service_at + 2:])  # flags and commands newscrawl has
        used.add(args.command)
    assert {"stats", "duplicates", "clusters"} <= used
    script = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    # newscrawl._entry runs `newscrawl crawl` itself and every other command through newscrawl.cli
    assert 'newscrawl = "newscrawl._entry:main"' in script
    assert any(kind == "RUN" and "pip install" in arg and " ." in arg
               for kind, arg in dockerfile_instructions())


def test_the_cron_lines_log_goes_to_an_ignored_file() -> None:
    logs = {
        m.group(1)
        for text in _deploy_texts().values()
        for m in re.finditer(r"^(?:# )?15 3 \* \* \* .*?>> (\S+)", text, flags=re.M)
    }
    assert logs, "no cron line found"
    for log in logs:
        done = subprocess.run(["git", "check-ignore", "-q", "--no-index", log], cwd=ROOT)
        assert done.returncode == 0, f"{log} is not in .gitignore"


# --- Dockerfile ----------------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text(encoding="utf-8")
    text = re.sub(r"\\\n", " ", text)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, _, args = line.partition(" ")
        out.append((op.upper(), args.strip()))
    return out


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for op, args in dockerfile_instructions():
        if op == "ENV":
            for token in shlex.split(args):
                key, _, value = token.partition("=")
                env[key] = value
    return env


def ignored_by_docker(path: str) -> bool:
    ignored = False
    for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line[1:] if negate else line
        pattern = pattern.lstrip("/")
        if fnmatch.fnmatch(path, pattern) or path.startswith(pattern.rstrip("/") + "/"):
            ignored = not negate
    return ignored


def test_dockerfile_base_image() -> None:
    froms = [args for op, args in dockerfile_instructions() if op == "FROM"]
    assert froms[-1].split()[0] == "python:3.11-slim"


def test_dockerfile_runs_as_a_non_root_user() -> None:
    ops = dockerfile_instructions()
    users = [i for i, (op, _) in enumerate(ops) if op == "USER"]
    assert users, "no USER instruction: the crawler would run as root"
    user = ops[users[-1]][1].split(":")[0]
    assert user not in ("root", "0")
    cmd_index = max(i for i, (op, _) in enumerate(ops) if op in ("CMD", "ENTRYPOINT"))
    assert users[-1] < cmd_index
    assert any(op == "RUN" and "useradd" in args and user in args for op, args in ops)


def dockerfile_copied() -> list[str]:
    """Every source path of the Dockerfile's COPY instructions, in order."""
    copied: list[str] = []
    for op, args in dockerfile_instructions():
        if op == "COPY":
            tokens = [t for t in shlex.split(args) if not t.startswith("--")]
            copied.extend(tokens[:-1])
    return copied


def dockerfile_workdir() -> str:
    return [args for op, args in dockerfile_instructions() if op == "WORKDIR"][-1]


def test_dockerfile_installs_the_project_and_its_crawl_config() -> None:
    ops = dockerfile_instructions()
    assert any(op == "RUN" and re.search(r"pip install\b.*\s\.(\s|$)", args) for op, args in ops)
    copied = dockerfile_copied()
    for needed in ("pyproject.toml", "newscrawl", "scrapy.cfg", "constraints.txt"):
        assert needed in copied, needed
    for source in copied:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
        assert not ignored_by_docker(source), f"COPY {source}: excluded by .dockerignore"


def test_dockerfile_installs_with_the_constraints_file() -> None:
    ops = dockerfile_instructions()
    installs = [
        i for i, (op, args) in enumerate(ops)
        if op == "RUN" and re.search(r"pip install\b.*\s\.(\s|$)", args)
    ]  # fmt: skip
    assert installs
    for i in installs:
        command = next(c for c in ops[i][1].split("&&") if re.search(r"pip install\b", c))
        tokens = shlex.split(command)
        pairs = list(zip(tokens, tokens[1:], strict=False))
        assert ("-c", "constraints.txt") in pairs or ("--constraint", "constraints.txt") in pairs, (
            command
        )
        copied_before = [
            src
            for op, args in ops[:i]
            if op == "COPY"
            for src in [t for t in shlex.split(args) if not t.startswith("--")][:-1]
        ]
        assert "constraints.txt" in copied_before, "constraints.txt copied after pip install"


def test_image_ships_no_sites_file() -> None:
    # The portals come from the host (compose mounts ./sites.toml); an image built from this
    # repository must not crawl the shipped portals on its own.
    assert dockerfile_copied()
    for source in dockerfile_copied():
        assert source not in (".", "./", "*"), f"COPY {source}: copies the whole context"
        path = ROOT / source
        found = [path] if path.is_file() else sorted(path.rglob("sites*.toml"))
        for candidate in found:
            assert not candidate.name.startswith("sites"), f"COPY {source}: ships {candidate}"
    # and the build context cannot carry one either
    for name in ("sites.toml", "sites.example.toml"):
        assert ignored_by_docker(name), name


def test_crawler_mounts_the_hosts_sites_file_read_only(crawler_svc: dict[str, Any]) -> None:
    target = dockerfile_workdir().rstrip("/") + "/sites.toml"
    [mount] = [
        vol
        for vol in crawler_svc["volumes"]
        if (vol["target"] if isinstance(vol, dict) else vol.split(":")[1]) == target
    ]
    if isinstance(mount, dict):
        assert mount["type"] == "bind"
        source, read_only = mount["source"], mount.get("read_only") is True
        # a missing host file must be an error, not an empty directory made in its place
        assert mount.get("bind", {}).get("create_host_path") is False
    else:
        source, _, mode = mount.split(":")
        read_only = mode == "ro"
    assert read_only, mount
    assert (ROOT / source).is_file(), source


def test_mounted_sites_file_is_where_the_crawl_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The image's working dir holds scrapy.cfg; the crawl (`scrapy crawl portal`, run there)
    # reads the sites file from the mount target.
    from newscrawl.sites import default_sites_path

    app = image_app_dir(tmp_path)
    (app / "sites.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(app)
    assert default_sites_path().resolve() == (app / "sites.toml").resolve()


def image_app_dir(tmp_path: Path) -> Path:
    """The files the Dockerfile copies into its WORKDIR (the package is on PYTHONPATH)."""
    app = tmp_path / "app"
    app.mkdir()
    for source in dockerfile_copied():
        if (ROOT / source).is_file():
            (app / Path(source).name).write_bytes((ROOT / source).read_bytes())
    assert (app / "scrapy.cfg").is_file()
    return app


def test_container_without_a_sites_file_stops_with_the_sites_file_message(
    tmp_path: Path,
) -> None:
    # `docker run newscrawl` with no mount: the image's files, `newscrawl crawl` in their
    # directory, no sites file. It must say so and exit 1 before touching Redis or the network.
    app = image_app_dir(tmp_path)
    assert not (app / "sites.toml").exists(), "the image carries a sites file"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCRAPY_", "REDIS_URL"))}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["NEWSCRAWL_DATA_DIR"] = str(tmp_path / "data")
    proc = subprocess.run(
        [sys.executable, "-m", "newscrawl._entry", "crawl"],  # the image's CMD
        cwd=app, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    log = proc.stdout + proc.stderr
    assert proc.returncode == 1, log[-3000:]
    assert f"no such file: {app / 'sites.toml'} (the sites file)" in log, log[-3000:]
    assert "Spider opened" not in log and "Traceback" not in log
    assert not (tmp_path / "data").exists()  # stopped before the embedded Redis started


def test_dockerfile_default_command_is_the_crawl() -> None:
    cmds = [args for op, args in dockerfile_instructions() if op == "CMD"]
    assert cmds and yaml.safe_load(cmds[-1]) == ["newscrawl", "crawl"]


def test_dockerignore_keeps_local_state_out_of_the_image() -> None:
    for path in (".git", ".venv", ".newscrawl", "redis.db", ".env"):
        assert ignored_by_docker(path), path
    assert not ignored_by_docker(".env.example")


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90.0), ("1m30s", 90.0), ("2m", 120.0), ("500ms", 0.5)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_parse_duration_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        parse_duration("90")


# --- cron examples -------------------------------------------------------------------------------

_CRON_FIELD = re.compile(r"^(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$")


@pytest.mark.parametrize("name", ["newscrawl.crontab", "newscrawl-compose.crontab"])
def test_cron_examples_are_valid_crontab_lines(name: str) -> None:
    jobs = []
    for line in (ROOT / "deploy" / "cron" / name).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or re.match(r"^[A-Z_]+=", line):
            continue
        fields = line.split(None, 5)
        assert len(fields) == 6, line
        for value in fields[:5]:
            assert _CRON_FIELD.match(value), (value, line)
        jobs.append(fields[5])
    assert jobs
    for command in jobs:
        assert command.startswith("cd /srv/newscrawl && ")
        assert ("/newscrawl crawl " in command  # scrapy crawl portal, signals held from the start
                or "docker compose run --rm crawler" in command)
        assert "flock" not in command  # a second invocation joins the run as a worker
