"""The settings registry (``newscrawl.defaults.REGISTRY``) is the one declaration of each
setting: the add-on's defaults, the typo check and the type and range checks come from it, and
every setting name the code reads is declared there."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from scrapy.settings import Settings

from newscrawl import defaults
from newscrawl.addon import SETTINGS as ADDON_SETTINGS
from newscrawl.context import KNOWN_SETTINGS, CrawlConfig, check_settings, read_setting
from newscrawl.defaults import BY_NAME, ENVIRONMENT_ONLY, REGISTRY
from newscrawl.errors import ConfigError
from newscrawl.index.simhash_index import MAX_SUPPORTED_DISTANCE

PACKAGE = Path(__file__).resolve().parent.parent / "newscrawl"
#: NEWSCRAWL_* strings in the code that name no setting: the index's Lua error marker and the
#: dependency audit's switch (deploy/audit.py, named where the crawl checks the environment)
NOT_SETTINGS = {"NEWSCRAWL_INCOMPATIBLE_INDEX", "NEWSCRAWL_INDEX_LOST", "NEWSCRAWL_AUDIT_STRICT"}


def settings(**values: object) -> Settings:
    """The settings of a crawl with the add-on's defaults and ``values``."""
    return Settings({**ADDON_SETTINGS, **values})


def test_each_setting_is_declared_once_with_a_default_of_its_type() -> None:
    names = [setting.name for setting in REGISTRY]
    assert len(names) == len(set(names))
    for setting in REGISTRY:
        assert setting.doc and "\n" not in setting.doc, setting.name
        if setting.default is None:
            assert setting.optional, setting.name
        else:
            assert type(setting.default) in (setting.type, int if setting.type is float
                                             else setting.type), setting.name
        if setting.minimum is not None and setting.default is not None:
            assert setting.default >= setting.minimum, setting.name


def test_the_add_on_sets_the_registry_defaults_it_is_declared_to_set() -> None:
    declared = {s.name: s.default for s in REGISTRY if s.addon}
    assert {n: v for n, v in ADDON_SETTINGS.items() if n in BY_NAME} == declared
    # a default the add-on does not set is read from the registry by whoever reads it
    assert read_setting(Settings(), "NEWSCRAWL_DEADLETTER_MAX") == defaults.DEADLETTER_MAX
    assert read_setting(Settings(), "NEWSCRAWL_STORE_FSYNC") is False


def test_the_typo_check_knows_exactly_the_registry() -> None:
    assert KNOWN_SETTINGS == {s.name for s in REGISTRY if s.name.startswith("NEWSCRAWL_")}


def test_the_distance_bound_is_the_index_s() -> None:
    assert BY_NAME["NEWSCRAWL_MAX_DISTANCE"].maximum == MAX_SUPPORTED_DISTANCE


def test_every_setting_name_the_code_reads_is_declared() -> None:
    named: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text("utf-8")
        named.update(re.findall(r"[\"'](NEWSCRAWL_[A-Z0-9_]*[A-Z0-9])[\"' ]", text))
    assert named, "no setting name found: the pattern is wrong"
    unknown = named - set(BY_NAME) - set(ENVIRONMENT_ONLY) - NOT_SETTINGS
    assert not unknown, sorted(unknown)


@pytest.mark.parametrize("setting", [s for s in REGISTRY if s.type in (bool, int, float)],
                         ids=lambda s: s.name)
def test_a_value_of_another_type_is_refused_naming_the_setting(setting: defaults.Setting
                                                               ) -> None:
    with pytest.raises(ConfigError, match=f"^setting {setting.name} = 'x1' is not "):
        check_settings(settings(**{setting.name: "x1"}))


@pytest.mark.parametrize("setting", [s for s in REGISTRY if s.minimum is not None],
                         ids=lambda s: s.name)
def test_a_value_below_the_bound_is_refused_or_counts_as_the_bound(setting: defaults.Setting
                                                                    ) -> None:
    assert setting.minimum is not None
    below = settings(**{setting.name: str(int(setting.minimum) - 1)})
    if setting.clamp:
        check_settings(below)
        assert read_setting(below, setting.name) == setting.minimum
    else:
        with pytest.raises(ConfigError, match=setting.name):
            check_settings(below)


def test_range_errors_keep_their_wording() -> None:
    cases = {
        "NEWSCRAWL_LEASE_SECONDS": ("-5", "NEWSCRAWL_LEASE_SECONDS must not be negative (got"
                                          " -5.0)"),
        "NEWSCRAWL_HEARTBEAT_SECONDS": ("0.5", "NEWSCRAWL_HEARTBEAT_SECONDS must be at least 1"),
        "NEWSCRAWL_MAX_DISTANCE": ("99", "setting NEWSCRAWL_MAX_DISTANCE = 99 is out of range:"
                                         " the index finds distances 0 to 7"),
        "NEWSCRAWL_FINGERPRINT_WORKERS": ("-3", "setting NEWSCRAWL_FINGERPRINT_WORKERS = -3 must"
                                                " not be negative (0: fingerprints in the crawl"
                                                " process)"),
    }
    for name, (value, message) in cases.items():
        with pytest.raises(ConfigError) as raised:
            check_settings(settings(**{name: value}))
        assert str(raised.value) == message


def test_an_environment_only_variable_is_refused_as_a_setting() -> None:
    with pytest.raises(ConfigError, match="set the environment variable NEWSCRAWL_CACHE_DIR"):
        check_settings(settings(NEWSCRAWL_CACHE_DIR="/tmp/idf"))


def test_unset_and_none_values() -> None:
    config = CrawlConfig.from_settings(settings(NEWSCRAWL_FINGERPRINT_RETENTION_DAYS="None",
                                                NEWSCRAWL_STORE_DIR="", NEWSCRAWL_URL_FIELD=""))
    assert config.dedup.retention_days is None
    assert config.store.directory == config.redis.data_dir / "articles"
    assert config.dedup.url_field == defaults.URL_FIELD
    assert CrawlConfig.from_settings(settings(NEWSCRAWL_FINGERPRINT_RETENTION_DAYS=0)
                                     ).dedup.retention_days is None
    with pytest.raises(ConfigError, match="is not a number"):
        check_settings(settings(NEWSCRAWL_LEASE_SECONDS=""))


def test_a_setting_or_a_typo_in_the_environment_is_named_not_silently_unused(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    for name in [n for n in os.environ if n.startswith("NEWSCRAWL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("NEWSCRAWL_MAX_DISTANCE", "5")  # a setting: read from -s/settings.py only
    monkeypatch.setenv("NEWSCRAWL_DATA_DIRS", "/srv/crawl")  # a typo of an environment variable
    monkeypatch.setenv("NEWSCRAWL_DATA_DIR", "/srv/crawl")  # read from the environment: no word
    monkeypatch.setenv("NEWSCRAWL_CACHE_DIR", "")
    with caplog.at_level("WARNING", logger="newscrawl.context"):
        check_settings(settings())
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        "environment variable NEWSCRAWL_DATA_DIRS is none of newscrawl's (did you mean"
        " NEWSCRAWL_DATA_DIR?): it has no effect",
        "environment variable NEWSCRAWL_MAX_DISTANCE is not read: NEWSCRAWL_MAX_DISTANCE is a"
        " setting, give it as -s NEWSCRAWL_MAX_DISTANCE=... or in the project's settings.py",
    ]
