"""constraints.txt, the exact versions the Docker image installs (``pip install -c``), checked
against pyproject.toml's ranges and, where the same versions are installed, their metadata.

Refreshing it is described in CONTRIBUTING.md; deploy/constraints.py writes it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
PYPROJECT = ROOT / "pyproject.toml"
GENERATOR = ROOT / "deploy" / "constraints.py"

_PIN = re.compile(r"^(?P<name>[a-z0-9]+(?:-[a-z0-9]+)*)==(?P<version>[^\s;#=<>!~,*]+)$")


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("newscrawl_deploy_constraints", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


generator = load_generator()


def read_pins(text: str) -> dict[str, Version]:
    """name -> version of a constraints file; AssertionError on anything but ``name==version``."""
    pins: dict[str, Version] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _PIN.match(line)
        assert m, f"not an exact pin of a canonical name: {raw!r}"
        name = m.group("name")
        assert name not in pins, f"{name} pinned twice"
        pins[name] = Version(m.group("version"))
    return pins


@pytest.fixture(scope="module")
def pins() -> dict[str, Version]:
    return read_pins(CONSTRAINTS.read_text(encoding="utf-8"))


def installed_at_pin(name: str, pins: dict[str, Version]) -> metadata.Distribution | None:
    """The installed distribution of *name* if its version is the pinned one."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    return dist if Version(dist.version) == pins[name] else None


def test_every_entry_is_an_exact_pin(pins: dict[str, Version]) -> None:
    assert pins
    assert list(pins) == sorted(pins)


def test_pin_reader_rejects_ranges_and_markers() -> None:
    for bad in ("scrapy>=2.19", "scrapy", "Scrapy==2.19.0", "scrapy==2.19.*",
                "scrapy==2.19.0; python_version < '3.12'", "scrapy===2.19.0"):  # fmt: skip
        with pytest.raises(AssertionError):
            read_pins(bad + "\n")
    assert read_pins("# c\n\nscrapy==2.19.0\n") == {"scrapy": Version("2.19.0")}


def test_every_runtime_dependency_is_pinned_inside_pyprojects_range(
    pins: dict[str, Version],
) -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    for text in project["dependencies"]:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} (pyproject.toml) missing from constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {name}=={pins[name]}, outside pyproject's {req.specifier}"
        )


def test_newscrawl_itself_and_installer_tools_are_not_pinned(pins: dict[str, Version]) -> None:
    for name in ("newscrawl", "pip", "setuptools", "wheel"):
        assert name not in pins, name


def test_test_and_dev_tools_are_left_out(pins: dict[str, Version]) -> None:
    # A test/dev requirement may appear only when a runtime dependency needs it too.
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    extras = {
        canonicalize_name(Requirement(text).name)
        for group in project["optional-dependencies"].values()
        for text in group
    }
    for name in sorted(extras & set(pins)):
        needers = []
        for other in pins:
            dist = installed_at_pin(other, pins)
            if dist is None:
                continue
            reqs = generator.requirements_of(dist, frozenset())
            if any(canonicalize_name(r.name) == name for r in reqs):
                needers.append(other)
        assert needers, f"{name} is pinned but only test/dev extras ask for it"
    for tool in ("pytest", "fakeredis", "ruff", "mypy", "pip-audit", "pyyaml"):
        assert tool not in pins, tool


# constraints.txt is generated on the image's Python (3.11, a current patch release); before 3.11.3
# redis and aiohttp also require async-timeout (environment markers), so the closure differs there
_OLD_PATCH = pytest.mark.skipif(
    sys.version_info < (3, 11, 3),
    reason="constraints.txt is generated for Python >= 3.11.3 (markers add async-timeout below)",
)


@_OLD_PATCH
def test_pins_are_closed_under_the_installed_metadata(pins: dict[str, Version]) -> None:
    # Transitive: what each pinned package requires (here, markers evaluated) is pinned too,
    # inside its range. Checked for the packages installed at their pinned version.
    installed = {name: installed_at_pin(name, pins) for name in pins}
    # extras asked for anywhere (``lxml[html_clean]``) bring their own requirements
    wanted: dict[str, set[str]] = {name: set() for name in pins}
    roots = generator.project_requirements()
    for dist in installed.values():
        reqs = roots if dist is None else [*roots, *generator.requirements_of(dist, frozenset())]
        for req in reqs:
            wanted.setdefault(canonicalize_name(req.name), set()).update(req.extras)
    checked = 0
    for name, dist in installed.items():
        if dist is None:
            continue
        checked += 1
        for req in generator.requirements_of(dist, frozenset(wanted[name])):
            dep = canonicalize_name(req.name)
            if dep in generator.INSTALLER_TOOLS:
                continue
            assert dep in pins, f"{name} {pins[name]} requires {req}, not in constraints.txt"
            assert req.specifier.contains(pins[dep], prereleases=True), (
                f"{name} {pins[name]} requires {req}; constraints.txt pins {pins[dep]}"
            )
    if not checked:
        pytest.skip("none of the pinned versions is installed here")


@_OLD_PATCH
def test_file_is_the_generators_output_where_those_versions_are_installed(
    pins: dict[str, Version],
) -> None:
    if any(installed_at_pin(name, pins) is None for name in pins):
        pytest.skip("this environment has other versions than constraints.txt")
    expected = generator.render(generator.runtime_closure(generator.project_requirements()))
    assert CONSTRAINTS.read_text(encoding="utf-8") == expected
