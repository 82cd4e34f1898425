"""Reports of an eval session: records, the failure account, terminal summary, markdown, HTML,
the not-live summary line and the reporter plugin.

Submodules are imported where used; importing this package imports nothing heavy.
"""

from __future__ import annotations

__all__: list[str] = []
