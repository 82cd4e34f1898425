"""The telephony tests: the caller's keypad and the keys an agent sends, on real Pipecat
pipelines and real in-process LiveKit sessions (no ``__init__.py`` here: the bots' modules are
imported by name, as the other voice test folders do)."""
