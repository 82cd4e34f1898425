"""Turn-taking conformance (issue 34): stimuli, procedural sounds, the built-in pack and the
metrics computed from per-stimulus observations. Private: docs/turn-taking.md describes what
users see (the synthesize command's ``--turn-taking-pack`` and the speech markers)."""

__all__: list[str] = []
