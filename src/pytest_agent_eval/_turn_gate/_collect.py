"""``turn_taking:`` files as pytest tests: one `TurnTakingItem` per stimulus category (and per
param of a parametrized ``llm_eval_agent``), named ``<id>[<category>]``.

An item is a `TranscriptItem` (named, tagged, selected, parametrized and reported as a YAML
transcript's, through `transcript_items`) whose test plays the category's stimuli to the agent
the ``llm_eval_agent`` fixture returns, the one the transcripts run against, and records the
result (budgets as its checks) and the `TurnTakingRecord` (its metrics) for the reports and
the results file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from .._collection import TranscriptItem, transcript_items
from .._expansion import derive
from .._fixture import adapter_or_fail, record_result, session_key, session_loop
from .._turn_taking._stimulus import Category
from ..errors import TranscriptError
from ..models import Transcript
from ._run import (
    category_failed,
    heard_over_lines,
    hearing_probe,
    observer_for,
    prepare_stimuli,
    run_category,
)
from ._spec import TurnTakingSpec, is_turn_taking_file, load_turn_taking_file

__all__ = [
    "CACHE_FOLDER",
    "TurnTakingFile",
    "TurnTakingItem",
    "collect_turn_taking_file",
]

CACHE_FOLDER = ".agent_eval_cache/turn_taking"
"""Under the rootdir: the rendered stimuli, one folder per seed, made on first use."""


def collect_turn_taking_file(path: Path, parent: pytest.Collector) -> TurnTakingFile | None:
    """A `TurnTakingFile` for a YAML file with a top-level ``turn_taking:``, else None."""
    if not is_turn_taking_file(path):
        return None
    return TurnTakingFile.from_parent(parent, path=path)


class TurnTakingFile(pytest.File):
    """A ``turn_taking:`` file: one item per category it asks for."""

    def collect(self) -> Iterable[pytest.Item]:
        try:
            spec = load_turn_taking_file(self.path)
        except TranscriptError as exc:
            raise self.CollectError(str(exc)) from None
        base = Transcript(
            id=spec.id,
            turns=[],
            threshold=1.0,
            tags=list(spec.tags),
            description=spec.description,
            path=spec.path,
            line=spec.line,
        )
        for category in spec.categories:
            named = replace(base, id_suffixes=[category.value])
            yield from transcript_items(
                self, named, item_class=TurnTakingItem, spec=spec, category=category
            )


class TurnTakingItem(TranscriptItem):
    """One category of a ``turn_taking:`` file as a test."""

    def __init__(self, *, spec: TurnTakingSpec, category: Category, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.category = category
        # Named as an expanded transcript is (``turn-taking[pause]``), so reports tell the
        # categories apart and ``-k pause`` selects one.
        self.transcript = derive(replace(self.transcript, id_suffixes=[]), category.value)
        self.extra_keyword_matches.update({self.transcript.id, category.value, "turn_taking"})

    def execute(self, agent: Any, request: pytest.FixtureRequest) -> None:
        """Play the category's stimuli to ``agent`` and assert its budgets."""
        __tracebackhide__ = True
        settings = self.config.stash[session_key].settings
        adapter = adapter_or_fail(agent, self)
        try:
            observer = observer_for(adapter, self.transcript, tail_s=self.spec.tail_s)
            cache = settings.rootdir / CACHE_FOLDER
            played = heard_over_lines(
                cache,
                prepare_stimuli(cache, self.spec.stimuli(self.category)),
                self.spec.lines,
                self.spec.levels_db,
            )
            probe = hearing_probe(self.category, self.spec.seeds[0])
            result, record = session_loop(self.config).run(
                run_category(
                    self.spec,
                    self.category,
                    transcript=self.transcript,
                    observer=observer,
                    played=played,
                    probe=prepare_stimuli(cache, [probe])[0] if probe else None,
                    audio_root=settings.rootdir,
                )
            )
        except Exception as exc:  # the agent could not be run at all: recorded, said short
            result, record = category_failed(
                self.spec, self.category, transcript=self.transcript, exc=exc
            )
        record_result(
            self,
            result,
            path=self.spec.path,
            description=self.spec.description,
            turn_taking=record,
        )
        result.assert_threshold()

    def reportinfo(self) -> tuple[Path, int | None, str]:
        path, line, head = super().reportinfo()
        return path, line, head.replace("transcript: ", "turn-taking: ", 1)
