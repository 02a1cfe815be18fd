"""Schedule documents for the ttnn-contract tier and checks of the ttnn objects an exported file builds."""

from __future__ import annotations

import ast
import importlib.util
import math
from functools import cache
from pathlib import Path
from types import ModuleType

from loom_explorer.export.schedule_json import ScheduleDocument, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import DataFormat
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions

GEMM_SHAPE = "M=1024,K=2048,N=768"
ATTENTION_SHAPE = "B=1,H=4,Sq=1024,Skv=1024,D=64"


class OpenDeviceReached(Exception):
    """Raised by the stand-in for ``ttnn.open_device`` (conftest.py's ``stop_at_open_device``): the code under
    test got as far as opening a device."""


@cache
def solved(
    kernel: str,
    shape: str,
    placements: tuple[tuple[str, str], ...] = (),
    causal: bool = False,
    dtype: str | None = None,
    activation: str | None = None,
) -> dict[str, ScheduleDocument]:
    """Documents of every feasible candidate of one problem, by candidate name."""
    hw = load_hardware("wormhole_n150")
    kwargs: dict[str, object] = {"placements": {t: Placement(p) for t, p in placements}, "activation": activation}
    if causal:
        kwargs["options"] = {"causal"}
    if dtype:
        kwargs["dtype"] = DataFormat(dtype)
    problem = make_problem(load_program(kernel), shape, **kwargs)  # type: ignore[arg-type]
    results = Session(hw, problem).solve({}, SolveOptions())
    return {
        r.candidate_name: schedule_document(hw, "wormhole_n150", kernel, problem, r, SolveOptions())
        for r in results
        if r.solution is not None
    }


def check_program_config(ttnn, built, name: str | None, args: dict[str, object]) -> None:
    """``built`` is a real ``ttnn.<name>`` carrying every argument of ``args`` (None for an op that takes no
    program config)."""
    if name is None:
        assert built is None and args == {}
        return
    assert isinstance(built, getattr(ttnn, name)), type(built)
    for key, value in args.items():
        if key == "compute_with_storage_grid_size":
            grid = built.compute_with_storage_grid_size
            assert [grid.x, grid.y] == value
        elif key != "fused_activation":
            assert getattr(built, key) == value, key


def check_compute_config(ttnn, built, args: dict[str, object]) -> None:
    assert isinstance(built, ttnn.WormholeComputeKernelConfig)
    assert built.math_fidelity == getattr(ttnn.MathFidelity, str(args["math_fidelity"]))
    for key in ("math_approx_mode", "fp32_dest_acc_en", "packer_l1_acc"):
        assert getattr(built, key) == args[key], key


def check_memory_config(ttnn, built, spec: object, tensor_shape: tuple[int, ...]) -> None:
    """A DRAM-interleaved config for ``"DRAM"``; otherwise a real sharded L1 config with the spec's layout,
    shard shape, orientation and cores, whose shards tile the (tile-padded) tensor."""
    assert isinstance(built, ttnn.MemoryConfig)
    if spec == "DRAM":
        assert built == ttnn.DRAM_MEMORY_CONFIG and not built.is_sharded()
        return
    assert isinstance(spec, dict)
    assert built.is_sharded() and built.buffer_type == ttnn.BufferType.L1
    assert built.memory_layout == getattr(ttnn.TensorMemoryLayout, spec["memory_layout"])
    shard = built.shard_spec
    assert list(shard.shape) == spec["shard_shape"]
    assert shard.orientation == getattr(ttnn.ShardOrientation, spec["shard_orientation"])
    cores = sum((last[0] - first[0] + 1) * (last[1] - first[1] + 1) for first, last in spec["core_ranges"])
    assert shard.num_cores() == cores
    rows = math.prod(tensor_shape[:-1])
    padded_rows, padded_cols = math.ceil(rows / 32) * 32, math.ceil(tensor_shape[-1] / 32) * 32
    height, width = spec["shard_shape"]
    if spec["memory_layout"] == "HEIGHT_SHARDED":
        assert width == padded_cols and math.ceil(padded_rows / height) == cores
    elif spec["memory_layout"] == "WIDTH_SHARDED":
        assert height == padded_rows and math.ceil(padded_cols / width) == cores
    else:
        (x0, y0), (x1, y1) = spec["core_ranges"][0]
        assert len(spec["core_ranges"]) == 1
        assert math.ceil(padded_rows / height) == y1 - y0 + 1 and math.ceil(padded_cols / width) == x1 - x0 + 1


def check_calls(ttnn, source: str) -> None:
    """Every ``ttnn.<f>(...)`` call in the file's ``op`` names a real ttnn function, each keyword argument it
    passes is one that function documents, and every ``ttnn.UnaryOpType.<X>`` it names exists."""
    tree = ast.parse(source)
    op = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "op")
    calls = [n for n in ast.walk(op) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    named = 0
    for call in calls:
        path = ast.unparse(call.func).split(".")
        if path[0] != "ttnn":
            continue
        function = ttnn
        for part in path[1:]:
            function = getattr(function, part)
        named += 1
        for keyword in call.keywords:
            assert keyword.arg and keyword.arg in (function.__doc__ or ""), (ast.unparse(call.func), keyword.arg)
    for node in ast.walk(op):
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "ttnn.UnaryOpType":
            assert hasattr(ttnn.UnaryOpType, node.attr), node.attr
    assert named >= 1


def import_file(source: str, folder: Path, name: str = "exported_ttnn") -> ModuleType:
    """``source`` written to ``folder/<name>.py`` and imported as a module (this imports the real ttnn)."""
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
