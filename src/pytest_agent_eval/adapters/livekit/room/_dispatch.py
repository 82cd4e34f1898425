"""The server's side of a run: calls to its API that say what to fix when they fail, whether a
worker took the dispatch, why an agent did not join, and whether the agent still answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import aiohttp
from livekit import api, rtc

from ....errors import AdapterError
from ._observer import RoomObserver
from ._protocol import EVAL_RPC_METHOD
from ._workers import no_worker_advice

__all__ = ["RPC_S", "server_call", "watch_agent", "watch_dispatch", "why_no_agent"]

_PING_EVERY_S = 1.0
_PING_ACK_S = 3.0
"""The caller asks the agent's participant every second whether it is there (LiveKit RPC: its
SDK acknowledges at once, in native code, with or without the helper). A process that died
sends nothing, and the server only drops its participant after its reconnect window (about
20 s); missing acknowledgements say so within seconds."""
_PINGS_MISSED = 2
"""Acknowledgements missed in a row before the agent is taken for gone: on a machine loaded
enough (a CI runner streaming several calls while a suite runs) one acknowledgement can come
after the 3 s, from an agent that is alive; one missed probe is not a verdict."""

_DISPATCH_POLL_S = 0.25
"""How often the start of a run asks the server whether a worker took the dispatch: the server
tells a room nothing about a dispatch it could not place."""

RPC_S = 10.0
"""Longest the agent's helper may take to answer a request (they answer at once; a busy agent
process is slow)."""


async def server_call(call: Any, *, url: str, api_key: str) -> Any:
    """Await a livekit-api call to the server at ``url``, turning its failures into messages
    that say what to fix."""
    try:
        return await call
    except api.TwirpError as exc:
        if exc.status in (401, 403):
            raise AdapterError(
                f"the LiveKit server at {url} rejected the API key {api_key!r} "
                f"and its secret ({exc.status} {exc.code}: {exc.message}); check "
                "LIVEKIT_API_KEY and LIVEKIT_API_SECRET (or api_key=/api_secret=)"
            ) from exc
        raise AdapterError(
            f"the LiveKit server at {url} refused the request: {exc.code} ({exc.status}): "
            f"{exc.message}"
        ) from exc
    except (TimeoutError, OSError, aiohttp.ClientError) as exc:
        raise AdapterError(
            f"cannot reach the LiveKit server at {url}: {type(exc).__name__}: {exc}. Is it "
            "running, and is LIVEKIT_URL right?"
        ) from exc


async def watch_dispatch(
    client: api.LiveKitAPI,
    observer: RoomObserver,
    room_name: str,
    dispatch_id: str,
    *,
    agent_name: str,
    url: str,
    timeout_s: float,
) -> None:
    """Fail the start at once when the server placed the dispatch with no worker (within
    ``timeout_s``, the adapter's ``dispatch_timeout_s``)."""
    loop = asyncio.get_running_loop()
    given_up = loop.time() + timeout_s
    while observer.agent is None:
        with contextlib.suppress(Exception):
            dispatches = await client.agent_dispatch.list_dispatch(room_name)
            if any(d.id == dispatch_id and d.state.jobs for d in dispatches):
                return  # a worker took it: the job process may still take a while
        if loop.time() >= given_up:
            observer.agent_gone = (
                f"no worker took the dispatch of agent {agent_name!r} within "
                f"dispatch_timeout_s={timeout_s:g} s: "
                + no_worker(agent_name, url)
                + f". {no_worker_advice(agent_name, Path.cwd())}"
            )
            observer.notify()
            return
        await asyncio.sleep(_DISPATCH_POLL_S)  # the server sends no event for this


async def why_no_agent(
    client: api.LiveKitAPI | None,
    room_name: str,
    dispatch_id: str | None,
    *,
    agent_name: str,
    url: str,
) -> str:
    """Ask the server what became of the dispatch, to say why the agent did not join."""
    if client is None or dispatch_id is None:
        return ""
    try:
        dispatches = await asyncio.wait_for(client.agent_dispatch.list_dispatch(room_name), 5.0)
    except Exception as exc:
        return f" (the server could not say what became of the dispatch: {exc})"
    dispatch = next((d for d in dispatches if d.id == dispatch_id), None)
    jobs = list(dispatch.state.jobs) if dispatch is not None else []
    if not jobs:
        return (
            f": no worker took the job. {no_worker(agent_name, url)}. "
            f"{no_worker_advice(agent_name, Path.cwd())}"
        )
    job = jobs[-1]
    status = api.JobStatus.Name(job.state.status) if job.state else "unknown"
    error = f", error {job.state.error!r}" if job.state and job.state.error else ""
    return (
        f": the dispatch was accepted (worker {job.state.worker_id or '?'} has job {job.id}, "
        f"status {status}{error}) but the agent never joined the room. Does the "
        "entrypoint connect (await ctx.connect(), or session.start(room=ctx.room))? If "
        "the worker logs 'error initializing process', its setup_fnc outlasts "
        "initialize_process_timeout (10 s by default): raise it on the AgentServer"
    )


def no_worker(name: str, url: str) -> str:
    return (
        f"no worker is registered for agent_name {name!r} on {url}, or every such "
        "worker reported itself full (on a small machine set its load_threshold explicitly: a "
        "worker busy starting up is above the default 0.7 and is given no job)"
    )


async def watch_agent(room: rtc.Room, observer: RoomObserver) -> None:
    """Notice at once an agent whose process died: it stops acknowledging RPC."""
    agent = observer.agent_identity
    assert agent is not None
    payload = json.dumps({"op": "ping"})
    missed = 0
    while True:
        try:
            await room.local_participant.perform_rpc(
                destination_identity=agent,
                method=EVAL_RPC_METHOD,
                payload=payload,
                response_timeout=RPC_S,
                max_round_trip_latency=_PING_ACK_S,
            )
            missed = 0
        except rtc.RpcError as exc:
            codes = rtc.RpcError.ErrorCode
            if exc.code == codes.CONNECTION_TIMEOUT:
                missed += 1
                if missed < _PINGS_MISSED:
                    continue  # probe again at once: a late acknowledgement is not a death
                observer.agent_gone = (
                    f"the agent ({agent}) stopped answering: its participant acknowledged "
                    f"none of {missed} probes of {_PING_ACK_S:g} s in a row (its job process "
                    "died or hangs; the worker's log says why)"
                )
                observer.notify()
                return
            missed = 0
            if exc.code in (codes.RECIPIENT_DISCONNECTED, codes.RECIPIENT_NOT_FOUND):
                observer.agent_left = True
                observer.notify()
                return
            # Any other answer (no helper: unsupported method) came from a live agent.
        except Exception:
            return  # the room is closing
        await asyncio.sleep(_PING_EVERY_S)  # a liveness probe's period: no event exists
