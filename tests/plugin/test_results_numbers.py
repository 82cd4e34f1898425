"""The results file writes numbers as docs/reports.md says: scores and interval ends with 4
decimals, seconds with 3, and an interval that touches 0 or 1 exactly (a 0/3 interval's low end
was 5.55e-17)."""

from __future__ import annotations

import json

from .conftest import Project


def _decimals(value: float) -> int:
    text = repr(value)
    return len(text.split(".", 1)[1]) if "." in text and "e" not in text else 0


def test_results_numbers_are_rounded_and_intervals_clamped(project: Project) -> None:
    project.echo_agent("nope")
    ask = "turns:\n  - user: hi\n    expect:\n      reply_contains_any: [{want}]\n"
    project.transcript("never", "id: never\nruns: 3\n" + ask.format(want="booked"))
    project.transcript("always", "id: always\nruns: 3\n" + ask.format(want="nope"))
    project.transcript("some", "id: some\nruns: 7\nthreshold: 0\n" + ask.format(want="nope"))

    project.run_live("--agent-eval-results=r.json")

    document = json.loads((project.path / "r.json").read_text())
    entries = {e["transcript_id"]: e for e in document["evals"]}
    assert entries["never"]["ci"][0] == 0.0  # not 5.55e-17
    assert entries["never"]["score"] == 0.0
    assert entries["always"]["ci"][1] == 1.0
    assert entries["always"]["ci"][0] == 0.4385
    for entry in entries.values():
        assert all(_decimals(v) <= 4 for v in [entry["score"], *entry["ci"]]), entry
    assert _decimals(document["duration_s"]) <= 3
