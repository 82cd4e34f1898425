"""The built-in text-to-speech backends, one module each; see `..backend` for the protocol."""

__all__: list[str] = []
