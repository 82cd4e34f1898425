"""``python -m pytest_agent_eval COMMAND`` (also the ``agent-eval`` console script).

Only dispatches; each command lives in its own module. Voice fixtures keep their own entry,
``python -m pytest_agent_eval.synthesize_audio``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]

USAGE = """usage: python -m pytest_agent_eval COMMAND [ARGS]   (or: agent-eval COMMAND [ARGS])

commands:
  init    add a sample eval suite (tests/evals, tests/conftest.py, [tool.agent_eval])
          for your adapter: callable, pydantic-ai, openai or livekit
  import  turn a real conversation into a regression test:
            import livekit REPORT.json [--recording FILE]   a LiveKit session report
            import messages FILE.json                       an OpenAI-format message list
  merge   one verdict from the results files of N shards (--agent-eval-shard K/N):
            merge RESULTS... --expect-shards N [--agent-eval-html PATH ...]
  compare two results files side by side, eval by eval (pass rates with an exact test,
          runs paired by number; p95 latency, agent tokens per run):
            compare BASE.json NEW.json [--markdown PATH] [--fail-on-regression]
  capacity how many concurrent sessions of your agent one core holds (the knee of latency
          and event-loop lag, as sessions per core), measured in real time:
            capacity [TRANSCRIPTS...] [--max-sessions N] [--min-sessions-per-core X]

Voice fixtures: python -m pytest_agent_eval.synthesize_audio --help
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "init":
        from ._scaffold import main as init_main

        return init_main(rest)
    if command == "import":
        from ._importers import main as import_main

        return import_main(rest)
    if command == "merge":
        from ._report._merge import main as merge_main

        return merge_main(rest)
    if command == "compare":
        from ._report._compare import main as compare_main

        return compare_main(rest)
    if command == "capacity":
        from ._capacity import main as capacity_main

        return capacity_main(rest)
    print(
        f"error: unknown command {command!r}; the commands are: init, import, merge, compare, capacity\n",
        file=sys.stderr,
    )
    print(USAGE, end="", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
