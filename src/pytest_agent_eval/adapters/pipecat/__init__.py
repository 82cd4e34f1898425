"""Evaluate Pipecat bots: a real pipeline per run, fed WAV fixtures and text, on its own clock.

Needs the ``pipecat`` extra (``pip install 'pytest-agent-eval[pipecat]'``). Offline services
come with it: `ScriptedLLMService` (regex rules instead of a model), `FixtureTextSTTService`
(hears each fixture's own text), `WhisperSTTService` (real recognition with a local Whisper
model) and `SynthesizerTTSService` (the synthesizer's offline voice as a Pipecat TTS).

Importing this package installs the adapter's clock dispatchers (`pytest_agent_eval.voice._timeshim`), which must
happen before Pipecat is imported: Pipecat keeps ``time.time`` at import. Under pytest the
plugin does it when it loads; elsewhere, import this package before anything from
``pipecat``. The names below are imported on first use, so that costs no Pipecat import.
It also has Pipecat imported without Pipecat's own deprecation warnings, which ``-W error``
would turn into errors (`pytest_agent_eval._compat.pipecat_imports`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..._compat.pipecat_imports import quiet_pipecat_imports
from ...voice._timeshim import install_time_shim

install_time_shim()
quiet_pipecat_imports()  # Pipecat's own deprecation warnings are no error under -W error

if TYPE_CHECKING:
    from ...voice._script import Rule, ScriptContext, parse_number
    from ._adapter import BotFactory, BotInfo, PipecatAdapter, PipecatConversation
    from ._compat import SUPPORTED
    from ._services import (
        FixtureTextSTTService,
        ScriptedLLMService,
        SynthesizerTTSService,
        WhisperSTTService,
    )
    from ._transport import InProcessTransport

_HOMES = {
    "BotFactory": "_adapter",
    "BotInfo": "_adapter",
    "PipecatAdapter": "_adapter",
    "PipecatConversation": "_adapter",
    "SUPPORTED": "_compat",
    "Rule": "...voice._script",
    "ScriptContext": "...voice._script",
    "parse_number": "...voice._script",
    "FixtureTextSTTService": "_services",
    "ScriptedLLMService": "_services",
    "SynthesizerTTSService": "_services",
    "WhisperSTTService": "_services",
    "InProcessTransport": "_transport",
}

__all__ = [
    "SUPPORTED",
    "BotFactory",
    "BotInfo",
    "FixtureTextSTTService",
    "InProcessTransport",
    "PipecatAdapter",
    "PipecatConversation",
    "Rule",
    "ScriptContext",
    "ScriptedLLMService",
    "SynthesizerTTSService",
    "WhisperSTTService",
    "parse_number",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not home.startswith("..."):  # the neutral rules need no Pipecat
        from ...errors import require_extra

        require_extra("pipecat.frames.frames", extra="pipecat", feature="PipecatAdapter")
    module = (
        importlib.import_module(home, __name__)
        if home.startswith("...")
        else importlib.import_module(f"{__name__}.{home}")
    )
    value = getattr(module, name)
    globals()[name] = value
    return value
