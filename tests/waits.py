"""How long the tests wait, and how: on a condition, never a fixed sleep (imported by the tests; conftest.py puts
this folder on sys.path; the browser tests' page waits are ``page_driver.py``'s ``WAIT_MS``).

Every wait returns as soon as its condition holds, so its bound costs nothing on an idle machine. The bound is
generous because the suite must also pass on a machine running two suites at once, many times slower than an
idle one (a command's imports alone then take minutes).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

WAIT_S = 600.0  # the longest a test waits for a subprocess or a server: an exit, a progress line, an answer
POLL_S = 0.05  # between two checks of a condition

T = TypeVar("T")


def wait_until(condition: Callable[[], T], what: str, timeout_s: float = WAIT_S) -> T:
    """Check ``condition`` every ``POLL_S`` until it returns a true value, and return that value;
    AssertionError saying ``what`` was awaited once ``timeout_s`` seconds have passed without it."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout_s:.0f} s for {what}")
        time.sleep(POLL_S)
