"""One home per concept (issue 33), held against the source as the import rules are
(tests/unit/test_public_api.py): each concept below is defined in one module and nowhere else;
``--agent-eval-runs`` is resolved in one place; every exception the package raises derives
from `AgentEvalError`; and the classes defined under one name in several modules (twins, a
concept implemented twice) are listed, a list that can only shrink.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest_agent_eval
from pytest_agent_eval._config import Settings
from pytest_agent_eval._options import SessionSettings

SRC = Path(pytest_agent_eval.__file__).parent

# --------------------------------------------------------------------------------------------
# Each concept in one module
# --------------------------------------------------------------------------------------------

CONCEPTS: dict[str, str] = {
    # name (``Class.method`` for a method) -> the one module (under the package) defining it.
    "Verdict": "models/_results.py",  # a run's verdict: the one meaning of the word
    "EvalVerdict": "_records.py",  # an eval's: a run's verdict, or skipped
    "FixtureCheck": "voice/_status.py",  # what judge_fixture found (0.4 called it Verdict)
    "judge_fixture": "voice/_status.py",
    "AgentEvalError": "errors.py",  # the base of every exception the package raises
    "SessionSettings.planned_runs": "_options.py",  # --agent-eval-runs, applied
    "marker_plan": "_eval_plan.py",  # a Python eval's threshold, runs and tags
    "MOVED": "legacy.py",  # every old import path
    "moved_attr": "legacy.py",
    "EvalRecord": "_records.py",
    "TestOutcome": "_records.py",
    "to_json": "_serialize.py",  # the one typed serializer
    "from_json": "_serialize.py",
    "write_atomic": "_atomic.py",
    "transcript_problems": "_problems.py",  # a transcript's problems, for loader and runner
    "parse_conditions": "_conditions.py",
    "Settings": "_config.py",
    "session_settings": "_options.py",
}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), ast.parse(path.read_text("utf-8"))


def _definitions(tree: ast.Module) -> set[str]:
    """The names a module defines: its top-level functions, classes and assignments, every
    class wherever it is (a class in a function too), and ``Class.method`` of its classes."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    for found in ast.walk(tree):
        if isinstance(found, ast.ClassDef):
            names.add(found.name)
            names.update(
                f"{found.name}.{item.name}"
                for item in found.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            )
    return names


def test_every_concept_is_defined_in_its_one_module() -> None:
    homes: dict[str, list[str]] = {name: [] for name in CONCEPTS}
    for module, tree in _modules():
        for name in _definitions(tree) & set(CONCEPTS):
            homes[name].append(module)
    problems = [
        f"{name}: defined in {found or 'no module'}, its one home is {CONCEPTS[name]}"
        for name, found in sorted(homes.items())
        if found != [CONCEPTS[name]]
    ]
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------------
# --agent-eval-runs: read in one place
# --------------------------------------------------------------------------------------------

OVERRIDE_READERS: dict[tuple[str, str], str] = {
    # (module, function) -> why it reads the runs override.
    ("_options.py", "session_settings"): "parses --agent-eval-runs into runs_override",
    ("_options.py", "SessionSettings.planned_runs"): "the resolver everyone else asks",
}

_OPTION_NAMES = {"agent_eval_runs", "--agent-eval-runs"}


def _override_reads(tree: ast.Module) -> set[str]:
    """The functions (``Class.method``, ``function``, ``<module>``) of a module that read the
    runs override: ``x.runs_override``, ``config.getoption("agent_eval_runs")``,
    ``config.option.agent_eval_runs``."""
    found: set[str] = set()

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                inner = child.name if where == "<module>" else f"{where}.{child.name}"
            if (
                isinstance(child, ast.Attribute)
                and isinstance(child.ctx, ast.Load)
                and child.attr in {"runs_override", "agent_eval_runs"}
            ):
                found.add(where)
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr in {"getoption", "getvalue"}
                and any(
                    isinstance(arg, ast.Constant) and arg.value in _OPTION_NAMES
                    for arg in child.args
                )
            ):
                found.add(where)
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_only_the_resolver_reads_the_runs_override() -> None:
    readers = {(module, where) for module, tree in _modules() for where in _override_reads(tree)}
    extra = sorted(readers - set(OVERRIDE_READERS))
    assert not extra, (
        f"{extra} read --agent-eval-runs themselves: ask SessionSettings.planned_runs(runs)"
    )
    gone = sorted(set(OVERRIDE_READERS) - readers)
    assert not gone, f"{gone} no longer read the runs override: remove them from OVERRIDE_READERS"


