"""Wall time of LiveKit voice turns, and every target ratio of issue 13, measured in one run.

Runs the example's restaurant agent (examples/voice-livekit) in a real AgentSession with Silero
VAD and the scripted LLM, hearing offline-synthesized fixtures through the fixture-text STT and
through offline Whisper tiny.en. Everything is measured in the same process run, interleaved
where it can be, so the ratios hold even on a busy machine (the load average is printed).

    .venv/bin/python bench/voice_turns.py [--runs 5] [--realtime-runs 2] [--whisper-runs 5]
        [--earlier /path/to/earlier/src] [--xdist]

Prints:

- per configuration and turn: the audio length, the median wall time of the turn, the overhead
  (wall time minus the audio's play time at that speed), and the median latency from the end of
  the user's speech to the first reply text;
- the targets: each voice turn at max speed against one Silero pass over the same frames; the
  3-turn transcript's speed against its audio; this package's own share of a conversation's
  CPU (cProfile); Whisper with ``runs: N`` against one run, and a
  rerun served by the on-disk STT cache (with hit rates); the earlier package's adapter
  (``--earlier``: the unpacked pytest-agent-eval 0.3.0 wheel) against ours with Whisper, one run;
  with ``--xdist``, ``pytest -n 2`` against ``-n 0`` on a voice suite of 8 transcripts.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "voice-livekit"
EARLIER = Path("/tmp/earlier/src")


def _load() -> str:
    return "load average " + " / ".join(f"{x:.1f}" for x in os.getloadavg())


def _example_agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("booking_agent", EXAMPLE / "booking_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["booking_agent"] = module
    spec.loader.exec_module(module)  # on the main thread, as LiveKit plugins require
    return module


def _transcript(folder: Path) -> Any:
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    shutil.copytree(EXAMPLE / "evals", folder / "evals", ignore=shutil.ignore_patterns("audio"))
    transcript = load_transcript_file(folder / "evals" / "booking.yaml")
    ensure_fixtures([transcript], jobs=1).raise_for_failures()
    return transcript


async def _run_once(adapter: Any, transcript: Any, index: int) -> tuple[float, list[Any]]:
    from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput

    start = time.perf_counter()
    await adapter.prepare(transcript)
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=transcript, run_index=index)
    )
    replies = []
    try:
        for i, turn in enumerate(transcript.turns):
            audio = Path(turn.audio) if turn.audio is not None else None
            replies.append(await conversation.respond(TurnInput(turn=turn, index=i, audio=audio)))
    finally:
        await conversation.aclose()
    return time.perf_counter() - start, replies


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _factory(agent: ModuleType, stt: str, threads: int = 0, cache_dir: Path | None = None) -> Any:
    from pytest_agent_eval.adapters.livekit import WhisperSTT

    def factory() -> Any:
        if stt == "whisper":
            return agent.make_session(stt=WhisperSTT(cpu_threads=threads, cache_dir=cache_dir))
        return agent.make_session()

    return factory


async def _bench(
    agent: ModuleType, transcript: Any, stt: str, speed: float, runs: int, threads: int
) -> None:
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    adapter = LiveKitAdapter(_factory(agent, stt, threads), speed=speed, timeout_s=60.0)
    await _run_once(adapter, transcript, -1)  # warm-up: imports, model loads, fixture cache
    totals: list[float] = []
    per_turn: list[list[Any]] = []
    for index in range(runs):
        total, replies = await _run_once(adapter, transcript, index)
        totals.append(total)
        per_turn.append(replies)
    label = f"{stt} STT, {'max speed' if speed == 0 else f'{speed:g}x real time'}"
    audio_total = 0.0
    for i, turn in enumerate(transcript.turns):
        replies = [run[i] for run in per_turn]
        meta = replies[0].metadata["livekit"]
        audio_s = float(meta.get("audio_duration_s", 0.0))
        audio_total += audio_s
        wall = _median([r.metadata["livekit"]["turn_wall_s"] for r in replies])
        played = audio_s / speed if speed > 0 else 0.0
        latency = _median([r.latency_s for r in replies if r.latency_s is not None])
        kind = "audio" if turn.audio is not None else "text "
        print(
            f"| {label} | {i + 1} ({kind}) | {audio_s:5.2f} s | {wall:6.3f} s | "
            f"{wall - played:6.3f} s | {latency:6.3f} s |"
        )
    total = _median(totals)
    played = audio_total / speed if speed > 0 else 0.0
    print(
        f"| {label} | **3-turn transcript** | {audio_total:5.2f} s | {total:6.3f} s | "
        f"{total - played:6.3f} s | |"
    )


async def _silero_pass(vad: Any, audio: Any) -> float:
    """One fresh Silero stream over the fixture's own frames (no silence tail), uncached,
    drained to its end: what the agent's own pipeline pays to hear the audio once."""
    frames = audio.frames[: round(audio.duration_s / audio.frame_s)]
    start = time.perf_counter()
    stream = vad.stream()
    for frame in frames:
        stream.push_frame(frame)
    stream.end_input()
    async for _ in stream:
        pass
    await stream.aclose()
    return time.perf_counter() - start


