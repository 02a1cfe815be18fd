"""Exported TTNN files of the data-movement family against the real ttnn: each names a ttnn function that exists
with keyword arguments it documents, builds its DRAM memory configs and host inputs, and ``main`` runs up to
exactly ``ttnn.open_device``."""

from __future__ import annotations

import ast

import pytest
import ttnn
from contract_helpers import OpenDeviceReached, check_calls, import_file, solved

from loom_explorer.export.schedule_json import rebuild_own
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
