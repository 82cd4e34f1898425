"""A scripted stand-in for OpenAI's realtime API, speaking its websocket protocol on 127.0.0.1.

It is the paid provider the record and replay tests cannot call: the one thing they mock. The
real ``livekit.plugins.openai.realtime.RealtimeModel`` talks to it (``base_url`` pointing here),
and the tests record that exchange through the plugin's hooks, then replay it offline. It keeps
the conversation the client builds (items created and deleted), answers ``response.create``
from rules (user text -> a reply, or a function call; a tool's output -> a reply naming it),
and sends what the plugin waits for: item echoes, ``response.created`` carrying the client's
``client_event_id``, the output item's text and audio, ``response.done``.

No __init__.py in this folder (a package named after a library would shadow it): the tests
import this module by its folder being on sys.path.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]


Rule = tuple[str, Say | Call]
"""A regex over the user's last message, and the answer."""


class _Ear:
    """The provider's server VAD: loud 100 ms chunks are speech; 500 ms of quiet ends it."""

    THRESHOLD = 300.0
    SILENCE_MS = 500.0

    def __init__(self) -> None:
        self.server_vad = True
        self.position_ms = 0.0
        self.speaking = False
        self.quiet_ms = 0.0
        self.started_ms = 0.0
        self.stopped_ms = 0.0
        self.item_id = ""

    def clear(self) -> None:
        self.speaking = False
        self.quiet_ms = 0.0

    def hear(self, pcm: bytes) -> list[str]:
        import array
        import math

        samples = array.array("h", pcm[: len(pcm) // 2 * 2])
        ms = len(samples) / 24.0
        start = self.position_ms
        self.position_ms += ms
        if not self.server_vad or not samples:
            return []
        rms = math.sqrt(sum(v * v for v in samples) / len(samples))
        if rms >= self.THRESHOLD:
            self.quiet_ms = 0.0
            if not self.speaking:
                self.speaking = True
                self.started_ms = round(start)
                self.item_id = _id("item")
                self.stopped_ms = round(self.position_ms)
                return ["started"]
            self.stopped_ms = round(self.position_ms)
            return []
        if self.speaking:
            self.quiet_ms += ms
            if self.quiet_ms >= self.SILENCE_MS:
                self.speaking = False
                self.quiet_ms = 0.0
                return ["stopped"]
        return []


def _audio_for(text: str, ms_per_word: int = 40, amplitude: int = 200) -> str:
    """``ms_per_word`` of a 500 Hz square wave, 24 kHz PCM16, per word: audio the session can
    play out (long and loud enough, it is a reply a barge-in can cut at a word)."""
    samples = 24 * ms_per_word * max(1, len(text.split()))
    pcm = bytearray()
    for i in range(samples):
        value = amplitude if (i // 24) % 2 else -amplitude
        pcm += int(value).to_bytes(2, "little", signed=True)
    return base64.b64encode(bytes(pcm)).decode("ascii")


@dataclass
class ScriptedProvider:
    """The provider: ``rules`` for user text, ``after_tool(name, output)`` for tool outputs."""

    rules: list[Rule]
    after_tool: Callable[[str, str], str] = lambda name, output: f"Done: {output}"
    fallback: str = "Sorry, I did not get that."
    ms_per_word: int = 40
    """Reply audio per word (40 ms: quick; a reply to barge in on needs a few hundred)."""
    amplitude: int = 200
    drop_after_responses: int | None = None
    """Close the first connection after this many responses, as a provider's connection can
    drop: the client reconnects and fills the new one again."""
    close_mid_response: tuple[int, int, str] | None = None
    """(n, code, reason): close the first connection with websocket close ``code`` and
    ``reason`` once its response ``n`` (1 = the first) was created, as a provider's server
    that fails mid-turn does (1011: an internal error)."""
    heard: list[str] = field(default_factory=list)
    """What the "model" transcribes of each user turn's audio, in order (it cannot listen)."""
    connections: int = 0
    received: list[dict[str, Any]] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    base_url: str = ""

    async def start(self) -> str:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def aclose(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        self.connections += 1
        first = self.connections == 1
        responses = 0
        items: list[dict[str, Any]] = []
        heard = list(self.heard)
        ear = _Ear()

        async def send(event: dict[str, Any]) -> None:
            await ws.send_str(json.dumps({"event_id": _id("event"), **event}))

        await send({"type": "session.created", "session": {"id": _id("sess")}})
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            event = json.loads(message.data)
            self.received.append(event)
            kind = event.get("type")
            if kind == "session.update":
                audio_in = ((event.get("session") or {}).get("audio") or {}).get("input") or {}
                if "turn_detection" in audio_in:
                    ear.server_vad = audio_in["turn_detection"] is not None
                await send({"type": "session.updated", "session": event.get("session", {})})
            elif kind == "input_audio_buffer.append":
                for change in ear.hear(base64.b64decode(event["audio"])):
                    if change == "started":
                        await send(
                            {
                                "type": "input_audio_buffer.speech_started",
                                "audio_start_ms": ear.started_ms,
                                "item_id": ear.item_id,
                            }
                        )
                    else:
                        await send(
                            {
                                "type": "input_audio_buffer.speech_stopped",
                                "audio_end_ms": ear.stopped_ms,
                                "item_id": ear.item_id,
                            }
                        )
                        for reply in self._user_turn(ear.item_id, items, heard):
                            await send(reply)
                        for reply in self._respond({}, items):
                            await send(reply)
            elif kind == "input_audio_buffer.commit":
                ear.clear()
                for reply in self._user_turn(_id("item"), items, heard):
                    await send(reply)
            elif kind == "input_audio_buffer.clear":
                ear.clear()
                await send({"type": "input_audio_buffer.cleared"})
            elif kind == "conversation.item.create":
                item = dict(event["item"])
                items.append(item)
                await send(
                    {
                        "type": "conversation.item.added",
                        # the client anchors its first item at "root"; the server says None
                        "previous_item_id": None
                        if event.get("previous_item_id") == "root"
                        else event.get("previous_item_id"),
                        "item": {**item, "status": "completed"},
                    }
                )
            elif kind == "conversation.item.truncate":
                # What played of an interrupted reply: the server keeps its audio to there.
                await send(
                    {
                        "type": "conversation.item.truncated",
                        "item_id": event["item_id"],
                        "content_index": event.get("content_index", 0),
                        "audio_end_ms": event["audio_end_ms"],
                    }
                )
            elif kind == "conversation.item.delete":
                items[:] = [i for i in items if i.get("id") != event["item_id"]]
                await send({"type": "conversation.item.deleted", "item_id": event["item_id"]})
            elif kind == "response.create":
                responses += 1
                closing = self.close_mid_response
                if first and closing is not None and responses == closing[0]:
                    # Mid-turn: the response has begun, then the server fails and closes
                    # the socket with a code and a reason.
                    await send(self._respond(event, items)[0])  # response.created
                    await ws.close(code=closing[1], message=closing[2].encode())
                    break
                for reply in self._respond(event, items):
                    await send(reply)
                    await asyncio.sleep(0)
                if first and responses == self.drop_after_responses:
                    await ws.close()
                    break
        return ws

    def _user_turn(
        self, item_id: str, items: list[dict[str, Any]], heard: list[str]
    ) -> list[dict[str, Any]]:
        """A committed user turn: the item, then its transcript (the next of ``heard``)."""
        transcript = heard.pop(0) if heard else ""
        previous = items[-1]["id"] if items else None
        item = {
            "id": item_id,
            "type": "message",
            "role": "user",
            "status": "completed",
            "content": [{"type": "input_audio", "transcript": transcript}],
        }
        items.append(item)
        return [
            {
                "type": "input_audio_buffer.committed",
                "item_id": item_id,
                "previous_item_id": previous,
            },
            {
                "type": "conversation.item.added",
                "previous_item_id": previous,
                "item": {**item, "content": [{"type": "input_audio", "transcript": None}]},
            },
            {
                "type": "conversation.item.input_audio_transcription.completed",
                "item_id": item_id,
                "content_index": 0,
                "transcript": transcript,
            },
        ]

    def _answer(self, items: list[dict[str, Any]], instructions: str) -> Say | Call:
        if instructions:  # generate_reply(instructions=...): a greeting, an intro
            for pattern, answer in self.rules:
                if re.search(pattern, instructions, re.IGNORECASE):
                    return answer
        last = items[-1] if items else {}
        if last.get("type") == "function_call_output":
            call = next(
                (i for i in items if i.get("call_id") == last.get("call_id")),
                {"name": "?"},
            )
            return Say(self.after_tool(str(call.get("name")), str(last.get("output"))))
        text = " ".join(
            str(c.get("text") or c.get("transcript") or "")
            for c in last.get("content") or []
            if isinstance(c, dict)
        )
        for pattern, answer in self.rules:
            if re.search(pattern, text, re.IGNORECASE):
                return answer
        return Say(self.fallback)

    def _respond(self, event: dict[str, Any], items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        response_id = _id("resp")
        metadata = (event.get("response") or {}).get("metadata") or {}
        answer = self._answer(items, str((event.get("response") or {}).get("instructions") or ""))
        previous = items[-1]["id"] if items else None
        out: list[dict[str, Any]] = [
            {
                "type": "response.created",
                "response": {
                    "id": response_id,
                    "object": "realtime.response",
                    "status": "in_progress",
                    "metadata": metadata,
                    "output": [],
                },
            }
        ]
        item_id = _id("item")
        if isinstance(answer, Call):
            call_id = _id("call")
            item = {
                "id": item_id,
                "type": "function_call",
                "call_id": call_id,
                "name": answer.name,
                "arguments": json.dumps(answer.arguments),
                "status": "completed",
            }
            items.append(item)
            out += [
                {
                    "type": "response.output_item.added",
                    "response_id": response_id,
                    "output_index": 0,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                },
                {"type": "conversation.item.added", "previous_item_id": previous, "item": item},
                {"type": "response.output_item.done", "response_id": response_id, "item": item},
            ]
            output = [item]
        else:
            text = answer.text
            message = {
                "id": item_id,
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_audio", "transcript": text}],
            }
            items.append(message)
            empty = {**message, "status": "in_progress", "content": []}
            out += [
                {
                    "type": "response.output_item.added",
                    "response_id": response_id,
                    "output_index": 0,
                    "item": empty,
                },
                {"type": "conversation.item.added", "previous_item_id": previous, "item": empty},
                {
                    "type": "response.content_part.added",
                    "response_id": response_id,
                    "item_id": item_id,
                    "output_index": 0,
                    "content_index": 0,
                    "part": {"type": "audio", "transcript": ""},
                },
            ]
            for word in re.findall(r"\S+\s*", text):
                out.append(
                    {
                        "type": "response.output_audio_transcript.delta",
                        "response_id": response_id,
                        "item_id": item_id,
                        "output_index": 0,
                        "content_index": 0,
                        "delta": word,
                    }
                )
            out += [
                {
                    "type": "response.output_audio.delta",
                    "response_id": response_id,
                    "item_id": item_id,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": _audio_for(text, self.ms_per_word, self.amplitude),
                },
                {
                    "type": "response.output_audio.done",
                    "response_id": response_id,
                    "item_id": item_id,
                },
                {
                    "type": "response.output_audio_transcript.done",
                    "response_id": response_id,
                    "item_id": item_id,
                    "transcript": text,
                },
                {"type": "response.output_item.done", "response_id": response_id, "item": message},
            ]
            output = [message]
        out.append(
            {
                "type": "response.done",
                "response": {
                    "id": response_id,
                    "object": "realtime.response",
                    "status": "completed",
                    "metadata": metadata,
                    "output": output,
                    "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
                },
            }
        )
        return out