_WAYS = {
    "heard before (replayed)": "the default: the fixture was scanned earlier in the process",
    "first hearing (scan + replay)": "the process has not heard the fixture yet",
    "computed (vad_replay=False)": "the session's VAD computes every window, as before",
}


async def _turn_vs_silero(agent: ModuleType, transcript: Any, runs: int) -> None:
    """Each voice turn and the transcript, three ways (see `_WAYS`), against one bare Silero
    pass over the same frames; interleaved, so load affects them alike."""
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter, _segments

    adapters = {
        way: LiveKitAdapter(
            _factory(agent, "fixture-text"),
            speed=0.0,
            timeout_s=60.0,
            vad_replay=not way.startswith("computed"),
        )
        for way in _WAYS
    }
    for adapter in adapters.values():
        await _run_once(adapter, transcript, -1)
    audio_turns = [i for i, t in enumerate(transcript.turns) if t.audio is not None]
    passes: dict[int, list[float]] = {i: [] for i in audio_turns}
    walls = {way: {i: [] for i in audio_turns} for way in _WAYS}
    totals: dict[str, list[float]] = {way: [] for way in _WAYS}
    audio_s = 0.0
    clips = {
        i: adapters["computed (vad_replay=False)"].fixture_audio(
            Path(str(transcript.turns[i].audio))
        )
        for i in audio_turns
    }
    for index in range(runs):  # a Silero pass per fixture, then a conversation each way
        for i in audio_turns:
            passes[i].append(await _silero_pass(agent.VAD, clips[i]))
        for way, adapter in adapters.items():
            if way.startswith("first"):
                _segments._scans.clear()  # as in a new process (a bench may reach inside)
            total, replies = await _run_once(adapter, transcript, index)
            totals[way].append(total)
            audio_s = sum(
                float(r.metadata["livekit"].get("audio_duration_s", 0.0)) for r in replies
            )
            for i in audio_turns:
                walls[way][i].append(float(replies[i].metadata["livekit"]["turn_wall_s"]))
    print(
        "\n| fixture-text STT, max speed | "
        + " | ".join(f"turn {i + 1} ({clips[i].duration_s:4.2f} s of audio)" for i in audio_turns)
        + " | 3-turn transcript |"
    )
    print("|---|" + "---|" * (len(audio_turns) + 1))
    print(
        "| one bare Silero pass | "
        + " | ".join(f"{_median(passes[i]):6.3f} s" for i in audio_turns)
        + f" | {audio_s:.2f} s of audio |"
    )
    for way in _WAYS:
        cells = []
        for i in audio_turns:
            turn = _median(walls[way][i])
            cells.append(f"{turn:6.3f} s: **{turn / _median(passes[i]):4.2f}x** one pass")
        total = _median(totals[way])
        print(
            f"| {way} | "
            + " | ".join(cells)
            + f" | {total:6.3f} s: **{audio_s / total:4.1f}x** faster than its audio |"
        )
    print("(targets: a voice turn <= 1.3x one Silero pass; the transcript >= 30x its audio)")


async def _own_share(agent: ModuleType, transcript: Any, runs: int) -> None:
    """How much of a conversation's CPU is this package's own code, by cProfile's own time.

    The per-turn ratio above compares with a bare Silero stream; the agent's pipeline does more
    than that (LiveKit's audio recognition and its handlers for every VAD window, the LLM node,
    resampling), none of which the tool can remove. This is the tool's own share of the rest.
    """
    import cProfile
    import pstats

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    adapter = LiveKitAdapter(_factory(agent, "fixture-text"), speed=0.0, timeout_s=60.0)
    await _run_once(adapter, transcript, -1)
    profile = cProfile.Profile()
    profile.enable()
    for index in range(runs):
        await _run_once(adapter, transcript, index)
    profile.disable()
    busy = ours = 0.0
    by_module: dict[str, float] = {}
    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    for (filename, _, name), (_, _, own, _, _) in stats.items():
        if name == "<method 'poll' of 'select.epoll' objects>":
            continue  # the event loop waiting: idle, not work
        busy += own
        if "/pytest_agent_eval/" in filename:
            ours += own
            module = filename.split("/pytest_agent_eval/")[-1]
            by_module[module] = by_module.get(module, 0.0) + own
    print(
        f"\nOwn code, fixture-text STT, max speed, {runs} conversations under cProfile: "
        f"**{100 * ours / busy:.1f}%** of the main thread's busy time ({1000 * ours / runs:.1f} ms "
        f"of {1000 * busy / runs:.0f} ms per conversation); the rest is LiveKit, Silero and asyncio"
    )
    top = sorted(by_module.items(), key=lambda item: -item[1])[:5]
    print("  " + ", ".join(f"{module} {1000 * own / runs:.1f} ms" for module, own in top))


