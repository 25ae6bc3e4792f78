"""tqdm's internals, in one guarded place: time left out of a progress bar's rate.

tqdm has no public way to leave a stretch of time (a periodic evaluation, a checkpoint
saved) out of a bar's elapsed time, and so out of the rate it shows; :func:`leave_out`
moves two of the bar's attributes instead. What it assumes of tqdm, checked against
**tqdm 4.70**; :func:`broken_assumptions` checks each, and
``tests/train/test_training_seventh_audit.py`` fails, naming tqdm's version and the
assumption, when an upgrade breaks one:

1. a bar's elapsed time counts from its attribute ``start_t`` (``format_dict["elapsed"]``
   is the time now less ``start_t``): moved later, the elapsed time and the rate leave
   the time out;
2. ``close()`` draws the bar's last line, and the newline after it, only when the bar
   was drawn before: ``last_print_t`` (when it was last drawn) at or after
   ``start_t + delay``. With ``start_t`` moved past it, ``close()`` took the bar for one
   never shown and wrote neither: a log ended mid-line at the last line drawn, and the
   summary printed next was glued to it. ``last_print_t`` moves along with it.

Where the attributes are missing, :func:`leave_out` leaves the bar as it is (its rate then
counts the evaluations): training goes on.
"""

from __future__ import annotations

import io
from typing import Any

__all__ = ["CHECKED_VERSION", "leave_out", "broken_assumptions"]

CHECKED_VERSION = "4.70"
"""The tqdm minor version the assumptions were checked against."""

_ATTRIBUTES = ("start_t", "last_print_t", "delay")


def leave_out(bar: Any, seconds: float) -> None:
    """Leave ``seconds`` out of ``bar``'s elapsed time, and so out of its rate; a bar
    shown before is still shown, and drawn once more as it closes."""
    if not all(hasattr(bar, name) for name in _ATTRIBUTES):
        return
    shown = bar.last_print_t >= bar.start_t + bar.delay
    bar.start_t += seconds
    if shown:
        bar.last_print_t = max(bar.last_print_t, bar.start_t + bar.delay)


def broken_assumptions() -> list[str]:
    """The assumptions of the module docstring that the installed tqdm breaks (none: an
    empty list), each named by its number."""
    from tqdm import tqdm

    broken = []
    out = io.StringIO()
    bar = tqdm(total=10, file=out, mininterval=3600, delay=0)
    missing = [name for name in _ATTRIBUTES if not hasattr(bar, name)]
    if missing:
        bar.close()
        return [f"1, 2: a bar has no attribute {', '.join(missing)}"]
    before = bar.format_dict["elapsed"]
    leave_out(bar, 100.0)
    if not bar.format_dict["elapsed"] <= before - 99:
        broken.append("1: moving start_t later does not take the time off the bar's elapsed time")
    bar.update(10)  # not drawn: within mininterval
    bar.close()
    if not out.getvalue().endswith("\n") or "10/10" not in out.getvalue().rsplit("\r", 1)[-1]:
        broken.append("2: close() does not draw the last line and its newline after start_t moved")
    return broken
