"""The transcript cache: a result only for exactly the audio, recognizer and options it came from.

The keys, the in-memory layer and the on-disk entries (atomic, self-describing, a torn or
foreign entry is a miss). Recognition itself (Whisper, determinism across processes) is in
tests/audio_fixtures/test_whisper_cache.py.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from pytest_agent_eval.voice._fixtures import TranscriptCache, TranscriptKey
from pytest_agent_eval.voice._transcripts import entry_path

RECOGNIZER = {"engine": "faster-whisper", "model": "/m", "options": {"beam_size": 5}}
PCM = bytes(range(256)) * 40


def key(
    pcm: bytes = PCM,
    *,
    sample_rate: int = 24000,
    channels: int = 1,
    recognizer: dict[str, object] | None = None,
) -> TranscriptKey:
    return TranscriptCache.key(
        pcm, sample_rate=sample_rate, channels=channels, recognizer=recognizer or RECOGNIZER
    )


def test_the_key_is_the_same_for_the_same_inputs() -> None:
    assert key().digest == key().digest
    assert key(bytes(PCM)).digest == key().digest  # the bytes, not the object


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(lambda: key(PCM[:-1] + bytes([PCM[-1] ^ 1])), id="one PCM bit"),
        pytest.param(lambda: key(PCM + b"\0\0"), id="one more sample of silence"),
        pytest.param(lambda: key(sample_rate=16000), id="sample rate"),
        pytest.param(lambda: key(channels=2), id="channels"),
        pytest.param(lambda: key(recognizer={**RECOGNIZER, "model": "/other"}), id="model"),
        pytest.param(
            lambda: key(recognizer={**RECOGNIZER, "options": {"beam_size": 1}}), id="an option"
        ),
        pytest.param(lambda: key(recognizer={**RECOGNIZER, "cpu_threads": 4}), id="threads"),
    ],
)
def test_any_change_misses(changed: object) -> None:
    cache = TranscriptCache()
    cache.put(key(), "I need a refill.")
    other = changed()  # type: ignore[operator]
    assert isinstance(other, TranscriptKey)
    assert other.digest != key().digest
    assert cache.get(other) is None
    assert cache.get(key()) == "I need a refill."
    assert (cache.stats.misses, cache.stats.memory_hits) == (1, 1)


def test_memory_is_bounded_least_recently_used_first() -> None:
    cache = TranscriptCache(max_entries=2)
    a, b, c = key(b"a" * 10), key(b"b" * 10), key(b"c" * 10)
    cache.put(a, "a")
    cache.put(b, "b")
    assert cache.get(a) == "a"  # a is now the most recent
    cache.put(c, "c")
    assert cache.get(b) is None
    assert (cache.get(a), cache.get(c)) == ("a", "c")


def test_entries_on_disk_answer_a_fresh_cache_and_say_what_they_are(tmp_path: Path) -> None:
    TranscriptCache().put(key(), "Where is my order?", tmp_path)
    path = entry_path(tmp_path, key())
    entry = json.loads(path.read_text())
    assert entry["text"] == "Where is my order?"
    assert entry["key"] == key().digest
    assert entry["material"]["recognizer"] == RECOGNIZER
    assert entry["material"]["sample_rate"] == 24000
    fresh = TranscriptCache()  # another process, in effect: nothing in memory
    assert fresh.get(key(), tmp_path) == "Where is my order?"
    assert fresh.get(key(), tmp_path) == "Where is my order?"
    assert (fresh.stats.disk_hits, fresh.stats.memory_hits, fresh.stats.misses) == (1, 1, 0)
    # Only the entry is left: the temporary file of the atomic write was renamed over it.
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [path.name]


def test_a_folder_holds_results_for_other_audio_without_mixing_them(tmp_path: Path) -> None:
    cache = TranscriptCache()
    cache.put(key(), "first", tmp_path)
    cache.put(key(PCM[::-1]), "second", tmp_path)
    fresh = TranscriptCache()
    assert fresh.get(key(), tmp_path) == "first"
    assert fresh.get(key(PCM[::-1]), tmp_path) == "second"
    assert fresh.get(key(PCM[1:]), tmp_path) is None


@pytest.mark.parametrize(
    "content",
    [
        pytest.param('{"key": "', id="torn write"),
        pytest.param("", id="empty file"),
        pytest.param("[1, 2]", id="not an entry"),
        pytest.param(None, id="other material under the same name"),
        pytest.param("no text", id="no text"),
    ],
)
def test_an_entry_that_does_not_prove_its_key_is_a_miss_and_is_replaced(
    tmp_path: Path, content: str | None
) -> None:
    path = entry_path(tmp_path, key())
    path.parent.mkdir(parents=True)
    if content is None:
        other = key(recognizer={**RECOGNIZER, "model": "/other"})
        content = json.dumps({"key": key().digest, "material": other.material, "text": "wrong"})
    elif content == "no text":
        content = json.dumps({"key": key().digest, "material": key().material})
    path.write_text(content)
    cache = TranscriptCache()
    assert cache.get(key(), tmp_path) is None
    cache.put(key(), "right", tmp_path)
    assert TranscriptCache().get(key(), tmp_path) == "right"


def test_concurrent_writers_of_one_entry_leave_a_whole_one(tmp_path: Path) -> None:
    texts = [f"text {i} " * 200 for i in range(8)]

    def write(text: str) -> None:
        for _ in range(20):
            TranscriptCache().put(key(), text, tmp_path)

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert TranscriptCache().get(key(), tmp_path) in texts
    assert [p for p in tmp_path.rglob("*.tmp")] == []


def test_hit_rate() -> None:
    cache = TranscriptCache()
    assert cache.stats.hit_rate == 0.0
    cache.get(key())
    cache.put(key(), "x")
    cache.get(key())
    cache.get(key())
    assert cache.stats.hit_rate == pytest.approx(2 / 3)
    assert cache.reset_stats().lookups == 3
    assert cache.stats.lookups == 0


def test_a_result_keeps_its_decode_time_in_memory_and_on_disk(tmp_path: Path) -> None:
    """What a replayed recognition is charged (WhisperSTT waits that long before answering)."""
    TranscriptCache().put(key(), "Where is my order?", tmp_path, decode_s=0.42)
    fresh = TranscriptCache()
    found = fresh.lookup(key(), tmp_path, timed=True)
    assert found is not None and (found.text, found.decode_s) == ("Where is my order?", 0.42)
    assert fresh.lookup(key(), timed=True) == found  # now in memory too


def test_an_entry_without_its_decode_time_is_a_miss_when_the_time_is_needed(
    tmp_path: Path,
) -> None:
    """Entries written before decode times were kept: recognized again (and replaced) by a
    caller that charges the time, still read by one that only wants the text."""
    path = entry_path(tmp_path, key())
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"key": key().digest, "material": key().material, "text": "hi"}))
    cache = TranscriptCache()
    assert cache.get(key(), tmp_path) == "hi"
    assert cache.lookup(key(), tmp_path, timed=True) is None
    assert cache.stats.misses == 1
