"""Real conversations imported as regression tests: ``agent-eval import livekit|messages``.

A LiveKit session report (and the call's recording) or an OpenAI-format message list becomes
one transcript: a turn per user message, the caller's own audio cut from the recording as
recording fixtures, and expectations drafted from what the agent did, each marked for review.

Private parts, one concern each: `_livekit` and `_messages` read their source into the records
of `_call`; `_recording` cuts the user's audio and `_heard` measures it with offline Whisper;
`_draft` drafts the expectations, `_render` writes the YAML, `_build` plans the whole import
(validated by the transcript loader before anything is written) and `_write` writes it.
"""

from __future__ import annotations

from ._cli import main

__all__ = ["main"]
