"""One transcript, several tests: a transcript expands into the transcripts that run.

A transcript with ``variants:`` runs once per variant, each its own pytest test with a readable
id: ``booking`` with variants ``clean`` and ``phone`` becomes ``booking[clean]`` and
``booking[phone]``. Expansion is general, so other sources of cases (a table of datasets) use
the same two steps:

- `derive` makes one expanded transcript: a copy with an id suffix and its own parameters.
  Suffixes compose: deriving ``phone`` from ``booking[case1]`` gives ``booking[case1-phone]``
  (``-`` joins parts, as pytest joins parameter ids), and ``base_id`` stays ``booking``.
- `expand_cases` makes one transcript per row of a dataset (``cases:``), `expand_variants`
  one per audio variant.
- `expand` lists every transcript one YAML transcript makes, in order; the collector makes one
  test of each (and a parametrized ``llm_eval_agent`` adds its id last:
  ``booking[phone-agentA]``).

An expanded transcript is an ordinary `Transcript`: the runner, the adapters and the reports
need nothing else. Its ``id`` is the full id (``booking[phone]``); ``base_id``, ``id_suffixes``
and ``variant`` say where it came from. Gates' ``must_pass`` accepts ``booking[phone]`` for one
variant and ``booking`` for all of them.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from .models import Transcript

__all__ = ["SUFFIX_PATTERN", "derive", "expand", "expand_cases", "expand_variants", "id_suffix"]

SUFFIX_PATTERN = r"^[A-Za-z0-9_.+]+$"
"""An id suffix: letters, digits, ``_``, ``.`` and ``+`` (safe in node ids, ``-k`` and file
names; ``-`` is kept for joining suffixes)."""

_SUFFIX = re.compile(SUFFIX_PATTERN)


def derive(transcript: Transcript, suffix: str, **changes: Any) -> Transcript:
    """A copy of ``transcript`` that runs as its own test, ``base[suffix]``, with ``changes``
    applied (any `Transcript` field: ``conditions``, ``threshold``, ``turns``...).

    Raises:
        ValueError: For a suffix that is empty or holds other characters than
            `SUFFIX_PATTERN` allows.
    """
    if not _SUFFIX.match(suffix):
        raise ValueError(
            f"id suffix {suffix!r} may hold letters, digits, '_', '.' and '+' only (it becomes "
            "part of a test id)"
        )
    base = transcript.base_id or transcript.id
    suffixes = [*transcript.id_suffixes, suffix]
    return replace(
        transcript,
        id=f"{base}[{'-'.join(suffixes)}]",
        base_id=base,
        id_suffixes=suffixes,
        **changes,
    )


def expand_variants(transcript: Transcript) -> list[Transcript]:
    """One transcript per variant (their conditions after the transcript's), or the transcript
    itself when it has none."""
    if not transcript.variants:
        return [transcript]
    return [
        derive(
            transcript,
            variant.name,
            variant=variant.name,
            conditions=[*transcript.conditions, *variant.conditions],
            variants=[],
            threshold=transcript.threshold if variant.threshold is None else variant.threshold,
        )
        for variant in transcript.variants
    ]


def expand_cases(transcript: Transcript) -> list[Transcript]:
    """One transcript per case of its dataset (its turns filled in with the case's fields), or
    the transcript itself when it has none."""
    if not transcript.cases:
        return [transcript]
    return [
        derive(transcript, case.id, case=case.id, turns=case.turns, cases=[])
        for case in transcript.cases
    ]


def expand(transcript: Transcript) -> list[Transcript]:
    """Every transcript that ``transcript`` makes, each its own test, in order: per case of
    its dataset, per variant (``booking[case1-phone]``)."""
    return [v for c in expand_cases(transcript) for v in expand_variants(c)]


def id_suffix(transcript: Transcript) -> str:
    """The part of a test id inside the brackets (``phone``, ``case1-phone``), "" for none."""
    return "-".join(transcript.id_suffixes)
