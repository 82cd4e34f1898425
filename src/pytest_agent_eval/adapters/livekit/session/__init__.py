"""The in-process product: `LiveKitAdapter` runs each transcript run in a real `AgentSession`
in this process, fed WAV fixtures and text (`_adapter`), one `LiveKitConversation` a run
(`_conversation`). The conversation is given the objects it composes: an `AudioStreamer` that
streams fixtures into the session (`_streamer`), the barge-in turns (`_barge_in`), and the
audio turns of realtime agents (`_realtime`); every turn's reply is finished in one place from
what its start and its sending left (`_turn_state`). The session's text and audio I/O are in
`_io`.

All private: users import from `pytest_agent_eval.adapters.livekit`.
"""

__all__: list[str] = []
