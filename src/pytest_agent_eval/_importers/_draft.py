"""Expectations drafted from what the agent did in the imported conversation.

Every draft is a guess to review, never a verdict: the tools it called with their arguments
(subset mode, so extra arguments pass), how each call ended, the agent it handed over to, and
the reply as a few key terms (names, numbers, references: what a regression would change) or a
judge rubric. The renderer marks each one with a comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from .._text import shorten
from ._call import ImportedCall, ToolUse, UserTurn, Utterance

__all__ = [
    "Draft",
    "ReplyDraft",
    "agent_class_name",
    "draft_greeting",
    "draft_turn",
    "key_terms",
]

ReplyDraft = Literal["terms", "judge"]

MAX_TERMS = 4

_STOPWORD_TEXT = """a an and are as at be been but by can could did do does for from had has have
here how i if in into is it its just let like may me more my no not of on or our please so some
sure than thank thanks that the their them then there these they this to too us very was we were
what when where which while who will with would yes yet you your okay alright right well"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_SELF = frozenset({"i", "i'm", "i'll", "i've", "i'd", "ok", "okay"})
_EDGE = "\"'“”‘’()[]{}<>.,!?;:…*_"


@dataclass(frozen=True, slots=True, kw_only=True)
class Draft:
    """One drafted key of a turn's ``expect:`` (or of ``greeting:``)."""

    key: str
    value: Any
    note: str
    """Why it is there, in the reviewer's words (rendered as a comment above it)."""
    active: bool = True
    """False: rendered commented out, for the reviewer to switch on."""


def _tokens(text: str) -> list[tuple[str, bool]]:
    """Words with their edge punctuation stripped, each with whether a sentence starts at it."""
    out: list[tuple[str, bool]] = []
    starts = True
    for raw in text.split():
        word = raw.strip(_EDGE)
        if word:
            out.append((word, starts))
        starts = raw.rstrip("\"'”’)").endswith((".", "!", "?", "…"))
    return out


def key_terms(text: str) -> list[str]:
    """A few words of ``text`` a regression would change: codes and numbers (``BK-101``,
    ``19:00``), then names (capitalized words not starting a sentence, runs kept together:
    ``Chez Pytest``); failing both, its two longest content words. In order of appearance,
    no repeats (case-insensitively), at most `MAX_TERMS`."""
    tokens = _tokens(text)
    found: list[tuple[int, int, str]] = []  # (rank, position, term)
    run: list[str] = []
    run_at = 0

    def close_run() -> None:
        if run:
            found.append((1, run_at, " ".join(run)))
            run.clear()

    for position, (word, starts) in enumerate(tokens):
        if any(c.isdigit() for c in word):
            close_run()
            rank = 0 if len(word) > 1 else 2
            found.append((rank, position, word))
        elif word[0].isupper() and not starts and word.lower() not in _SELF:
            if not run:
                run_at = position
            run.append(word)
        else:
            close_run()
    close_run()
    chosen = sorted(found)[:MAX_TERMS]
    if not chosen:
        words = [
            (-len(w), p, w)
            for p, (w, _) in enumerate(tokens)
            if len(w) >= 4 and w.lower() not in _STOPWORDS and w.isalpha()
        ]
        chosen = [(0, p, w) for _, p, w in sorted(words)[:2]]
    terms: list[str] = []
    for _, _, term in sorted(chosen, key=lambda t: t[1]):
        if term.lower() not in {t.lower() for t in terms}:
            terms.append(term)
    return terms


def _quote(text: str, limit: int = 160) -> str:
    return shorten(" ".join(text.split()), limit)


def agent_class_name(agent_id: str) -> str:
    """The class name an agent id most likely came from: LiveKit names an agent
    ``camel_to_snake_case(type(agent).__name__)`` unless given an ``id``."""
    if not re.fullmatch(r"[a-z0-9_]+", agent_id):
        return agent_id
    return "".join(part[:1].upper() + part[1:] for part in agent_id.split("_") if part)


