"""Making fixtures: synthesize, post-process, write the WAV, then its sidecar; many at once.

Flow for one fixture (`make_fixture`):

1. the text is split into phrases (sentences, and the pause markers between them,
   `pytest_agent_eval.voice.split_speech`); the backend speaks each phrase at its own rate;
2. each phrase is resampled (soxr) and trimmed; the phrases are joined with the sentence pause
   or the marked pause between them, padded and level-normalized (`render_phrases`), which
   also says where each phrase sits;
3. the old sidecar is replaced by a *pending* one, so an old record never sits beside new audio;
4. the WAV, carrying its key in a comment chunk, is written to a temp file and renamed into
   place;
5. the sidecar, with the phrase timings and the word timings measured on the written samples
   (`pytest_agent_eval.voice._words`), is written (also temp + rename), last.

A fixture made before word timings were recorded is current otherwise: the synthesizer only
measures its words and rewrites its sidecar (`add_word_timings`), never its WAV.

A kill at any point leaves either the previous fixture with its sidecar, or a WAV beside a
pending sidecar (which every check reports as stale), never a WAV that looks current. A failure
is recorded for its fixture and the others go on; `SynthesisSummary` says what failed.

Parallelism follows each backend's ``execution``: worker processes (spawned, each with its own
engine, and dying with the parent: a ``kill -9`` of the command leaves no orphan) for
CPU-bound engines, threads for those that wait on a subprocess, and an event loop with a
semaphore for network backends.
"""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import (
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    as_completed,
)
from dataclasses import dataclass, field

from .._async import run_sync
from .._atomic import write_atomic
from .._turn_taking._render import marked_texts
from ..errors import AgentEvalError, AudioFixtureError
from ..models import Transcript, VoiceSettings
from ..voice._fixtures import (
    AudioClip,
    FixtureState,
    PostProcess,
    Sidecar,
    TimedPhrase,
    add_word_timings,
    align_words,
    clean_stale_temp_files,
    embedded_comment,
    encode_wav,
    max_fixture_s,
    pcm16_clip,
    render_phrases,
    resample,
    set_max_fixture_s,
    to_pcm16_bytes,
    voiced_frames,
    write_sidecar,
)
from ..voice._speech import Pause, has_turn_taking_markup, split_speech
from ..voice._tts._registry import TTSBackend, get_backend
from ._marked import write_marked_fixture
from ._plan import (
    FixtureProblem,
    FixtureSpec,
    FixtureStatus,
    Planner,
    check_fixture,
    display_path,
    sidecar_for,
)

__all__ = [
    "FixtureResult",
    "SynthesisSummary",
    "default_jobs",
    "ensure_fixtures",
    "make_fixture",
    "speech_pieces",
    "synthesize_specs",
]

OnResult = Callable[["FixtureResult"], None]

MIN_ITEMS_PER_PROCESS = 16
"""Worker processes pay about 1.5 s each to start and load an engine, while hibari makes a short
utterance in under 0.1 s: below this many fixtures per worker, one process is faster."""


