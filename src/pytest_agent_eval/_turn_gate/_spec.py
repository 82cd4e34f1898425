"""A YAML file with a top-level ``turn_taking:`` block: which stimuli of the pack to play to the
agent, and the budget each metric must keep.

```yaml
id: turn-taking
tags: [gate:turns]
turn_taking:
  categories: [pause, barge_in]   # default: all seven
  voices: 1                       # the pack's stimuli spoken by its first N voices (1-3)
  seeds: 1                        # packs made from seeds 0 .. N-1
  lines: [clean, phone]           # each stimulus heard over each line (built-in presets)
  levels_db: [0, -12]             # ... and at each caller level (dB from the pack's)
  budgets:
    pause_takeover_rate_max: 0.1
    barge_in_yield_latency_ms_p95_max: 600
```

Each category is one pytest item, scored by the metrics its stimuli measure; a budget is checked
in every item whose category feeds its metric (`METRIC_CATEGORIES`). A budget no chosen category
feeds is refused when the file is read, and so is a category no budget checks (its item would
pass with nothing checked); a budget a run could not measure is an ERROR then.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._conditions import BUILTIN_PRESETS
from .._loader import YamlDocument, read_yaml_document
from .._turn_taking._metrics import METRIC_NAMES
from .._turn_taking._pack import PACK_VOICES, build_pack
from .._turn_taking._stimulus import Category, Expected, Stimulus
from ..errors import TranscriptError

__all__ = [
    "LINE_PRESETS",
    "METRIC_CATEGORIES",
    "MetricBudget",
    "TurnTakingSpec",
    "is_turn_taking_file",
    "load_turn_taking_file",
]

_KEY = re.compile(r"^turn_taking[ \t]*:", re.MULTILINE)
_TOP_KEYS = ("id", "description", "tags", "turn_taking")
_BLOCK_KEYS = ("categories", "voices", "seeds", "lines", "levels_db", "budgets", "tail_s")
MAX_SEEDS = 20

_MOVES_TIME = frozenset({"tempo", "silence"})
"""Condition kinds that move the caller's sounds in time: the stimulus's marks (where its
pause, its barge-in, its noise fall) would no longer say where they are heard."""

LINE_PRESETS: tuple[str, ...] = tuple(
    name for name, chain in BUILTIN_PRESETS.items() if not any(c.kind in _MOVES_TIME for c in chain)
)
"""The built-in condition presets a turn-taking stimulus may be heard over (``lines:``)."""


def _categories_expecting(expect: Expected) -> frozenset[Category]:
    return frozenset(s.category for s in build_pack(0) if s.expect is expect)


def _metric_categories() -> dict[str, frozenset[Category]]:
    respond = _categories_expecting(Expected.RESPOND)
    keep = _categories_expecting(Expected.KEEP_SPEAKING)
    yields = _categories_expecting(Expected.YIELD)
    by_name: dict[str, frozenset[Category]] = {
        "pause_takeover_rate": frozenset({Category.PAUSE, Category.FILLER}),
        "backchannel_takeover_rate": frozenset({Category.BACKCHANNEL}),
        "noise_takeover_rate": frozenset({Category.NOISE}),
        "side_speech_takeover_rate": frozenset({Category.SIDE_SPEECH}),
        "barge_in_yield_rate": yields,
        "barge_in_yield_latency_ms_p50": yields,
        "barge_in_yield_latency_ms_p95": yields,
        "end_of_turn_latency_ms_p50": respond,
        "end_of_turn_latency_ms_p95": respond,
        "false_interruption_rate": keep,
        "false_interruption_recovery_rate": keep,
        "unanswered_rate": respond,
        "overlap_ratio": frozenset(Category),
    }
    assert tuple(by_name) == METRIC_NAMES, "every metric says which categories feed it"
    return by_name


METRIC_CATEGORIES: Mapping[str, frozenset[Category]] = _metric_categories()
"""Each metric, and the categories whose stimuli it counts."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricBudget:
    """One ``<metric>_max`` or ``<metric>_min`` of ``budgets:``."""

    key: str
    """As written: ``pause_takeover_rate_max``."""
    metric: str
    bound: Literal["max", "min"]
    limit: float
    location: str
    """``file.yaml:7``, for reports."""

    def holds(self, value: float) -> bool:
        """Whether ``value`` keeps the budget (the limit itself does)."""
        return value <= self.limit if self.bound == "max" else value >= self.limit

    @property
    def text(self) -> str:
        """``<= 0.1``, ``>= 0.9``: how reports show it."""
        return f"{'<=' if self.bound == 'max' else '>='} {self.limit:g}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnTakingSpec:
    """What one ``turn_taking:`` file asks for."""

    id: str
    path: Path
    line: int
    description: str
    tags: tuple[str, ...]
    categories: tuple[Category, ...]
    voices: int
    """The pack's stimuli spoken by its first ``voices`` voices (`PACK_VOICES`)."""
    seeds: tuple[int, ...]
    budgets: tuple[MetricBudget, ...]
    tail_s: float = 3.0
    """Seconds of silence after each clip, for the agent's answer to come."""
    lines: tuple[str, ...] = ("clean",)
    """The line conditions (`LINE_PRESETS`) each stimulus is heard over, one play each."""
    levels_db: tuple[float, ...] = (0.0,)
    """The caller levels (dB from the pack's) each stimulus is heard at, one play each."""

    def stimuli(self, category: Category) -> list[tuple[int, Stimulus]]:
        """``category``'s stimuli, with the seed of the pack each comes from, in pack order."""
        voices = set(PACK_VOICES[: self.voices])
        return [
            (seed, s)
            for seed in self.seeds
            for s in build_pack(seed)
            if s.category is category and s.voice in voices
        ]

    def budgets_for(self, category: Category) -> list[MetricBudget]:
        """The budgets ``category``'s item checks: those of the metrics it feeds."""
        return [b for b in self.budgets if category in METRIC_CATEGORIES[b.metric]]


