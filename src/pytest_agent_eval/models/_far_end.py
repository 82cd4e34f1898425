"""The far end an outbound agent dials into (a transcript's ``far_end:``): a person, a
voicemail box, a phone tree (IVR), a line that rings out or is busy, a hold queue.

The far end drives the conversation instead of the transcript's per-turn user text: what it
says next depends on what the agent did (the keys it sent to an IVR). `FarEnd` is the data;
`far_end_problems` what is wrong with it, once, for the loader and the runner alike; the
conversation itself is `pytest_agent_eval._far_end`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._keypad import keypad_problem

__all__ = [
    "BEEP_WORDS",
    "FAR_END_KINDS",
    "FarEnd",
    "FarEndExpect",
    "FarEndKind",
    "FarEndMedium",
    "FarEndPiece",
    "IvrNode",
    "IvrWalk",
    "VoicemailExpect",
    "audio_turns",
    "far_end_pieces",
    "far_end_problems",
    "far_end_wav",
    "ivr_prompt",
    "scripted_turn",
    "spoken_lines",
    "walk_ivr",
]

FarEndKind = Literal["human", "voicemail", "ivr", "no_answer", "busy", "hold_music"]
FarEndMedium = Literal["text", "audio"]
"""How the far end reaches the agent: as text turns (its words, ``(beep)``), or as audio."""
FAR_END_KINDS: tuple[str, ...] = ("human", "voicemail", "ivr", "no_answer", "busy", "hold_music")
"""Every kind of far end, in the order the docs list them."""

BEEP_WORDS = "(beep)"
"""What a voicemail box's beep is as words, in a far-end turn given as text."""

_FIELDS_OF: dict[str, tuple[str, ...]] = {
    "human": ("hello",),
    "voicemail": ("greeting",),
    "ivr": ("menu", "start", "retries"),
    "no_answer": (),
    "busy": (),
    "hold_music": ("greeting", "hello", "holds"),
}
_EXPECT_OF: dict[str, tuple[str, ...]] = {
    "human": ("call_ended",),
    "voicemail": ("voicemail", "call_ended"),
    "ivr": ("reached", "call_ended"),
    "no_answer": ("call_ended",),
    "busy": ("call_ended",),
    "hold_music": ("call_ended",),
}


@dataclass
class IvrNode:
    """One menu of a phone tree: what it says, and where each key leads.

    Args:
        prompt: What the menu says ("For billing, press 2.").
        keys: Each key the menu takes and the name of the node it leads to; none: the node
            is where the tree ends (a department, a queue), and the IVR hangs up after it.
    """

    prompt: str
    keys: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The walk upper-cases the keys the agent sends; a menu key "a" must match "A".
        self.keys = {_menu_key(key): target for key, target in self.keys.items()}


@dataclass
class VoicemailExpect:
    """What a voicemail box checks of the message the agent left.

    Args:
        starts_after_beep: The agent said nothing before the beep (not before the greeting,
            not over it) and spoke after it.
        says: Phrases the message must contain, case-insensitively.
    """

    starts_after_beep: bool = True
    says: list[str] = field(default_factory=list)


@dataclass
class FarEndExpect:
    """Checks of the whole call with a far end (``far_end: expect:``).

    Args:
        voicemail: The message left on a voicemail box (`VoicemailExpect`).
        reached: The IVR node the agent must have reached by the end of the call.
        call_ended: The agent hung up (true) or not (false) by the end of the call.
    """

    voicemail: VoicemailExpect | None = None
    reached: str | None = None
    call_ended: bool | None = None


