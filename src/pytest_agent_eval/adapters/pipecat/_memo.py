"""Model work heard before: what Silero, smart-turn and the offline TTS answered, kept for the
process and keyed by exactly what they were given.

A test run repeats itself: every run of a transcript is a fresh pipeline hearing the same
fixtures, in the same stream positions, on a clock that makes the same decisions. Each fresh
pipeline loads Pipecat's two ONNX models again (40-80 ms each), runs Silero on every 32 ms
window and smart-turn (50-150 ms of CPU) at every pause, and the offline TTS speaks the same
sentences again: about half the CPU of a heard-before conversation went there. All of it is a
pure function of its input (one ONNX session on one thread gives the same output for the same
input, bit for bit, and the TTS is seeded).

- **Sessions** (`SharedSessions`): Pipecat's model wrappers create their ONNX session through a
  stand-in for the ``onnxruntime`` module whose ``InferenceSession`` hands out one session per
  model file and options for the whole process (ONNX Runtime sessions take concurrent runs).
- **Runs** (`MemoSession.run`): answered from `RESULTS` when every input array (bytes, dtype,
  shape) is one the model was given before; otherwise run and kept. Silero's recurrent state is
  one of its inputs, so a window is answered from memory only when everything before it was
  the same too.
- **Pure audio functions** (`remembering`): the VAD's loudness of each chunk and smart-turn's
  log-mel features, answered from `RESULTS` for the same audio.
- **Speech**: the offline TTS's replies, remembered for every voice adapter in
  `voice._reply_voice` (``SPOKEN``); this switch turns that memory off for Pipecat's TTS too.

Nothing a turn captures changes: a hit returns a copy of what the model returned the first
time. Both stores are LRUs bounded in bytes. ``AGENT_EVAL_PIPECAT_MEMO=0`` turns them off (to
measure a first hearing every time).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import threading
from collections.abc import Callable
from typing import Any

from ...voice._reply_voice import ByteBoundedLRU

__all__ = [
    "RESULTS",
    "ByteBoundedLRU",
    "MemoSession",
    "SharedSessions",
    "memo_enabled",
    "remembering",
    "share_model_sessions",
]

_MODEL_MODULES = (
    ("pipecat.audio.vad.silero", "onnxruntime"),
    ("pipecat.audio.turn.smart_turn.local_smart_turn_v3", "ort"),
)
"""Pipecat's modules that create an ONNX session, and the name they import onnxruntime as."""

_PURE_FUNCTIONS = (
    # The VAD's loudness of its last 400 ms, for every 20 ms chunk (pyloudnorm).
    ("pipecat.audio.volume", "calculate_audio_volume"),
    # Smart-turn's log-mel features of the last 8 s, at every pause.
    ("pipecat.audio.turn.smart_turn.local_smart_turn_v3", "compute_whisper_log_mel_features"),
)
"""Pipecat's pure functions of audio worth remembering, by module and the name it calls them
by."""


_enabled = True
"""What `memo_enabled` said when a conversation last started (read per frame, so cached)."""


def memo_enabled() -> bool:
    """False when ``AGENT_EVAL_PIPECAT_MEMO`` is 0/false/no/off (read again at each
    `share_model_sessions`, that is at each conversation's start)."""
    return _enabled


def _read_switch() -> bool:
    global _enabled
    _enabled = os.environ.get("AGENT_EVAL_PIPECAT_MEMO", "1").strip().lower() not in {
        "0",
        "false",
        "no",
        "off",
    }
    return _enabled


RESULTS: ByteBoundedLRU[list[Any]] = ByteBoundedLRU(48 * 1024 * 1024)
"""Model outputs by input digest (a Silero window's entry is about 1.2 kB)."""

_ENTRY_OVERHEAD = 200
"""Bytes an entry costs beyond its arrays (key, list, array headers), roughly."""


class MemoSession:
    """An ONNX ``InferenceSession`` whose ``run`` answers inputs it was given before from
    `RESULTS`; every other attribute is the session's."""

    def __init__(self, session: Any, key: str) -> None:
        self._session = session
        self._key = key.encode()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def run(self, output_names: Any, input_feed: dict[str, Any], run_options: Any = None) -> Any:
        import numpy as np

        if run_options is not None or not _enabled:
            return self._session.run(output_names, input_feed, run_options)
        digest = hashlib.blake2b(self._key, digest_size=20)
        digest.update(repr(output_names).encode())
        for name in sorted(input_feed):
            array = np.ascontiguousarray(input_feed[name])
            if array.dtype.hasobject:
                return self._session.run(output_names, input_feed)
            digest.update(f"|{name}|{array.dtype.str}|{array.shape}|".encode())
            digest.update(array.reshape(-1).data.cast("B"))
        key = digest.digest()
        known = RESULTS.get(key)
        if known is not None:
            return [a.copy() for a in known]
        outputs = self._session.run(output_names, input_feed)
        if isinstance(outputs, list) and all(isinstance(o, np.ndarray) for o in outputs):
            kept = [o.copy() for o in outputs]
            RESULTS.put(key, kept, sum(o.nbytes for o in kept) + _ENTRY_OVERHEAD)
        return outputs


