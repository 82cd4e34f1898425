"""One voice turn's `Timeline` drawn as an inline SVG for the HTML report: the user's lane
(audio streamed, speech as the framework and the agent's VAD found it, the end-of-turn
decisions) and the agent's lane (its audio out, tool calls below it) on one time axis, with
interruptions and handoffs as lines across both lanes.

Every drawn event carries ``data-kind`` (its timeline kind) and a ``<title>`` (hovered, it
says what and when); kinds the adapter could not observe are named under the drawing.
"""

from __future__ import annotations

from html import escape

from ..models import Timeline, TimelineEvent

__all__ = ["render_timeline_svg"]

_WIDTH = 640
_LABEL_W = 92
_PAD_R = 12
_ROW_H = 14
_AXIS_H = 18

# lane row (from the top) and colour of each kind drawn as a bar
_BARS: dict[str, tuple[int, str]] = {
    "stream": (0, "#c9d6e8"),
    "user_speech": (1, "#5b8bd0"),
    "vad_speech": (2, "#2f5f9e"),
    "agent_speech": (4, "#4f9d69"),
    "tool_call": (5, "#d99a3d"),
}
_ROWS = ("user audio", "user speech", "agent VAD", "end of turn", "agent audio", "tool calls")
_INTERRUPTION_COLOURS = {"real": "#c0392b", "false": "#8e44ad", "resumed": "#8e44ad"}


def _label(event: TimelineEvent) -> str:
    when = f"{event.t_start:.3f} s"
    if event.t_end is not None:
        when += f" to {event.t_end:.3f} s"
    elif event.kind not in ("end_of_turn", "interruption", "handoff"):
        when += " to the end of the turn"
    detail = ", ".join(f"{k}: {v}" for k, v in event.detail.items() if v not in (None, ""))
    return f"{event.kind.replace('_', ' ')} {when}" + (f" ({detail})" if detail else "")


def render_timeline_svg(
    timeline: Timeline, *, unobserved_note: str = "not observed by this adapter"
) -> str:
    """``timeline`` as an SVG element (a ``<figure>`` holding it and, after
    ``unobserved_note``, the kinds it does not hold)."""
    span = max(timeline.end_s, 0.1)
    plot_w = _WIDTH - _LABEL_W - _PAD_R
    height = _ROW_H * len(_ROWS) + _AXIS_H + 4

    def x(t: float) -> float:
        return round(_LABEL_W + plot_w * min(max(t, 0.0), span) / span, 1)

    parts: list[str] = []
    for row, name in enumerate(_ROWS):
        if name:
            y = row * _ROW_H + _ROW_H - 3
            parts.append(f'<text x="2" y="{y}" class="tl-label">{escape(name)}</text>')
    lane_end = _ROW_H * len(_ROWS)
    parts.append(
        f'<line x1="{_LABEL_W}" y1="{lane_end}" x2="{_WIDTH - _PAD_R}" y2="{lane_end}" '
        'stroke="#999" stroke-width="1"/>'
    )
    step = _tick_step(span)
    tick = 0.0
    while tick <= span + 1e-9:
        tx = x(tick)
        parts.append(
            f'<line x1="{tx}" y1="{lane_end}" x2="{tx}" y2="{lane_end + 4}" stroke="#999"/>'
            f'<text x="{tx}" y="{lane_end + 15}" class="tl-tick">{tick:g} s</text>'
        )
        tick = round(tick + step, 6)
    for event in timeline.events:
        title = f"<title>{escape(_label(event))}</title>"
        kind = escape(event.kind)
        if event.kind in _BARS:
            row, colour = _BARS[event.kind]
            end = event.t_end if event.t_end is not None else span
            x0, x1 = x(event.t_start), x(end)
            still_open = "" if event.t_end is not None else ' opacity="0.6"'
            parts.append(
                f'<rect data-kind="{kind}" x="{x0}" y="{row * _ROW_H + 2}" '
                f'width="{max(x1 - x0, 1.5)}" height="{_ROW_H - 4}" rx="2" fill="{colour}"'
                f"{still_open}>{title}</rect>"
            )
        elif event.kind == "end_of_turn":
            ex, ey = x(event.t_start), 3 * _ROW_H
            parts.append(
                f'<path data-kind="{kind}" d="M{ex - 4},{ey + 2} L{ex + 4},{ey + 2} '
                f'L{ex},{ey + _ROW_H - 2} Z" fill="#333">{title}</path>'
            )
        else:  # interruption, handoff: a line across both lanes
            lx = x(event.t_start)
            colour = (
                _INTERRUPTION_COLOURS.get(str(event.detail.get("kind")), "#c0392b")
                if event.kind == "interruption"
                else "#555"
            )
            dash = ' stroke-dasharray="3,2"' if event.kind == "handoff" else ""
            parts.append(
                f'<line data-kind="{kind}" x1="{lx}" y1="0" x2="{lx}" y2="{lane_end}" '
                f'stroke="{colour}" stroke-width="2"{dash}>{title}</line>'
            )
    svg = (
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" '
        f'height="{height}" viewBox="0 0 {_WIDTH} {height}" role="img" '
        f'aria-label="turn timeline on the {escape(timeline.clock)} clock">'
        + "".join(parts)
        + "</svg>"
    )
    notes = [f"{timeline.clock} clock"]
    if timeline.unobserved:
        unseen = ", ".join(k.replace("_", " ") for k in timeline.unobserved)
        notes.append(f"{unobserved_note}: {unseen}")
    caption = f'<figcaption class="meta">{escape("; ".join(notes))}</figcaption>'
    return f'<figure class="timeline-figure">{svg}{caption}</figure>'


def _tick_step(span: float) -> float:
    """A round tick step giving at most about 8 ticks over ``span`` seconds."""
    for step in (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0):
        if span / step <= 8:
            return step
    return 120.0
