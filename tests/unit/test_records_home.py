"""Records have one home (`_records`), below the gates and the reports: what a test ran, one
eval's record, the session's records and their collector; the old places re-export them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_agent_eval

SRC = Path(pytest_agent_eval.__file__).parent
RECORD_CLASSES = {"EvalRecord", "SessionRecords", "RecordCollector"}


def test_every_record_class_is_defined_in_records_alone() -> None:
    defined: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name in RECORD_CLASSES:
                defined.setdefault(node.name, []).append(path.relative_to(SRC).as_posix())
    assert defined == {name: ["_records.py"] for name in RECORD_CLASSES}


def test_what_a_test_ran_is_kept_as_the_record_its_report_carries() -> None:
    """Issue 33: the kept eval (once ``RecordedEval``, a tuple of four of `EvalRecord`'s
    fields) is an `EvalRecord`; no second class duplicates it."""
    classes = {
        node.name
        for path in SRC.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.ClassDef)
    }
    assert "RecordedEval" not in classes


def test_the_earlier_places_hand_back_the_same_classes() -> None:
    from pytest_agent_eval import _fixture, _records
    from pytest_agent_eval._report import _records as records

    assert _fixture.EvalRecord is _records.EvalRecord
    for name in ("EvalRecord", "SessionRecords", "RecordCollector", "read_record", "iter_results"):
        assert getattr(records, name) is getattr(_records, name)


def test_records_import_nothing_above_them() -> None:
    tree = ast.parse((SRC / "_records.py").read_text("utf-8"))
    ours = {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
    }
    assert ours <= {"models", "_serialize"}
