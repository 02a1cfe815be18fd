"""Parse and check pins (``--pin NAME=VALUE``) against the parameters of the schedules being solved.

A pin's value is a whole number in 0..2^63-1 written in ASCII digits (parameters are counts and sizes; the
model's integers are 64-bit); whether it lies in a parameter's domain is :func:`check_pins`'s question.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from loom_explorer.errors import LoomError
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import parse_whole


class PinError(LoomError, ValueError):
    """A pin that names no parameter, is malformed, or lies outside every candidate's domain."""


def parse_pins(items: Iterable[str]) -> dict[str, int]:
    pins: dict[str, int] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not name or not raw.strip():
            raise PinError(f"pin {item!r} is not NAME=VALUE")
        if name in pins:
            raise PinError(f"pin {name} given twice")
        pins[name] = parse_whole(raw, f"pin {name}", PinError, minimum=0)
    return pins


def check_pins(pins: dict[str, int], schedules: Sequence[SymbolicSchedule]) -> None:
    """Raise :class:`PinError` for a pin whose value is not a whole number (a boolean, a float: from the
    Python API), that no candidate knows, or whose value no candidate allows."""
    for name, value in pins.items():
        if isinstance(value, bool) or not isinstance(value, int):  # True is no block width, 2.0 no count
            raise PinError(f"pin {name}={value!r}: the value must be a whole number, not a {type(value).__name__}")
        having = [s.param(name) for s in schedules if name in s.param_names]
        if not having:
            known = sorted({n for s in schedules for n in s.param_names})
            raise PinError(f"unknown pin {name!r}; parameters: {', '.join(known)}")
        if not any(value in p.values for p in having):  # a binary search over the domain's intervals
            domains = sorted({p.domain_text() for p in having})
            why = sorted({p.bound for p in having if p.bound})
            raise PinError(
                f"pin {name}={value} is outside its domain {' / '.join(domains)}"
                + (f" ({'; '.join(why)})" if why else "")
            )


def pin_domain_conflict(pins: dict[str, int], schedule: SymbolicSchedule) -> str | None:
    """Why this candidate cannot take these pins at all (parameter absent or value outside domain)."""
    for name, value in pins.items():
        if name not in schedule.param_names:
            return f"this candidate has no parameter {name}"
        p = schedule.param(name)
        if value not in p.values:
            if p.fixed:
                return f"this candidate fixes {name} = {p.values.min} ({p.description})"
            return f"{name}={value} is outside this candidate's domain {p.domain_text()}" + (
                f" ({p.bound})" if p.bound else ""
            )
    return None