def _hits(stats: Any) -> str:
    return (
        f"{stats.misses} recognized, {stats.memory_hits} from memory, "
        f"{stats.disk_hits} from disk (hit rate {stats.hit_rate:.0%})"
    )


async def _whisper_runs(agent: ModuleType, transcript: Any, runs: int) -> float:
    """``runs: N`` with Whisper against one run; then a rerun served by the disk cache."""
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter, WhisperSTT
    from pytest_agent_eval.voice import transcript_cache

    WhisperSTT().load()  # the model load is paid once per process either way
    cache = transcript_cache()
    text = LiveKitAdapter(_factory(agent, "fixture-text"), speed=0.0, timeout_s=60.0)
    whisper = LiveKitAdapter(_factory(agent, "whisper"), speed=0.0, timeout_s=60.0)
    await _run_once(text, transcript, -1)
    cache.clear_memory()
    cache.reset_stats()
    walls: list[float] = []
    cpus: list[float] = []
    latencies: list[list[float | None]] = []
    baseline: list[float] = []
    baseline_cpu: list[float] = []
    for index in range(runs):  # interleaved with the fixture-text baseline (no STT cost)
        cpu = time.process_time()
        wall, replies = await _run_once(whisper, transcript, index)
        cpus.append(time.process_time() - cpu)
        walls.append(wall)
        latencies.append([r.latency_s for r in replies if r.heard is not None])
        cpu = time.process_time()
        baseline.append((await _run_once(text, transcript, index))[0])
        baseline_cpu.append(time.process_time() - cpu)
    stats = cache.reset_stats()
    base = _median(baseline)
    base_cpu = _median(baseline_cpu)
    stt = [max(0.0, w - base) for w in walls]
    stt_cpu = [max(0.0, c - base_cpu) for c in cpus]
    print(
        f"\nWhisper, runs: {runs} (memory cache): run 1 {walls[0]:.3f} s, runs 2-{runs} median "
        f"{_median(walls[1:]):.3f} s, fixture-text baseline {base:.3f} s per run"
    )
    print(
        f"  STT CPU (process time minus baseline): one run {stt_cpu[0]:.3f} s, all {runs} runs "
        f"{sum(stt_cpu):.3f} s: **{sum(stt_cpu) / max(stt_cpu[0], 1e-9):.2f}x one run** (was "
        f"{runs}x); {_hits(stats)}"
    )
    print(
        f"  STT wall (wall minus baseline): one run {stt[0]:.3f} s, all {runs} runs "
        f"{sum(stt):.3f} s ({sum(stt) / max(stt[0], 1e-9):.2f}x: a recognition served from the "
        "cache is delivered after the decode time it replays, so run by run the wall time is "
        "run 1's)"
    )
    shown = ", ".join("/".join("-" if v is None else f"{v:.3f}" for v in run) for run in latencies)
    print(f"  voice-turn latencies per run (s): {shown}")
    with tempfile.TemporaryDirectory() as folder:
        disk = LiveKitAdapter(
            _factory(agent, "whisper", cache_dir=Path(folder)), speed=0.0, timeout_s=60.0
        )
        cache.clear_memory()
        first = (await _run_once(disk, transcript, 0))[0]
        filled = cache.reset_stats()
        cache.clear_memory()  # a new process, as far as the cache knows
        rerun = (await _run_once(disk, transcript, 0))[0]
        served = cache.reset_stats()
    print(
        f"Whisper, disk cache: first run {first:.3f} s ({_hits(filled)}); rerun with an empty "
        f"memory {rerun:.3f} s ({_hits(served)}): STT cost {max(0.0, rerun - base):.3f} s vs "
        f"{max(0.0, first - base):.3f} s"
    )
    return walls[0]


