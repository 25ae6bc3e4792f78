"""One picture of the table: an SVG drawing of a game as one seat (or a spectator) sees it.

The same picture serves the web page (``llama-rl serve``), ``render_mode="rgb_array"`` of
both envs (rasterised by :func:`rasterize`) and the notebooks. It shows what the viewer
may know: the top card of the discard pile, the size of the draw pile (never its
order), every seat's name, score, whether it quit and how many cards it holds, and the
viewer's own cards face up. ``reveal=True`` shows every hand (a spectator watching
agents, or the cards shown when a round is scored).

Building the SVG needs only the standard library; :func:`rasterize` needs the ``web``
extra (``resvg-py`` and Pillow).
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

import numpy as np

from llama_env._install import EXTRAS, MissingExtra, find_missing
from llama_env.engine import check_flag, check_seat
from llama_env.render import plural, seat_names

if TYPE_CHECKING:
    from llama_env.engine import LlamaGame

__all__ = ["table_svg", "rasterize", "check_render_mode", "RENDER_MODES", "CARD_COLORS", "WIDTH", "HEIGHT"]

WIDTH = 760
"""The picture's width in pixels (``render_mode="rgb_array"`` frames are this wide)."""
HEIGHT = 500
"""The picture's height in pixels."""
FONT = "DejaVu Sans, Arial, sans-serif"
"""The font families the picture's text asks for, in order."""
CARD_COLORS = {
    1: "#e53935",
    2: "#fb8c00",
    3: "#fdd835",
    4: "#43a047",
    5: "#1e88e5",
    6: "#8e24aa",
    7: "#f5f0e6",
}
"""Card face colours by card code (7 is the llama)."""
_INK = {7: "#5d4037"}


def _card(x: float, y: float, code: int, *, w: float = 34, h: float = 50, highlight: bool = False) -> str:
    label = "L" if code == 7 else str(code)
    fill = CARD_COLORS[code]
    ink = _INK.get(code, "#ffffff" if code != 3 else "#3e2723")
    ring = ' stroke="#ffeb3b" stroke-width="3"' if highlight else ' stroke="#263238" stroke-width="1"'
    return (
        f'<g class="card" data-card="{code}"><rect x="{x:.1f}" y="{y:.1f}" width="{w}" height="{h}" rx="5" '
        f'fill="{fill}"{ring}/>'
        f'<text x="{x + w / 2:.1f}" y="{y + h / 2 + 7:.1f}" font-size="{h * 0.42:.0f}" font-weight="bold" '
        f'text-anchor="middle" fill="{ink}" font-family="{FONT}">{label}</text></g>'
    )


def _back(x: float, y: float, *, w: float = 34, h: float = 50) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w}" height="{h}" rx="5" fill="#37474f" stroke="#eceff1" '
        'stroke-width="1.5"/>'
        f'<rect x="{x + 5:.1f}" y="{y + 5:.1f}" width="{w - 10}" height="{h - 10}" rx="3" fill="none" '
        'stroke="#90a4ae" stroke-width="1"/>'
    )


def _text(x: float, y: float, text: str, *, size: int = 14, weight: str = "normal", fill: str = "#ffffff") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" font-weight="{weight}" text-anchor="middle" '
        f'fill="{fill}" font-family="{FONT}">{escape(text)}</text>'
    )


def _hand(cx: float, y: float, cards: Sequence[int], legal_cards: Sequence[int]) -> list[str]:
    """Face-up cards, centred on ``cx``, overlapping when there are many."""
    step = min(38.0, 260.0 / max(len(cards), 1))
    x0 = cx - (step * (len(cards) - 1) + 34) / 2
    return [_card(x0 + i * step, y, c, highlight=c in legal_cards) for i, c in enumerate(cards)]


