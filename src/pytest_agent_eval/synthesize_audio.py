"""``python -m pytest_agent_eval.synthesize_audio``: the voice-fixture command line.

A thin shim kept for the command users already type; the work is in `pytest_agent_eval.synthesize`.
"""

from __future__ import annotations

import sys

from .synthesize._cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
