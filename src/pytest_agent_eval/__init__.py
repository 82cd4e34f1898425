"""pytest-agent-eval: evaluate voice and text AI agents with pytest."""

__version__ = "0.1.0"
