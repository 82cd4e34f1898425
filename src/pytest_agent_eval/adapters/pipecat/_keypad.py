"""The phone keypad of a Pipecat run: the caller's keys in, the bot's keys out.

A turn's ``dtmf:`` keys go into the pipeline as a telephony transport delivers them, one
``InputDTMFFrame`` per key from the transport's input, ``interval_ms`` apart on the
pipeline's clock, before or after the turn's speech (or text); a turn of keys alone (no
``user:``) ends, as a text turn does, once the bot answered the keys and is done. The keys the bot sends are its
``OutputDTMFFrame`` and ``OutputDTMFUrgentFrame`` buttons, which the recorder notes as they
are first pushed (`Recorder.keys_sent`), and the keys heard as tones in the turn's reply
audio (a bot that plays them in band, in its own audio; Pipecat's output transport also plays
its DTMF frames as tones, so those are one key each, not two: `merge_keys`). Every turn
reports them (``""`` when it sent none), so ``dtmf_sent`` can check any turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from pipecat.audio.dtmf.types import KeypadEntry
from pipecat.frames.frames import InputDTMFFrame

from ...errors import AdapterError
from ...models import AgentReply, DtmfInput
from ...models._keypad import HANG_UP_KEY, IN_BAND_KEY, PRESSED_KEY, keys_alone
from ...voice._dtmf import keys_in_pcm, merge_keys
from ..base import TurnInput
from ._record import TurnLog
from ._session import BotSession

__all__ = ["Keypad"]

_PIPECAT_KEYS = {entry.value for entry in KeypadEntry}


class Keypad:
    """One turn's keys, pressed around the turn's own input, and the keys the bot sent."""

    def __init__(self, session: BotSession, turn: TurnInput) -> None:
        self.session = session
        self.keys = turn.turn.dtmf if isinstance(turn.turn.dtmf, DtmfInput) else None
        self.label = f"turn {turn.index + 1}"
        self.index = turn.index
        self.alone = keys_alone(turn.turn)
        self._from = len(session.recorder.keys_sent)
        self._ended_from = len(session.recorder.hang_ups.seen)
        self.pressed = ""
        if self.keys is not None:
            missing = sorted({k for k in self.keys.keys if k not in _PIPECAT_KEYS})
            if missing:
                raise AdapterError(
                    f"{self.label}: dtmf presses {', '.join(map(repr, missing))}, which "
                    "Pipecat's keypad (KeypadEntry) does not have: Pipecat carries 0-9, * and #"
                )

    def around(self, run: Callable[[], Awaitable[TurnLog]]) -> Callable[[], Awaitable[TurnLog]]:
        """``run`` (the turn's speech or text), with the keys pressed before or after it."""
        keys = self.keys
        if keys is None:
            return run

        async def keyed() -> TurnLog:
            self._from = len(self.session.recorder.keys_sent)
            if self.alone:  # no words: the bot's answer to the keys ends the turn
                return await self.session.keys_turn(self.index, lambda: self._press(keys))
            if keys.at == "before":
                self.session.clock.release()
                await self._press(keys)
                return await run()
            log = await run()
            self.session.clock.release()
            await self._press(keys)
            await self.session.until_done()
            return log

        return keyed

    async def _press(self, keys: DtmfInput) -> None:
        mic = self.session.transport.input()
        for index, key in enumerate(keys.keys):
            if index and keys.interval_ms:
                await asyncio.sleep(keys.interval_ms / 1000)  # on the pipeline's clock
            await mic.push_frame(InputDTMFFrame(KeypadEntry(key)))
            self.pressed += key

    def stamp(self, reply: AgentReply, audio: bytes, sample_rate: int) -> AgentReply:
        """``reply`` with the keys the bot sent in the turn (as frames, or as tones in its
        reply ``audio``), and the keys pressed for it."""
        frames = "".join(key for _, key in self.session.recorder.keys_sent[self._from :])
        heard = keys_in_pcm(bytes(audio), sample_rate)
        if heard:  # only keys heard: a turn without tones has no such key, in every adapter
            reply.metadata[IN_BAND_KEY] = heard
        reply.dtmf_sent = merge_keys(frames, heard)
        hang_up = self.session.recorder.hang_ups.since(self._ended_from)
        reply.call_ended = hang_up is not None
        if hang_up is not None:
            reply.metadata[HANG_UP_KEY] = hang_up.frame
        if self.keys is not None:
            reply.metadata[PRESSED_KEY] = self.pressed
        return reply
