"""What every pytest that a test starts in another process leaves out.

Every ``python -m pytest`` loads each installed pytest plugin. One of the dev extra's
(langsmith's, installed with langchain) imports its whole client when it loads: about 1.3 s of
CPU in every child pytest and in each of its xdist workers, most of what a small child run
costs. No test uses it, so child runs leave it out. The suite's own process, and every
in-process pytester run inside it, still load it, so our plugin is still tested beside it.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping

CHILD_PYTEST_ARGS: tuple[str, ...] = ("-p", "no:langsmith_plugin")
"""Arguments for a child pytest: the plugins no test needs, left out."""


def child_pytest_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a child process that may start pytest (directly, through a command a page or
    a CI recipe runs, or as xdist workers): `CHILD_PYTEST_ARGS` added to ``PYTEST_ADDOPTS``."""
    given = env.get("PYTEST_ADDOPTS", "")
    return {**env, "PYTEST_ADDOPTS": " ".join([*CHILD_PYTEST_ARGS, given]).strip()}


def hears_ctrl_c() -> None:
    """``preexec_fn`` of a child a test sends Ctrl-C (SIGINT) to: SIGINT at its default there,
    so Python installs its handler. A suite started in the background by a shell without job
    control (``(nohup cmd &)``, a script's ``cmd &``) has SIGINT ignored, which its children
    inherit and Python keeps: such a child never hears the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
