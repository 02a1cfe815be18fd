"""Exported TTNN files of the data-movement family against the real ttnn: each names a ttnn function that exists
with keyword arguments it documents, builds its DRAM memory configs and host inputs, and ``main`` runs up to
exactly ``ttnn.open_device``."""

from __future__ import annotations

import ast

import pytest
import ttnn
from contract_helpers import OpenDeviceReached, check_calls, import_file, solved

from loom_explorer.export.schedule_json import rebuild, rebuild_own
from loom_explorer.targets.ttnn.exporter import ttnn_source

# (kernel, shape, ttnn's own split, the function the file calls, host input shapes)
CASES = [
    ("tilize", "H=256,Hx=250,W=128,Wx=100", "H@xy|x=dram", "ttnn.tilize_with_val_padding", {"x": (250, 100)}),
    ("tilize", "H=256,W=128", "H@xy|x=dram", "ttnn.tilize", {"x": (256, 128)}),
    ("untilize", "H=256,Hy=200,W=128", "H@xy|x=dram", "ttnn.untilize_with_unpadding", {"x": (256, 128)}),
    ("untilize", "H=256,W=128", "H@xy|x=dram", "ttnn.untilize", {"x": (256, 128)}),
    ("transpose", "H=256,W=128", "W*H@xy|x=dram", "ttnn.transpose", {"x": (256, 128)}),
    ("copy", "H=256,W=128", "H*W@xy|x=dram", "ttnn.clone", {"x": (256, 128)}),
    ("copy_rows", "H=256,W=128", "H@xy|x=dram", "ttnn.clone", {"x": (256, 128)}),
]


@pytest.mark.parametrize(("kernel", "shape", "candidate", "function", "shapes"), CASES, ids=[c[3] for c in CASES])
def test_a_data_movement_file_calls_real_ttnn_up_to_open_device(
    kernel: str,
    shape: str,
    candidate: str,
    function: str,
    shapes: dict[str, tuple[int, ...]],
    tmp_path,
    stop_at_open_device,
) -> None:
    doc = solved(kernel, shape)[candidate]
    source = ttnn_source(rebuild_own(doc), doc)
    assert f"{function}(" in source
    check_calls(ttnn, source)
    module = import_file(source, tmp_path)
    configs = module.build()
    assert configs["program"] is None
    assert all(m == ttnn.DRAM_MEMORY_CONFIG for m in configs["memory"].values())
    inputs = module.host_inputs()
    assert {t: tuple(x.shape) for t, x in inputs.items()} == shapes
    assert tuple(module.expected(inputs).shape)  # the torch reference runs on the host inputs
    tree = ast.parse(source)
    assert sum(isinstance(n, ast.FunctionDef) and n.name == "upload" for n in tree.body) == 2  # row-major upload
    with pytest.raises(OpenDeviceReached):
        module.main()


PAD = """
from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="pad_rows",
    description="y[H, W] = x[Hx, W] padded with zeros",
    dims=(Dim("H", "parallel"), Dim("Hx", "parallel", part_of="H"), Dim("W", "parallel")),
    tensors=(Tensor("x", ("Hx", "W"), "input"), Tensor("y", ("H", "W"), "output")),
    ops=(Move("x", "y"),),
)
"""

CONCAT = """
from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="concat_cols",
    description="y[H, W] = [a[H, Wa], b[H, Wb]] along W",
    dims=(Dim("H", "parallel"), Dim("W", "parallel"), Dim("Wa", "parallel", part_of="W"),
          Dim("Wb", "parallel", part_of="W")),
    tensors=(Tensor("a", ("H", "Wa"), "input"), Tensor("b", ("H", "Wb"), "input"), Tensor("y", ("H", "W"), "output")),
    ops=(Move("a", "y"), Move("b", "y")),
)
"""


@pytest.mark.parametrize(
    ("source", "shape", "function", "shapes"),
    [
        (PAD, "H=256,Hx=200,W=128", "ttnn.pad", {"x": (200, 128)}),
        (CONCAT, "H=256,W=192,Wa=128,Wb=64", "ttnn.concat", {"a": (256, 128), "b": (256, 64)}),
    ],
    ids=["pad", "concat"],
)
def test_a_dsl_pad_and_concat_export_real_ttnn_calls(
    source: str, shape: str, function: str, shapes: dict[str, tuple[int, ...]], tmp_path, stop_at_open_device
) -> None:
    kernel = tmp_path / "kernel.py"
    kernel.write_text(source)
    docs = solved(str(kernel), shape)
    doc = next(d for name, d in docs.items() if "*" in name)  # ttnn's own split: every tile, flattened
    source_text = ttnn_source(rebuild(doc, kernel_file=kernel), doc)
    assert f"{function}(" in source_text
    check_calls(ttnn, source_text)
    module = import_file(source_text, tmp_path)
    inputs = module.host_inputs()
    assert {t: tuple(x.shape) for t, x in inputs.items()} == shapes
    assert tuple(module.expected(inputs).shape) == (256, int(shape.split("W=")[1].split(",")[0]))
    with pytest.raises(OpenDeviceReached):
        module.main()
