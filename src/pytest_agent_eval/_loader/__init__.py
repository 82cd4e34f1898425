"""YAML transcripts in, validated `Transcript` objects out (the loader's public functions).

Validation happens once, here, against the JSON Schema shipped in the package, plus the checks
a schema cannot express: duplicate keys here, and every problem of the built transcript
(`pytest_agent_eval._problems.transcript_problems`: regexes that must compile, pause markers,
conditions, interruptions), which the runner lists for a Python-built transcript too. Every problem becomes a single `TranscriptError` whose message names the
file, the line, the field path and, for a misspelt key, the closest valid one. ``expect:`` keys
are built into `Expect` by a loop over the expectation registry (`pytest_agent_eval._expectations`).

Its private parts: `_yaml` (hardened parsing and the line index), `_messages` (the schema's
verdicts in words), `_datasets` (cases) and `_build` (the models, then the transcript's
problems).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TranscriptError
from ..models import Transcript
from ._build import Presets, checked_build, iter_audio_paths, load_one
from ._datasets import load_dataset, project_folder
from ._messages import transcript_schema, validate_schema, yaml_type
from ._yaml import MAX_YAML_NODES, LineIndex, Subject, field_where, format_path, parse_yaml

__all__ = [
    "MAX_YAML_NODES",
    "TRANSCRIPT_SUFFIXES",
    "Presets",
    "Subject",
    "YamlDocument",
    "find_transcript_files",
    "is_ignored_file",
    "iter_audio_paths",
    "load_transcript_file",
    "load_transcript_text",
    "load_transcripts",
    "read_yaml_document",
    "transcript_schema",
]

TRANSCRIPT_SUFFIXES = (".yaml", ".yml")


def is_ignored_file(path: Path) -> bool:
    """Files whose name starts with ``_`` or ``.`` are never collected (shared snippets)."""
    return path.name.startswith(("_", "."))


def find_transcript_files(dirs: Iterable[Path]) -> list[Path]:
    """Every ``*.yaml`` / ``*.yml`` under each folder (recursive), sorted, without duplicates.

    A path that is itself a YAML file is returned as is. Missing folders yield nothing; the
    caller decides whether that is an error.
    """
    found: set[Path] = set()
    for base in dirs:
        base = Path(base)
        if base.is_file():
            if base.suffix in TRANSCRIPT_SUFFIXES:
                found.add(base.resolve())
            continue
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            if path.suffix in TRANSCRIPT_SUFFIXES and path.is_file() and not is_ignored_file(path):
                found.add(path.resolve())
    return sorted(found)


def load_transcripts(
    paths: Sequence[Path],
    *,
    default_threshold: float = 0.8,
    default_runs: int = 1,
    presets: Presets | None = None,
    audio_roots: Sequence[Path] | None = None,
) -> list[Transcript]:
    """Load several files, rejecting an ``id`` used twice.

    Raises:
        TranscriptError: For the first invalid file or duplicated id.
    """
    seen: dict[str, Path] = {}
    out: list[Transcript] = []
    for path in paths:
        transcript = load_transcript_file(
            path,
            default_threshold=default_threshold,
            default_runs=default_runs,
            presets=presets,
            audio_roots=audio_roots,
        )
        if transcript.id in seen:
            raise duplicate_id_error(transcript, seen[transcript.id])
        seen[transcript.id] = path
        out.append(transcript)
    return out


def duplicate_id_error(transcript: Transcript, first: Path) -> TranscriptError:
    """The error for an ``id`` already used by another file."""
    where = f"{transcript.path}:{transcript.line}" if transcript.line else f"{transcript.path}"
    return TranscriptError(
        f"{where}: id {transcript.id!r} is already used by {first}; "
        "transcript ids must be unique because they name the tests"
    )


def load_transcript_file(
    path: Path,
    *,
    default_threshold: float = 0.8,
    default_runs: int = 1,
    presets: Presets | None = None,
    audio_roots: Sequence[Path] | None = None,
) -> Transcript:
    """Read and validate one YAML transcript.

    ``default_threshold`` and ``default_runs`` (from ``[tool.agent_eval]``) apply when the
    file does not set them; ``presets`` are the named audio conditions variants and
    ``conditions:`` may use (default: the built-in ones). ``audio:`` paths must resolve inside
    one of ``audio_roots`` (default: the folder of the nearest pyproject.toml above the file,
    else the file's folder).

    Raises:
        TranscriptError: With file, line, field path and a hint.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read transcript: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    return load_transcript_text(
        text,
        path=path.resolve(),
        default_threshold=default_threshold,
        default_runs=default_runs,
        presets=presets,
        audio_roots=audio_roots,
    )


def load_transcript_text(
    text: str,
    *,
    path: Path,
    default_threshold: float = 0.8,
    default_runs: int = 1,
    presets: Presets | None = None,
    audio_roots: Sequence[Path] | None = None,
) -> Transcript:
    """Validate YAML ``text`` as a transcript; ``path`` names it and anchors ``audio:``,
    which must resolve inside ``audio_roots`` (see `load_transcript_file`)."""
    node, data = parse_yaml(text, path)
    lines = LineIndex.build(node)
    if not isinstance(data, dict) or not ({"id", "turns"} & set(data)):
        shape = "empty" if data is None else yaml_type(data)
        raise TranscriptError(
            f"{path}: this YAML file is not a transcript (it is {shape} without 'id' and "
            "'turns' keys). Transcripts need 'id' and 'turns'; move other YAML files out of "
            "yaml_dirs, or start their name with '_' so they are not collected"
        )
    roots = tuple(audio_roots) if audio_roots is not None else (project_folder(path),)
    if "cases" in data and isinstance(data.get("turns"), list):
        return load_dataset(data, path, lines, default_threshold, default_runs, presets, roots)
    return load_one(data, path, lines, default_threshold, default_runs, presets, roots)


# Formats built on transcripts (simulations, LiveKit's scenarios.yaml)


@dataclass(frozen=True)
class YamlDocument:
    """A YAML file read the way transcripts are read (plain data only, bounded aliases,
    duplicate keys refused, every field's line known), for a file format that builds on
    transcripts: its mistakes get the same one-error messages, with file, line and field.

    Made by `read_yaml_document`.
    """

    path: Path
    data: Any
    """What the YAML holds."""
    _lines: LineIndex = field(repr=False)

    def line(self, at: Sequence[str | int]) -> int | None:
        """The line of the field at path ``at`` (or of its nearest ancestor)."""
        return self._lines.line(tuple(at))

    def where(self, at: Sequence[str | int]) -> str:
        """``file:line, <subject>, field.path``, as the loader's messages start."""
        data = self.data if isinstance(self.data, Mapping) else {}
        return f"{field_where(self.path, self._lines, tuple(at), data)}, {format_path(tuple(at))}"

    def error(self, at: Sequence[str | int], problem: str) -> TranscriptError:
        """The error for ``problem`` at the field at path ``at``."""
        return TranscriptError(f"{self.where(at)}: {problem}")

    def validate(
        self, validator: Any, *, data: Any = None, hints: Mapping[str, str] | None = None
    ) -> None:
        """Check ``data`` (default: the whole document) against a JSON Schema validator;
        the first problem is raised as the loader words it (an unknown field first, with the
        closest known one). ``hints`` add what to write for a missing required field.

        Raises:
            TranscriptError: With file, line, field and a hint.
        """
        validate_schema(
            self.data if data is None else data, self.path, self._lines, validator, hints
        )

    def build_transcript(
        self,
        data: dict[str, Any],
        *,
        default_threshold: float = 0.8,
        default_runs: int = 1,
        presets: Presets | None = None,
        audio_roots: Sequence[Path] | None = None,
        audio_to_come: bool = False,
    ) -> Transcript:
        """The `Transcript` of ``data``: the transcript fields of the document (``id``,
        ``turns``, ``runs``, ``voice``, ``conditions``, ``variants``...), already accepted by
        a schema that includes the transcript's. Every check the loader makes beyond the
        schema runs here, with the document's lines. ``turns`` may be empty.
        ``audio_to_come``: audio turns are added as it runs (a simulated caller speaks), so
        ``conditions`` and ``variants`` need no written audio turn.

        Raises:
            TranscriptError: With file, line, field and a hint.
        """
        roots = tuple(audio_roots) if audio_roots is not None else (project_folder(self.path),)
        return checked_build(
            {"turns": [], **data},
            self.path,
            self._lines,
            default_threshold,
            default_runs,
            presets,
            roots,
            audio_to_come=audio_to_come,
        )


def read_yaml_document(path: Path, *, subject: Subject | None = None) -> YamlDocument:
    """Read and parse ``path`` as transcripts are (`YamlDocument`); ``subject`` names what a
    field belongs to in messages (default: the transcript's id and turn).

    Raises:
        TranscriptError: The file cannot be read, is not UTF-8, or is not plain, valid YAML.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read the file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    resolved = path.resolve()
    node, data = parse_yaml(text, resolved)
    return YamlDocument(resolved, data, LineIndex.build(node, subject))
