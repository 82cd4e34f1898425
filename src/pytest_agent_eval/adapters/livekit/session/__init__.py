"""The in-process product: `LiveKitAdapter` runs each transcript run in a real `AgentSession`
in this process, fed WAV fixtures and text (`_adapter`), with barge-in turns (`_barge_in`) and the
session's text and audio I/O (`_io`).

All private: users import from `pytest_agent_eval.adapters.livekit`.
"""

__all__: list[str] = []
