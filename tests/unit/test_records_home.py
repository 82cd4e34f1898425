"""Records have one home (`_records`), below the gates and the reports: what a test ran, one
eval's record, the session's records and their collector; the old places re-export them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_agent_eval

SRC = Path(pytest_agent_eval.__file__).parent
RECORD_CLASSES = {"RecordedEval", "EvalRecord", "SessionRecords", "RecordCollector"}


def test_every_record_class_is_defined_in_records_alone() -> None:
    defined: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name in RECORD_CLASSES:
                defined.setdefault(node.name, []).append(path.relative_to(SRC).as_posix())
    assert defined == {name: ["_records.py"] for name in RECORD_CLASSES}


def test_the_earlier_places_hand_back_the_same_classes() -> None:
    from pytest_agent_eval import _fixture, _records
    from pytest_agent_eval._report import _records as records

    assert _fixture.RecordedEval is _records.RecordedEval
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
