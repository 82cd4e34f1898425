"""The turn-taking conformance table (docs/turn-taking.md): one row per metric of each
turn-taking item, with its value, 95% interval, count, budget and the budget's verdict; the
same rows in the terminal, the markdown and the HTML report. Under it, the stimuli each item
got wrong: a line each in markdown; in HTML each with its timeline and the clip to play.

And two results files' metrics side by side (``agent-eval compare``): a metric regressed when
its new 95% interval lies wholly on the worse side of the base one (`HIGHER_IS_BETTER` says
which side that is), improved when on the better side, and is within noise when they overlap;
with fewer than 5 observations (or a zero-width interval) on either side it is "too few
samples", never a change.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._records import EvalRecord
from .._serialize import from_json
from .._turn_taking._metrics import HIGHER_IS_BETTER
from ..models._timeline import TimelineClock
from ..models._turn_taking import BudgetVerdict, Metric, StimulusMiss, TurnTakingRecord
from ._baseline import BaselineError
from ._timeline_svg import render_timeline_svg

__all__ = [
    "CONFORMANCE_HEADER",
    "METRIC_CHANGE_HEADER",
    "MetricChange",
    "conformance_html",
    "conformance_rows",
    "metric_change_rows",
    "metric_changes",
    "metric_changes_headline",
    "miss_lines",
    "turn_taking_metrics",
]

CONFORMANCE_HEADER = ("eval", "metric", "value", "95% interval", "n", "budget", "verdict")

_VERDICT = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}

_NOT_KEPT = "not kept for a stimulus"
"""Under a stimulus's timeline: the marks its record does not keep (the agent's VAD, its end
of turn), which the runner saw."""


def _number(value: float, unit: str) -> str:
    return f"{value:g} ms" if unit == "ms" else f"{value:.2f}"


def _count(metric: Metric) -> str:
    if metric.hits is not None and metric.value is not None:
        return f"{metric.hits}/{metric.count}"
    return str(metric.count)


def _row(label: str, metric: Metric, budgets: Sequence[BudgetVerdict]) -> list[str]:
    low_high = metric.interval
    return [
        label,
        metric.name,
        "unmeasured" if metric.value is None else _number(metric.value, metric.unit),
        "–" if low_high is None else "–".join(_number(v, metric.unit) for v in low_high),
        _count(metric),
        ", ".join(b.text for b in budgets) or "–",
        ", ".join(_VERDICT[b.verdict] for b in budgets),
    ]


def conformance_rows(records: Sequence[EvalRecord]) -> list[list[str]]:
    """The table's rows, `CONFORMANCE_HEADER`'s columns, for every turn-taking record."""
    rows = []
    for record in records:
        taken = record.turn_taking
        if taken is None:
            continue
        for metric in taken.metrics:
            budgets = [b for b in taken.budgets if b.metric == metric.name]
            rows.append(_row(record.label, metric, budgets))
    return rows


def _misses_headline(record: EvalRecord) -> str:
    taken = record.turn_taking
    assert taken is not None
    shown = len(taken.misses)
    more = f" (the first {shown} below)" if shown < taken.missed else ""
    if taken.observed is None:
        return f"{record.label}: {taken.missed} of {taken.stimuli} stimuli went wrong{more}"
    return (
        f"{record.label}: {taken.missed} of the {taken.observed} stimuli observed went "
        f"wrong{more}; an error ended the item there, and the other "
        f"{taken.stimuli - taken.observed} of its {taken.stimuli} were not judged"
    )


def _stimulus(miss: StimulusMiss, taken: TurnTakingRecord) -> str:
    """``pause-04``, or ``seed-1/pause-04`` when the item played several seeds' packs (which
    share their stimulus ids)."""
    return miss.stimulus_id if len(taken.seeds) < 2 else f"seed-{miss.seed}/{miss.stimulus_id}"


def miss_lines(records: Sequence[EvalRecord]) -> list[str]:
    """Markdown: each item's stimuli that went wrong, a line each; [] when none did."""
    lines: list[str] = []
    for record in records:
        taken = record.turn_taking
        if taken is None or not taken.missed:
            continue
        lines += [f"**{_misses_headline(record)}**", ""]
        lines += [f"- `{_stimulus(m, taken)}` ({m.text}): {m.what}" for m in taken.misses]
        lines.append("")
    return lines


