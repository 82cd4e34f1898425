"""Text made safe once: lone surrogates replaced visibly, control sequences stripped, secrets
redacted; a result is scrubbed in place and serializes everywhere."""

from __future__ import annotations

import json

from pytest_agent_eval._sanitize import (
    REDACTED,
    clean_text,
    redact_secrets,
    scrub,
    secret_values,
    strip_controls,
)
from pytest_agent_eval._serialize import to_json
from pytest_agent_eval.models import (
    EvalResult,
    RunResult,
    ToolCall,
    TranscriptResult,
    TurnResult,
)

LONE = "\ud83d"


def test_clean_text_replaces_lone_surrogates_visibly() -> None:
    assert clean_text(f"a{LONE}b\udcff") == "a\ufffdb\ufffd"
    assert clean_text("plain ✅ text") == "plain ✅ text"


def test_strip_controls_removes_ansi_osc_and_c0_c1() -> None:
    text = "a\x1b[1;31mred\x1b[0m \x1b]0;title\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x00\x9b2Jz\tb\nc"
    assert strip_controls(text) == "ared link z\tb\nc"
    assert strip_controls("normal text") == "normal text"


def test_secret_values_come_from_key_like_variables_only() -> None:
    env = {
        "OPENAI_API_KEY": "sk-abcdef0123456789",
        "LIVEKIT_API_SECRET": "lk-secret-value-1",
        "HF_TOKEN": "hf_1234567890",
        "SHORT_TOKEN": "1",
        "HOME": "/root/not-a-secret",
    }
    assert set(secret_values(env)) == {
        "sk-abcdef0123456789",
        "lk-secret-value-1",
        "hf_1234567890",
    }


def test_redaction_of_values_bearer_tokens_and_key_shapes() -> None:
    text = (
        "401: Authorization: Bearer abcdefghijklmnop1234 was refused; key sk-proj-0123456789abcdef "
        "and lk-secret-value-1 leaked; basic information is fine"
    )
    redacted = redact_secrets(text, ("lk-secret-value-1",))
    assert redacted == (
        f"401: Authorization: Bearer {REDACTED} was refused; key {REDACTED} "
        f"and {REDACTED} leaked; basic information is fine"
    )


def test_scrub_cleans_a_whole_result_in_place() -> None:
    call = ToolCall(f"book{LONE}", {"note": f"x{LONE}"}, output=[LONE], error="token s3cr3t-value!")
    turn = TurnResult(
        0,
        "hi",
        f"reply {LONE}",
        [call],
        evaluations=[EvalResult(False, f"saw {LONE}")],
        error="s3cr3t-value! echoed",
        heard=LONE,
        metadata={f"k{LONE}": (LONE,)},
    )
    result = TranscriptResult(False, 0.0, 1.0, [RunResult(0, [turn], error=LONE)], "t")
    assert scrub(result, ("s3cr3t-value!",)) is result
    assert turn.reply == "reply \ufffd"
    assert turn.heard == "\ufffd"
    assert turn.error == f"{REDACTED} echoed"
    assert turn.evaluations[0].reasoning == "saw \ufffd"
    assert turn.metadata == {"k\ufffd": ("\ufffd",)}
    rebuilt = turn.tool_calls[0]
    assert isinstance(rebuilt, ToolCall)
    assert (rebuilt.name, rebuilt.args, rebuilt.output) == (
        "book\ufffd",
        {"note": "x\ufffd"},
        ["\ufffd"],
    )
    assert rebuilt.error == f"token {REDACTED}"
    json.dumps(to_json(result)).encode("utf-8")


def test_the_serializer_never_emits_a_lone_surrogate() -> None:
    data = to_json({f"k{LONE}": [f"v{LONE}", ToolCall(f"n{LONE}")], "obj": object()})
    json.dumps(data, ensure_ascii=False).encode("utf-8")
    assert data["k\ufffd"][0] == "v\ufffd"


def test_scrub_leaves_clean_values_untouched() -> None:
    args = {"time": "7pm"}
    call = ToolCall("book", args)
    turn = TurnResult(0, "hi", "ok", [call])
    scrub(turn, ())
    assert turn.tool_calls[0] is call
    assert call.args is args