@dataclass
class FarEnd:
    """Who answers an outbound agent's call, and what the call checks.

    Args:
        kind: ``human`` (says ``hello``, then the transcript's turns), ``voicemail`` (its
            ``greeting``, then a beep, then it records), ``ivr`` (a ``menu`` of prompts that
            advances on the keys the agent sends), ``no_answer`` (the line rings out),
            ``busy`` (a busy tone), ``hold_music`` (``greeting``, hold music ``holds``
            times, then a person says ``hello`` and the transcript's turns follow).
        hello: What the person who picks up says first.
        greeting: The voicemail box's greeting, or the hold queue's announcement.
        menu: An IVR's nodes, by name.
        start: The IVR node the call starts at (default: the first in ``menu``).
        retries: How often an IVR says a menu again (on a wrong key or no key) before it
            gives up and hangs up.
        holds: How many turns of hold music play before a person picks up.
        expect: Checks of the whole call (`FarEndExpect`).
        played_as: ``text`` (the default): its turns reach the agent as text, its words and
            the line's sounds as words (``(beep)``); ``audio`` (YAML ``as: audio``): spoken
            by the offline TTS, the beep, ringback, busy tone and hold music as tones, for
            the voice adapters only.
        written: The keys written in its YAML (the loader sets them): a key of another kind
            is refused when written, also at its default (``hello: "Hello?"`` on a
            voicemail). None for a far end built in Python, whose fields of another kind are
            refused when they differ from their defaults.
    """

    kind: FarEndKind
    hello: str = "Hello?"
    greeting: str = ""
    menu: dict[str, IvrNode] = field(default_factory=dict)
    start: str = ""
    retries: int = 2
    holds: int = 1
    expect: FarEndExpect = field(default_factory=FarEndExpect)
    played_as: FarEndMedium = "text"
    written: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def first_node(self) -> str:
        """The IVR node the call starts at."""
        return self.start or next(iter(self.menu), "")

    @property
    def drives_alone(self) -> bool:
        """True when the far end says everything (no transcript turns follow it)."""
        return self.kind not in ("human", "hold_music")

    @classmethod
    def coerce(cls, value: Any) -> Any:
        """A YAML ``far_end:`` value in its long form: ``busy`` is ``{"kind": "busy"}``."""
        if isinstance(value, str):
            return {"kind": value, "written": ("kind",)}
        if not isinstance(value, Mapping):
            return value
        data = dict(value)
        data.setdefault("written", tuple(str(key) for key in value))
        if "as" in data:  # ``as`` is a Python keyword: the field is ``played_as``
            data["played_as"] = data.pop("as")
        menu = data.get("menu")
        if isinstance(menu, Mapping):  # an unquoted key (1: sales) is a YAML number
            # and a key may be written lower case ("a"): the walk matches sent keys upper case
            data["menu"] = {
                name: {**node, "keys": {_menu_key(k): v for k, v in node["keys"].items()}}
                if isinstance(node, Mapping) and isinstance(node.get("keys"), Mapping)
                else node
                for name, node in menu.items()
            }
        return data


def _menu_key(key: Any) -> str:
    """A menu key as the walk matches it: a YAML number as text, a-d upper case (anything
    else stays as written, so a key that is not one is refused as the user wrote it)."""
    text = str(key)
    return text.upper() if text in ("a", "b", "c", "d") else text


