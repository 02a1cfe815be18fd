"""Solver work off the event loop: one worker thread, newest request wins.

A compiled CP-SAT model is not safe to solve from two threads at once (pins are set on it as
assumptions), so all solver work goes through one worker thread in submission order. Each request takes
a generation number; work of an older generation that has not started yet is skipped, and the result of
one that finishes after a newer request arrived is dropped (``run`` returns ``None``), so the page only
ever shows the answer to the latest question while the event loop stays free.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class Superseded(Exception):
    """Raised inside the worker for work whose request is no longer the latest."""


class SolveRunner:
    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="loom-solve")
        self._generation = 0

    def new_request(self) -> int:
        """Start a request; every older request is superseded."""
        self._generation += 1
        return self._generation

    def is_current(self, generation: int) -> bool:
        return generation == self._generation

    def _guarded(self, generation: int, work: Callable[[], T]) -> Callable[[], T]:
        def run() -> T:
            if not self.is_current(generation):
                raise Superseded
            return work()

        return run

    async def run(self, generation: int, work: Callable[[], T]) -> T | None:
        """``work()`` on the worker thread; ``None`` when a newer request superseded this one."""
        if not self.is_current(generation):
            return None
        try:
            out = await asyncio.wrap_future(self._executor.submit(self._guarded(generation, work)))
        except Superseded:
            return None
        return out if self.is_current(generation) else None

    def run_now(self, work: Callable[[], T]) -> T:
        """``work()`` on the worker thread, waited for here (notebook calls; supersedes queued work)."""
        generation = self.new_request()
        return self._executor.submit(self._guarded(generation, work)).result()

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
