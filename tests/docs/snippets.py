"""The docs snippet checker: every fenced code block in README.md and docs/*.md is run or marked.

Rules (also in docs/contributing.md), by the block's language tag:

``python``
    Compiled for the lowest supported Python (3.11), then run. Like notebook cells, the Python
    blocks of a page run in page order in one namespace (names defined above are visible
    below; top-level ``await`` works). A block whose first line is a path comment
    (``# tests/conftest.py``) is also that file of the page's scratch project.
``yaml``
    A transcript (or a simulation, LiveKit's scenarios.yaml, a ``turn_taking:`` file):
    validated by the package's loader. With a path comment it is also a file of the scratch
    project.
``toml``
    Parsed; a ``[tool.agent_eval]`` table is validated by the config parser (an unknown key
    fails too). With a path comment (``# pyproject.toml``) it is a file of the project.
``json``
    Parsed.
``bash`` / ``sh``
    Run with ``bash -euo pipefail`` in the page's scratch project, after every file block of the
    page is written (the package's virtualenv first on PATH, so ``pytest`` and ``python`` are
    this package's). ``pip install`` lines are not run: each ``pytest-agent-eval[extra]`` they
    name must be an extra of pyproject.toml.
``text`` / ``console``
    Output or illustration: never run.

Any other tag, or none, is an error. An HTML comment on the line before a block changes how it
is handled:

``<!-- snippet: skip REASON -->``
    Not run (REASON is required). Python, YAML, TOML and JSON still have to parse.
``<!-- snippet: syntax -->``
    Parsed only (Python compiled for 3.11, YAML/TOML/JSON parsed, shell through ``bash -n``):
    for fragments, such as a few steps of a CI workflow or one YAML turn.
``<!-- snippet: file PATH -->``
    The block is a copy of the repository file PATH and must equal it.

Each page is one scratch project in a temporary folder: the support files in
``tests/docs/support/<page>/`` first (a small real ``my_app`` for snippets that import one),
then the page's file blocks, then every block in page order. Blocks in a page may rely on
one another, never on another page.

Run it: ``.venv/bin/python -m pytest tests/docs -q`` (``-k livekit`` for one page), or
``.venv/bin/python tests/docs/snippets.py [--run] docs/livekit.md`` for a quick report.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

# tests/ holds child_pytest; run as a script, only tests/docs/ is on sys.path.
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.append(_TESTS)

from child_pytest import child_pytest_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = Path(__file__).resolve().parent / "support"
RUNNER = Path(__file__).resolve().with_name("page_runner.py")
LOWEST_PYTHON = (3, 11)

RUN_LANGS = {"python", "yaml", "toml", "json", "bash", "sh"}
OUTPUT_LANGS = {"text", "console"}
LANG_ALIASES = {"py": "python", "yml": "yaml", "shell": "bash"}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(?P<body>.*?)\s*-->\s*$")
_PATH_COMMENT = re.compile(r"^#\s*(?P<path>[\w.-]+(?:/[\w.-]+)*\.(?:py|ya?ml|toml|json|sh))\s*$")
_PIP_INSTALL = re.compile(r"^\s*(?:\S*/)?pip3? install\b(?P<args>.*)$")


def pages() -> list[Path]:
    """README.md and every docs/*.md page, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str  # relative to the repository root
    line: int  # 1-based line of the opening fence
    lang: str  # normalized language tag ("" when there is none)
    text: str  # the content, the fence's indentation removed
    directive: str = ""  # "", "skip", "syntax" or "file"
    argument: str = ""  # skip's reason, file's path

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def path(self) -> str | None:
        """The project file this block is, from a first-line path comment."""
        first = self.text.split("\n", 1)[0].strip()
        match = _PATH_COMMENT.match(first)
        if match is None or self.lang not in {"python", "yaml", "toml", "json", "bash", "sh"}:
            return None
        return match.group("path")

    @property
    def runs(self) -> bool:
        return self.lang in RUN_LANGS and self.directive == ""


def parse_page(path: Path) -> list[Block]:
    """Every fenced block of a markdown page, with the snippet marker above it."""
    page = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = opening.group("indent"), opening.group("fence")
        info = opening.group("info").strip().split()
        lang = info[0].lower() if info else ""
        lang = LANG_ALIASES.get(lang, lang)
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                break
            content = lines[j]
            body.append(content[len(indent) :] if content.startswith(indent) else content.lstrip())
            j += 1
        directive, argument = _marker_above(lines, i)
        blocks.append(Block(page, i + 1, lang, "\n".join(body) + "\n", directive, argument))
        i = j + 1
    return blocks


def _marker_above(lines: list[str], index: int) -> tuple[str, str]:
    k = index - 1
    while k >= 0 and not lines[k].strip():
        k -= 1
    if k < 0:
        return "", ""
    match = _MARKER.match(lines[k])
    if match is None:
        return "", ""
    word, _, rest = match.group("body").partition(" ")
    return word.strip(), rest.strip()


def form_problems(block: Block) -> list[str]:
    """What is wrong with a block before anything runs: its tag, its marker, its syntax."""
    problems: list[str] = []
    where = block.where
    if block.lang == "":
        return [
            f"{where}: a code block needs a language tag: python, yaml, toml, json or bash to "
            "have it run, text for output (see docs/contributing.md)"
        ]
    if block.lang not in RUN_LANGS | OUTPUT_LANGS:
        return [
            f"{where}: unknown snippet language {block.lang!r}; use one of "
            f"{', '.join(sorted(RUN_LANGS | OUTPUT_LANGS))}"
        ]
    if block.directive not in ("", "skip", "syntax", "file"):
        problems.append(
            f"{where}: unknown snippet marker {block.directive!r}: write "
            "<!-- snippet: skip REASON -->, <!-- snippet: syntax --> or "
            "<!-- snippet: file PATH -->"
        )
    if block.directive == "skip" and not block.argument:
        problems.append(f"{where}: <!-- snippet: skip --> needs a reason after 'skip'")
    if block.directive == "file":
        target = ROOT / block.argument
        if not block.argument or not target.is_file():
            problems.append(f"{where}: <!-- snippet: file {block.argument} -->: no such file")
        elif target.read_text(encoding="utf-8").rstrip("\n") != block.text.rstrip("\n"):
            problems.append(
                f"{where}: the block differs from {block.argument}; copy the file into the "
                "page again"
            )
    if block.directive and block.lang in OUTPUT_LANGS:
        problems.append(f"{where}: a {block.lang} block is never run; drop the snippet marker")
    if block.lang not in OUTPUT_LANGS:
        problems += [f"{where}: {p}" for p in syntax_problems(block)]
    return problems


def syntax_problems(block: Block) -> list[str]:
    """The block does not parse (Python: for the lowest supported version)."""
    text = block.text
    try:
        if block.lang == "python":
            ast.parse(text, feature_version=LOWEST_PYTHON)
            compile(text, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        elif block.lang == "yaml":
            list(yaml.safe_load_all(text))
        elif block.lang == "toml":
            tomllib.loads(text)
        elif block.lang == "json":
            json.loads(text)
    except SyntaxError as exc:
        version = ".".join(map(str, LOWEST_PYTHON))
        return [f"Python {version} cannot compile it: {exc.msg} (block line {exc.lineno})"]
    except (yaml.YAMLError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        return [f"{block.lang} does not parse: {exc}"]
    return []


def pip_install_problems(block: Block, extras: set[str]) -> list[str]:
    """Each ``pytest-agent-eval[extra]`` of the block's ``pip install`` lines must exist."""
    problems: list[str] = []
    if block.lang not in ("bash", "sh"):
        return problems
    for line in logical_lines(block.text):
        match = _PIP_INSTALL.match(line)
        if match is None:
            if block.runs and re.search(r"\bpip3? install\b", line):
                problems.append(
                    f"{block.where}: `{line.strip()}` runs pip inside a longer command; put "
                    "`pip install ...` on a line of its own (it is checked, not run) or mark "
                    "the block <!-- snippet: skip REASON -->"
                )
            continue
        for word in shlex.split(match.group("args"), comments=True):
            found = re.match(r"^(?:pytest-agent-eval|\S*pytest-agent-eval/?)\[(.+)\]$", word)
            if found:
                for extra in found.group(1).split(","):
                    if extra.strip() not in extras:
                        problems.append(
                            f"{block.where}: `{line.strip()}` names the extra {extra.strip()!r}, "
                            f"which pyproject.toml does not define"
                        )
    return problems


def logical_lines(text: str) -> Iterator[str]:
    """Shell lines with backslash continuations joined."""
    current = ""
    for raw in text.split("\n"):
        if raw.rstrip().endswith("\\"):
            current += raw.rstrip()[:-1] + " "
            continue
        yield current + raw
        current = ""
    if current:
        yield current


def runnable_shell(text: str) -> str:
    """The block's script with ``pip install`` lines taken out (they are checked, not run)."""
    return "\n".join(
        line if _PIP_INSTALL.match(line) is None else f": checked, not run: {line.strip()!r}"
        for line in logical_lines(text)
    )


def project_extras() -> set[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(data["project"]["optional-dependencies"])


def page_plan(page: Path) -> list[dict[str, str]]:
    """The blocks a page's scratch project runs, as plain data for the runner process."""
    plan = []
    for block in parse_page(page):
        if block.lang in OUTPUT_LANGS or block.directive in ("skip", "syntax", "file"):
            continue
        step = asdict(block)
        step["path"] = block.path or ""
        if block.lang in ("bash", "sh"):
            step["text"] = runnable_shell(block.text)
        plan.append(step)
    return plan


def support_folder(page: Path) -> Path:
    """``tests/docs/support/<page stem>`` (README for README.md)."""
    return SUPPORT / page.stem


def run_page(page: Path, folder: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Build ``page``'s scratch project in ``folder`` and run its blocks in a new process.

    Returns the runner's exit status and its output (one line per block).
    """
    project = folder / "project"
    project.mkdir(parents=True)
    support = support_folder(page)
    if support.is_dir():
        shutil.copytree(support, project, dirs_exist_ok=True)
    plan_file = folder / "plan.json"
    plan_file.write_text(json.dumps(page_plan(page)), encoding="utf-8")
    if env is None:
        env = runner_env(project)
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(project), str(plan_file)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return done.returncode, done.stdout + done.stderr[-3000:]


def runner_env(project: Path) -> dict[str, str]:
    """This environment without pytest's, CI's and live mode's variables; the package's
    virtualenv first on PATH."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "EVAL_LIVE", "GITHUB_"))
    }
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return child_pytest_env(env)


def main(argv: list[str]) -> int:
    """Report form problems of the pages given (default: all); with --run, run them too."""
    run = "--run" in argv
    argv = [a for a in argv if a != "--run"]
    targets = [Path(a).resolve() for a in argv] or pages()
    extras = project_extras()
    problems = []
    counts = {"run": 0, "output": 0, "marked": 0}
    for page in targets:
        for block in parse_page(page):
            problems += form_problems(block) + pip_install_problems(block, extras)
            if block.lang in OUTPUT_LANGS:
                counts["output"] += 1
            elif block.directive:
                counts["marked"] += 1
            else:
                counts["run"] += 1
    for problem in problems:
        print(problem)
    if run:
        for page in targets:
            with tempfile.TemporaryDirectory() as folder:
                status, output = run_page(page, Path(folder))
            print(output)
            if status:
                problems.append(f"{page}: snippets failed")
    print(
        f"{counts['run']} block(s) run, {counts['marked']} marked skip/syntax/file, "
        f"{counts['output']} output; {len(problems)} problem(s). "
        "Run them: python -m pytest tests/docs"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
