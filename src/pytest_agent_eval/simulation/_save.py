"""``--agent-eval-save-simulations DIR``: each simulated conversation as a plain transcript.

A run worth keeping (one that found a bug, or the conversation you want never to regress) is
frozen by moving its file into ``yaml_dirs``: the caller's words become ordinary turns, each
with the expectations it was checked with (a scripted turn's own, ``every_turn`` for the
caller's), the criteria become a judge on the last turn (which sees the whole conversation),
and a voice run's synthesized utterances are copied next to it as ordinary fixtures, sidecars
included (so ``--check`` finds them fresh and `FixtureTextSTT` hears them). The header says
where it came from, the run's verdict and how the call ended.

Files: ``DIR/<simulation>-run<N>.yaml`` and ``DIR/audio/<simulation>-run<N>-t<K>.wav``;
written atomically, the same names on every session (the latest run wins).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .._atomic import write_atomic
from .._serialize import to_json
from .._text import safe_name
from ..models import AudioCondition, Expect, RunResult, Transcript, VoiceSettings
from ..voice._sidecar import sidecar_path
from ._model import Simulation

__all__ = ["save_conversation", "shown_path"]


def _conditions(conditions: list[AudioCondition]) -> list[Any]:
    return [{c.kind: dict(c.params)} if c.params else c.kind for c in conditions]


def _voice(voice: VoiceSettings | None) -> dict[str, Any] | None:
    if voice is None:
        return None
    values = {k: v for k, v in voice.to_dict().items() if v is not None}
    return values or None


def _expect(expect: Expect) -> dict[str, Any]:
    """The YAML ``expect:`` of ``expect``: its keys that are set (Python evaluators cannot be
    written and are left out)."""
    default = Expect()
    out: dict[str, Any] = {}
    for name, value in to_json(expect).items():
        if name == "evaluators" or value == to_json(getattr(default, name)):
            continue
        out[name] = value
    if isinstance(out.get("judge"), dict) and out["judge"].get("model") is None:
        out["judge"] = {"rubric": out["judge"]["rubric"]}
    for entry in out.get("tool_calls_args") or []:
        if isinstance(entry, dict):
            for key in ("args", "judge"):
                if entry.get(key) is None:
                    entry.pop(key, None)
            if entry.get("mode") == "subset":
                entry.pop("mode")
    return out


def _call_expect(value: dict[str, Any]) -> dict[str, Any]:
    """A simulation's ``call_expect`` as YAML writes it: unset keys and defaults left out."""
    out: dict[str, Any] = {}
    if value.get("tool_called"):
        out["tool_called"] = [
            {k: v for k, v in entry.items() if v is not None and (k, v) != ("mode", "subset")}
            for entry in value["tool_called"]
        ]
    if value.get("hook"):
        out["hook"] = value["hook"]
    return out


def _criteria_rubric(simulation: Simulation) -> str:
    lines = [
        "Judged on the whole conversation above (this was a simulation's criteria): the agent "
        "meets every one of these:"
    ]
    lines += [f"{i}. {c.text}" for i, c in enumerate(simulation.criterion_records, 1)]
    return "\n".join(lines)


def shown_path(path: str | Path | None, rootdir: Path | None) -> str | None:
    """``path`` as a saved file states it: relative to the rootdir (POSIX), so the file reads
    the same on every machine and in version control; a path outside the rootdir (or with no
    rootdir) by its file name alone, never an absolute path of this machine."""
    if not path:
        return None
    source = Path(path)
    if rootdir is not None:
        try:
            return source.resolve().relative_to(Path(rootdir).resolve()).as_posix()
        except ValueError:
            pass
    return source.as_posix() if not source.is_absolute() else source.name