def _digest_args(prefix: bytes, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes | None:
    """A digest of plain arguments (audio as bytes or arrays, numbers, strings), or None when
    one is something else (then nothing is remembered)."""
    import numpy as np

    digest = hashlib.blake2b(prefix, digest_size=20)
    for name, value in [*enumerate(args), *sorted(kwargs.items())]:
        if isinstance(value, bytes | bytearray | memoryview):
            try:  # a view that is not one contiguous run of bytes is not remembered
                raw = memoryview(value).cast("B")
            except (TypeError, ValueError, BufferError):
                return None
            digest.update(f"|{name}|b{raw.nbytes}|".encode())
            digest.update(raw)
        elif isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                return None
            array = np.ascontiguousarray(value)
            digest.update(f"|{name}|{array.dtype.str}|{array.shape}|".encode())
            digest.update(array.reshape(-1).data.cast("B"))
        elif value is None or isinstance(value, bool | int | float | str):
            digest.update(f"|{name}|{value!r}|".encode())
        else:
            return None
    return digest.digest()


def remembering(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (pure: its result depends only on its plain arguments) answering from
    `RESULTS` for arguments it was given before; arrays it returns are copied both ways."""
    import numpy as np

    prefix = f"{function.__module__}.{function.__qualname__}".encode()

    @functools.wraps(function)
    def remembered(*args: Any, **kwargs: Any) -> Any:
        key = _digest_args(prefix, args, kwargs) if _enabled else None
        if key is None:
            return function(*args, **kwargs)
        known = RESULTS.get(key)
        if known is not None:
            value = known[0]
            return value.copy() if isinstance(value, np.ndarray) else value
        value = function(*args, **kwargs)
        if isinstance(value, np.ndarray) and not value.dtype.hasobject:
            RESULTS.put(key, [value.copy()], value.nbytes + _ENTRY_OVERHEAD)
        elif isinstance(value, bool | int | float | str) or value is None:
            RESULTS.put(key, [value], _ENTRY_OVERHEAD)
        return value

    remembered._agent_eval_memo = True  # type: ignore[attr-defined]
    return remembered


_sessions: dict[tuple[Any, ...], MemoSession] = {}
_sessions_lock = threading.Lock()


def _options_key(options: Any) -> tuple[Any, ...]:
    if options is None:
        return ()
    fields = (
        "intra_op_num_threads",
        "inter_op_num_threads",
        "execution_mode",
        "graph_optimization_level",
        "enable_cpu_mem_arena",
        "enable_mem_pattern",
        "use_deterministic_compute",
    )
    return tuple(repr(getattr(options, name, None)) for name in fields)


class SharedSessions:
    """Stands in for the ``onnxruntime`` module inside a Pipecat model wrapper: everything is
    onnxruntime's, except ``InferenceSession``, which gives the process's one `MemoSession`
    for a model file (by path, size and mtime) and its options."""

    def __init__(self, ort: Any) -> None:
        self._ort = ort

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ort, name)

    def InferenceSession(  # onnxruntime's name
        self,
        path_or_bytes: Any,
        sess_options: Any = None,
        providers: Any = None,
        provider_options: Any = None,
        **kwargs: Any,
    ) -> Any:
        def create() -> Any:
            return self._ort.InferenceSession(
                path_or_bytes,
                sess_options=sess_options,
                providers=providers,
                provider_options=provider_options,
                **kwargs,
            )

        if not isinstance(path_or_bytes, str | os.PathLike) or provider_options or kwargs:
            return create()
        path = os.fspath(path_or_bytes)
        try:
            stat = os.stat(path)
        except OSError:
            return create()
        key = (
            path,
            stat.st_size,
            stat.st_mtime_ns,
            _options_key(sess_options),
            tuple(providers or ()),
        )
        with _sessions_lock:
            session = _sessions.get(key)
            if session is None:
                session = MemoSession(create(), repr(key))
                _sessions[key] = session
            return session


def share_model_sessions(
    modules: tuple[tuple[str, str], ...] = _MODEL_MODULES,
    functions: tuple[tuple[str, str], ...] = _PURE_FUNCTIONS,
    importer: Callable[[str], Any] = importlib.import_module,
) -> list[str]:
    """Put `SharedSessions` in place of onnxruntime in Pipecat's model modules, and
    `remembering` wrappers in place of its pure audio functions (once per process, before a
    bot builds its analyzers); returns where they are in place. A module that is not
    installed, or no longer has that name, is left alone: it then runs as Pipecat wrote it
    (slower, the same answers)."""
    if not _read_switch():
        return []
    done = []
    for name, function in functions:
        try:
            module = importer(name)
        except Exception:  # not installed, or not importable here: nothing to remember
            continue
        current = getattr(module, function, None)
        if getattr(current, "_agent_eval_memo", False):
            done.append(f"{name}.{function}")
        elif callable(current):
            setattr(module, function, remembering(current))
            done.append(f"{name}.{function}")
    for name, attribute in modules:
        try:
            module = importer(name)
        except Exception:  # a model the installed Pipecat cannot import: nothing to share
            continue
        current = getattr(module, attribute, None)
        if isinstance(current, SharedSessions):
            done.append(name)
        elif current is not None and hasattr(current, "InferenceSession"):
            setattr(module, attribute, SharedSessions(current))
            done.append(name)
    return done
