"""Pipecat imported under ``-W error`` (warnings as errors, a common CI setting).

Importing Pipecat raises deprecation warnings of Pipecat's own: its audio helpers import the
standard library's ``audioop`` (deprecated since Python 3.11), and its TTS module defines
subclasses of classes it has itself deprecated. Under ``-W error`` each is an exception, so the
import fails before any test runs, for code neither the user nor this package can change.

`importing_pipecat` is the one place that decides which warnings those are: inside it, a
`DeprecationWarning` (or `PendingDeprecationWarning`) that blames Pipecat's own code (the line
``warn``'s stack level points at is in a Pipecat module, or, when it points into the ``abc``
or ``typing_extensions`` machinery defining a class, the first line outside it is) is
dropped; every other warning is raised again when the block ends, to the filters in force
(under ``-W error``, an error, as without the block). A user's bot that imports a deprecated
Pipecat module or name still hears of it: that warning blames the bot's line.

`quiet_pipecat_imports` puts every Pipecat module's import inside it, whoever imports it (a
conftest or a bot usually imports Pipecat before the adapter does): a finder in front of
``sys.meta_path`` hands each ``pipecat`` and ``pipecat_flows`` module's loader to one that runs
the module in the block. The plugin installs it where Pipecat is installed, as it installs the
Pipecat clock (`voice._timeshim`). A leaf module: it imports nothing of the package.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Iterator, Sequence
from types import FrameType, ModuleType
from typing import Any

__all__ = ["importing_pipecat", "is_pipecat_module", "quiet_pipecat_imports"]

_PIPECAT = ("pipecat", "pipecat_flows")
_MACHINERY = ("warnings", "abc", "typing", "typing_extensions", __name__)
"""Modules whose frames stand between a warning and the code that caused it."""
_DEPRECATIONS = (DeprecationWarning, PendingDeprecationWarning)


def is_pipecat_module(name: str) -> bool:
    """True for ``pipecat``, ``pipecat_flows`` and their submodules."""
    return name.split(".", 1)[0] in _PIPECAT


def _caused_by_pipecat(frame: FrameType | None, filename: str, lineno: int) -> bool:
    """Whether the code a warning blames is Pipecat's: the frame at ``filename:lineno`` (where
    ``warn``'s stack level points, searched from ``frame`` outward), or, where that is the
    machinery (``abc`` running a class statement), the first ordinary frame outside it."""
    found = frame
    while found is not None and not (
        found.f_code.co_filename == filename and found.f_lineno == lineno
    ):
        found = found.f_back
    frame = found if found is not None else frame
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if name not in _MACHINERY and not name.startswith(("importlib", "_frozen_importlib")):
            return is_pipecat_module(name)
        frame = frame.f_back
    return False


@contextlib.contextmanager
def importing_pipecat() -> Iterator[None]:
    """Run an import of Pipecat without Pipecat's own deprecation warnings (module doc);
    every other warning raised inside is raised again, as it was, when the block ends."""
    kept: list[tuple[Warning | str, type[Warning], str, int]] = []

    def hear(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        pipecat_s = _caused_by_pipecat(sys._getframe(1), filename, lineno)
        if issubclass(category, _DEPRECATIONS) and pipecat_s:
            return
        kept.append((message, category, filename, lineno))

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = hear
            yield
    finally:  # an import that failed still gives back what it warned
        _raise_again(kept)


def _raise_again(kept: Sequence[tuple[Warning | str, type[Warning], str, int]]) -> None:
    """Each kept warning, to the filters in force now, from the module it was issued in."""
    for message, category, filename, lineno in kept:
        module = next(
            (
                name
                for name, mod in list(sys.modules.items())
                if getattr(mod, "__file__", None) == filename
            ),
            None,
        )
        if module is None:  # module=None is not "unknown" to warn_explicit: leave it out
            warnings.warn_explicit(message, category, filename, lineno)
        else:
            warnings.warn_explicit(message, category, filename, lineno, module=module)


class _QuietLoader(importlib.abc.Loader):
    """A Pipecat module's own loader, its module run inside `importing_pipecat`; every other
    question (source, resources, file name) goes to the loader itself."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self._loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        with importing_pipecat():
            self._loader.exec_module(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _PipecatFinder(importlib.abc.MetaPathFinder):
    """In front of ``sys.meta_path``: finds nothing itself; for a Pipecat module, asks the
    finders behind it and wraps the loader they give in `_QuietLoader`."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not is_pipecat_module(fullname):
            return None
        for finder in list(sys.meta_path):
            if finder is self or isinstance(finder, _PipecatFinder):
                continue
            find = getattr(finder, "find_spec", None)
            spec: importlib.machinery.ModuleSpec | None = (
                find(fullname, path, target) if find is not None else None
            )
            if spec is None:
                continue
            loader = spec.loader
            if loader is not None and hasattr(loader, "exec_module"):
                spec.loader = _QuietLoader(loader)
            return spec
        return None


def quiet_pipecat_imports() -> None:
    """Put every later import of a Pipecat module inside `importing_pipecat` (module doc).
    Once per process; modules imported already are left as they are."""
    if not any(isinstance(finder, _PipecatFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PipecatFinder())
