"""LiveKit's answering-machine detection (AMD) on a grid of far ends (issue 37).

livekit-agents ships AMD (``livekit.agents.voice.AMD``, since 1.5): it listens to whoever
answers an outbound call and says ``human``, ``machine-ivr``, ``machine-vm``,
``machine-unavailable`` or ``uncertain``, from the greeting's timing (a short "Hello?" then
silence is a person) and from its words (an LLM classifies the transcript). This script runs
LiveKit's own classifier, the part of `AMD` that decides, on far ends made from a script:
each far end is speech (its words and how long they take to say), silences, and a beep, played
in real time against the classifier's real timers. The classifier's LLM is scripted (the
package's `ScriptedLLM`, with keyword rules standing in for a real model's reading of the
words), so what is measured is LiveKit's timing logic and the hand-off between it and the LLM;
a real model's reading of unclear greetings is not.

What stands in for the audio path: a VAD's speech start and end at the script's times, and the
words as an STT's final transcript ``--stt-delay`` seconds after the speech ends. A beep is not
speech (a VAD does not start on a pure tone), so it reaches the classifier as silence.

    .venv/bin/python bench/amd_far_ends.py [--stt-delays 0.2 0.8]

Per STT delay, prints each far end's truth, the verdict and its reason, then the confusion
matrix (rows: truth, columns: verdict) as docs/telephony.md shows it.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

__all__ = ["FAR_ENDS", "FarEndCase", "main"]

LABELS = ("human", "machine-vm", "machine-ivr", "machine-unavailable", "uncertain")


@dataclass(frozen=True)
class FarEndCase:
    """One far end: what it is, and what it plays, in order."""

    name: str
    truth: str
    parts: tuple[tuple[str, str, float], ...]
    """``("speech", words, seconds)``, ``("silence", "", seconds)``, ``("beep", "", seconds)``."""


FAR_ENDS: tuple[FarEndCase, ...] = (
    FarEndCase("human: 'Hello?'", "human", (("speech", "Hello?", 0.6), ("silence", "", 4.0))),
    FarEndCase(
        "human: name and question",
        "human",
        (("speech", "Hi, this is Sam Carter, who is calling please?", 2.8), ("silence", "", 4.0)),
    ),
    FarEndCase(
        "human: 'Hello?' twice",
        "human",
        (
            ("speech", "Hello?", 0.5),
            ("silence", "", 0.4),
            ("speech", "Hello, anyone there?", 1.0),
            ("silence", "", 4.0),
        ),
    ),
    FarEndCase(
        "voicemail: short, beep",
        "machine-vm",
        (("speech", "Leave a message.", 1.0), ("silence", "", 0.3), ("beep", "", 0.5)),
    ),
    FarEndCase(
        "voicemail: short, no beep",
        "machine-vm",
        (("speech", "Leave a message.", 1.0), ("silence", "", 4.0)),
    ),
    FarEndCase(
        "voicemail: long, beep",
        "machine-vm",
        (
            (
                "speech",
                "Hi, you have reached Sam. I cannot take your call right now, please leave "
                "a message after the tone.",
                5.5,
            ),
            ("silence", "", 0.6),
            ("beep", "", 0.5),
            ("silence", "", 3.0),
        ),
    ),
    FarEndCase(
        "voicemail: long, no beep",
        "machine-vm",
        (
            (
                "speech",
                "Hi, you have reached Sam. I cannot take your call right now, please leave "
                "a message and I will get back to you.",
                5.5,
            ),
            ("silence", "", 4.0),
        ),
    ),
    FarEndCase(
        "mailbox full",
        "machine-unavailable",
        (
            ("speech", "The mailbox is full and cannot accept any messages. Goodbye.", 3.5),
            ("silence", "", 4.0),
        ),
    ),
    FarEndCase(
        "IVR prompt",
        "machine-ivr",
        (
            (
                "speech",
                "Thanks for calling Lee Clinic. For billing, press 1. For appointments, press 2.",
                4.5,
            ),
            ("silence", "", 4.0),
        ),
    ),
    FarEndCase("no answer: silence", "uncertain", (("silence", "", 12.0),)),
)
"""The grid: people, voicemail greetings short and long with and without a beep, a full
mailbox, an IVR prompt, and a line where nobody speaks."""


def _scripted_llm() -> Any:
    """The classifier's LLM: keyword rules answering with LiveKit's ``save_prediction`` tool."""
    from pytest_agent_eval.adapters.livekit import Rule, ScriptedLLM

    def label(name: str) -> dict[str, str]:
        return {"label": name}

    return ScriptedLLM(
        [
            Rule(
                r"press \d|press (?:one|two|star|pound)",
                tool="save_prediction",
                args=label("machine-ivr"),
            ),
            Rule(
                r"mailbox is full|not (?:been )?set up|cannot accept",
                tool="save_prediction",
                args=label("machine-unavailable"),
            ),
            Rule(
                r"leave (?:a|your) message|after the (?:tone|beep)|take your call",
                tool="save_prediction",
                args=label("machine-vm"),
            ),
            Rule(r".", tool="save_prediction", args=label("human")),
        ]
    )


async def classify(case: FarEndCase, stt_delay: float) -> tuple[str, str, float]:
    """LiveKit's classifier on ``case``: its verdict, the reason, and seconds from the start
    of the call to the verdict."""
    from pytest_agent_eval.adapters.livekit._compat import amd_classifier_class

    classifier = amd_classifier_class()(_scripted_llm(), wait_until_finished=True)
    loop = asyncio.get_running_loop()
    verdict: asyncio.Future[Any] = loop.create_future()
    classifier.on("amd_prediction", lambda ev: verdict.done() or verdict.set_result(ev))
    started = time.monotonic()
    classifier.start_detection_timer()
    classifier.start_listening()
    pending: list[asyncio.Task[None]] = []

    async def transcript_later(words: str) -> None:
        await asyncio.sleep(stt_delay)
        classifier.push_text(words)

    for kind, words, seconds in case.parts:
        if verdict.done():
            break
        if kind == "speech":
            classifier.on_user_speech_started()
            await asyncio.wait({verdict}, timeout=seconds)  # the speech plays
            classifier.on_user_speech_ended(silence_duration=0.0)
            pending.append(asyncio.create_task(transcript_later(words)))
        else:  # silence, and a beep (no speech to a VAD)
            await asyncio.wait({verdict}, timeout=seconds)
    try:
        event = await asyncio.wait_for(verdict, timeout=30.0)
    finally:
        for task in pending:
            task.cancel()
        await classifier.close()
    category = getattr(event.category, "value", str(event.category))
    return category, event.reason, time.monotonic() - started


def matrix_markdown(results: list[tuple[FarEndCase, str, str, float]]) -> str:
    """The confusion matrix as a Markdown table (rows: truth, columns: verdict)."""
    counts = Counter((case.truth, got) for case, got, _, _ in results)
    truths = [label for label in LABELS if any(case.truth == label for case, *_ in results)]
    lines = [
        "| truth \\ AMD said | " + " | ".join(LABELS) + " |",
        "|---|" + "---|" * len(LABELS),
    ]
    for truth in truths:
        cells = [str(counts[(truth, got)]) if counts[(truth, got)] else "" for got in LABELS]
        lines.append(f"| {truth} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def _run(stt_delay: float) -> list[tuple[FarEndCase, str, str, float]]:
    results = []
    for case in FAR_ENDS:
        got, reason, took = await classify(case, stt_delay)
        results.append((case, got, reason, took))
        mark = "ok " if got == case.truth else "MISS"
        print(f"{mark} {case.name:28} truth={case.truth:20} said={got:20} ({reason}, {took:.1f} s)")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--stt-delays", type=float, nargs="+", default=[0.2, 0.8], help="seconds (0.2 0.8)"
    )
    args = parser.parse_args(argv)
    from pytest_agent_eval.adapters.livekit._compat import LIVEKIT_AGENTS_VERSION

    for delay in args.stt_delays:
        print(f"\n== livekit-agents {LIVEKIT_AGENTS_VERSION}, STT delay {delay} s")
        results = asyncio.run(_run(delay))
        right = sum(got == case.truth for case, got, _, _ in results)
        print(f"\n{right}/{len(results)} far ends classified as they are\n")
        print(matrix_markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