def far_end_problems(value: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """What is wrong with a ``far_end:`` value (YAML data or a `FarEnd`), each as (the path
    inside it, what to fix): keys that do not belong to its kind, an IVR key that is not a
    key or leads nowhere, a menu with no way out, an expectation the kind cannot meet."""
    written = _written(value)
    data = _as_data(FarEnd.coerce(value))
    if not isinstance(data, dict) or data.get("kind") not in FAR_END_KINDS:
        return []  # the schema says what is wrong
    kind = data["kind"]
    found: list[tuple[tuple[str | int, ...], str]] = []
    allowed = _FIELDS_OF[kind]
    for name in ("hello", "greeting", "menu", "start", "retries", "holds"):
        said = (
            name in written
            if written is not None
            else data.get(name, _DEFAULTS[name]) != _DEFAULTS[name]
        )
        if said and name not in allowed:
            takes = ", ".join(allowed) if allowed else "nothing but expect"
            found.append(((name,), f"the far end ({kind}) has no {name!r}; it takes {takes}"))
    expect = data.get("expect") or {}
    for name, set_value in expect.items():
        if set_value is not None and name not in _EXPECT_OF[kind]:
            found.append(
                (
                    ("expect", name),
                    f"{name!r} cannot be checked with a {kind} far end; it checks "
                    + ", ".join(_EXPECT_OF[kind]),
                )
            )
    if kind == "voicemail" and not str(data.get("greeting") or "").strip():
        found.append(
            (
                ("greeting",),
                "a voicemail far end needs a greeting, e.g. 'Hi, this is Sam. "
                "Leave a message after the beep.'",
            )
        )
    if kind == "ivr":
        found += _menu_problems(data)
    return found


_DEFAULTS: dict[str, Any] = {
    "hello": "Hello?",
    "greeting": "",
    "menu": {},
    "start": "",
    "retries": 2,
    "holds": 1,
}


def _written(value: Any) -> tuple[str, ...] | None:
    """The keys written of a far end (YAML data, or a `FarEnd` the loader built); None for
    one built in Python, where only a field that differs from its default is known."""
    if isinstance(value, FarEnd):
        return value.written
    if isinstance(value, Mapping):
        if "written" in value:  # a FarEnd as data (serialized)
            said = value["written"]
            return tuple(said) if said is not None else None
        return tuple(str(key) for key in value)
    return None


def _as_data(value: Any) -> Any:
    if isinstance(value, FarEnd):
        return {
            "kind": value.kind,
            "hello": value.hello,
            "greeting": value.greeting,
            "menu": {
                name: {"prompt": node.prompt, "keys": dict(node.keys)}
                for name, node in value.menu.items()
            },
            "start": value.start,
            "retries": value.retries,
            "holds": value.holds,
            "expect": {
                "voicemail": value.expect.voicemail,
                "reached": value.expect.reached,
                "call_ended": value.expect.call_ended,
            },
        }
    return value


def _menu_problems(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    menu = data.get("menu") or {}
    if not isinstance(menu, dict) or not menu:
        return [(("menu",), "an ivr far end needs a menu: nodes with a prompt and keys")]
    found: list[tuple[tuple[str | int, ...], str]] = []
    names = ", ".join(menu)
    start = data.get("start") or next(iter(menu))
    if start not in menu:
        found.append((("start",), f"start {start!r} is not a node of the menu ({names})"))
    for name, node in menu.items():
        keys = node.get("keys") or {} if isinstance(node, dict) else {}
        for key, target in keys.items():
            problem = keypad_problem(str(key))
            if problem is not None or len(str(key)) != 1:
                found.append(
                    (
                        ("menu", name, "keys", str(key)),
                        f"{key!r} is not a key; a menu key is one of 0-9, *, # and A-D, quoted",
                    )
                )
            elif target not in menu:
                found.append(
                    (
                        ("menu", name, "keys", str(key)),
                        f"key {key!r} leads to {target!r}, which is not a node of the menu "
                        f"({names})",
                    )
                )
    if found:
        return found
    ends = {name for name, node in menu.items() if not (node.get("keys") or {})}
    if not ends:
        return [
            (
                ("menu",),
                "the menu has no way out: every node has keys, so no key ever ends the tree; "
                "give at least one node no keys (a department the call is put through to)",
            )
        ]
    reached = _reachable(menu, start)
    if reached and not reached & ends:
        return [
            (
                ("menu", start),
                f"no key from {start!r} ever leads to a node without keys ({', '.join(sorted(ends))}), "
                "so the call can never get through; add a key that leads to one",
            )
        ]
    if reached and data.get("expect", {}) and (goal := data["expect"].get("reached")):
        if goal not in menu:
            found.append(
                (("expect", "reached"), f"reached {goal!r} is not a node of the menu ({names})")
            )
        elif goal not in reached:
            found.append(
                (
                    ("expect", "reached"),
                    f"no keys from {start!r} lead to {goal!r}, so the "
                    "call can never reach it; add a key that leads there",
                )
            )
    return found


def _reachable(menu: dict[str, Any], start: str) -> set[str]:
    if start not in menu:
        return set()
    seen = {start}
    todo = [start]
    while todo:
        node = menu[todo.pop()]
        for target in (node.get("keys") or {}).values() if isinstance(node, dict) else ():
            if target in menu and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


_WRONG = "Sorry, that is not a valid option. "
_TIMEOUT = "Sorry, I did not get your selection. "


@dataclass
class IvrWalk:
    """Where an IVR call went: the node each turn played, and how it ended so far."""

    nodes: list[str] = field(default_factory=list)
    """The node each turn of the call played, in order."""
    node: str = ""
    """The node the call is at now."""
    misses: int = 0
    """Menus said again in a row (a wrong key, or no key)."""
    last: str = ""
    """Why the last menu is said again: ``wrong``, ``timeout``, or ``""``."""
    wrong_keys: list[str] = field(default_factory=list)
    """Every key the agent sent that the menu it was at did not take."""

    def at_end(self, far_end: FarEnd) -> bool:
        """True when the call is at a node without keys (put through)."""
        return not far_end.menu[self.node].keys

    def gave_up(self, far_end: FarEnd) -> bool:
        """True when the IVR said a menu again ``retries`` times and hangs up."""
        return self.misses > far_end.retries

    def step(self, far_end: FarEnd, sent: str) -> None:
        """Move on the keys the agent sent in the turn that played ``self.node``."""
        moved = False
        self.last = ""
        for key in sent.upper():
            if self.at_end(far_end):
                break
            target = far_end.menu[self.node].keys.get(key)
            if target is None:
                self.wrong_keys.append(key)
                self.last = "wrong"
                break
            self.node, moved = target, True
        if not moved and not self.last:
            self.last = "timeout"
        self.misses = 0 if moved and not self.last else self.misses + 1


def walk_ivr(far_end: FarEnd, sent: Sequence[str]) -> IvrWalk:
    """The IVR call in which the agent sent ``sent`` (the keys of each turn, in order)."""
    walk = IvrWalk(node=far_end.first_node)
    for keys in sent:
        walk.nodes.append(walk.node)
        if walk.at_end(far_end):
            break
        walk.step(far_end, keys)
    return walk


def ivr_prompt(node: IvrNode, walk: IvrWalk) -> str:
    """What ``node`` says when the call is at it, after a wrong key or a timeout too."""
    before = {"wrong": _WRONG, "timeout": _TIMEOUT}.get(walk.last, "")
    return before + node.prompt


def spoken_lines(far_end: FarEnd) -> list[tuple[str, str]]:
    """What ``far_end`` says in words, each as (its field, e.g. ``greeting`` or
    ``menu.main``, and the words): the lines its offline TTS speaks when it is heard as audio.
    An IVR's menus said again start with one of two apologies (``retry.wrong``,
    ``retry.timeout``). The line's sounds (beep, ring, busy tone, music) are not words."""
    kind = far_end.kind
    if kind == "human":
        return [("hello", far_end.hello)]
    if kind == "voicemail":
        return [("greeting", far_end.greeting)]
    if kind == "hold_music":
        greeting = [("greeting", far_end.greeting)] if far_end.greeting.strip() else []
        return [*greeting, ("hello", far_end.hello)]
    if kind == "ivr":
        menus = [(f"menu.{name}", node.prompt) for name, node in far_end.menu.items()]
        return [*menus, ("retry.wrong", _WRONG.strip()), ("retry.timeout", _TIMEOUT.strip())]
    return []


def far_end_wav(transcript_id: str, part: str) -> str:
    """Where the fixture of a far end's spoken line ``part`` (`spoken_lines`) is, relative to
    its transcript's file, as a turn's ``audio:`` is: ``audio/far_end/<id>/<part>.wav``."""
    return f"audio/far_end/{transcript_id}/{part}.wav"


FarEndSound = Literal["line", "beep", "ringback", "busy", "hold_music"]


@dataclass(frozen=True)
class FarEndPiece:
    """One piece of a far-end turn heard as audio: a spoken line (``line``, its `spoken_lines`
    field in ``part``) or one of the line's sounds (``beep``, ``ringback``, ``busy``,
    ``hold_music``)."""

    sound: FarEndSound
    part: str = ""


def audio_turns(far_end: FarEnd, walk: IvrWalk | None = None) -> list[list[FarEndPiece]]:
    """The far end's turns heard as audio, each as its pieces in order, the same turns its
    text plays (`pytest_agent_eval._far_end.FarEndScript`): a voicemail's greeting, then its
    beep; a line that rings out or is busy; a hold queue's announcement and music, then the
    person's hello. An IVR's turns depend on the keys the agent sends: given its ``walk``,
    the one turn at ``walk.node`` (after an apology when ``walk.last`` says it is a retry)."""
    line = FarEndPiece
    kind = far_end.kind
    if kind == "human":
        return [[line("line", "hello")]]
    if kind == "voicemail":
        return [[line("line", "greeting")], [line("beep")]]
    if kind == "no_answer":
        return [[line("ringback")]]
    if kind == "busy":
        return [[line("busy")]]
    if kind == "hold_music":
        first = [line("line", "greeting")] if far_end.greeting.strip() else []
        music = [[line("hold_music")] for _ in range(far_end.holds - 1)]
        return [[*first, line("hold_music")], *music, [line("line", "hello")]]
    if walk is None:
        return []
    retry = [line("line", f"retry.{walk.last}")] if walk.last else []
    return [[*retry, line("line", f"menu.{walk.node}")]]


def scripted_turn(far_end: FarEnd, call_turn: int) -> int | None:
    """The transcript turn (zero-based) that a call's turn ``call_turn`` ran (zero-based, as
    the call numbers them: the far end's opening first, `audio_turns`), or None for a turn the
    far end says itself. The one home of that mapping: the runner's script
    (`pytest_agent_eval._far_end.FarEndScript`), the turns an agent's hang-up cut off and
    failure attribution all count with it."""
    if far_end.drives_alone:
        return None
    scripted = call_turn - len(audio_turns(far_end))
    return scripted if scripted >= 0 else None


def far_end_pieces(far_end: FarEnd | None, index: int, words: str) -> tuple[FarEndPiece, ...]:
    """The pieces of turn ``index`` of a call when it is the far end's turn heard as audio
    (``as: audio``), saying ``words`` (as `pytest_agent_eval._far_end.FarEndScript` wrote
    it); () for any other turn (a text far end, the transcript's own turns after a ``human``'s
    or a hold queue's opening). An IVR's turn is found from its words: the node whose prompt
    they say, after the apology of a retry."""
    if far_end is None or far_end.played_as != "audio":
        return ()
    if far_end.kind != "ivr":
        opening = audio_turns(far_end)
        return tuple(opening[index]) if index < len(opening) else ()
    for name, node in far_end.menu.items():
        for last in ("", "wrong", "timeout"):
            walk = IvrWalk(node=name, last=last)
            if ivr_prompt(node, walk) == words:
                return tuple(audio_turns(far_end, walk)[0])
    return ()