def conformance_html(records: Sequence[EvalRecord], player: Callable[[str, str], str]) -> str:
    """The table as an HTML section, "" when no turn-taking item ran; under it each item's
    stimuli that went wrong, each with its timeline and its clip (``player(path, label)``
    makes the audio element)."""
    rows = conformance_rows(records)
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in CONFORMANCE_HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    misses = []
    for record in records:
        taken = record.turn_taking
        if taken is None or not taken.missed:
            continue
        clock: TimelineClock = "virtual" if taken.clock == "virtual" else "real"
        items = "".join(
            f'<details class="tt-miss" data-stimulus="{html.escape(_stimulus(m, taken))}">'
            f"<summary><code>{html.escape(_stimulus(m, taken))}</code>: "
            f"{html.escape(m.what)}</summary>"
            f'<p class="meta">{html.escape(m.text)} (expected: '
            f"{html.escape(m.expect.replace('_', ' '))})</p>"
            f"{render_timeline_svg(m.timeline(clock), unobserved_note=_NOT_KEPT)}"
            f"{player(m.audio, 'caller clip') if m.audio else ''}</details>"
            for m in taken.misses
        )
        misses.append(f"<h3>{html.escape(_misses_headline(record))}</h3>{items}")
    return (
        '<section id="turn-taking"><h2>Turn-taking conformance</h2>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        + "".join(misses)
        + "</section>"
    )


METRIC_CHANGE_HEADER = (
    "eval",
    "metric",
    "base",
    "new",
    "change",
    "base 95% interval",
    "new 95% interval",
    "intervals",
    "verdict",
)

MetricVerdict = Literal[
    "regressed", "improved", "within noise", "too few samples", "no interval", "not comparable"
]

VERDICTS: tuple[MetricVerdict, ...] = (
    "regressed",
    "improved",
    "within noise",
    "too few samples",
    "no interval",
    "not comparable",
)

MIN_SAMPLES = 5
"""Fewer observations than this (or a zero-width interval: one value, or all equal) and a
metric's interval says nothing about its noise, so two such intervals never make a change: at
n = 3 the p50's interval is already the smallest to the largest value."""


def _too_few(metric: Metric) -> bool:
    return metric.count < MIN_SAMPLES or (
        metric.interval is not None and metric.interval[0] == metric.interval[1]
    )


TakenMetrics = dict[str, tuple[str, dict[str, Metric]]]
"""A results file's turn-taking metrics: by eval key, its label and its metrics by name."""


@dataclass(frozen=True, slots=True)
class MetricChange:
    """One turn-taking metric of one eval, in two results files."""

    label: str
    name: str
    base: Metric | None
    new: Metric | None

    @property
    def values(self) -> tuple[float, float] | None:
        """The base and new value, when both files measured the metric."""
        if self.base is None or self.new is None:
            return None
        if self.base.value is None or self.new.value is None:
            return None
        return self.base.value, self.new.value

    @property
    def comparable(self) -> bool:
        """Both files measured it."""
        return self.values is not None

    @property
    def separated(self) -> bool | None:
        """Whether the two 95% intervals do not overlap (touching overlaps); None without
        both."""
        if self.values is None or self.base is None or self.new is None:
            return None
        if self.base.interval is None or self.new.interval is None:
            return None
        (base_low, base_high), (new_low, new_high) = self.base.interval, self.new.interval
        return new_low > base_high or new_high < base_low

    @property
    def verdict(self) -> MetricVerdict:
        """``regressed`` or ``improved`` when the intervals separate, by the metric's
        direction; ``within noise`` when they overlap; ``too few samples`` when either side
        has fewer than `MIN_SAMPLES` observations or a zero-width interval."""
        if self.values is None:
            return "not comparable"
        separated = self.separated
        if separated is None:
            return "no interval"
        assert self.base is not None and self.new is not None
        if _too_few(self.base) or _too_few(self.new):
            return "too few samples"
        if not separated:
            return "within noise"
        base, new = self.values
        return "improved" if (new > base) == (self.name in HIGHER_IS_BETTER) else "regressed"

    @property
    def text(self) -> str:
        """``turns[short_answer] end_of_turn_latency_ms_p50: 550 ms (510 ms–560 ms) ->
        2550 ms (2510 ms–2560 ms), higher is worse``: for the line naming a regression."""
        worse = "lower" if self.name in HIGHER_IS_BETTER else "higher"
        return (
            f"{self.label} {self.name}: {_figure(self.base)} -> {_figure(self.new)}, "
            f"{worse} is worse"
        )


