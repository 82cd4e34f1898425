"""What failure attribution costs: the extra time per failed run, attribution on against off.

Usage:
    python bench/attribution.py [--repeat 5] [--keep DIR]

Builds the seeded LiveKit fault corpus of the attribution tests (tests/attribution: six
transcripts on real AgentSessions, the example's restaurant agent with one fault each; four of
them fail and are attributed: hearing, agent_logic, tool, undetermined), synthesizes its
fixtures once, then runs the whole corpus with pytest in a subprocess, ``--repeat`` times with
attribution off and as many on, interleaved (off, on, off, on...). Attribution runs inside the
test, so a failed test's own time (JUnit's) holds it: prints, per test, the median time off
and on and the difference, and the mean difference over the failed ones: the extra time per
failed run (the passed one shows a pass costs nothing extra; the crashed case is never
attributed and is left out).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "attribution"))

from fault_corpus import PYPROJECT, synthesize_corpus, write_corpus  # noqa: E402
from test_attribution_livekit import EXAMPLE_AGENT, FAULT_AGENTS  # noqa: E402


def _session(project: Path, attribute: bool) -> dict[str, float]:
    """One pytest session over the corpus: per test (by name), its time in JUnit (the test's
    call, attribution included: it runs inside the test); the crashed one left out."""
    import xml.etree.ElementTree as ET

    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    args += ["--agent-eval-live", "--junitxml=junit.xml"]
    # On by default: the pyproject says which, each session.
    (project / "pyproject.toml").write_text(
        PYPROJECT.replace("runs = 1\n", f"runs = 1\nattribute = {str(attribute).lower()}\n")
    )
    subprocess.run(args, cwd=project, capture_output=True, check=False)
    return {
        case.get("name", ""): float(case.get("time", "0"))
        for case in ET.parse(project / "junit.xml").iter("testcase")
        if "crash" not in case.get("name", "")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="build the corpus there and keep it")
    args = parser.parse_args()
    project = args.keep or Path(tempfile.mkdtemp(prefix="attribution_bench_"))
    project.mkdir(parents=True, exist_ok=True)
    if not (project / "fault_agents.py").exists():
        shutil.copy(EXAMPLE_AGENT, project / "booking_agent.py")
        write_corpus(project, FAULT_AGENTS)
        synthesize_corpus(project)
    _session(project, False)  # warm: the fixtures' caches, the OS's file cache
    off: list[dict[str, float]] = []
    on: list[dict[str, float]] = []
    for _ in range(args.repeat):
        off.append(_session(project, False))
        on.append(_session(project, True))
    print(f"{args.repeat} sessions each way, interleaved; per test, median time (s):")
    print(f"{'test':<18} {'off':>6} {'on':>6} {'extra':>7}")
    extras = []
    for name in sorted(off[0]):
        off_s = statistics.median(times[name] for times in off)
        on_s = statistics.median(times[name] for times in on)
        if not name.startswith("passing"):  # a passed run is never attributed
            extras.append(on_s - off_s)
        print(f"{name:<18} {off_s:6.2f} {on_s:6.2f} {on_s - off_s:+7.2f}")
    print(
        f"extra per failed run (mean over {len(extras)}): {statistics.mean(extras) * 1000:.0f} ms"
    )
    if args.keep is None:
        shutil.rmtree(project, ignore_errors=True)


if __name__ == "__main__":
    main()
