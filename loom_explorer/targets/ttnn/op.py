"""The TTNN ops: what each kernel family's op supplies (``TtnnOp``, a plug-in of the group
``loom_explorer.ttnn_ops`` named as the family, in ``families/<family>/ttnn.py``) and the registry of them.

An op says, for the export (``exporter.py``), whether a TTNN program config of it runs a candidate
(``runs``), that config at solved parameter values (``equivalent``), its operands' memory configs
(``memory``) and the source of its call (``call``). For the model's reading of ttnn (``predict``,
``ingest``, ``improve``, the sweeps) it says what ttnn runs when a call gives no program config
(``default``), how a call read from a device-profiler capture is costed (``captured``), how its program
configs are read and costed (``configs``: None for an op that takes none), how an op ttnn runs on
interleaved tensors without a program config splits its work (``interleaved_default``, costed by
``defaults.py``) and, for a variant family's op, whether ttnn calls it rather than the base family's op for
a problem (``takes_over``: ``sdpa_decode`` for one query token).

Which op: a candidate's is its family's (``ttnn_op_of``: ``mapping/variants.py::family_name``), a program's
its family's (``program_ttnn_op``), a problem's the one ttnn calls for it (``problem_ttnn_op``: the program
family's, unless a variant's op takes the problem over).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from loom_explorer.export.exporter import ExportError
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.mapping.variants import family_name
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.plugins import registered
from loom_explorer.problem import Problem
from loom_explorer.program.dsl import TileProgram
from loom_explorer.program.structure import analyse_program, program_family, variant_families
from loom_explorer.targets.ttnn.config import TtnnConfig
from loom_explorer.targets.ttnn.evaluate import ConfigError, Evaluated

GROUP = "loom_explorer.ttnn_ops"


@dataclass(frozen=True, slots=True)
class InterleavedSplit:
    """ttnn's default of one problem on interleaved tensors: its op, and the units of work that
    ``split_work_to_cores`` deals out (``defaults.py``)."""

    op: str  # e.g. "ttnn.rms_norm"
    program: str  # e.g. "interleaved, LayerNormDefaultProgramConfig"
    unit: Literal["tile", "tile row"]
    units: int  # how many units the problem has
    group: str  # the dimensions the units run over (``H*W``: flattened), the candidate's one ``xy`` axis
    streamed: tuple[str, ...]  # the inputs each core reads from DRAM
    block: str  # the parameter of a core's units at a time (set to 1)
    buffer_depth: int  # blocks in every streamed input's buffer


@dataclass(frozen=True, slots=True)
class RingAttentionCall:
    """An attention op run across a ring of devices (ttnn's ``ring_joint_scaled_dot_product_attention``), as
    one device's profiler row prints it: ``ring_size`` devices along one mesh axis, this row's ``device_id``
    and the ``devices`` of the whole capture (None until the whole report is read), the ring's ordering
    (``is_balanced``), the global sequence ``logical_n``, the joint (non-causal) tokens, and V's heads and head
    dim (MLA's V is narrower than Q and K). ``families/attention/ring.py`` says what each device computes."""

    ring_size: int
    device_id: int | None
    is_balanced: bool
    logical_n: int
    joint_tokens: int
    v_heads: int
    v_head_dim: int
    devices: int | None = None


@dataclass(frozen=True, slots=True)
class CapturedCall:
    """What a device-profiler row says of one ttnn call (``accuracy/ingest.py`` reads it): the program config
    it ran (None: the call gave none, or the op takes none), the chunk sizes of the ``SDPAProgramConfig`` it
    named (None: none given) and, for an op across a ring of devices, its place in the ring (``ring``)."""

    config: TtnnConfig | None
    q_chunk_size: int | None = None
    k_chunk_size: int | None = None
    ring: RingAttentionCall | None = None


@dataclass(frozen=True, slots=True)
class ProgramConfigs:
    """How the model reads and costs the program configs of an op that takes one:

    * ``parse``: a config in the constructor's own argument names (``predict --ttnn-config``'s JSON) and
      where it came from -> the config; ConfigError naming the origin and the field at fault;
    * ``evaluate``: the referee's latency of exactly this config on a problem (a ``conflict`` naming the
      violated constraints when the model finds it illegal); ConfigError when the chip or the problem
      cannot take it;
    * ``exported``: the config the export writes for a schedule of a problem (``equivalent``'s class name
      and arguments) as ``predict --ttnn-config`` reads it (``improve``'s best configs).
    """

    parse: Callable[[object, str], TtnnConfig]
    evaluate: Callable[[HardwareSpec, Problem, TtnnConfig], Evaluated]
    exported: Callable[[Problem, str, dict[str, object]], TtnnConfig]


def no_program_config(problem: Problem, candidate: Candidate) -> bool:
    """``TtnnOp.runs`` of an op ttnn runs without a program config: no candidate is one of its configs."""
    return False


def _ttnn_default_candidate(call: CapturedCall) -> str:
    return "ttnn default"


def _shape_as_read(shape: Mapping[str, int], batch_repeats: int) -> dict[str, int] | None:
    return None


@dataclass(frozen=True, slots=True)
class TtnnOp:
    """The TTNN op that runs one kernel family (module docstring): a plug-in of the group
    ``loom_explorer.ttnn_ops`` named as the family (``loom_explorer/plugins.py``).

    * ``runs``: whether a TTNN program config of the op runs a candidate of a problem at all, before its
      values (``no_program_config`` for an op that takes none);
    * ``equivalent``: the program config at parameter values (class name or None when the op takes none,
      arguments, notes on what TTNN fixes differently); ExportError when TTNN cannot run the candidate;
    * ``memory``: its operands' memory configs (``sharding.py``); ``call``: the source of its call
      (``host_inputs``, ``op``, ``expected``) in the exported file;
    * ``function``: the ttnn function a program config of the op is given to (``ttnn.matmul``); None for an
      op whose function depends on the problem (its configs name it: ``TtnnConfig.ttnn_call``);
    * ``default``: the config ttnn picks when the call gives none, and the referee's evaluation of it;
    * ``captured``: the config a captured call ran (its own, or the one ttnn picks) and its evaluation;
    * ``configs``: how its program configs are read and costed (None: the op takes none);
    * ``interleaved_default``: for an op ttnn runs without a program config on interleaved tensors, how
      that default splits a problem's work (costed by ``defaults.py``);
    * ``unpredicted_candidate``: what a captured call is recorded as when the model does not predict it;
    * ``logical_shape``: the problem shape the op would run for a captured call of stated ``shape`` repeated
      ``batch_repeats`` times, when that is not the shape the capture is predicted with (None: it is);
    * ``takes_over``: for a variant family's op, whether ttnn calls it for a problem of the base family's
      programs rather than the base family's op.
    """

    name: str
    runs: Callable[[Problem, Candidate], bool]
    equivalent: Callable[[SymbolicSchedule, dict[str, int]], tuple[str | None, dict[str, object], list[str]]]
    memory: Callable[[SymbolicSchedule, dict[str, int]], dict[str, object]]
    call: Callable[[SymbolicSchedule], str]
    function: str | None = None
    default: Callable[[HardwareSpec, Problem], tuple[TtnnConfig, Evaluated]] | None = None
    captured: Callable[[HardwareSpec, Problem, CapturedCall], tuple[TtnnConfig | None, Evaluated]] | None = None
    configs: ProgramConfigs | None = None
    interleaved_default: Callable[[Problem], InterleavedSplit] | None = None
    unpredicted_candidate: Callable[[CapturedCall], str] = field(default=_ttnn_default_candidate)
    logical_shape: Callable[[Mapping[str, int], int], dict[str, int] | None] = field(default=_shape_as_read)
    takes_over: Callable[[Problem], bool] | None = None

    @property
    def takes_program_config(self) -> bool:
        """Whether ttnn takes a program config for the op (the ops ``improve`` finds better configs for)."""
        return self.configs is not None

    def program_configs(self) -> ProgramConfigs:
        """``configs``; ConfigError for an op that takes no program config."""
        if self.configs is None:
            raise ConfigError(f"ttnn's {self.name} op takes no program config")
        return self.configs


def ttnn_ops() -> Mapping[str, TtnnOp]:
    """Every registered TTNN op (plug-ins of the group ``loom_explorer.ttnn_ops``), by kernel family name."""
    return registered(GROUP, TtnnOp)


def ttnn_op_of(problem: Problem, candidate: Candidate) -> TtnnOp:
    """The TTNN op of ``candidate``'s kernel family (``Candidate.family``, else ``problem``'s); ExportError when
    TTNN export has none."""
    analyse_program(problem.program)  # a malformed program is reported by its family's analysis
    family = family_name(problem.program, candidate)
    op = ttnn_ops().get(family)
    if op is None:
        raise ExportError(f"TTNN export has no op for the {family} family ({problem.program.name})")
    return op


def program_ttnn_op(program: TileProgram) -> TtnnOp:
    """The TTNN op of ``program``'s kernel family; ConfigError when ttnn has none."""
    family = program_family(program).name
    op = ttnn_ops().get(family)
    if op is None:
        raise ConfigError(f"ttnn has no op for the {family} family ({program.name})")
    return op


def problem_ttnn_op(problem: Problem) -> TtnnOp:
    """The TTNN op ttnn calls for ``problem``: the op of a variant of its program's family that takes it over
    (``TtnnOp.takes_over``), else its program family's; ConfigError when ttnn has none."""
    base = program_ttnn_op(problem.program)
    ops = ttnn_ops()
    for variant in variant_families(base.name):
        op = ops.get(variant.name)
        if op is not None and op.takes_over is not None and op.takes_over(problem):
            return op
    return base


def ttnn_equivalent(schedule: SymbolicSchedule, v: dict[str, int]) -> tuple[str | None, dict[str, object], list[str]]:
    """(config class, or None for an op that takes none; its arguments; notes on what TTNN fixes differently)
    of ``schedule`` at parameter values ``v``; ExportError when TTNN has no op that runs this candidate."""
    return ttnn_op_of(schedule.problem, schedule.candidate).equivalent(schedule, v)


def ttnn_runs(problem: Problem, cand: Candidate) -> bool:
    """Whether a TTNN op with a program config runs candidate ``cand`` of ``problem`` at all (what
    ``ttnn_equivalent`` asks of the candidate before its values): a row of the matmul config table, or
    SDPA's flattened (or key/value-split) candidate reading q, k and v from DRAM."""
    op = ttnn_ops().get(family_name(problem.program, cand))
    return op is not None and op.runs(problem, cand)


def ttnn_memory(schedule: SymbolicSchedule, v: dict[str, int]) -> dict[str, object]:
    """Each operand's TTNN memory config at parameter values ``v``: ``"DRAM"`` (DRAM-interleaved) or the
    arguments of a sharded ``ttnn.MemoryConfig`` (``sharding.py``: layout, inclusive core ranges, shard shape
    in elements, orientation). ExportError naming the tensor when TTNN cannot hold the operand where the
    schedule placed it, so nothing is exported (or run) that would measure another schedule."""
    return ttnn_op_of(schedule.problem, schedule.candidate).memory(schedule, v)