def _header(simulation: Simulation, run: RunResult, rootdir: Path | None) -> list[str]:
    shown = shown_path(simulation.transcript.path, rootdir)
    where = f" ({shown})" if shown else ""
    verdict = {"passed": "PASS", "failed": "FAIL", "crashed": "CRASHED", "error": "ERROR"}[
        run.verdict
    ]
    lines = [
        f"Saved by pytest-agent-eval (--agent-eval-save-simulations) from simulation "
        f"{simulation.id!r}{where}, run {run.index + 1}: {verdict}.",
    ]
    record = run.simulation
    if record is not None:
        outcome = f" ({record.outcome.replace('_', ' ')})" if record.outcome else ""
        lines.append(
            f"Ended by {record.ended_by.replace('_', ' ')}{outcome}: {record.reason}; "
            f"{record.turns} turn(s), {record.scripted_turns} scripted."
        )
    for criterion, verdict_ in zip(simulation.criterion_records, run.evaluations, strict=False):
        state = "errored" if verdict_.errored else ("met" if verdict_.passed else "NOT met")
        lines.append(f"Criterion {state}: {criterion.text}")
    lines.append("Move this file into yaml_dirs to keep the conversation as a regression test.")
    return [f"# {line}" for text in lines for line in text.splitlines()]


def save_conversation(
    folder: Path,
    simulation: Simulation,
    transcript: Transcript,
    run: RunResult,
    *,
    rootdir: Path | None = None,
) -> Path | None:
    """Write run ``run`` of ``simulation`` (whose turns are ``transcript``'s) as a transcript
    under ``folder``; None when the run had no turn. A file or WAV that cannot be written is
    skipped: saving must not fail the eval. Paths in it are relative (the simulation file's to
    ``rootdir``, the fixtures' to the file)."""
    if not run.turns:
        return None
    name = f"{safe_name(simulation.id)}-run{run.index + 1}"
    folder = Path(folder)
    turns: list[dict[str, Any]] = []
    for result in run.turns:
        turn = transcript.turns[result.index]
        entry: dict[str, Any] = {"user": turn.user}
        if turn.audio is not None:
            copied = _copy_fixture(
                Path(turn.audio), folder / "audio" / f"{name}-t{result.index + 1}.wav"
            )
            if copied is not None:
                entry["audio"] = f"audio/{copied.name}"
        if turn.conditions:
            entry["conditions"] = _conditions(turn.conditions)
        expect = _expect(turn.expect)
        if expect:
            entry["expect"] = expect
        turns.append(entry)
    last = turns[-1].setdefault("expect", {})
    if "judge" not in last:
        last["judge"] = {"rubric": _criteria_rubric(simulation)}
    doc: dict[str, Any] = {
        "id": name,
        "description": f"A conversation of simulation {simulation.id!r}, saved from run "
        f"{run.index + 1}.",
        "threshold": transcript.threshold,
        "runs": transcript.runs,
    }
    if transcript.tags:
        doc["tags"] = list(transcript.tags)
    if (voice := _voice(transcript.voice)) is not None:
        doc["voice"] = voice
    if transcript.conditions:
        doc["conditions"] = _conditions(transcript.conditions)
        doc["seed"] = transcript.seed
    if transcript.turn_timeout_s is not None:
        doc["turn_timeout_s"] = transcript.turn_timeout_s
    if transcript.userdata:
        doc["userdata"] = to_json(transcript.userdata)
    if transcript.call_expect is not None:
        doc["call_expect"] = _call_expect(to_json(transcript.call_expect))
    doc["turns"] = turns
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    text = "\n".join(_header(simulation, run, rootdir)) + "\n" + body
    target = folder / f"{name}.yaml"
    try:
        write_atomic(target, text)
    except OSError:
        return None
    return target


def _copy_fixture(source: Path, target: Path) -> Path | None:
    """Copy a synthesized WAV and its sidecar (provenance, phrase timings) under a new name."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, source.read_bytes())
        side = sidecar_path(source)
        if side.is_file():
            write_atomic(sidecar_path(target), side.read_bytes())
    except OSError:
        return None
    return target
