"""YAML transcripts as pytest tests: one `TranscriptFile` per file, one `TranscriptItem` per
transcript it expands into (one per variant, see `pytest_agent_eval._expansion`), and one per
param of a parametrized ``llm_eval_agent``.

Collection validates every transcript, also when evals are not live, so a broken transcript
fails CI even where no agent runs. A `TranscriptError` shows only its message, the way pytest's
``CollectError`` does; the other files still collect.

A transcript id may hold spaces, colons or brackets (``id: "booking: happy path"``), as the
earlier package allowed. The test is named by `transcript_test_name` (``booking_happy_path``), which is
safe in a node id, with ``-k`` and in file names; the real id stays what reports show, a
``-k`` keyword, and a name ``must_pass`` accepts.

An expanded transcript is named ``NAME[SUFFIX]`` (``booking[phone]``); an agent param is added
last, joined with ``-`` as pytest joins parameter ids: ``booking[phone-agentA]``.

A simulation file (a top-level ``persona:``) and LiveKit's ``scenarios.yaml`` (a top-level
``scenarios:``) collect through `pytest_agent_eval.simulation`, whose items are transcript items
that run a simulated caller; `transcript_items` names, checks and parametrizes both alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from ._compat.pytest import (
    PytestDriftError,
    failure_repr,
    fixture_defs,
    fixture_scope,
    make_callspec,
)
from ._expansion import expand, id_suffix
from ._fixture import AGENT_FIXTURE, MISSING_AGENT_MESSAGE, AgentEval, kept_results, session_key
from ._loader import TRANSCRIPT_SUFFIXES, duplicate_id_error, is_ignored_file, load_transcript_file
from ._report._account import failure_headline, format_account
from ._text import safe_name
from .errors import TranscriptError
from .models import Transcript

__all__ = [
    "TranscriptFile",
    "TranscriptItem",
    "collect_transcript_file",
    "seen_ids_key",
    "seen_names_key",
    "transcript_items",
    "transcript_test_name",
]

seen_ids_key = pytest.StashKey[dict[str, Path]]()
"""On ``config.stash``: transcript id -> the file that first used it (ids name tests)."""
seen_names_key = pytest.StashKey[dict[str, tuple[str, Path]]]()
"""On ``config.stash``: test name -> the transcript id and file that first used it."""


def transcript_test_name(transcript_id: str) -> str:
    """The pytest test name of a transcript: its id, with each run of characters that a node id,
    ``-k`` or a file name cannot hold replaced by ``_`` (``"booking: happy path"`` ->
    ``booking_happy_path``). An id made of safe characters is its own name."""
    return safe_name(transcript_id)


def _is_under(path: Path, folders: Iterable[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved == f or f in resolved.parents for f in folders)


FileCollector = Callable[[Path, pytest.Collector], "pytest.File | None"]
"""A collector of one other kind of YAML file under ``yaml_dirs``: its `pytest.File`, or None
when the file is not of its kind."""


def collect_transcript_file(
    file_path: Path, parent: pytest.Collector, *, other_kinds: Sequence[FileCollector] = ()
) -> pytest.File | None:
    """A `TranscriptFile` for a ``*.yaml`` / ``*.yml`` under ``yaml_dirs``, else None; the
    first of ``other_kinds`` that recognizes the file collects it instead (the plugin passes
    the simulation collector: a simulation file, a LiveKit ``scenarios.yaml``)."""
    session = parent.config.stash.get(session_key, None)
    if session is None or file_path.suffix not in TRANSCRIPT_SUFFIXES:
        return None
    if is_ignored_file(file_path) or not _is_under(file_path, session.settings.yaml_paths):
        return None
    for collect in other_kinds:
        found = collect(file_path, parent)
        if found is not None:
            return found
    return TranscriptFile.from_parent(parent, path=file_path)


class TranscriptFile(pytest.File):
    """A YAML transcript file; collects into one `TranscriptItem` (or one per agent param)."""

    def collect(self) -> Iterable[pytest.Item]:
        settings = self.config.stash[session_key].settings
        try:
            transcript = load_transcript_file(
                self.path,
                default_threshold=settings.threshold,
                default_runs=settings.runs,
                presets=settings.conditions,
                audio_roots=settings.audio_root_paths,
            )
        except TranscriptError as exc:
            raise self.CollectError(str(exc)) from None
        yield from transcript_items(self, transcript)


def transcript_items(
    parent: pytest.File,
    transcript: Transcript,
    *,
    item_class: type[TranscriptItem] | None = None,
    **item_values: Any,
) -> Iterable[pytest.Item]:
    """The items of one transcript of ``parent``'s file: its id checked against the other
    files' (ids and test names must be unique), one item per variant and case
    (`expand`), and one per param of a parametrized ``llm_eval_agent``.

    ``item_class`` (a `TranscriptItem` subclass; default `TranscriptItem`) is made with
    ``item_values`` as well as the expanded transcript; a simulation's items pass theirs.

    Raises:
        CollectError: (``parent.CollectError``) for an id or test name used twice.
    """
    cls = item_class or TranscriptItem
    seen = parent.config.stash.setdefault(seen_ids_key, {})
    first = seen.get(transcript.id)
    if first is not None and first != parent.path:
        raise parent.CollectError(str(duplicate_id_error(transcript, first)))
    name = transcript_test_name(transcript.id)
    names = parent.config.stash.setdefault(seen_names_key, {})
    other_id, other_path = names.get(name, (transcript.id, parent.path))
    if other_id != transcript.id:
        raise parent.CollectError(
            f"{parent.path}: id {transcript.id!r} and id {other_id!r} (in {other_path}) both "
            f"become the test name {name!r} (spaces and signs become '_'); make the ids "
            "differ in letters or digits"
        )
    seen[transcript.id] = parent.path
    names[name] = (transcript.id, parent.path)
    for expanded in expand(transcript):
        suffix = id_suffix(expanded)
        item = cls.from_parent(
            parent,
            name=f"{name}[{suffix}]" if suffix else name,
            callobj=_run_yaml_transcript,
            transcript=expanded,
            **item_values,
        )
        yield from _per_agent_param(parent, item, base_name=name, item_values=item_values) or [item]


def _with_param(name: str, param_id: str) -> str:
    """``booking[agentA]``, or for an expanded item ``booking[phone-agentA]``."""
    if name.endswith("]") and "[" in name:
        return f"{name[:-1]}-{param_id}]"
    return f"{name}[{param_id}]"


def _per_agent_param(
    parent: pytest.File,
    item: TranscriptItem,
    *,
    base_name: str,
    item_values: dict[str, Any] | None = None,
) -> list[TranscriptItem] | None:
    """One item per param of a parametrized ``llm_eval_agent`` fixture, as the seed promises.

    pytest parametrizes fixtures only for Python test functions, through a private call spec.
    YAML items need the same, so this builds those call specs from the fixture's definition,
    through `_compat.pytest` (the one home of the pytest internals this needs). When those
    internals change shape the file fails to collect with a message naming the pytest version,
    never a silent collapse into one broken item.
    """
    defs = fixture_defs(item, AGENT_FIXTURE)
    if not defs or getattr(defs[-1], "params", None) is None:
        return None
    fixturedef = defs[-1]
    fixtureinfo = getattr(item, "_fixtureinfo", None)
    try:
        scope = fixture_scope(fixturedef)
    except PytestDriftError as exc:
        raise parent.CollectError(str(exc)) from None
    items = []
    for index, param in enumerate(fixturedef.params):
        value, marks, explicit_id = param, [], None
        if isinstance(param, tuple) and hasattr(param, "marks") and hasattr(param, "values"):
            value, marks = param.values[0], list(param.marks)
            explicit_id = getattr(param, "id", None)
        param_id = explicit_id or _param_id(fixturedef.ids, index, value)
        try:
            callspec = make_callspec(
                argname=AGENT_FIXTURE,
                value=value,
                index=index,
                scope=scope,
                # pytest builds the node id from these: booking[phone-agentA].
                param_id="-".join([*item.transcript.id_suffixes, param_id]),
                marks=[getattr(m, "mark", m) for m in marks],
            )
        except PytestDriftError as exc:
            raise parent.CollectError(str(exc)) from None
        items.append(
            type(item).from_parent(
                parent,
                name=_with_param(item.name, param_id),
                callobj=_run_yaml_transcript,
                transcript=item.transcript,
                callspec=callspec,
                fixtureinfo=fixtureinfo,
                keywords={param_id: True},
                originalname=base_name,
                **(item_values or {}),
            )
        )
    return items


def _param_id(ids: Any, index: int, value: Any) -> str:
    if callable(ids):
        made = ids(value)
        if made is not None:
            return str(made)
    elif ids is not None and index < len(ids) and ids[index] is not None:
        return str(ids[index])
    if isinstance(value, str | int | float | bool) and str(value):
        return str(value)
    return f"{AGENT_FIXTURE}{index}"


def _run_yaml_transcript(llm_eval_agent: Any, request: pytest.FixtureRequest) -> None:
    """The test function behind every YAML transcript (resolves the user's agent fixture)."""
    __tracebackhide__ = True
    item = request.node
    assert isinstance(item, TranscriptItem)
    item.execute(llm_eval_agent, request)


class TranscriptItem(pytest.Function):
    """One transcript as a test. A `pytest.Function`, so it gets fixtures like any test."""

    def __init__(self, *, transcript: Transcript, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.transcript = transcript
        self.add_marker(pytest.mark.agent_eval(tags=list(transcript.tags)))
        # `-k` matches the real id too, when it differs from the test name, and for an
        # expanded transcript its base id and each suffix (`-k phone`).
        self.extra_keyword_matches.add(transcript.id)
        if transcript.base_id is not None:
            self.extra_keyword_matches.add(transcript.base_id)
            self.extra_keyword_matches.update(transcript.id_suffixes)

    @property
    def has_agent_fixture(self) -> bool:
        """Whether some conftest visible from this transcript defines ``llm_eval_agent``."""
        # pytest has no public way to ask "is fixture X visible from this item" without
        # instantiating it; the item's fixture info answers it, so read that when present.
        defs = fixture_defs(self, AGENT_FIXTURE)
        return defs is None or bool(defs)

    def setup(self) -> None:
        if not self.has_agent_fixture:
            pytest.fail(MISSING_AGENT_MESSAGE, pytrace=False)
        super().setup()

    def execute(self, agent: Any, request: pytest.FixtureRequest) -> None:
        """Run the transcript against ``agent``, as ``agent_eval.run`` would, and assert its
        threshold."""
        __tracebackhide__ = True
        evaluation = AgentEval(request, self.config.stash[session_key])
        evaluation.run_sync(agent, transcript=self.transcript).assert_threshold()

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = (self.transcript.line or 1) - 1
        # The parametrization too: two agents on one transcript get two headers told apart.
        param = self.name[len(self.originalname) :] if self.originalname else ""
        return self.path, line, f"transcript: {self.transcript.id}{param}"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        results = kept_results(self)
        if excinfo.errisinstance(AssertionError) and results:
            result = results[-1]
            # First the first failed check: pytest's short summary shows this line, cut to
            # the terminal's width. Then the earlier package's words and the account.
            head = failure_headline(result)
            lines = [head] if head else []
            text = "\n".join([*lines, str(excinfo.value), format_account(result)])
            return failure_repr(
                text,
                headline=head or str(excinfo.value).partition("\n")[0],
                path=str(self.path),
                lineno=self.transcript.line or 1,
            )
        if excinfo.errisinstance(pytest.FixtureLookupError) and AGENT_FIXTURE in str(excinfo.value):
            return MISSING_AGENT_MESSAGE
        return super().repr_failure(excinfo)
