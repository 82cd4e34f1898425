"""Text that is safe to record, show and write: no lone surrogates, no terminal control
sequences, no secrets.

An agent can return anything: a reply holding a lone surrogate (``"\\ud83d"`` from JSON, bytes
decoded with ``surrogateescape``) cannot be encoded as UTF-8, so it would break every report
writer and the serialization of a pytest report through xdist; an ANSI or OSC escape sequence
would reach a terminal or a CI page raw; a provider error may echo the API key that was sent.

Three steps, each applied once where it belongs:

- `clean_text` replaces code points UTF-8 cannot encode with U+FFFD, visibly. `scrub` applies it,
  with `redact_secrets`, to every string of a result when the runner records it, so whatever
  travels or is written afterwards is clean; the serializer applies `clean_text` again as a
  guard.
- `strip_controls` removes escape sequences and other control characters; the report renderers
  (markdown, HTML, step summary, terminal account) apply it to every value they show.
- `redact_secrets` replaces the values of secret-looking environment variables present at run
  time (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``, ...) and bearer tokens or
  ``sk-...`` keys with ``[REDACTED]``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "SECRET_ENV_PATTERN",
    "clean_text",
    "redact_secrets",
    "scrub",
    "secret_values",
    "strip_controls",
]

REDACTED = "[REDACTED]"
"""What a secret is replaced with."""

SECRET_ENV_PATTERN = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE
)
"""Environment variable names whose values are treated as secrets (``OPENAI_API_KEY``,
``LIVEKIT_API_SECRET``, ``HF_TOKEN``, ...)."""

_MIN_SECRET_CHARS = 8
"""Shorter values (``1``, ``true``) are not redacted: they would blank out ordinary words."""

_SURROGATES = re.compile("[\ud800-\udfff]")

# ESC-introduced sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), other
# two-character escapes; then the C0 and C1 control characters other than tab and newline.
_CONTROLS = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[@-Z\\-_]?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
)

_TOKEN_SHAPES = re.compile(
    # A token after "Bearer" (16+ characters with a digit), OpenAI/Anthropic-style "sk-" keys,
    # GitHub and Slack tokens, AWS access key ids. Long and digit-bearing, so words never match.
    r"(?i:\b(bearer)\s+)(?=[^\s]*\d)[A-Za-z0-9._~+/=-]{16,}"
    r"|\bsk-(?=[^\s]*\d)[A-Za-z0-9_-]{16,}"
    r"|\b(?:ghp|gho|ghs|ghu|github_pat|xox[abpr])_?-?(?=[^\s]*\d)[A-Za-z0-9_-]{16,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
)


def clean_text(text: str) -> str:
    """``text`` with every code point UTF-8 cannot encode (lone surrogates) as U+FFFD."""
    if text.isascii():
        return text
    return _SURROGATES.sub("\ufffd", text)


def strip_controls(text: str) -> str:
    """``text`` without escape sequences (ANSI colours, OSC titles and links) or other control
    characters; tabs and newlines stay."""
    if text.isprintable():
        return text
    return _CONTROLS.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def secret_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of secret-looking variables in the environment, longest first."""
    env = os.environ if environ is None else environ
    values = {
        value
        for name, value in env.items()
        if SECRET_ENV_PATTERN.search(name) and len(value.strip()) >= _MIN_SECRET_CHARS
    }
    return tuple(sorted(values, key=len, reverse=True))


def _redact_token(match: re.Match[str]) -> str:
    scheme = match.group(1)
    return f"{scheme} {REDACTED}" if scheme else REDACTED


def redact_secrets(text: str, secrets: tuple[str, ...] | None = None) -> str:
    """``text`` with secret environment values, bearer tokens and key-shaped strings replaced.

    Args:
        text: Any text that may reach a terminal, a report or JUnit.
        secrets: The values to hide; default: `secret_values` of the current environment.
    """
    for value in secret_values() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return _TOKEN_SHAPES.sub(_redact_token, text)


def _clean(text: str, secrets: tuple[str, ...]) -> str:
    return redact_secrets(clean_text(text), secrets)


def scrub(value: Any, secrets: tuple[str, ...] | None = None) -> Any:
    """``value`` with every string inside it cleaned (`clean_text`) and redacted.

    Dataclasses are updated in place; lists, tuples and dicts are rebuilt only when something
    inside changed; a `ToolCall` (a ``str`` with attributes) is rebuilt with its parts
    scrubbed. Anything else is returned as it is (the serializer writes it as its ``repr``,
    which is always encodable).
    """
    return _scrub(value, secret_values() if secrets is None else secrets, set())


def _scrub(value: Any, secrets: tuple[str, ...], seen: set[int]) -> Any:
    if type(value) is str:
        return _clean(value, secrets)
    if isinstance(value, str):
        return _scrub_str_subclass(value, secrets, seen)
    if value is None or isinstance(value, int | float | bytes):
        return value
    if id(value) in seen:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        seen.add(id(value))
        for f in dataclasses.fields(value):
            old = getattr(value, f.name, None)
            new = _scrub(old, secrets, seen)
            if new is not old:
                # A frozen, slotted oddity refuses: leave that field as it is.
                with contextlib.suppress(AttributeError, TypeError):
                    object.__setattr__(value, f.name, new)
        return value
    if isinstance(value, list | tuple):
        seen.add(id(value))
        items = [_scrub(v, secrets, seen) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        if isinstance(value, list):
            value[:] = items
            return value
        return type(value)(items) if type(value) is tuple else tuple(items)
    if isinstance(value, dict):
        seen.add(id(value))
        changed = {}
        for key, item in value.items():
            new_key = _scrub(key, secrets, seen) if isinstance(key, str) else key
            new_item = _scrub(item, secrets, seen)
            if new_key is not key or new_item is not item:
                changed[key] = (new_key, new_item)
        for key, (new_key, new_item) in changed.items():
            if new_key != key:
                del value[key]
            value[new_key] = new_item
        return value
    return value


def _scrub_str_subclass(value: str, secrets: tuple[str, ...], seen: set[int]) -> Any:
    # ToolCall and similar: a name that carries attributes. Attributes are scrubbed in place;
    # a changed name needs a new object of the same class with the same attributes.
    attrs = getattr(value, "__dict__", None)
    if attrs is not None:
        for key, item in list(attrs.items()):
            new = _scrub(item, secrets, seen)
            if new is not item:
                attrs[key] = new
    name = _clean(str(value), secrets)
    if name == str(value):
        return value
    rebuilt = str.__new__(type(value), name)
    if attrs is not None:
        rebuilt.__dict__.update(attrs)
    return rebuilt