def default_jobs() -> int:
    """One job per core the process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class FixtureResult:
    """What happened to one fixture."""

    spec: FixtureSpec
    error: str | None = None
    audio_s: float = 0.0
    """Seconds of audio written."""
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(slots=True)
class SynthesisSummary:
    """The outcome of a synthesis run."""

    synthesized: list[FixtureResult] = field(default_factory=list)
    up_to_date: list[FixtureStatus] = field(default_factory=list)
    failed: list[FixtureResult] = field(default_factory=list)
    invalid: list[FixtureProblem] = field(default_factory=list)
    """Turns that could not be planned (bad voice settings or markup, conflicting paths)."""
    unusable: list[FixtureProblem] = field(default_factory=list)
    """Fixtures that cannot be used and that synthesis may not replace: a broken or over-long
    recording. Not a synthesis failure (`raise_for_failures` ignores them), but not ok."""
    notes: list[str] = field(default_factory=list)
    """One line per usable fixture worth a remark (made by pytest-agent-eval 0.3)."""
    timed: list[FixtureStatus] = field(default_factory=list)
    """Up-to-date fixtures whose sidecar gained word timings in this run (their WAVs are
    unchanged); they are in `up_to_date` too."""
    seconds: float = 0.0
    """Wall-clock time of the run."""

    @property
    def ok(self) -> bool:
        return not self.failed and not self.invalid and not self.unusable

    @property
    def audio_seconds(self) -> float:
        """Seconds of audio synthesized."""
        return sum(r.audio_s for r in self.synthesized)

    def failure_lines(self) -> list[str]:
        """One line per failed or invalid fixture: where, which WAV, why."""
        lines = [p.message for p in self.invalid]
        for r in self.failed:
            lines.append(f"{r.spec.where}: could not make {display_path(r.spec.wav)}: {r.error}")
        return lines

    def raise_for_failures(self) -> None:
        """Raise `AudioFixtureError` listing every fixture that could not be synthesized, if
        there was any (`unusable` recordings are not: checking them is the caller's job)."""
        if not self.failed and not self.invalid:
            return
        lines = self.failure_lines()
        raise AudioFixtureError(
            f"{len(lines)} audio fixture(s) could not be synthesized:\n  " + "\n  ".join(lines)
        )


def speech_pieces(spec: FixtureSpec) -> list[str | float]:
    """What to speak and what to leave silent, in order: the text of each phrase, and seconds
    of silence (the sentence pause between two phrases, or a marked pause)."""
    sentence_pause = float(spec.inputs["postprocess"].get("sentence_pause_s", 0.75))
    pieces: list[str | float] = []
    for part in split_speech(spec.text):
        if isinstance(part, Pause):
            pieces.append(part.seconds)
        else:
            if pieces and isinstance(pieces[-1], str):
                pieces.append(sentence_pause)
            pieces.append(part.text)
    return pieces


def write_fixture(spec: FixtureSpec, pieces: list[AudioClip | float]) -> float:
    """Join the spoken phrases and silences, post-process, and write ``spec``'s WAV (carrying
    its key), then its sidecar (with the phrase timings).

    Args:
        spec: The fixture.
        pieces: `speech_pieces` with every phrase replaced by the backend's audio of it.

    Returns:
        Seconds of audio written.

    Raises:
        AudioFixtureError: The backend produced no audible audio, or the result is longer than
            the fixture duration cap.
    """
    params = PostProcess(**spec.inputs["postprocess"])
    rate = int(spec.inputs["sample_rate"])
    parts = [resample(p, rate) if isinstance(p, AudioClip) else p for p in pieces]
    out, times = render_phrases(parts, params)
    if len(out.samples) == 0 or voiced_frames(out)[0].size == 0:
        raise AudioFixtureError(
            f"the {spec.inputs['backend']} backend produced no audible audio for {spec.text!r}"
        )
    if out.duration_s > max_fixture_s():
        raise AudioFixtureError(
            f"the audio is {out.duration_s:.1f} s long, over the {max_fixture_s():g} s limit for "
            "a fixture; shorten the turn's text or pauses, or raise max_fixture_s in "
            "[tool.agent_eval]"
        )
    texts = [p for p in speech_pieces(spec) if isinstance(p, str)]
    phrases = tuple(TimedPhrase(t, s, e) for t, (s, e) in zip(texts, times, strict=True))
    words = align_words(pcm16_clip(out), phrases)
    record = sidecar_for(
        spec, wav_bytes=None, wav_sha256=None, duration_s=out.duration_s, phrases=phrases
    )
    comment = embedded_comment(record, hashlib.sha256(to_pcm16_bytes(out)).hexdigest())
    # Mark the write as pending first: from here on, a kill leaves the WAV (old or new) beside a
    # pending sidecar, reported as stale and made again; never new audio beside a sidecar
    # describing the old. A WAV with no sidecar at all is a recording we never touch, unless it
    # carries our key in its comment.
    spec.wav.parent.mkdir(parents=True, exist_ok=True)
    write_sidecar(spec.wav, Sidecar(text=spec.text, inputs=dict(spec.inputs), pending=True))
    wav = write_atomic(spec.wav, encode_wav(out, comment=comment))
    write_sidecar(
        spec.wav,
        sidecar_for(
            spec, wav_bytes=wav.size_bytes, wav_sha256=wav.sha256, duration_s=out.duration_s,
            phrases=phrases, words=words,
        ),
    )  # fmt: skip
    return out.duration_s


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, AgentEvalError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def make_fixture(spec: FixtureSpec, backend: TTSBackend) -> FixtureResult:
    """Synthesize and write one fixture; a failure is returned, not raised."""
    start = time.perf_counter()
    try:
        if has_turn_taking_markup(spec.text):
            audio_s = write_marked_fixture(spec, lambda t: backend.synthesize(t, spec.settings))
        else:
            pieces = [
                backend.synthesize(p, spec.settings) if isinstance(p, str) else p
                for p in speech_pieces(spec)
            ]
            audio_s = write_fixture(spec, pieces)
    except Exception as exc:  # the run boundary of one fixture: record it, go on with the rest
        return FixtureResult(
            spec=spec, error=_error_text(exc), elapsed_s=time.perf_counter() - start
        )
    return FixtureResult(spec=spec, audio_s=audio_s, elapsed_s=time.perf_counter() - start)


# Each worker process, and each thread of a thread pool, builds its own backend instances:
# backends are not promised to be thread-safe.
_local = threading.local()


def _local_backend(name: str) -> TTSBackend:
    cache: dict[str, TTSBackend] = _local.__dict__.setdefault("backends", {})
    if name not in cache:
        cache[name] = get_backend(name)
    return cache[name]


def _make_in_worker(spec: FixtureSpec) -> FixtureResult:
    return make_fixture(spec, _local_backend(spec.inputs["backend"]))


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _init_worker(parent_pid: int, limit_s: float) -> None:
    """Runs first in every worker process: die with the parent, and use its duration cap.

    A ``kill -9`` of the command runs no cleanup, so without this its workers (hundreds of MB
    each) would live on. On Linux the kernel sends the worker SIGKILL when its parent dies
    (``PR_SET_PDEATHSIG``); a watcher thread also waits on the parent's pidfd (or, where there
    is none, checks the parent once a second), which covers the parent dying before the
    ``prctl`` took effect.
    """
    set_max_fixture_s(limit_s)
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the watcher below still works
            pass
    if os.getppid() != parent_pid:
        os._exit(1)  # the parent is already gone
    threading.Thread(
        target=_watch_parent, args=(parent_pid,), name="agent-eval-parent-watch", daemon=True
    ).start()


def _watch_parent(parent_pid: int) -> None:
    import select

    try:
        fd = os.pidfd_open(parent_pid)  # Linux 5.3+: readable once the parent has exited
    except (AttributeError, OSError):
        fd = None
    if fd is not None and os.getppid() == parent_pid:
        select.select([fd], [], [])
        os._exit(1)
    while os.getppid() == parent_pid:
        time.sleep(1.0)  # no pidfd on this system: poll
    os._exit(1)


def _run_pool(
    executor: Executor, specs: Sequence[FixtureSpec], on_result: OnResult | None
) -> list[FixtureResult]:
    results: list[FixtureResult] = []
    with executor:
        futures: dict[Future[FixtureResult], FixtureSpec] = {
            executor.submit(_make_in_worker, spec): spec for spec in specs
        }
        try:
            for future in as_completed(futures):
                try:
                    result = future.result()
                except Exception as exc:  # a worker process died (OOM, segfault in an engine)
                    result = FixtureResult(spec=futures[future], error=_error_text(exc))
                results.append(result)
                if on_result is not None:
                    on_result(result)
        except BaseException:
            executor.shutdown(wait=False, cancel_futures=True)
            raise
    return results


async def _run_async(
    specs: Sequence[FixtureSpec], jobs: int, on_result: OnResult | None
) -> list[FixtureResult]:
    limit = asyncio.Semaphore(jobs)
    backends: dict[str, TTSBackend] = {}

    async def one(spec: FixtureSpec) -> FixtureResult:
        name = spec.inputs["backend"]
        if name not in backends:
            backends[name] = get_backend(name)
        backend = backends[name]
        async with limit:
            start = time.perf_counter()
            try:
                if has_turn_taking_markup(spec.text):
                    said = {
                        t: await backend.asynthesize(t, spec.settings)  # type: ignore[attr-defined]
                        for t in marked_texts(spec.text)
                    }
                    audio_s = await asyncio.to_thread(write_marked_fixture, spec, said.__getitem__)
                else:
                    pieces: list[AudioClip | float] = [
                        await backend.asynthesize(p, spec.settings)  # type: ignore[attr-defined]
                        if isinstance(p, str)
                        else p
                        for p in speech_pieces(spec)
                    ]
                    audio_s = await asyncio.to_thread(write_fixture, spec, pieces)
                result = FixtureResult(
                    spec=spec, audio_s=audio_s, elapsed_s=time.perf_counter() - start
                )
            except Exception as exc:  # one fixture's boundary
                result = FixtureResult(
                    spec=spec, error=_error_text(exc), elapsed_s=time.perf_counter() - start
                )
        if on_result is not None:
            on_result(result)
        return result

    try:
        return list(await asyncio.gather(*(one(s) for s in specs)))
    finally:
        for backend in backends.values():
            close = getattr(backend, "aclose", None)
            if close is not None:
                await close()


def synthesize_specs(
    specs: Sequence[FixtureSpec],
    *,
    jobs: int | None = None,
    planner: Planner | None = None,
    on_result: OnResult | None = None,
) -> list[FixtureResult]:
    """Make every fixture in ``specs``, ``jobs`` at a time; ``on_result`` sees each as it ends.

    Small batches (fewer than `MIN_ITEMS_PER_PROCESS` per worker, or ``jobs=1``) of
    process-bound work run in this process, with the ``planner``'s backends.
    """
    jobs = jobs or default_jobs()
    planner = planner or Planner()
    for folder in sorted({s.wav.parent for s in specs}):
        clean_stale_temp_files(folder)
    groups: dict[str, list[FixtureSpec]] = {"process": [], "thread": [], "async": []}
    for spec in specs:
        groups[planner.backend(spec.inputs["backend"]).execution].append(spec)

    results: list[FixtureResult] = []
    if groups["process"]:
        todo = groups["process"]
        workers = min(jobs, len(todo) // MIN_ITEMS_PER_PROCESS)
        if workers <= 1:
            for spec in todo:
                result = make_fixture(spec, planner.backend(spec.inputs["backend"]))
                results.append(result)
                if on_result is not None:
                    on_result(result)
        else:
            # spawn, not fork: the parent may hold threads (progress display) and engine state.
            pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
                initargs=(os.getpid(), max_fixture_s()),
            )
            results += _run_pool(pool, todo, on_result)
    if groups["thread"]:
        pool_t = ThreadPoolExecutor(max_workers=min(jobs, len(groups["thread"])))
        results += _run_pool(pool_t, groups["thread"], on_result)
    if groups["async"]:
        # The one sync bridge: a caller with a running loop (pytest-asyncio, a notebook) gets a
        # worker thread, and Ctrl-C cancels the batch so network backends close their clients.
        results += run_sync(_run_async(groups["async"], jobs, on_result))
    return results


def ensure_fixtures(
    transcripts: Iterable[Transcript],
    defaults: VoiceSettings | None = None,
    *,
    jobs: int | None = None,
    force: bool = False,
    planner: Planner | None = None,
    on_result: OnResult | None = None,
) -> SynthesisSummary:
    """Synthesize every missing or stale fixture of ``transcripts`` (all of them with ``force``).

    For the pytest plugin's "synthesize before the run" option; the CLI uses it too. Up-to-date
    fixtures are only stat-ed and their sidecars read.

    Args:
        transcripts: Loaded transcripts; turns without ``audio:`` are ignored.
        defaults: ``Settings.voice``; ignored when ``planner`` is given.
        jobs: Parallel jobs (default: one per core).
        force: Re-make fixtures even when up to date.
        planner: A `Planner` carrying defaults, command-line overrides and post-processing.
        on_result: Called with each fixture's result as it finishes.

    Returns:
        The summary; call ``raise_for_failures()`` to turn failures into an `AudioFixtureError`.
    """
    start = time.perf_counter()
    planner = planner or Planner(defaults)
    plan = planner.plan(transcripts)
    summary = SynthesisSummary(invalid=list(plan.problems))
    todo: list[FixtureSpec] = []
    for spec in plan.specs:
        status = check_fixture(spec)
        if status.state is FixtureState.INVALID:
            summary.unusable.append(status.problem())  # a broken recording: not ours to remake
        # --force re-makes synthesized fixtures (a predecessor's included), never a recording.
        elif status.is_fresh and (not force or status.is_recording):
            if status.untimed:
                try:
                    add_word_timings(spec.wav)
                except AudioFixtureError:
                    todo.append(spec)  # not the WAV its sidecar describes: make it again
                    continue
                summary.timed.append(status)
            summary.up_to_date.append(status)
            if status.note:
                summary.notes.append(f"{display_path(spec.wav)}: {status.note}")
        else:
            todo.append(spec)
    for result in synthesize_specs(todo, jobs=jobs, planner=planner, on_result=on_result):
        (summary.synthesized if result.ok else summary.failed).append(result)
    summary.seconds = time.perf_counter() - start
    return summary