def is_turn_taking_file(path: Path) -> bool:
    """True for a YAML file with a top-level ``turn_taking:`` key (read as text, as the
    simulation files are told apart: a top-level key of a block mapping starts its line)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return _KEY.search(text) is not None


def _unknown(doc: YamlDocument, at: Sequence[str | int], key: str, known: Sequence[str]) -> None:
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise doc.error((*at, key), f"unknown key {key!r}; {hint}the keys here are {', '.join(known)}")


def _int_in(doc: YamlDocument, at: tuple[str, ...], value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise doc.error(at, f"write a whole number from {low} to {high}, not {value!r}")
    return value


def load_turn_taking_file(path: Path) -> TurnTakingSpec:
    """Read and check a ``turn_taking:`` file.

    Raises:
        TranscriptError: With file, line, field and the fix, for the first mistake.
    """
    doc = read_yaml_document(path, subject=lambda field, data: [])
    data = doc.data
    if not isinstance(data, Mapping):
        raise TranscriptError(f"{path}: a turn-taking file is a mapping with a turn_taking: key")
    for key in data:
        if key not in _TOP_KEYS:
            _unknown(doc, (), str(key), _TOP_KEYS)
    block = data.get("turn_taking")
    if not isinstance(block, Mapping):
        raise doc.error(
            ("turn_taking",),
            "write a mapping: turn_taking: {categories: [...], budgets: {...}}",
        )
    for key in block:
        if key not in _BLOCK_KEYS:
            _unknown(doc, ("turn_taking",), str(key), _BLOCK_KEYS)
    at = ("turn_taking",)
    spec_id = data.get("id", path.stem)
    if not isinstance(spec_id, str) or not spec_id.strip():
        raise doc.error(("id",), f"write the id as text, not {spec_id!r}")
    tags = data.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise doc.error(("tags",), "write the tags as a list of text: tags: [gate:turns]")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise doc.error(("description",), "write the description as text")
    names = [c.value for c in Category]
    raw_categories = block.get("categories", names)
    if not isinstance(raw_categories, list) or not raw_categories:
        raise doc.error((*at, "categories"), f"write a list of some of {', '.join(names)}")
    categories: list[Category] = []
    written_at: dict[Category, int] = {}
    for index, name in enumerate(raw_categories):
        if name not in names:
            close = difflib.get_close_matches(str(name), names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise doc.error(
                (*at, "categories", index),
                f"no category {name!r}; {hint}the categories are {', '.join(names)}",
            )
        if Category(name) not in categories:
            categories.append(Category(name))
            written_at[Category(name)] = index
    voices = _int_in(doc, (*at, "voices"), block.get("voices", len(PACK_VOICES)), 1, 3)
    raw_seeds = block.get("seeds", 1)
    if isinstance(raw_seeds, list):
        seeds = tuple(_int_in(doc, (*at, "seeds"), s, 0, 2**31 - 1) for s in raw_seeds) or (0,)
    else:
        seeds = tuple(range(_int_in(doc, (*at, "seeds"), raw_seeds, 1, MAX_SEEDS)))
    lines = _lines(doc, block.get("lines", ["clean"]))
    levels = _levels(doc, block.get("levels_db", [0]))
    tail_s = block.get("tail_s", 3.0)
    if isinstance(tail_s, bool) or not isinstance(tail_s, int | float) or not 0.5 <= tail_s <= 30:
        raise doc.error((*at, "tail_s"), f"write seconds from 0.5 to 30, not {tail_s!r}")
    budgets = _budgets(doc, block.get("budgets", {}), categories)
    _refuse_unchecked(doc, categories, budgets, written_at if "categories" in block else None)
    return TurnTakingSpec(
        id=spec_id,
        path=doc.path,
        line=doc.line(("turn_taking",)) or 1,
        description=description,
        tags=tuple(tags),
        categories=tuple(categories),
        voices=voices,
        seeds=seeds,
        budgets=tuple(budgets),
        tail_s=float(tail_s),
        lines=lines,
        levels_db=levels,
    )


def _lines(doc: YamlDocument, raw: Any) -> tuple[str, ...]:
    at: tuple[str | int, ...] = ("turn_taking", "lines")
    if not isinstance(raw, list) or not raw:
        raise doc.error(at, f"write a list of some of {', '.join(LINE_PRESETS)}: lines: [clean]")
    out: list[str] = []
    for index, name in enumerate(raw):
        if name in BUILTIN_PRESETS and name not in LINE_PRESETS:
            raise doc.error(
                (*at, index),
                f"{name!r} changes the caller's timing (it moves where each pause, barge-in and "
                f"noise falls, which the stimuli's marks say); the lines are "
                f"{', '.join(LINE_PRESETS)}",
            )
        if name not in LINE_PRESETS:
            close = difflib.get_close_matches(str(name), LINE_PRESETS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise doc.error(
                (*at, index),
                f"no line {name!r}; {hint}the lines are the built-in condition presets "
                f"{', '.join(LINE_PRESETS)}",
            )
        if name not in out:
            out.append(name)
    return tuple(out)


def _levels(doc: YamlDocument, raw: Any) -> tuple[float, ...]:
    at: tuple[str | int, ...] = ("turn_taking", "levels_db")
    if not isinstance(raw, list) or not raw:
        raise doc.error(at, "write a list of caller levels in dB: levels_db: [0, -12]")
    out: list[float] = []
    for index, value in enumerate(raw):
        if isinstance(value, bool) or not isinstance(value, int | float) or not -40 <= value <= 20:
            raise doc.error(
                (*at, index),
                f"write a level in dB from -40 to 20 (0 is the pack's own), not {value!r}",
            )
        if float(value) not in out:
            out.append(float(value))
    return tuple(out)


def _example_budget(metric: str) -> str:
    """A budget to suggest for ``metric``, as it would be written."""
    if metric.endswith(("yield_rate", "recovery_rate")):
        return f"{metric}_min: 0.9"
    return f"{metric}_max: {800 if '_ms_' in metric else 0.1}"


def _refuse_unchecked(
    doc: YamlDocument,
    categories: Sequence[Category],
    budgets: Sequence[MetricBudget],
    written_at: Mapping[Category, int] | None,
) -> None:
    """Refuse a category no budget checks: its item would pass with nothing checked.

    ``written_at`` is each category's index in ``categories:``, None when the key is left out
    (all seven, by default).
    """
    for category in categories:
        if any(category in METRIC_CATEGORIES[b.metric] for b in budgets):
            continue
        feeds = [m for m, fed_by in METRIC_CATEGORIES.items() if category in fed_by]
        own = [m for m in feeds if len(METRIC_CATEGORIES[m]) < len(Category)] or feeds
        at: tuple[str | int, ...] = ("turn_taking", "categories")
        chosen = "categories"
        if written_at is None:
            chosen = "categories (left out: all seven)"
        else:
            at = (*at, written_at[category])
        raise doc.error(
            at,
            f"no budget checks category {category.value!r} of {chosen}, so its item would "
            f"pass with nothing checked; {category.value} stimuli feed {', '.join(feeds)}: "
            f"add a budget for one under budgets (e.g. {_example_budget(own[0])}) "
            f"or drop {category.value!r} from categories",
        )


def _budgets(doc: YamlDocument, raw: Any, categories: Sequence[Category]) -> list[MetricBudget]:
    at = ("turn_taking", "budgets")
    if not isinstance(raw, Mapping):
        raise doc.error(at, "write a mapping of budgets: {pause_takeover_rate_max: 0.1}")
    known = [f"{m}_{b}" for m in METRIC_NAMES for b in ("max", "min")]
    out = []
    for key, value in raw.items():
        key = str(key)
        if key not in known:
            _unknown(doc, at, key, known)
        metric, _, bound = key.rpartition("_")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise doc.error((*at, key), f"write a number, not {value!r}")
        if "_ms_" in metric and value < 0:
            raise doc.error((*at, key), f"write milliseconds of 0 or more, not {value!r}")
        if "_ms_" not in metric and not 0 <= value <= 1:
            raise doc.error((*at, key), f"{metric} is a ratio: write 0 to 1, not {value!r}")
        feeds = METRIC_CATEGORIES[metric]
        if not feeds & set(categories):
            wanted = ", ".join(sorted(c.value for c in feeds))
            raise doc.error(
                (*at, key),
                f"{metric} is measured on {wanted} stimuli and categories has none of them; "
                f"add one to categories or drop the budget",
            )
        line = doc.line((*at, key))
        out.append(
            MetricBudget(
                key=key,
                metric=metric,
                bound="max" if bound == "max" else "min",
                limit=float(value),
                location=f"{doc.path.name}:{line}" if line else doc.path.name,
            )
        )
    return out
