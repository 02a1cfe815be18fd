"""Finite sets of integers held as sorted, disjoint intervals: a parameter's domain of any extent.

A schedule parameter such as ``per_core_M`` ranges over ``1..E_M`` (``E_M`` the extent in tiles, which a
shape such as ``M=10**12`` makes 31,250,000,000). :class:`Domain` stores that as one interval, so building,
hashing, comparing, testing membership and compiling it to CP-SAT cost the same for any extent; only a
consumer that really enumerates (the brute-force oracle, a lookup table over a small key) iterates it.

Representation: ``intervals = ((lo_0, hi_0), (lo_1, hi_1), ...)`` with ``lo_i <= hi_i`` and
``hi_i + 1 < lo_{i+1}`` (sorted, disjoint, not adjacent), so every finite set has exactly one
representation and two domains are equal exactly when their sets are. Divisor sets, e.g. the divisors
of ``per_core_K`` that fit L1, are small explicit sets (:func:`divisors_up_to`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from math import isqrt
from typing import overload


@dataclass(frozen=True, slots=True)
class Domain(Sequence[int]):
    """A finite set of integers as sorted, disjoint, non-adjacent closed intervals (module docstring).

    It is a read-only :class:`~collections.abc.Sequence` of its values in increasing order: ``len``,
    ``d[0]``, ``d[-1]``, ``x in d`` (a binary search) and iteration (one value at a time) work as on the
    tuple of its values, without ever building that tuple."""

    intervals: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        prev_hi: int | None = None
        for lo, hi in self.intervals:
            if lo > hi or (prev_hi is not None and lo <= prev_hi + 1):
                raise ValueError(f"domain intervals must be sorted, disjoint and not adjacent: {self.intervals}")
            prev_hi = hi

    # ---------------------------------------------------------------- constructors
    @classmethod
    def range(cls, lo: int, hi: int) -> Domain:
        """``lo..hi`` inclusive (empty when ``lo > hi``)."""
        return cls(((lo, hi),) if lo <= hi else ())

    @classmethod
    def of(cls, values: Iterable[int]) -> Domain:
        """The set of ``values`` (an explicit, small collection; runs of consecutive values merge)."""
        if isinstance(values, Domain):
            return values
        out: list[tuple[int, int]] = []
        for v in sorted(set(values)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"domain values must be integers, got {v!r}")
            if out and v == out[-1][1] + 1:
                out[-1] = (out[-1][0], v)
            else:
                out.append((v, v))
        return cls(tuple(out))

    # ---------------------------------------------------------------- queries
    @property
    def min(self) -> int:
        if not self.intervals:
            raise ValueError("an empty domain has no minimum")
        return self.intervals[0][0]

    @property
    def max(self) -> int:
        if not self.intervals:
            raise ValueError("an empty domain has no maximum")
        return self.intervals[-1][1]

    @property
    def size(self) -> int:
        """Number of values (a Python int of any size; ``len`` is the same where it fits a C size)."""
        return sum(hi - lo + 1 for lo, hi in self.intervals)

    @property
    def fixed(self) -> bool:
        """Exactly one value."""
        return len(self.intervals) == 1 and self.intervals[0][0] == self.intervals[0][1]

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return bool(self.intervals)

    def __contains__(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        i = bisect_right(self.intervals, (value, float("inf"))) - 1
        return i >= 0 and self.intervals[i][0] <= value <= self.intervals[i][1]

    def __iter__(self) -> Iterator[int]:
        for lo, hi in self.intervals:
            yield from range(lo, hi + 1)

    def __reversed__(self) -> Iterator[int]:
        for lo, hi in reversed(self.intervals):
            yield from range(hi, lo - 1, -1)

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...

    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        """The ``index``-th smallest value (negative: from the largest); a slice gives a tuple, so only
        slice a small domain or take a short slice."""
        if isinstance(index, slice):
            start, stop, step = index.indices(self.size)
            return tuple(self[i] for i in range(start, stop, step))
        size = self.size
        i = index + size if index < 0 else index
        if not 0 <= i < size:
            raise IndexError(f"domain index {index} out of range for {size} values")
        for lo, hi in self.intervals:
            if i <= hi - lo:
                return lo + i
            i -= hi - lo + 1
        raise AssertionError("unreachable")

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        if value not in self:
            raise ValueError(f"{value!r} is not in the domain")
        assert isinstance(value, int)
        i = 0
        for lo, hi in self.intervals:
            if lo <= value <= hi:
                i += value - lo
                break
            i += hi - lo + 1
        if i < start or (stop is not None and i >= stop):
            raise ValueError(f"{value!r} is not in the domain between {start} and {stop}")
        return i

    def count(self, value: object) -> int:
        return int(value in self)

    # ---------------------------------------------------------------- operations
    def choices(self, limit: int, keep: Iterable[int | None] = ()) -> tuple[int, ...]:
        """At most about ``limit`` values to offer for picking (e.g. a pin's drop-down): every value when
        there are at most ``limit``, else the ends of each interval, ``limit`` values spread evenly over the
        domain, and those of ``keep`` in the domain (the current value), increasing."""
        if self.size <= limit:
            return tuple(self)
        size = self.size
        picked = {v for pair in self.intervals[:limit] for v in pair}
        picked |= {self[i * (size - 1) // (limit - 1)] for i in range(limit)} if limit > 1 else {self.min}
        picked |= {v for v in keep if v is not None and v in self}
        return tuple(sorted(picked))

    def flat_intervals(self) -> list[int]:
        """``[lo_0, hi_0, lo_1, hi_1, ...]``: CP-SAT's ``Domain.from_flat_intervals`` form."""
        return [x for pair in self.intervals for x in pair]

    def text(self) -> str:
        """``lo..hi`` for a run of three or more values, else ``{a, b, c}``; a set of more than 12 values
        that is not one run shows its first six and last three, ``{1, 2, 4, 8, 16, 32, ..., 1024, 2048, 4096}``."""
        size = self.size
        if len(self.intervals) == 1 and size > 2:
            return f"{self.min}..{self.max}"
        if size > 12:
            head = [self[i] for i in range(6)]
            tail = [self[i] for i in range(-3, 0)]
            return "{" + ", ".join(map(str, head)) + ", ..., " + ", ".join(map(str, tail)) + "}"
        return "{" + ", ".join(map(str, self)) + "}"

    def __repr__(self) -> str:
        return f"Domain({self.text()})"


def divisors_up_to(n: int, limit: int) -> tuple[int, ...]:
    """The positive divisors of ``n >= 1`` that are at most ``limit``, increasing: trial division of every
    ``d <= min(limit, sqrt(n))``, each hit also giving its cofactor ``n // d`` (kept when at most
    ``limit``), so at most ``min(limit, sqrt(n))`` steps. Complete: a divisor ``d > sqrt(n)`` has the cofactor
    ``n // d < d <= limit``, which the loop reaches."""
    if n < 1:
        raise ValueError(f"divisors of {n}: n must be positive")
    small, large = [], []
    for d in range(1, min(limit, isqrt(n)) + 1):
        if n % d == 0:
            small.append(d)
            if n // d != d and n // d <= limit:
                large.append(n // d)
    return tuple(small + large[::-1])
