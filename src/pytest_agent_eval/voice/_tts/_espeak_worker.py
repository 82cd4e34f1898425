"""Run one espeak-ng synthesis in this (fresh) process and write the audio to stdout.

libespeak-ng keeps state between calls in one process, so the same text can come out
differently the second time; its first call in a process is reproducible (audio lab, §4). The
espeak backend therefore runs every utterance here, in a new process.

Input (stdin): JSON ``{"text", "voice", "rate_wpm"}``. Output (stdout): 4 bytes little-endian
sample rate, then 16-bit little-endian mono PCM. Errors: a message on stderr and exit code 2.
"""

from __future__ import annotations

import ctypes
import json
import struct
import sys

__all__ = ["main"]

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_POS_CHARACTER = 1
_ESPEAK_CHARS_UTF8 = 1
_ESPEAK_RATE = 1


class _Voice(ctypes.Structure):
    """espeak_VOICE, for choosing a voice by language ("en-gb") when no voice has that name."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("languages", ctypes.c_char_p),
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    ]


def _set_voice(lib: ctypes.CDLL, voice: str) -> bool:
    if lib.espeak_SetVoiceByName(voice.encode()) == 0:
        return True
    # Not a voice name (the British voice's file is "en", not "en-gb"): match by language.
    language, _, _variant = voice.partition("+")
    spec = _Voice(name=None, languages=language.lower().encode(), identifier=None)
    lib.espeak_SetVoiceByProperties.argtypes = [ctypes.POINTER(_Voice)]
    return bool(lib.espeak_SetVoiceByProperties(ctypes.byref(spec)) == 0)


def main() -> int:
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    import espeakng_loader

    lib = ctypes.CDLL(espeakng_loader.get_library_path())
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_Synth.argtypes = [
        ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int,
        ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
    ]  # fmt: skip
    data = espeakng_loader.get_data_path().encode()
    rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, data, 0)
    if rate <= 0:
        sys.stderr.write(f"espeak-ng failed to initialize (data folder {data.decode()})\n")
        return 2
    chunks: list[bytes] = []

    @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)  # type: ignore[untyped-decorator]
    def on_audio(wav: ctypes._Pointer, n: int, _events: int) -> int:  # type: ignore[type-arg]
        if n > 0:
            chunks.append(ctypes.string_at(wav, n * 2))
        return 0

    lib.espeak_SetSynthCallback(on_audio)
    if not _set_voice(lib, request["voice"]):
        sys.stderr.write(f"espeak-ng has no voice {request['voice']!r}\n")
        return 2
    lib.espeak_SetParameter(_ESPEAK_RATE, int(request["rate_wpm"]), 0)
    text = request["text"].encode("utf-8") + b"\0"
    lib.espeak_Synth(text, len(text), 0, _POS_CHARACTER, 0, _ESPEAK_CHARS_UTF8, None, None)
    lib.espeak_Synchronize()
    out = sys.stdout.buffer
    out.write(struct.pack("<I", rate))
    out.write(b"".join(chunks))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
