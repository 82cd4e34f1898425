"""Recommended AgentSession settings for evaluation: deterministic, offline, fast to close."""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["eval_session_kwargs"]


def eval_session_kwargs(
    *,
    min_endpointing_delay_s: float = 0.5,
    preemptive_generation: bool = False,
    turn_detection: Literal["vad"] | None = "vad",
) -> dict[str, Any]:
    """Keyword arguments for ``AgentSession(...)`` that make evaluation runs repeatable.

    - ``turn_detection="vad"``: the user's turn ends on the VAD's silence, which counts audio
      samples, so turns come out the same at any streaming speed. (Left unset, the session
      loads a turn-detector model that is slow under fast streaming, and with LiveKit cloud
      credentials in the environment it may pick a network one.)
    - endpointing ``min_delay`` of 0.5 s: keep it no longer than the VAD's
      ``min_silence_duration`` (Silero: 0.55 s) or fast streaming can merge two phrases that
      real time keeps apart.
    - interruptions by VAD only, and no preemptive generation, so the LLM is called once per
      user turn.
    - no "user away" timer and no 2 s wait for a last transcript when closing.
    - no echo-cancellation warm-up: there is no echo in a test, and during the warm-up the
      session would feed the STT silence while the agent speaks.

    An agent on a realtime model (OpenAI's) takes its turns on the model's server in
    production; ``turn_detection="vad"`` hands them to the session's VAD instead, so the evals
    would test other turn-taking. Pass ``turn_detection=None`` for such an agent to keep its
    own (`LiveKitAdapter` warns when the switch happened; see docs/livekit-realtime.md).

    Args:
        min_endpointing_delay_s: Seconds of silence after the VAD's end of speech before the
            turn is taken as finished.
        preemptive_generation: Let the LLM start before the end of the user's turn.
        turn_detection: ``"vad"``, or None to leave the session's turn detection and
            interruption mode as the agent configures them (a realtime agent's server-side
            detection: LiveKit hands the turns to the session's VAD when either is set).

    Example:
        ```python
        AgentSession(stt=FixtureTextSTT(), vad=VAD, llm=my_llm, **eval_session_kwargs())
        ```
    """
    turn_handling: dict[str, Any] = {
        "endpointing": {"min_delay": min_endpointing_delay_s},
        "preemptive_generation": {"enabled": preemptive_generation},
    }
    if turn_detection is not None:
        # Both hand a realtime model's turns to the session's VAD, so neither is set for None.
        turn_handling = {
            "turn_detection": turn_detection,
            **turn_handling,
            "interruption": {"mode": "vad"},
        }
    return {
        "turn_handling": turn_handling,
        "user_away_timeout": None,
        "session_close_transcript_timeout": 0.0,
        "aec_warmup_duration": None,
    }
