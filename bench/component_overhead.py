"""What per-component CPU metering costs: CPU per event-loop callback with and without it.

Runs ``--steps`` trivial task steps (``await asyncio.sleep(0)``) plain, then under a
``ComponentMeter``, ``--rounds`` times, and prints the CPU microseconds per step of each and
the difference: the meter's cost per callback (its hooks and its classification; the sampler's
own CPU is in ``ours``). A real session's callbacks do far more than these, so the share there
is smaller; the figure depends on the machine and its load (docs/benchmarks.md).

    .venv/bin/python bench/component_overhead.py [--steps 200000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from pytest_agent_eval._capacity._components import ComponentMeter


async def _steps(n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        await asyncio.sleep(0)
    return time.process_time() - start


async def _main(n: int, rounds: int) -> None:
    print("load average:", os.getloadavg(), flush=True)
    for index in range(rounds):
        plain = await _steps(n)
        meter = ComponentMeter()
        meter.start()
        try:
            metered = await _steps(n)
        finally:
            found = meter.stop()
        print(
            f"round {index + 1}: plain {plain / n * 1e6:.2f} us/step, metered "
            f"{metered / n * 1e6:.2f} us/step, cost {(metered - plain) / n * 1e6:.2f} us/step; "
            f"by component {found}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(_main(args.steps, args.rounds))


if __name__ == "__main__":
    main()