def table_svg(
    game: LlamaGame,
    viewer: int | None = None,
    *,
    names: Sequence[str] | None = None,
    reveal: bool = False,
    legal_cards: Sequence[int] = (),
) -> str:
    """The table as ``viewer`` sees it (``None``: a spectator, who sees hands only with
    ``reveal``). ``legal_cards`` (card codes) are outlined in the viewer's hand. Returns
    an SVG document of :data:`WIDTH` x :data:`HEIGHT` pixels. A viewer off the table, or
    ``names`` that do not label every seat, is a ``ValueError``; ``reveal`` anything but
    a bool a ``TypeError`` (``"no"`` would show every hand)."""
    reveal = check_flag("reveal", reveal)
    n = game.num_players
    viewer = None if viewer is None else check_seat(viewer, n)  # else: no hand, no "(you)", silently
    names = seat_names(names, n)
    bottom = viewer if viewer is not None else 0
    cx, cy, rx, ry = WIDTH / 2, HEIGHT / 2 - 10, 300, 160
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        'role="img" aria-label="L.L.A.M.A. table">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#1b2a24"/>',
        f'<ellipse cx="{cx}" cy="{cy}" rx="{rx + 18}" ry="{ry + 18}" fill="#5d4037"/>',
        f'<ellipse cx="{cx}" cy="{cy}" rx="{rx}" ry="{ry}" fill="#2e7d32"/>',
        _text(cx, 28, f"Round {game.round}" + ("  ·  game over" if game.game_over else ""), size=16, weight="bold"),
    ]
    # the piles in the centre: the draw pile (face down, its size) and the top card
    pile = len(game.draw_pile)
    if pile:
        for k in range(min(3, pile)):
            parts.append(_back(cx - 70 + 2 * k, cy - 38 - 2 * k, w=46, h=68))
    else:
        parts.append(
            f'<rect x="{cx - 70}" y="{cy - 38}" width="46" height="68" rx="6" fill="none" stroke="#a5d6a7" '
            'stroke-dasharray="4 3"/>'
        )
    parts.append(_text(cx - 47, cy + 50, f"draw {pile}", size=13))
    parts.append(_card(cx + 20, cy - 38, game.top_card, w=46, h=68))
    parts.append(_text(cx + 43, cy + 50, "top", size=13))
    # the seats, in turn order around the table from the viewer (bottom) to their left
    for k in range(n):
        seat = (bottom + k) % n
        angle = math.pi / 2 + 2 * math.pi * k / n  # bottom, then clockwise on screen
        sx = cx + (rx + 4) * math.cos(angle) * 0.92
        sy = cy + (ry + 4) * math.sin(angle) * 0.95
        acting = seat == game.current_player and not game.game_over
        quit_ = game.quit[seat]
        size = game.hand_size_of(seat)
        label = names[seat] + (" (you)" if seat == viewer and names[seat].lower() != "you" else "")
        box_w, box_h = 190, 86
        bx, by = sx - box_w / 2, sy - box_h / 2
        ring = "#ffeb3b" if acting else ("#78909c" if quit_ else "#a5d6a7")
        parts.append(
            f'<g class="seat" data-seat="{seat}"><rect x="{bx:.1f}" y="{by:.1f}" width="{box_w}" height="{box_h}" '
            f'rx="10" fill="#102018" fill-opacity="0.85" stroke="{ring}" stroke-width="{3 if acting else 1.5}"/>'
        )
        status = "quit" if quit_ else ("to act" if acting else "in")
        parts.append(_text(sx, by + 18, label, size=13, weight="bold"))
        parts.append(
            _text(
                sx,
                by + 34,
                f"score {game.scores[seat]}  ·  {status}  ·  {plural(size, 'card')}",
                size=11,
            )
        )
        if seat == viewer or reveal:
            parts.extend(_hand(sx, by + 40, game.hand(seat), legal_cards if seat == viewer else ()))
        else:
            for i in range(min(size, 8)):
                parts.append(_back(sx - 60 + i * 14, by + 40, w=26, h=38))
            if size > 8:
                parts.append(_text(sx + 70, by + 64, f"+{size - 8}", size=12))
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


RENDER_MODES = ("ansi", "human", "rgb_array")
"""The envs' render modes: text (:mod:`llama_env.render`), printed or returned, and this
picture as an array (:func:`rasterize`)."""

_RASTERIZE_NEEDS = "render_mode='rgb_array' draws the table with resvg-py and Pillow, which are not installed"
_RASTERIZE_MODULES = (EXTRAS["web"]["resvg-py"], EXTRAS["web"]["pillow"])


def check_render_mode(render_mode: str | None) -> str | None:
    """``render_mode`` as an env may be made with it: ``None`` or one of
    :data:`RENDER_MODES`, else a ``ValueError``. ``"rgb_array"`` without resvg-py or Pillow
    is :func:`rasterize`'s :class:`~llama_env._install.MissingExtra` now, found without
    importing them, so a missing ``web`` extra is said at ``make``, not at the first
    ``render()`` after hours of training."""
    if render_mode is not None and render_mode not in RENDER_MODES:
        *head, last = (repr(mode) for mode in (None, *RENDER_MODES))
        raise ValueError(f"render_mode must be {', '.join(head)} or {last}, got {render_mode!r}")
    if render_mode == "rgb_array":
        missing = find_missing(_RASTERIZE_MODULES)
        if missing is not None:
            raise MissingExtra(_RASTERIZE_NEEDS, "web", name=missing)
    return render_mode


def rasterize(svg: str) -> np.ndarray:
    """The picture as an ``(H, W, 3)`` uint8 array (what ``render_mode="rgb_array"``
    returns). Needs the ``web`` extra."""
    tried = _RASTERIZE_MODULES[0]
    try:
        import resvg_py

        tried = _RASTERIZE_MODULES[1]
        from PIL import Image
    except ImportError:  # named by the module whose import failed, as the check at make names it
        raise MissingExtra(_RASTERIZE_NEEDS, "web", name=tried) from None
    global _FONTS_CHECKED
    if not _FONTS_CHECKED:
        _FONTS_CHECKED = True
        _warn_without_fonts(resvg_py.svg_to_bytes)
    png = resvg_py.svg_to_bytes(svg_string=svg)
    with Image.open(io.BytesIO(bytes(png))) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()


_FONTS_CHECKED = False
_PROBE = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20">{}</svg>',
    f'<text x="2" y="16" font-size="16" font-family="{FONT}">A</text>',
)


def _warn_without_fonts(to_png: Any) -> None:
    """Warn once when resvg finds no font: the picture would have no text, silently."""
    frame, text = _PROBE
    if bytes(to_png(svg_string=frame.format(text))) == bytes(to_png(svg_string=frame.format(""))):
        warnings.warn(
            "render_mode='rgb_array' found no font, so the pictures have no card values, names or scores: "
            "install one (DejaVu Sans: apt install fonts-dejavu-core)",
            RuntimeWarning,
            stacklevel=4,
        )