def _earlier_adapter(source: Path) -> Any:
    """The earlier package's LiveKit adapter, its own code, loaded beside ours.

    Only its imports of its own helper modules are pointed at their files (the two packages
    share a name); ``ToolCall`` comes from ours, which keeps the earlier constructor.
    """
    modules = {}
    for name in ("_args", "_wav_input", "livekit"):
        path = source / "pytest_agent_eval" / "adapters" / f"{name}.py"
        code = path.read_text()
        for other in ("_args", "_wav_input"):
            code = code.replace(f"pytest_agent_eval.adapters.{other}", f"earlier_{other}")
        module = ModuleType(f"earlier_{name}")
        module.__file__ = str(path)
        sys.modules[module.__name__] = module
        exec(compile(code, str(path), "exec"), module.__dict__)
        modules[name] = module
    return modules["livekit"].LiveKitAdapter


async def _earlier_vs_ours(agent: ModuleType, transcript: Any, source: Path) -> None:
    import soundfile

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter, _segments
    from pytest_agent_eval.voice import transcript_cache

    earlier_cls = _earlier_adapter(source)
    audio_turns = [t for t in transcript.turns if t.audio is not None]
    rate = soundfile.info(str(audio_turns[0].audio)).samplerate
    earlier = earlier_cls(_factory(agent, "whisper"), sample_rate=rate)  # its defaults otherwise
    ours = LiveKitAdapter(_factory(agent, "whisper"), timeout_s=60.0)  # our defaults
    transcript_cache().clear_memory()
    _segments._scans.clear()  # fixtures not heard yet, as in a new process
    start = time.perf_counter()
    _, replies = await _run_once(ours, transcript, 0)
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    earlier_replies = []
    for turn in audio_turns:  # it cannot take a text turn; each turn is a fresh session
        history = [{"role": "user", "content": turn.user, "audio": str(turn.audio)}]
        earlier_replies.append((await earlier(history))[0])
    earlier_s = time.perf_counter() - start
    print(
        f"\nSame transcript, Whisper STT, one run, cold STT cache, fixtures not heard before: "
        f"earlier package (0.3.0) "
        f"{earlier_s:.2f} s for its {len(audio_turns)} audio turns; ours {ours_s:.2f} s for all "
        f"{len(transcript.turns)} turns: **{earlier_s / ours_s:.1f}x faster** (target >= 20x)"
    )
    print(f"  earlier replies: {earlier_replies}")
    print(f"  our replies:     {[r.reply for r in replies]}")


_SUITE_CONFTESTS = {
    # The agent imported at the top of conftest.py: every process imports LiveKit, including
    # the xdist controller, which runs no test.
    "agent imported by conftest.py": """
import os

import pytest
from booking_agent import make_session

from pytest_agent_eval.adapters.livekit import LiveKitAdapter, WhisperSTT


@pytest.fixture
def llm_eval_agent() -> LiveKitAdapter:
    whisper = os.environ.get("BENCH_STT") == "whisper"
    return LiveKitAdapter(
        (lambda: make_session(stt=WhisperSTT())) if whisper else make_session, timeout_s=60.0
    )
""",
    # The example's conftest: the agent imported inside the fixture (docs/ci.md).
    "agent imported in the fixture": """
import os

import pytest


@pytest.fixture
def llm_eval_agent():
    from booking_agent import make_session

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter, WhisperSTT

    whisper = os.environ.get("BENCH_STT") == "whisper"
    return LiveKitAdapter(
        (lambda: make_session(stt=WhisperSTT())) if whisper else make_session, timeout_s=60.0
    )
""",
}


def _suite(folder: Path, transcript: Any) -> Path:
    """A voice project of 8 transcripts (the example's, under other ids), ``runs: 3`` each."""
    project = folder / "suite"
    (project / "evals").mkdir(parents=True)
    shutil.copy(EXAMPLE / "booking_agent.py", project)
    shutil.copy(EXAMPLE / "pyproject.toml", project)
    shutil.copytree(Path(transcript.turns[0].audio).parent, project / "evals" / "audio")
    source = (EXAMPLE / "evals" / "booking.yaml").read_text()
    source = source.replace("$schema=../../../", f"$schema={REPO}/")
    # Whisper writes "a table for 2": check only what both STTs hear the same way.
    source = source.replace('["Alice", "table for two"]', '["Alice"]')
    # A latency limit measures the machine's load here, not the tool: leave it out.
    source = "\n".join(line for line in source.splitlines() if "max_latency_ms" not in line)
    for n in range(8):
        text = source.replace("id: booking_remembered", f"id: booking_{n + 1}")
        (project / "evals" / f"booking_{n + 1}.yaml").write_text(text)
    return project


