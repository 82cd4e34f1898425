"""The offline pieces a session can be built with, no network and no key: speech recognition from
the fixture's text or offline Whisper (`_stt`), the offline TTS engines as a LiveKit TTS (`_tts`)
and the scripted LLM (`_scripted`).

All private: users import from `pytest_agent_eval.adapters.livekit`.
"""

__all__: list[str] = []
