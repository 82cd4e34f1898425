"""Word error rate of the offline Whisper STT by audio condition, on the example suite's fixtures.

Synthesizes the fixtures of examples/voice-livekit offline (as `pytest --agent-eval-synthesize`
would), applies each audio condition to each fixture with several seeds (exactly as a variant
does before streaming the audio into the session), and transcribes the result with the model and
decoding `WhisperSTT` uses (tiny.en, beam 5, temperature 0). Whole fixtures are transcribed here;
in a session the VAD cuts them into segments first, which for these single-sentence fixtures is
the same audio.

    .venv/bin/python bench/robustness.py [--seeds 5]

Prints, per condition: the corpus WER (word edits over all reference words, all seeds), the mean
and worst WER of one utterance, how many utterances would pass ``heard_wer_max: 0.2``, and the
median time to apply the condition and to transcribe.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CONDITIONS", "main"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "voice-livekit"

CONDITIONS: dict[str, list[dict[str, Any]]] = {
    "clean": [],
    "pink noise 20 dB": [{"kind": "noise", "color": "pink", "snr_db": 20}],
    "pink noise 10 dB": [{"kind": "noise", "color": "pink", "snr_db": 10}],
    "pink noise 5 dB": [{"kind": "noise", "color": "pink", "snr_db": 5}],
    "white noise 20 dB": [{"kind": "noise", "color": "white", "snr_db": 20}],
    "white noise 10 dB": [{"kind": "noise", "color": "white", "snr_db": 10}],
    "white noise 5 dB": [{"kind": "noise", "color": "white", "snr_db": 5}],
    "phone (300-3400 Hz, 8 kHz mu-law)": [{"kind": "telephone"}],
    "tempo 1.25x": [{"kind": "tempo", "factor": 1.25}],
}
"""Each row of the table: a name and its chain of conditions (kind plus parameters)."""


@dataclass
class Row:
    """What one condition measured."""

    edits: int = 0
    words: int = 0
    wers: list[float] = field(default_factory=list)
    apply_s: list[float] = field(default_factory=list)
    transcribe_s: list[float] = field(default_factory=list)


def _fixtures(folder: Path) -> list[tuple[str, Path]]:
    """(user text, WAV) of every audio turn of the example suite, synthesized offline."""
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    shutil.copytree(EXAMPLE / "evals", folder / "evals", ignore=shutil.ignore_patterns("audio"))
    (folder / "pyproject.toml").write_text("[tool.agent_eval]\n")
    transcripts = [load_transcript_file(p) for p in sorted((folder / "evals").glob("*.yaml"))]
    ensure_fixtures(transcripts, jobs=1).raise_for_failures()
    return [
        (turn.user, Path(turn.audio))
        for transcript in transcripts
        for turn in transcript.turns
        if turn.audio is not None
    ]


def measure(fixtures: list[tuple[str, Path]], seeds: int) -> dict[str, Row]:
    """Apply every condition with every seed to every fixture and score what Whisper heard."""
    from pytest_agent_eval.models import AudioCondition
    from pytest_agent_eval.voice._degrade import apply, babble_sources
    from pytest_agent_eval.voice._fixtures import load_whisper, read_wav, transcribe
    from pytest_agent_eval.voice._wer import normalize_for_wer, word_error_rate

    model = load_whisper()
    rows: dict[str, Row] = {}
    for name, chain in CONDITIONS.items():
        conditions = [
            AudioCondition(c["kind"], {k: v for k, v in c.items() if k != "kind"}) for c in chain
        ]
        row = rows[name] = Row()
        for text, wav in fixtures:
            clip, babble = read_wav(wav), babble_sources(wav)
            reference_words = len(normalize_for_wer(text).split())
            # A clean clip is the same for every seed: transcribe it once.
            for seed in range(seeds if conditions else 1):
                start = time.perf_counter()
                heard_clip = apply(clip, conditions, seed, babble=babble)
                row.apply_s.append(time.perf_counter() - start)
                start = time.perf_counter()
                heard = transcribe(heard_clip, model=model)
                row.transcribe_s.append(time.perf_counter() - start)
                wer = word_error_rate(text, heard)
                row.wers.append(wer)
                row.edits += round(wer * reference_words)
                row.words += reference_words
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per condition and fixture")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        fixtures = _fixtures(Path(tmp))
        words = sum(len(t.split()) for t, _ in fixtures)
        print(f"{len(fixtures)} fixtures ({words} words), {args.seeds} seeds per condition")
        rows = measure(fixtures, args.seeds)
    print()
    print(
        "| condition | corpus WER | mean WER | worst | pass heard_wer_max 0.2 "
        "| apply (median) | transcribe (median) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, row in rows.items():
        passing = sum(w <= 0.2 for w in row.wers)
        print(
            f"| {name} | {row.edits / row.words:.3f} | {statistics.mean(row.wers):.3f} "
            f"| {max(row.wers):.3f} | {passing}/{len(row.wers)} "
            f"| {statistics.median(row.apply_s) * 1000:.0f} ms "
            f"| {statistics.median(row.transcribe_s) * 1000:.0f} ms |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
