"""Keep pytest's assertion rewriting off this package's own modules, without importing pytest.

pytest marks every module of a distribution that registers a ``pytest11`` plugin for assertion
rewriting, so each of this package's ~200 modules would be parsed, rewritten and compiled again
in every pytest process where bytecode is not cached (``PYTHONDONTWRITEBYTECODE``, common in
containers and CI): about 0.8 s of CPU per process on a 2-core machine, in every xdist worker
and every child pytest. The package asserts nothing a test reads: its few ``assert`` statements
narrow types. So importing this module (the package's ``__init__`` does it first) takes the
package's name out of the hook's marks, before any of its other modules load.

The hook and its ``_must_rewrite`` set are pytest internals (``_pytest.assertion.rewrite``),
unchanged from pytest 8.0 to 9.2; `drift_problems` (run by a test) says when that changes, and
`skip_assertion_rewriting` then does nothing rather than fail, since the cost is speed only.
"""

from __future__ import annotations

import sys

__all__ = ["drift_problems", "skip_assertion_rewriting"]

_HOOK_MODULE = "_pytest.assertion.rewrite"


def _rewriting_hooks() -> list[object]:
    """The assertion-rewriting import hooks installed now (none outside a pytest run)."""
    module = sys.modules.get(_HOOK_MODULE)
    hook_class = getattr(module, "AssertionRewritingHook", None)
    if hook_class is None:
        return []
    return [finder for finder in sys.meta_path if isinstance(finder, hook_class)]


def skip_assertion_rewriting(package: str) -> None:
    """Unmark ``package`` (and so every module under it) in each rewriting hook installed."""
    for hook in _rewriting_hooks():
        marked = getattr(hook, "_must_rewrite", None)
        if isinstance(marked, set):
            marked.discard(package)
        cache = getattr(hook, "_marked_for_rewrite_cache", None)
        if isinstance(cache, dict):
            for name in [n for n in cache if n == package or n.startswith(package + ".")]:
                del cache[name]


def drift_problems() -> list[str]:
    """What no longer holds of the hook's internals in the installed pytest (empty when all
    does); needs pytest imported."""
    import pytest
    from _pytest.assertion.rewrite import AssertionRewritingHook

    class _Config:  # what the constructor reads of a pytest Config
        def getini(self, name: str) -> list[str]:
            return ["test_*.py"]

    problems: list[str] = []
    hook = AssertionRewritingHook(_Config())  # type: ignore[arg-type]
    for name, kind in (("_must_rewrite", set), ("_marked_for_rewrite_cache", dict)):
        if not isinstance(getattr(hook, name, None), kind):
            problems.append(
                f"pytest {pytest.__version__}: AssertionRewritingHook has no {name} "
                f"({kind.__name__}); this package's modules are rewritten again (slower only)"
            )
    return problems


skip_assertion_rewriting(__name__.split(".")[0])