def _figure(metric: Metric | None) -> str:
    if metric is None or metric.value is None:
        return "unmeasured"
    interval = _interval(metric)
    return _number(metric.value, metric.unit) + ("" if interval == "–" else f" ({interval})")


def _interval(metric: Metric | None) -> str:
    if metric is None or metric.interval is None:
        return "–"
    return "–".join(_number(v, metric.unit) for v in metric.interval)


def _delta(change: MetricChange) -> str:
    if change.values is None or change.new is None:
        return "–"
    base, new = change.values
    delta = new - base
    if change.new.unit == "ms":
        return f"{delta:+g} ms"
    return f"{delta:+.2f}"


def _read_metric(raw: Any, where: str) -> Metric:
    """One metric as this package writes it (`Metric`), read by the records' own decoder."""
    return from_json(Metric, raw, path=where)


def turn_taking_metrics(document: Mapping[str, Any]) -> TakenMetrics:
    """The turn-taking metrics of a results file (docs/turn-taking.md): by eval key, its label
    and its metrics by name; an eval with no ``turn_taking`` record is left out.

    Raises:
        BaselineError: a ``turn_taking`` record that is not one this package writes.
    """
    found: TakenMetrics = {}
    for entry in document.get("evals", []):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("key"), str):
            continue
        taken = entry.get("turn_taking")
        if taken is None:
            continue
        key = entry["key"]
        try:
            if not isinstance(taken, Mapping) or not isinstance(taken.get("metrics"), list):
                raise ValueError("turn_taking has no 'metrics' list")
            metrics = [
                _read_metric(raw, f"turn_taking.metrics[{i}]")
                for i, raw in enumerate(taken["metrics"])
            ]
        except ValueError as exc:
            raise BaselineError(
                f"eval {key}: {exc}; not a results file this version wrote: write it again "
                "with --agent-eval-results"
            ) from None
        found[key] = (str(entry.get("label") or key), {m.name: m for m in metrics})
    return found


def metric_changes(base: TakenMetrics, new: TakenMetrics) -> list[MetricChange]:
    """Every turn-taking metric of the evals both files have (matched by key), in the new
    file's order; a metric only one file has is not comparable."""
    changes = []
    for key, (label, now) in new.items():
        if key not in base:
            continue  # a new eval: the evals' comparison lists it
        then = base[key][1]
        for name in dict.fromkeys([*now, *then]):
            changes.append(MetricChange(label, name, then.get(name), now.get(name)))
    return changes


def metric_change_rows(changes: Sequence[MetricChange]) -> list[list[str]]:
    """The rows of the comparison, `METRIC_CHANGE_HEADER`'s columns."""
    return [
        [
            c.label,
            c.name,
            _figure_value(c.base),
            _figure_value(c.new),
            _delta(c),
            _interval(c.base),
            _interval(c.new),
            {True: "separate", False: "overlap", None: "–"}[c.separated],
            c.verdict,
        ]
        for c in changes
    ]


def _figure_value(metric: Metric | None) -> str:
    if metric is None or metric.value is None:
        return "unmeasured"
    return _number(metric.value, metric.unit)


def metric_changes_headline(changes: Sequence[MetricChange]) -> str:
    """``turn-taking: 1 regressed, 0 improved, 4 within noise, 0 too few samples, 1 no
    interval, 2 not comparable (95% intervals)``."""
    counted = ", ".join(f"{sum(c.verdict == v for c in changes)} {v}" for v in VERDICTS)
    return f"turn-taking: {counted} (a change when the 95% intervals separate)"
