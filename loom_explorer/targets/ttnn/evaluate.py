"""A ttnn config's schedule evaluated by the referee: what every op's config reader shares.

A config (the ttnn constructor's own argument names) is read into a frozen pydantic model (``validated``:
a ``ConfigError`` naming the origin and the first field at fault), mapped by its op's family to one
candidate and its parameter values, and costed on that candidate's schedule by the referee
(``evaluate_values``): an ``Evaluated`` holding the schedule, the values and a ``CandidateResult`` that is
feasible, or a ``conflict`` naming the constraints the model finds violated. A config's
``compute_with_storage_grid_size`` must fit the chip (``check_grid``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Annotated, TypeVar

from pydantic import BaseModel, Field, StrictInt, ValidationError

from loom_explorer.errors import LoomError
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.result import CandidateResult, Conflict
from loom_explorer.validate import referee

M = TypeVar("M", bound=BaseModel)
# a count of tiles or cores: a whole number >= 1, never a boolean (``True`` is no block width) nor a float
Count = Annotated[StrictInt, Field(ge=1)]


class ConfigError(LoomError, ValueError):
    """A TTNN config the model cannot read or map; the message names the field."""


def validated(model: type[M], raw: object, origin: str) -> M:
    """``raw`` as ``model``, or a ConfigError naming ``origin`` and the first field at fault."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        got = f" (got {first['input']!r})" if first["type"] != "missing" else ""
        raise ConfigError(f"{origin}: field {'.'.join(map(str, first['loc']))}: {first['msg']}{got}") from None


@dataclass(frozen=True, slots=True)
class Evaluated:
    """A config as the model sees it: its candidate's schedule, the values, and the referee's result."""

    schedule: SymbolicSchedule
    values: dict[str, int]
    result: CandidateResult


def check_grid(hw: HardwareSpec, grid: tuple[int, int]) -> None:
    """A config's ``compute_with_storage_grid_size`` must fit the chip (ConfigError)."""
    if grid[0] > hw.grid.columns or grid[1] > hw.grid.rows:
        raise ConfigError(
            f"compute_with_storage_grid_size {list(grid)} does not fit {hw.name}'s "
            f"{hw.grid.columns}x{hw.grid.rows} grid"
        )


def evaluate_values(schedule: SymbolicSchedule, values: dict[str, int]) -> Evaluated:
    """A config's parameter ``values`` on its candidate's ``schedule``, checked and costed by the referee."""
    name = schedule.candidate.name
    missing = [p for p in schedule.param_names if p not in values]
    if missing:
        raise ConfigError(f"candidate {name} has parameters the config does not give: {', '.join(missing)}")
    verdict = referee(schedule, values)
    result = partial(
        CandidateResult,
        candidate_name=name,
        description=schedule.candidate.description,
        alternatives=(),
        best_bound_cycles=None,
        solve_seconds=0.0,
        pins=tuple(sorted(values.items())),
    )
    if verdict.solution is None:
        conflict = Conflict(
            pins=tuple(sorted(values.items())),
            constraints=verdict.violations,
            families=(),
            message="the model finds this config illegal: " + "; ".join(verdict.violations),
        )
        return Evaluated(schedule, values, result(status="conflict", solution=None, conflict=conflict))
    return Evaluated(schedule, values, result(status="feasible", solution=verdict.solution, conflict=None))