# This checkout's dev extras install LangChain, whose langsmith package brings a pytest plugin
# that costs each process (the controller and every xdist worker) about 1.8 s to load here. A
# voice project does not have it, so the suite runs without it; the langsmith figures are in
# docs/benchmarks.md.
_FOREIGN_PLUGINS_OFF = ["-p", "no:langsmith_plugin"]


def _pytest(project: Path, workers: int, stt: str) -> tuple[float, float]:
    """Wall time and CPU time (all processes: controller and workers) of one pytest run."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["--agent-eval-live", "-n", str(workers), *_FOREIGN_PLUGINS_OFF]
    env = {**os.environ, "BENCH_STT": stt}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    if done.returncode != 0 or "8 passed" not in last:
        raise SystemExit(f"pytest -n {workers} ({stt}) did not pass 8:\n{done.stdout[-3000:]}")
    return wall, cpu


def _xdist(transcript: Any, reps: int, stts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        project = _suite(Path(folder), transcript)
        print(
            "\n| voice suite: 8 transcripts x runs: 3 | -n 0 | -n 2 | -n 2 / -n 0 "
            "| CPU -n 0 (cores busy) | CPU -n 2 (cores busy) |"
        )
        print("|---|---|---|---|---|---|")
        for conftest, source in _SUITE_CONFTESTS.items():
            (project / "conftest.py").write_text(textwrap.dedent(source))
            for stt in stts:
                walls: dict[int, list[float]] = {0: [], 2: []}
                cpus: dict[int, list[float]] = {0: [], 2: []}
                for _ in range(reps):  # interleaved
                    for workers in (0, 2):
                        wall, cpu = _pytest(project, workers, stt)
                        walls[workers].append(wall)
                        cpus[workers].append(cpu)
                zero, two = _median(walls[0]), _median(walls[2])
                cpu0, cpu2 = _median(cpus[0]), _median(cpus[2])
                print(
                    f"| {stt} STT, {conftest} | {zero:.2f} s | {two:.2f} s | "
                    f"**{two / zero:.2f}x** | {cpu0:.1f} s ({cpu0 / zero:.2f}) | "
                    f"{cpu2:.1f} s ({cpu2 / two:.2f}) |"
                )
        print(f"({_load()} after)")


def _targets(agent: ModuleType, transcript: Any, args: argparse.Namespace) -> None:
    asyncio.run(_turn_vs_silero(agent, transcript, args.runs))
    asyncio.run(_own_share(agent, transcript, max(args.runs, 10)))
    asyncio.run(_whisper_runs(agent, transcript, args.whisper_runs))
    earlier: Path | None = args.earlier
    if earlier is not None and (earlier / "pytest_agent_eval" / "adapters").is_dir():
        asyncio.run(_earlier_vs_ours(agent, transcript, earlier))
    else:
        print(f"\nThe earlier package was not found at {earlier}: comparison skipped")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs at max speed")
    parser.add_argument("--realtime-runs", type=int, default=2, help="measured runs at 1x")
    parser.add_argument("--whisper-runs", type=int, default=5, help="N of the runs: N target")
    parser.add_argument("--stt", choices=["fixture-text", "whisper"], action="append")
    parser.add_argument("--whisper-threads", type=int, default=0, help="0: CTranslate2 default")
    parser.add_argument("--earlier", type=Path, default=EARLIER, help="earlier package source")
    parser.add_argument("--no-targets", action="store_true", help="only the per-turn table")
    parser.add_argument("--xdist", type=int, default=0, metavar="REPS", help="-n 2 vs -n 0")
    parser.add_argument("--whisper-only", action="store_true", help="only the runs: N target")
    args = parser.parse_args(argv)
    agent = _example_agent()
    print(f"({_load()} at start)")
    with tempfile.TemporaryDirectory() as tmp:
        transcript = _transcript(Path(tmp))
        if args.whisper_only:
            asyncio.run(_whisper_runs(agent, transcript, args.whisper_runs))
            print(f"({_load()} at the end)")
            return 0
        print("| configuration | turn | audio | wall (median) | overhead | latency to 1st text |")
        print("|---|---|---|---|---|---|")
        for stt in args.stt or ["fixture-text", "whisper"]:
            for speed, runs in ((0.0, args.runs), (1.0, args.realtime_runs)):
                if runs > 0:
                    asyncio.run(_bench(agent, transcript, stt, speed, runs, args.whisper_threads))
        if not args.no_targets:
            _targets(agent, transcript, args)
        if args.xdist:
            _xdist(transcript, args.xdist, args.stt or ["fixture-text", "whisper"])
    print(f"({_load()} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
