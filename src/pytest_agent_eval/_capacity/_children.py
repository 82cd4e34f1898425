"""Process per session: each of a step's K conversations in a process of its own, as Pipecat's
deployment guides run a bot per call, next to the K-per-process mode.

The parent starts K children (``python -m pytest_agent_eval._capacity._children SPEC``), spread
over the same second as in-process sessions. A child loads the agent the way the command does
(the fixture or ``--agent``), runs its session (every transcript in turn) and prints one JSON
line with what it measured. Each child pays its own start (imports, model loads), as a process
per call does; its CPU counts in the step. Children get a session of their own (Ctrl-C reaches
the parent, which stops them) and are killed when the step ends, runs out of time or is
interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ._plan import CapacityPlan
from ._session import START_SPREAD_S, Session, run_conversation

__all__ = ["child_main", "run_children"]

_PLAN_FIELDS = (
    "agent",
    "speed",
    "answer_timeout_s",
    "fault_rate",
    "fault_timeout_s",
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
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, 9)
    with contextlib.suppress(Exception):
        await process.wait()


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
    lines = out.decode("utf-8", "replace").strip().splitlines()
    if process.returncode != 0 or not lines:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        return {
            "failures": [
                f"session {index + 1}: its process exited {process.returncode}: " + " | ".join(tail)
            ]
        }
    result: dict[str, Any] = json.loads(lines[-1])
    return result


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
        # Unmeasured, as the in-process run warms its agent up: the process's model loads.
        await run_conversation(loaded.adapter, transcripts[0], spec["index"], plan, Session())
        install_faults(faults)
        for transcript in transcripts:
            await run_conversation(loaded.adapter, transcript, spec["index"], plan, session)
    finally:
        loaded.close()
    result = asdict(session)
    if faults is not None:
        result["faults_injected"] = dict(faults.injected)
        result["provider_requests"] = faults.requests
    return result


def child_main(argv: Sequence[str]) -> int:
    """One session in this process; its result as the last line of stdout."""
    result = asyncio.run(_child(json.loads(argv[0])))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
