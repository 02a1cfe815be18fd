"""The conv2d TTNN export against the real ttnn (0.81.1): the file builds a real ``ttnn.Conv2dConfig`` with the
schedule's sharding and blocks, ``ttnn.conv2d`` is called with arguments it documents, and ``main`` runs up to
exactly ``ttnn.open_device``."""

from __future__ import annotations

import ast

import pytest
import ttnn
from contract_helpers import OpenDeviceReached, check_calls, check_compute_config, import_file, solved

from loom_explorer.export.schedule_json import rebuild_own
from loom_explorer.targets.ttnn.exporter import ttnn_source

CONV_SHAPE = "M=4096,N=128,KH=3,KWC=192"  # a 3x3 conv of a 64x64 image, 64 -> 128 channels


def _constant(source: str, name: str) -> object:
    tree = ast.parse(source)
    node = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == name)
    return ast.literal_eval(node)


@pytest.mark.parametrize(
    ("placement", "candidate", "layout"),
    [
        ("l1_height", "M@xy|in0=local,in1=mcast_xy", "HEIGHT_SHARDED"),
        ("l1_block", "M@y,N@x|in0=mcast_x,in1=mcast_y", "BLOCK_SHARDED"),
    ],
)
def test_a_conv_file_builds_a_real_conv2d_config_up_to_open_device(
    placement: str, candidate: str, layout: str, tmp_path, stop_at_open_device
) -> None:
    docs = solved("conv2d", CONV_SHAPE, (("in0", placement), ("out", placement)), activation="relu")
    doc = docs[candidate]
    source = ttnn_source(rebuild_own(doc), doc)
    module = import_file(source, tmp_path)
    args = _constant(source, "PROGRAM_CONFIG")
    assert isinstance(args, dict)
    configs = module.build()
    built = configs["program"]
    assert isinstance(built, ttnn.Conv2dConfig)
    assert built.act_block_h_override == args["act_block_h_override"]
    assert built.shard_layout == getattr(ttnn.TensorMemoryLayout, layout) and built.override_sharding_config
    assert built.core_grid.num_cores() == args["memory"]["num_cores_nhw"] * args["memory"]["num_cores_c"]
    assert built.activation.op_type == ttnn.UnaryOpType.RELU
    check_calls(ttnn, source)
    check_compute_config(ttnn, configs["compute"], _constant(source, "COMPUTE_CONFIG"))  # type: ignore[arg-type]
    assert configs["memory"]["out"].is_sharded()
    inputs = module.host_inputs()
    assert tuple(inputs["in0"].shape) == (1, 64, 64, 64) and tuple(inputs["in1"].shape) == (128, 64, 3, 3)
    assert tuple(module.expected(inputs).shape) == (1, 1, 4096, 128)
    with pytest.raises(OpenDeviceReached):
        module.main()
    assert set(stop_at_open_device["locals"]) >= {"configs", "inputs"}