def test_the_override_reader_sees_every_way_of_reading_it() -> None:
    source = (
        "def a(session):\n    return session.runs_override or 1\n"
        "class B:\n    def c(self, config):\n        return config.getoption('agent_eval_runs')\n"
        "def d(config):\n    def e():\n        return config.option.agent_eval_runs\n    return e\n"
        "def f(config):\n    return SessionSettings(runs_override=config)\n"
        "def g(node):\n    return ('agent_eval_runs', len(node))\n"
    )
    assert _override_reads(ast.parse(source)) == {"a", "B.c", "d.e"}


def test_the_resolver_gives_the_override_when_there_is_one() -> None:
    plain = SessionSettings(settings=Settings(), live=True)
    overridden = SessionSettings(settings=Settings(), live=True, runs_override=3)
    assert plain.planned_runs(5) == 5 and plain.planned_runs(None) is None
    assert overridden.planned_runs(5) == 3 and overridden.planned_runs(None) == 3


# --------------------------------------------------------------------------------------------
# Every exception derives from AgentEvalError
# --------------------------------------------------------------------------------------------

NOT_AGENT_EVAL_ERRORS: dict[str, str] = {
    # module:class -> why it may be an exception class that is not an AgentEvalError. Each is
    # a private signal raised and caught inside its own module (it never reaches a user), or
    # a warning category.
    "synthesize/_plan.py:FixtureNoteWarning": "a warning category (warnings.warn), not raised",
    "_compat/pydantic_ai.py:_Known": "stops pydantic-ai's model lookup; caught where raised",
    "_serialize.py:_Mismatch": "caught by the decoder, which raises a ValueError naming the path",
    "_loader/_datasets.py:_MissingField": "caught by the loader, which raises TranscriptError",
    "_loader/_yaml.py:_NodeProblem": "caught by the loader, which raises TranscriptError",
}

_EXCEPTION_LIKE = re.compile(r"(Error|Exception|Exit|Interrupt|Warning|error)$")


def _exception_classes() -> dict[str, list[str]]:
    """``module:class`` -> its bases, for every class of the package that is an exception:
    one based on a builtin exception, on one of the package's exception classes, or on an
    exception of the standard library (``re.error``)."""
    classes: dict[str, list[str]] = {}
    for module, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base) for base in node.bases]
                classes[f"{module}:{node.name}"] = bases
    by_name: dict[str, list[str]] = {}
    for key in classes:
        by_name.setdefault(key.partition(":")[2], []).append(key)

    def outside(base: str) -> bool | None:
        """Whether a base the package does not define is an exception; None if unknown."""
        head, _, attr = base.rpartition(".")
        if not head:
            value = getattr(builtins, base, None)
        elif head.split(".")[0] in sys.stdlib_module_names:
            value = getattr(importlib.import_module(head), attr, None)
        else:
            return None
        return isinstance(value, type) and issubclass(value, BaseException)

    exceptions: set[str] = set()
    unknown: list[str] = []
    changed = True
    while changed:
        changed = False
        for key, bases in classes.items():
            if key in exceptions:
                continue
            for base in bases:
                name = base.split("[")[0]
                ours = by_name.get(name.rpartition(".")[2]) if "." not in name else None
                if ours:
                    hit = any(k in exceptions for k in ours)
                else:
                    known = outside(name)
                    if known is None and _EXCEPTION_LIKE.search(name):
                        unknown.append(f"{key} ({base})")
                    hit = bool(known)
                if hit:
                    exceptions.add(key)
                    changed = True
                    break
    assert not unknown, (
        f"cannot tell whether these bases are exceptions: {sorted(set(unknown))}; teach "
        "_exception_classes where they come from"
    )
    return {key: classes[key] for key in sorted(exceptions)}


