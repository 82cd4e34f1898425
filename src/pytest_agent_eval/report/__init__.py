"""Reports of an eval session: records, terminal summary, markdown, HTML and the reporter plugin.

Submodules are imported where used; importing this package imports nothing heavy.
"""

from __future__ import annotations

__all__: list[str] = []
