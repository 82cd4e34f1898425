"""Where what a speech recognizer heard differs from the words a fixture says."""

from __future__ import annotations

import difflib
import re

__all__ = ["misheard_spans"]

_WORD = re.compile(r"[\w']+")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def misheard_spans(intended: str, heard: str) -> list[tuple[str, str]]:
    """Each place the words of ``heard`` differ from those of ``intended``, as ``(heard,
    intended)`` word runs, in order: ``[("fifty", "fifteen")]``. Case and punctuation are
    ignored; a word dropped or added gives an empty side."""
    said, got = _words(intended), _words(heard)
    matcher = difflib.SequenceMatcher(a=said, b=got, autojunk=False)
    return [
        (" ".join(got[j1:j2]), " ".join(said[i1:i2]))
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
        if op != "equal"
    ]
