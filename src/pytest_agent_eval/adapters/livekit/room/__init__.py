"""The room product: `LiveKitRoomAdapter` drives a deployed worker through a real livekit-server.

The caller's side: the adapter and its settings (`_adapter`), one run (`_conversation`), the
caller's microphone (`_microphone`), the server's side of a run (`_dispatch`), where a
fixture's speech is (`_scan`), what the room alone cannot show (`_needs_helper`), what the
caller sees in the room (`_observer`, `_logs`), the replies it builds (`_replies`) and their
timelines (`_timeline`), and the worker files it names when no worker answers (`_workers`).

The helper that runs inside the user's worker and publishes what its session did (`_events`),
with the turn's record (`_capture`) and how the agent hears (`_hearing`); `_protocol` is the
wire between the two sides.

All private: users import from `pytest_agent_eval.adapters.livekit`.
"""

__all__: list[str] = []
