"""[tool.agent_eval] parsing and the EVAL_LIVE switch."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval._config import load_settings, parse_bool_env, parse_settings
from pytest_agent_eval.errors import ConfigError


def test_defaults_match_compat(tmp_path: Path) -> None:
    settings, warnings = load_settings(tmp_path)
    assert warnings == []
    assert settings.yaml_dirs == ("tests/evals",)
    assert (settings.threshold, settings.runs, settings.retries, settings.timeout) == (
        0.8,
        1,
        2,
        30.0,
    )
    assert settings.model == "openai:gpt-4o" and settings.judge_model is None
    assert settings.live is False and settings.report_path is None and settings.groups == ()
    assert settings.judge.model == "openai:gpt-4o"


def test_judge_model_wins_over_model(tmp_path: Path) -> None:
    settings, _ = parse_settings({"model": "a:b", "judge_model": "c:d"}, rootdir=tmp_path)
    assert settings.judge.model == "c:d"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"runs": "3"}, "'runs' must be an integer >= 1, got str '3'"),
        ({"runs": True}, "'runs' must be an integer >= 1, got bool True"),
        ({"runs": 0}, "'runs' must be >= 1, got 0"),
        ({"threshold": 2}, "'threshold' must be between 0.0 and 1.0, got 2"),
        ({"live": "yes"}, "'live' must be true or false, got str 'yes'"),
        ({"yaml_dirs": "tests/evals"}, "'yaml_dirs' must be a list of folder paths"),
        ({"yaml_dirs": [1]}, "'yaml_dirs' must be a list of strings"),
        ({"stale_audio": "fial"}, "(Did you mean 'fail'?)"),
        ({"groups": {"g": {"threshold": 0.5}}}, "groups.g: a group needs at least one of"),
        ({"groups": {"g": {"tags": "x"}}}, "'tags' must be a list of tag strings"),
        ({"stt_cache": "yes"}, "'stt_cache' must be true or false, got str 'yes'"),
        ({"stt_cache_dir": 1}, "'stt_cache_dir' must be a folder path, got int 1"),
        ({"voice": {"speed": "fast"}}, "voice: 'speed' must be a number > 0"),
    ],
)
def test_wrong_types_are_errors(tmp_path: Path, table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings(table, rootdir=tmp_path)
    assert message in str(info.value)
    assert str(info.value).startswith("[tool.agent_eval]")


def test_unknown_keys_warn_with_did_you_mean(tmp_path: Path) -> None:
    _, warnings = parse_settings({"treshold": 0.5, "zzz": 1}, rootdir=tmp_path)
    assert (
        warnings[0]
        == "[tool.agent_eval]: unknown key 'treshold' (Did you mean 'threshold'?); it is ignored"
    )
    assert warnings[1] == "[tool.agent_eval]: unknown key 'zzz'; it is ignored"


def test_groups_parse(tmp_path: Path) -> None:
    settings, _ = parse_settings(
        {
            "groups": {
                "booking": {
                    "tags": ["gate:booking"],
                    "threshold": 0.9,
                    "must_pass": ["a"],
                    "enforce": True,
                }
            }
        },
        rootdir=tmp_path,
    )
    (gate,) = settings.groups
    assert (gate.name, gate.threshold, gate.tags, gate.must_pass, gate.enforce) == (
        "booking",
        0.9,
        ("gate:booking",),
        ("a",),
        True,
    )


def test_bad_toml_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.agent_eval\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_settings(tmp_path)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", True),
        ("true", True),
        ("YES", True),
        ("on", True),
        ("0", False),
        ("false", False),
        ("no", False),
        ("", None),
    ],
)
def test_eval_live_values(raw: str, expected: bool | None) -> None:
    assert parse_bool_env("EVAL_LIVE", {"EVAL_LIVE": raw}) is expected
    assert parse_bool_env("EVAL_LIVE", {}) is None


def test_eval_live_garbage_is_an_error() -> None:
    with pytest.raises(ConfigError, match="EVAL_LIVE='maybe' is not understood; use 1/true/yes"):
        parse_bool_env("EVAL_LIVE", {"EVAL_LIVE": "maybe"})


@pytest.mark.parametrize(
    ("value", "speed"),
    [("max", 0.0), ("MAX", 0.0), (0, 0.0), ("realtime", 1.0), (1, 1.0), (2, 2.0), ("0.5", 0.5)],
)
def test_speed_takes_names_and_numbers(value: object, speed: float) -> None:
    settings, warnings = parse_settings({"speed": value}, rootdir=Path("."))
    assert settings.speed == speed and warnings == []


@pytest.mark.parametrize("value", ["fast", -1, 101, "inf", "nan", True])
def test_a_bad_speed_names_the_values_accepted(value: object) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings({"speed": value}, rootdir=Path("."))
    message = str(caught.value)
    assert "'max' (or 0" in message and "'realtime' (or 1)" in message, message
    assert "between 0 and 100" in message


def test_speed_is_unset_by_default_so_each_adapter_keeps_its_own() -> None:
    assert parse_settings({}, rootdir=Path("."))[0].speed is None
