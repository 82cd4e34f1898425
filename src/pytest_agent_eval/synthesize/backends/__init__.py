"""Moved to `pytest_agent_eval.voice._tts`: the built-in text-to-speech backends now live in the
framework-neutral voice package. Kept so ``pytest_agent_eval.synthesize.backends.<name>`` keeps
importing (each submodule here is the moved module itself)."""

__all__: list[str] = []
