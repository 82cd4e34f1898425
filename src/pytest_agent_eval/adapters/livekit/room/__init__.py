"""The room product: `LiveKitRoomAdapter` drives a deployed worker through a real livekit-server
(`_adapter`), with the helper that runs inside the user's worker and publishes what its session
did (`_events`), and the parts of the worker's side that the caller observes (`_observer`,
`_logs`, `_workers`).

All private: users import from `pytest_agent_eval.adapters.livekit`.
"""

__all__: list[str] = []