def _derives_from_base(key: str, classes: dict[str, list[str]]) -> bool:
    if key.endswith(":AgentEvalError"):
        return True
    by_name = {k.partition(":")[2]: k for k in classes}
    return any(
        base in by_name and _derives_from_base(by_name[base], classes) for base in classes[key]
    )


def test_every_exception_class_derives_from_agent_eval_error() -> None:
    classes = _exception_classes()
    assert "errors.py:AgentEvalError" in classes and "errors.py:TranscriptError" in classes
    outside = {key for key in classes if not _derives_from_base(key, classes)}
    extra = sorted(outside - set(NOT_AGENT_EVAL_ERRORS))
    assert not extra, (
        f"{extra} do not derive from AgentEvalError: base them on it (keep a builtin base too, "
        "by multiple inheritance, where callers catch that)"
    )
    stale = sorted(set(NOT_AGENT_EVAL_ERRORS) - outside)
    assert not stale, f"{stale} are gone or derive from AgentEvalError now: unlist them"


def test_the_exception_reader_follows_bases_through_the_package() -> None:
    classes = _exception_classes()
    # a builtin base beside ours, a standard-library one, one through another of ours
    assert "voice/_clock.py:NetworkRefusedError" in classes
    assert "evaluators/_reply.py:InvalidPatternError" in classes
    assert "voice/_speech.py:PauseMarkupError" in classes
    assert "synthesize/_plan.py:FixtureNoteWarning" in classes
    assert not any(key.endswith(":Settings") for key in classes)


def test_the_rebased_exceptions_keep_their_builtin_bases() -> None:
    """Callers (a framework's networking code, the earlier package's users) catch these by
    their builtin class; each is an AgentEvalError as well."""
    from pytest_agent_eval._compat.pytest import PytestDriftError
    from pytest_agent_eval._conditions import ConditionProblem
    from pytest_agent_eval.errors import AgentEvalError
    from pytest_agent_eval.evaluators._reply import InvalidPatternError
    from pytest_agent_eval.voice._clock import NetworkRefusedError

    kept: dict[type[BaseException], tuple[type[BaseException], ...]] = {
        NetworkRefusedError: (ConnectionRefusedError,),
        InvalidPatternError: (re.error, ValueError),
        PytestDriftError: (RuntimeError,),
        ConditionProblem: (ValueError,),
    }
    for cls, bases in kept.items():
        assert issubclass(cls, AgentEvalError) and issubclass(cls, bases), cls
    refused = NetworkRefusedError("connection to example.com:443 refused")
    assert str(refused) == "connection to example.com:443 refused"
    problem = InvalidPatternError("missing )", pattern="(", pos=0)
    assert problem.pattern == "(" and problem.pos == 0


# --------------------------------------------------------------------------------------------
# Twins: one name, several modules
# --------------------------------------------------------------------------------------------

KNOWN_TWINS: dict[str, str] = {
    # A class name (leading underscores aside) defined in more than one module: the same
    # concept written twice, or two concepts that share a name. May only shrink: merge them
    # into one home, or rename one when they are different things.
    "Microphone": "the Pipecat transport's; the room caller's (livekit/room/_microphone.py)",
    "Stage": "what a LiveKit turn waits on (_turn.py); the room's (room/_conversation.py)",
}


def _twins() -> dict[str, list[str]]:
    where: dict[str, set[str]] = {}
    for module, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name.lstrip("_"), set()).add(module)
    return {name: sorted(found) for name, found in sorted(where.items()) if len(found) > 1}


def test_twins_only_shrink() -> None:
    twins = _twins()
    new = {name: found for name, found in twins.items() if name not in KNOWN_TWINS}
    assert not new, (
        f"classes of one name in several modules: {new}; give the concept one home, or a "
        "name of its own if they are different things"
    )
    gone = sorted(set(KNOWN_TWINS) - set(twins))
    assert not gone, f"{gone} have one home now: remove them from KNOWN_TWINS"
