"""``loom-explorer predict``: a TTNN config as the model sees it, or what ttnn runs itself.

* ``given_config``: the config of ``--ttnn-config FILE`` (JSON in the ttnn constructor's argument names, or
  one op, ``--op``, of an ``improve -o`` file: ``accuracy/improve_configs.py``), read as the kernel's op reads
  it (a matmul or an SDPA program config; a family ttnn runs without one is refused);
* ``config_flags``: what a matmul config's ``memory`` and ``compute`` blocks add to the problem flags
  (placements, fidelity, fp32 accumulation; a flag that contradicts the block is an error, not silently
  overridden);
* ``check_recorded_problem``: an ``improve`` op's config is costed only on the problem ``improve`` chose it
  for, which the op records as ``predict`` arguments;
* ``evaluate_given``: the config (or ttnn's default) costed by the model on the hardware, restricted to
  ``--grid`` (``restricted``).

A bad file, flag or config is a ``PredictError`` (or the config's own ``ConfigError``) naming it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from loom_explorer.errors import LoomError
from loom_explorer.hardware.schema import HardwareSpec, parse_fidelity
from loom_explorer.program import TileProgram

if TYPE_CHECKING:
    from loom_explorer.accuracy.improve_configs import ImproveEntry
    from loom_explorer.problem import Problem
    from loom_explorer.targets.ttnn.config import TtnnConfig
    from loom_explorer.targets.ttnn.evaluate import Evaluated


class PredictError(LoomError, ValueError):
    """A ``predict`` flag, config file or recorded problem that cannot be used; the message names it."""


def finite_json(text: str) -> object:
    """JSON as Python's reader takes it, less ``NaN``, ``Infinity`` and numbers that overflow a float
    (ValueError naming the token)."""

    def refuse(token: str) -> float:
        raise ValueError(f"{token[:30]} is not a finite number")

    def number(token: str) -> float:
        value = float(token)
        return value if math.isfinite(value) else refuse(token)

    return json.loads(text, parse_constant=refuse, parse_float=number)


def read_ttnn_config(path: str, op: str | None) -> tuple[object, ImproveEntry | None]:
    """The config of ``--ttnn-config``: a JSON config, or one op (``--op``) of an ``improve -o`` file (JSON
    or Python, read without running it: ``accuracy/improve_configs.py``), with that op's entry."""
    from loom_explorer.accuracy.improve_configs import ImproveFileError, is_improve_file, read_entry

    try:
        text = Path(path).read_text(encoding="utf-8")
        if op is not None or path.endswith(".py") or is_improve_file(text):
            entry = read_entry(path, op, text)
            return entry.config, entry
        return finite_json(text), None
    except ImproveFileError as exc:
        raise PredictError(f"--ttnn-config {exc}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise PredictError(f"--ttnn-config {path}: {str(exc) or 'nested too deeply'}") from None


@dataclass(frozen=True, slots=True)
class GivenConfig:
    """The config of ``--ttnn-config``, as its op reads it, and the ``improve`` entry it came from (if any);
    for a config read with a ``compute`` block (a matmul config's), that block and its placements
    (``memory``: tensor -> placement), which set problem flags (``config_flags``)."""

    config: TtnnConfig
    entry: ImproveEntry | None
    compute: Mapping[str, object] | None = None
    placements: Mapping[str, str] = field(default_factory=dict)


def given_config(program: TileProgram, path: str | None, op: str | None) -> GivenConfig | None:
    """The config of ``--ttnn-config`` for ``program``'s op (module docstring); None without one."""
    from loom_explorer.program.structure import program_family
    from loom_explorer.targets.ttnn.defaults import interleaved_families
    from loom_explorer.targets.ttnn.op import program_ttnn_op

    family = program_family(program).name
    if path and family in interleaved_families():
        raise PredictError(
            f"--ttnn-config reads matmul and SDPA configs; {program.name} is of the {family} family: "
            "predict ttnn's interleaved default with --ttnn-default, or a sharded layout with "
            "`solve --memory` and its pins"
        )
    if not path:
        return None
    raw, entry = read_ttnn_config(path, op)
    config = program_ttnn_op(program).program_configs().parse(raw, path)
    placements = {t: p.value for t, p in config.placements().items()}
    return GivenConfig(config, entry, config.read_with().get("compute"), placements)


@dataclass(frozen=True, slots=True)
class ConfigFlags:
    """The problem flags with a matmul config's blocks added: its placements (``TENSOR=PLACEMENT``, after the
    ``--memory`` ones), its fidelity and fp32 accumulation."""

    memory: tuple[str, ...]
    fidelity: str | None
    fp32_acc: bool


def config_flags(
    given: GivenConfig, memory: tuple[str, ...], fidelity_flag: str | None, fp32_acc: bool, origin: str
) -> ConfigFlags | None:
    """``--memory``, ``--fidelity`` and ``--fp32-acc`` with a matmul config's placements added and its
    ``compute`` block's fidelity and fp32 accumulation (a flag that contradicts the block is an error, not
    silently overridden); None for a config without those blocks (the flags stand as given)."""
    compute = given.compute
    if compute is None:
        return None
    fidelity = compute.get("math_fidelity")
    chosen = fidelity_flag
    if fidelity is not None:
        wanted = parse_fidelity(str(fidelity).split(".")[-1])
        if fidelity_flag is not None and parse_fidelity(fidelity_flag) is not wanted:
            raise PredictError(f"--fidelity {fidelity_flag} contradicts {origin}: compute.math_fidelity {fidelity}")
        chosen = wanted.value
    return ConfigFlags(
        memory=(*memory, *(f"{t}={p}" for t, p in given.placements.items())),
        fidelity=chosen,
        fp32_acc=fp32_acc or bool(compute.get("fp32_dest_acc_en")),
    )


@dataclass(frozen=True, slots=True)
class RecordedProblem:
    """The problem an ``improve`` op's ``predict_args`` name: the words, the kernel, hardware and grid they
    give, and ``build`` of the problem they make with the kernel and hardware given (ValueError when they
    make none)."""

    words: tuple[str, ...]
    kernel: str
    hw: str
    grid: tuple[int, int] | None
    build: Callable[[], Problem]


def check_recorded_problem(
    where: str, grid: tuple[int, int] | None, recorded: RecordedProblem, hw: HardwareSpec, problem: Problem
) -> None:
    """``--ttnn-config FILE --op KEY`` (``where``) costs the op's config on the problem ``improve`` chose it
    for, which the entry records as ``predict`` arguments (``recorded``): kernel, hardware, grid (the whole
    chip when not given), shape, formats, fidelity, fp32 accumulation, placements, bias, activation, program
    options (``--option``, e.g. the causal mask) and target must be the ones given (``hw``, ``grid`` and
    ``problem``, built with the config's own placements and compute block), or the command is refused naming
    the first that differs (PredictError) rather than costing the config on another problem."""
    rerun = f"predict it with the op's own arguments: {' '.join(recorded.words)}"

    def refuse(flag: str, given: object, wanted: object) -> NoReturn:
        raise PredictError(f"{where}: the config was chosen for {flag} {wanted}, not {given}; {rerun}")

    if recorded.kernel != problem.program.name:
        refuse("kernel", problem.program.name, recorded.kernel)
    if recorded.hw != hw.name:
        refuse("--hw", hw.name, recorded.hw)
    whole = (hw.grid.columns, hw.grid.rows)
    grids = [g or whole for g in (grid, recorded.grid)]
    if grids[0] != grids[1]:
        refuse("--grid", "x".join(map(str, grids[0])), "x".join(map(str, grids[1])))
    try:
        wanted = recorded.build()
    except ValueError as exc:  # ProblemError, InputError: the recorded words do not make a problem
        raise PredictError(
            f"{where}: its predict_args do not make a problem of {problem.program.name} ({exc})"
        ) from None

    given, chosen = problem_flags(problem), problem_flags(wanted)
    for flag, text in given.items():
        if text != chosen[flag]:
            refuse(flag, text, chosen[flag])


def problem_flags(problem: Problem) -> dict[str, str]:
    """What each problem flag of ``predict`` says of ``problem``, as text to compare and to show."""

    def pairs(items: tuple[tuple[str, object], ...]) -> str:
        return ",".join(f"{k}={getattr(v, 'value', v)}" for k, v in sorted(items)) or "none"

    def on(flag: bool) -> str:
        return "on" if flag else "off"

    return {
        "--shape": problem.shape_text,
        "--dtype/--format": pairs(problem.formats),
        "--fidelity": problem.fidelity.value,
        "--fp32-acc": on(problem.fp32_acc),
        "--memory": pairs(problem.placements),
        "--bias": on("bias" in problem.enabled),
        "--activation": problem.activation or "none",
        "--option": ",".join(sorted(problem.options)) or "none",
        "--target": problem.target.value,
    }


def restricted(hw: HardwareSpec, grid: tuple[int, int] | None) -> HardwareSpec:
    """``hw`` with its device grid restricted to ``--grid`` (columns, rows), when given."""
    from loom_explorer.hardware.grid import restrict_grid

    if not grid:
        return hw
    try:
        return restrict_grid(hw, *grid)
    except ValueError as exc:
        raise PredictError(f"--grid {grid[0]}x{grid[1]}: {exc}") from None


def evaluate_given(
    hw: HardwareSpec, problem: Problem, given: GivenConfig | None, source: str | None
) -> tuple[TtnnConfig, Evaluated]:
    """The config ``given`` (from the file ``source``), or ttnn's default without one, and the model's
    costing of it; a grid or blocks the chip cannot give are a ``ConfigError`` naming the file."""
    from loom_explorer.targets.ttnn.defaults import evaluate_ttnn_default
    from loom_explorer.targets.ttnn.evaluate import ConfigError
    from loom_explorer.targets.ttnn.op import problem_ttnn_op

    try:
        if given is None:
            return evaluate_ttnn_default(hw, problem)
        return given.config, problem_ttnn_op(problem).program_configs().evaluate(hw, problem, given.config)
    except ConfigError as exc:  # a grid or blocks the chip cannot give: name the file the config came from
        if source is None:
            raise
        raise ConfigError(f"{source}: {exc}") from None