def _reply_drafts(said: list[Utterance], mode: ReplyDraft) -> list[Draft]:
    text = " ".join(u.text for u in said if u.text)
    if not text:
        return []
    cut = any(u.interrupted for u in said)
    heard = f"the agent said {_quote(text)!r}" + (
        " (cut short by the caller in the call)" if cut else ""
    )
    drafts: list[Draft] = []
    terms = key_terms(text)
    if terms:
        drafts.append(
            Draft(
                key="reply_contains_all",
                value=terms,
                note=f"draft: key terms of the reply; in the call {heard}",
                active=mode == "terms",
            )
        )
    rubric = (
        f"In the imported conversation the agent answered: “{_quote(text, 400)}” The reply gives the "
        "caller the same information and reaches the same outcome; the wording may differ."
    )
    drafts.append(
        Draft(
            key="judge",
            value={"rubric": rubric},
            note=(
                "draft: a judge rubric (needs a judge model, see judges.md); say what a good "
                "reply must do"
                if mode == "judge"
                else "draft: or judge the reply instead (needs a judge model, see judges.md)"
            ),
            active=mode == "judge",
        )
    )
    return drafts


def _tool_drafts(tools: list[ToolUse], *, outcomes: bool) -> list[Draft]:
    drafts: list[Draft] = []
    with_args = [t for t in tools if t.args]
    without = [t.name for t in tools if not t.args]
    if with_args:
        drafts.append(
            Draft(
                key="tool_calls_args",
                value=[{"tool": t.name, "args": t.args, "mode": "subset"} for t in with_args],
                note="draft: the calls the agent made, with their arguments (subset: other "
                "arguments may differ); keep the ones that must hold",
            )
        )
    if without:
        names = list(dict.fromkeys(without))
        drafts.append(
            Draft(
                key="tool_calls_include",
                value=names,
                note="draft: tools the agent called (with no arguments, or arguments that "
                "were not JSON)",
            )
        )
    if outcomes:
        ended = [t for t in tools if t.is_error is not None]
        if ended:
            errors = [t.name for t in ended if t.is_error]
            drafts.append(
                Draft(
                    key="tool_calls_outcome",
                    value=[
                        {"tool": t.name, "status": "error" if t.is_error else "ok"} for t in ended
                    ],
                    note="draft: how each call ended in the call"
                    + (f" ({', '.join(dict.fromkeys(errors))} failed there)" if errors else ""),
                )
            )
    return drafts


def draft_turn(turn: UserTurn, conversation: ImportedCall, mode: ReplyDraft) -> list[Draft]:
    """The drafted expectations of one turn, in the order they are written."""
    voice = conversation.kind == "livekit"
    drafts = _tool_drafts(turn.tools, outcomes=voice)
    if voice and turn.switches:
        last = turn.switches[-1].to_agent
        name = agent_class_name(last)
        drafts.append(
            Draft(
                key="handoff_to",
                value=name,
                note=f"draft: the call handed over to agent {last!r}; the report names agents "
                "by id, the adapter by class name: check that it is this class",
            )
        )
    drafts.extend(_reply_drafts(turn.replies, mode))
    return drafts


def draft_greeting(conversation: ImportedCall) -> Draft | None:
    """The drafted ``greeting:`` check, for a voice conversation whose agent spoke first."""
    if conversation.kind != "livekit" or not conversation.greeting:
        return None
    text = " ".join(u.text for u in conversation.greeting if u.text)
    terms = key_terms(text)
    if not terms:
        return None
    return Draft(
        key="greeting",
        value={"contains_all": terms},
        note=f"draft: before the caller spoke, the agent said {_quote(text)!r} (LiveKitAdapter "
        "checks this; LiveKitRoomAdapter does not observe a greeting: delete it for room mode)",
    )
