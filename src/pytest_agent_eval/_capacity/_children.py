"""Process per session: each of a step's K conversations in a process of its own, as Pipecat's
deployment guides run a bot per call, next to the K-per-process mode.

The parent starts K children (``python -m pytest_agent_eval._capacity._children SPEC``), spread
over the same second as in-process sessions. A child loads the agent the way the command does
(the fixture or ``--agent``), runs its session (every transcript in turn) and prints one line,
`RESULT_PREFIX` then JSON, with what it measured (the agent may print to stdout too: the parent
looks for that line, and a session without a readable one is that session's failure). Each child pays its own start (imports, model loads), as a process
per call does; its CPU counts in the step, and it reports that start (wall and CPU seconds from
its creation until its agent is loaded and prepared). Children get a session of their own (Ctrl-C reaches
the parent, which stops them) and are killed when the step ends, runs out of time or is
interrupted: the whole process group, so what a child started (an agent's helper process)
goes with it even when the child itself has exited.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ._plan import CapacityPlan
from ._session import START_SPREAD_S, Session, run_conversation

__all__ = ["RESULT_PREFIX", "child_main", "run_children"]

RESULT_PREFIX = "pytest-agent-eval capacity session result: "
"""Starts the child's result line, told apart from whatever the agent prints."""

_PLAN_FIELDS = (
    "agent",
    "speed",
    "answer_timeout_s",
    "fault_rate",
    "fault_timeout_s",
    "cpu_by_component",
)


def _spec(plan: CapacityPlan, index: int, seed: int) -> str:
    return json.dumps(
        {
            "rootdir": str(plan.rootdir),
            "transcripts": [str(p) for p in plan.transcripts],
            "index": index,
            "seed": seed,
            **{name: getattr(plan, name) for name in _PLAN_FIELDS},
        }
    )


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Kill the child's process group (it leads one: ``start_new_session``), also when the
    child has exited: what it started may still run there."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, 9)
    if process.returncode is None:
        with contextlib.suppress(Exception):
            await process.wait()


def _result_of(index: int, returncode: int | None, out: bytes, err: bytes) -> dict[str, Any]:
    """The session's result: its `RESULT_PREFIX` line's JSON (the last such line), or a
    failure of that session saying why there is none."""
    lines = out.decode("utf-8", "replace").splitlines()
    found = next((ln for ln in reversed(lines) if ln.startswith(RESULT_PREFIX)), None)
    if returncode != 0 or found is None:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        said = f"its process exited {returncode}" if returncode != 0 else "no result line"
        return {"failures": [f"session {index + 1}: {said}: " + " | ".join(tail)]}
    try:
        result = json.loads(found[len(RESULT_PREFIX) :])
    except ValueError as exc:
        result = None
        problem = f"{type(exc).__name__}: {exc}"
    else:
        problem = f"a {type(result).__name__}, not an object"
    if not isinstance(result, dict):
        return {"failures": [f"session {index + 1}: its result line could not be read ({problem})"]}
    return result


async def _one(
    plan: CapacityPlan, index: int, k: int, seed: int, started: list[asyncio.subprocess.Process]
) -> dict[str, Any]:
    await asyncio.sleep(START_SPREAD_S * index / k)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pytest_agent_eval._capacity._children",
        _spec(plan, index, seed),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    started.append(process)
    out, err = await process.communicate()
    return _result_of(index, process.returncode, out, err)


async def run_children(plan: CapacityPlan, k: int, repeat: int) -> list[dict[str, Any]]:
    """Run the step's K sessions as K processes; each one's result (the `_Session` fields).
    Cancelled (the step's time bound, Ctrl-C), it kills every child first."""
    started: list[asyncio.subprocess.Process] = []
    try:
        return list(
            await asyncio.gather(
                *(_one(plan, i, k, 1000 * k + 100 * repeat + i, started) for i in range(k))
            )
        )
    finally:
        await asyncio.gather(*(_stop(p) for p in started))


async def _child(spec: dict[str, Any]) -> dict[str, Any]:
    from .._config import load_settings
    from ..adapters._latency import ProviderFaults, install_faults
    from ._agent import load_agent, load_plan_transcripts
    from ._components import ComponentMeter
    from ._measure import process_handle

    rootdir = Path(spec["rootdir"])
    plan = CapacityPlan(
        rootdir=rootdir,
        transcripts=tuple(Path(p) for p in spec["transcripts"]),
        **{name: spec[name] for name in _PLAN_FIELDS},
    )
    settings, _ = load_settings(rootdir)
    transcripts = load_plan_transcripts(plan.transcripts, settings)
    loaded = load_agent(rootdir, transcripts, plan.agent)
    faults = (
        ProviderFaults(plan.fault_rate, timeout_s=plan.fault_timeout_s, seed=spec["seed"])
        if plan.fault_rate > 0
        else None
    )
    session = Session()
    install_faults(None)  # not while warming up
    try:
        prepare = getattr(loaded.adapter, "prepare", None)
        if callable(prepare):
            for transcript in transcripts:
                await prepare(transcript)
        # What the process paid before it could take its call: imports, the agent, its models.
        me = process_handle()
        start = {"start_s": time.time() - me.create_time(), "start_cpu_s": time.process_time()}
        # Unmeasured, as the in-process run warms its agent up: the process's model loads.
        await run_conversation(loaded.adapter, transcripts[0], spec["index"], plan, Session())
        install_faults(faults)
        meter = ComponentMeter() if plan.cpu_by_component else None
        if meter is not None:
            meter.start()
        try:
            for transcript in transcripts:
                await run_conversation(loaded.adapter, transcript, spec["index"], plan, session)
        finally:
            components = meter.stop() if meter is not None else {}
    finally:
        loaded.close()
    result = {**asdict(session), **start, "cpu_by_component_s": components}
    if faults is not None:
        result["faults_injected"] = dict(faults.injected)
        result["provider_requests"] = faults.requests
    return result


def child_main(argv: Sequence[str]) -> int:
    """One session in this process; its result as a `RESULT_PREFIX` line of stdout."""
    result = asyncio.run(_child(json.loads(argv[0])))
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
