"""The built-in text-to-speech backends, one module each; see `._registry` for the protocol."""

__all__: list[str] = []
