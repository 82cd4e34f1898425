"""The private upstream APIs we rely on still hold, on whichever versions are installed.

When a pytest or pydantic-ai release changes one, these fail naming the version and the change
(CI runs them on the newest and the lowest declared versions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval._compat import pydantic_ai as pai_compat
from pytest_agent_eval._compat import pytest as pytest_compat
from pytest_agent_eval._compat import pytest_rewrite


def test_pytest_internals_hold() -> None:
    problems = pytest_compat.drift_problems()
    assert not problems, "\n".join(problems)


def test_the_rewriting_hooks_internals_hold() -> None:
    problems = pytest_rewrite.drift_problems()
    assert not problems, "\n".join(problems)


def test_a_call_spec_can_be_built_and_read_back() -> None:
    from _pytest.scope import Scope

    spec = pytest_compat.make_callspec(
        argname="llm_eval_agent",
        value="fast",
        index=1,
        scope=Scope.Function,
        param_id="fast",
        marks=[],
    )
    assert spec.params == {"llm_eval_agent": "fast"}
    assert spec.indices == {"llm_eval_agent": 1}
    assert spec.id == "fast"


def test_pytest_drift_names_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    @dataclasses.dataclass
    class RenamedCallSpec:  # a future pytest whose call spec took other fields
        arguments: dict[str, object]

    monkeypatch.setattr(pytest_compat, "_callspec_class", lambda: RenamedCallSpec)
    problems = pytest_compat.drift_problems()
    assert problems == [
        f"pytest {pytest.__version__}: RenamedCallSpec lacks fields "
        "['params', 'indices', '_arg2scope', '_idlist', 'marks']"
    ]
    with pytest.raises(pytest_compat.PytestDriftError) as info:
        pytest_compat.make_callspec(
            argname="a", value=1, index=0, scope=None, param_id="a", marks=[]
        )
    assert str(info.value).startswith(f"pytest {pytest.__version__}: RenamedCallSpec no longer")


def test_the_no_parameter_words_are_pytests() -> None:
    from _pytest import fixtures

    source = Path(fixtures.__file__).read_text(encoding="utf-8")
    assert pytest_compat.NO_PARAM_WORDS in source, (
        f"pytest {pytest.__version__} no longer says {pytest_compat.NO_PARAM_WORDS!r} for a "
        "parametrized fixture requested outside the test's parameters"
    )


def test_pydantic_ai_assumptions_hold() -> None:
    problems = pai_compat.drift_problems()
    assert not problems, "\n".join(problems)


def test_judge_models_built_from_an_id_have_no_sdk_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    try:
        model = pai_compat.infer_judge_model("openai-chat:gpt-4o-mini")
    except ValueError:  # pydantic-ai 1.x: "openai" is Chat Completions
        model = pai_compat.infer_judge_model("openai:gpt-4o-mini")
    client = model.client
    assert client.max_retries == 0, (
        f"pydantic-ai {pai_compat.pydantic_ai_version()}: the SDK client of a model built from "
        "an id no longer exposes max_retries"
    )


def test_usage_is_read_from_a_real_run() -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    result = Agent(TestModel(custom_output_text="hi")).run_sync("hello")
    usage = pai_compat.usage_of(result)
    assert usage is not None
    assert usage.requests == 1
    assert usage.input_tokens > 0
