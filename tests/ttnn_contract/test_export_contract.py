"""Exported TTNN files against the real ttnn: every config object they build is one ttnn 0.81.1 accepts,
with the schedule's values, and ``main`` runs up to exactly ``ttnn.open_device``."""

from __future__ import annotations

import ast
from collections.abc import Mapping

import pytest
import ttnn
from contract_helpers import (
    ATTENTION_SHAPE,
    GEMM_SHAPE,
    OpenDeviceReached,
    check_calls,
    check_compute_config,
    check_memory_config,
    check_program_config,
    import_file,
    solved,
)

from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import rebuild_own
from loom_explorer.targets.ttnn.exporter import ttnn_source

# (placements, candidate, program config class, sharded layouts expected by tensor)
GEMM_CASES = [
    ((), "M@y,N@x|in0=mcast_x,in1=mcast_y", "MatmulMultiCoreReuseMultiCastProgramConfig", {}),
    ((), "N@y,M@x|in0=mcast_y,in1=mcast_x", "MatmulMultiCoreReuseMultiCastProgramConfig", {}),
    ((), "N@xy|in0=mcast_xy,in1=dram", "MatmulMultiCoreReuseMultiCast1DProgramConfig", {}),
    ((), "M@xy|in0=dram,in1=mcast_xy", "MatmulMultiCoreReuseMultiCast1DProgramConfig", {}),
    (
        (("in0", "l1_block"), ("out", "l1_block")),
        "M@y,N@x|in0=mcast_x,in1=mcast_y",
        "MatmulMultiCoreReuseMultiCastProgramConfig",
        {"in0": "BLOCK_SHARDED", "out": "BLOCK_SHARDED"},
    ),
    (
        (("in0", "l1_height"), ("out", "l1_height")),
        "M@xy|in0=local,in1=mcast_xy",
        "MatmulMultiCoreReuseMultiCast1DProgramConfig",
        {"in0": "HEIGHT_SHARDED", "out": "HEIGHT_SHARDED"},
    ),
    (
        (("out", "l1_width"),),
        "N@xy|in0=mcast_xy,in1=dram",
        "MatmulMultiCoreReuseMultiCast1DProgramConfig",
        {"out": "WIDTH_SHARDED"},
    ),
]


def _constant(source: str, name: str) -> object:
    tree = ast.parse(source)
    node = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == name)
    return ast.literal_eval(node)


def _check_file(source: str, tmp_path, stop_at_open_device, shapes: Mapping[str, tuple[int, ...]]):
    """Import the exported file with the real ttnn, check what ``build`` makes, then run ``main`` and check
    it stopped at ``ttnn.open_device`` with the configs and inputs already made."""
    module = import_file(source, tmp_path)
    name, args = _constant(source, "PROGRAM_CONFIG_CLASS"), _constant(source, "PROGRAM_CONFIG")
    memory = _constant(source, "MEMORY")
    configs = module.build()
    check_program_config(ttnn, configs["program"], name, args)  # type: ignore[arg-type]
    check_calls(ttnn, source)
    check_compute_config(ttnn, configs["compute"], _constant(source, "COMPUTE_CONFIG"))  # type: ignore[arg-type]
    assert set(configs["memory"]) == set(memory) == set(shapes)  # type: ignore[call-overload]
    for tensor, spec in memory.items():  # type: ignore[attr-defined]
        check_memory_config(ttnn, configs["memory"][tensor], spec, shapes[tensor])
    inputs = module.host_inputs()
    assert {t: tuple(x.shape) for t, x in inputs.items()} == {t: s for t, s in shapes.items() if t in inputs}
    with pytest.raises(OpenDeviceReached):
        module.main()
    made = stop_at_open_device["locals"]
    assert set(made) >= {"configs", "inputs"}, sorted(made)
    assert type(made["configs"]["program"]) is type(configs["program"])
    assert set(made["inputs"]) == set(inputs)
    return module, memory


@pytest.mark.parametrize(
    "placements,candidate,config_class,sharded",
    GEMM_CASES,
    ids=[f"{c}{'+' + '+'.join(f'{t}={p}' for t, p in pl) if pl else ''}" for pl, c, _, _ in GEMM_CASES],
)
def test_a_gemm_file_builds_real_ttnn_objects_up_to_open_device(
    placements,
    candidate,
    config_class,
    sharded,
    tmp_path,
    stop_at_open_device,
) -> None:
    doc = solved("gemm", GEMM_SHAPE, placements)[candidate]
    source = ttnn_source(rebuild_own(doc), doc)
    assert _constant(source, "PROGRAM_CONFIG_CLASS") == config_class
    shapes = {"in0": (1024, 2048), "in1": (2048, 768), "out": (1024, 768)}
    _, memory = _check_file(source, tmp_path, stop_at_open_device, shapes)
    assert {t: m["memory_layout"] for t, m in memory.items() if m != "DRAM"} == sharded
    if sharded:
        assert "L1-sharded operands" in source.split('"""')[1]


@pytest.mark.parametrize("causal", [False, True], ids=["plain", "causal"])
def test_an_attention_file_builds_real_ttnn_objects_up_to_open_device(
    causal: bool,
    tmp_path,
    stop_at_open_device,
) -> None:
    docs = solved("flash_attention", ATTENTION_SHAPE, causal=causal)
    (candidate,) = [c for c in docs if c.startswith("H*Sq@xy|q=dram,k=dram,v=dram")]
    source = ttnn_source(rebuild_own(docs[candidate]), docs[candidate])
    shapes = {"q": (1, 4, 1024, 64), "k": (1, 4, 1024, 64), "v": (1, 4, 1024, 64), "o": (1, 4, 1024, 64)}
    module, _ = _check_file(source, tmp_path, stop_at_open_device, shapes)
    assert module.CAUSAL is causal
    assert module.build()["program"].exp_approx_mode is False


def test_a_flash_decoding_file_builds_real_ttnn_objects_up_to_open_device(
    tmp_path,
    stop_at_open_device,
) -> None:
    """The flash-decoding candidate maps to ``scaled_dot_product_attention_decode`` with an ``SDPAProgramConfig``
    whose ``max_cores_per_head_batch`` gives ttnn's split the schedule's cores per group; q goes up as the
    decode op takes it, ``[1, B, H, D]``."""
    docs = solved("flash_attention", "B=4,H=8,Hkv=1,Sq=1,Skv=4096,D=64")
    (candidate,) = [c for c in docs if c.endswith("|kv_split")]
    doc = docs[candidate]
    source = ttnn_source(rebuild_own(doc), doc)
    assert "ttnn.transformer.scaled_dot_product_attention_decode(" in source
    shapes = {"q": (1, 4, 8, 64), "k": (4, 1, 4096, 64), "v": (4, 1, 4096, 64), "o": (1, 4, 8, 64)}
    module, _ = _check_file(source, tmp_path, stop_at_open_device, shapes)
    program = module.build()["program"]
    assert (
        program.max_cores_per_head_batch == doc.params["kv_cores"]
        and program.k_chunk_size == doc.params["k_chunk_size"]
    )


def test_fp32_attention_is_refused_before_anything_is_built() -> None:
    docs = solved("flash_attention", ATTENTION_SHAPE, dtype="float32")
    (candidate,) = [c for c in docs if c.startswith("H*Sq@xy|q=dram,k=dram,v=dram")]
    refusal = r"SDPA takes q, k and v in bfloat16, bfloat8_b, bfloat4_b only; q is float32"
    with pytest.raises(ExportError, match=refusal):
        ttnn_source(rebuild_own(docs[candidate]), docs[candidate])


# (kernel, shape, activation, placement of the [H, W] tensors, candidate, program config class, host shapes)
ROWWISE_CASES = [
    (
        "rmsnorm",
        "H=32,W=4096",
        None,
        "l1_width",
        "W@xy|x=local,gamma=dram,eps=dram",
        "LayerNormShardedMultiCoreProgramConfig",
        {"x": (32, 4096), "gamma": (1, 4096), "y": (32, 4096)},
    ),
    (
        "layernorm",
        "H=256,W=1024",
        None,
        "l1_block",
        "H@y,W@x|x=local,gamma=dram,beta=dram,eps=dram",
        "LayerNormShardedMultiCoreProgramConfig",
        {"x": (256, 1024), "gamma": (1, 1024), "beta": (1, 1024), "y": (256, 1024)},
    ),
    (
        "softmax",
        "H=2048,W=1024",
        None,
        "l1_height",
        "H@xy|x=local",
        "SoftmaxShardedMultiCoreProgramConfig",
        {"x": (1, 1, 2048, 1024), "y": (1, 1, 2048, 1024)},
    ),
    ("unary", "H=1024,W=1024", "gelu", "l1_block", "H@y,W@x|x=local", None, {"x": (1024, 1024), "y": (1024, 1024)}),
    (
        "binary",
        "H=32,W=4096",
        None,
        "l1_width",
        "W@xy|a=local,b=local",
        None,
        {"a": (32, 4096), "b": (32, 4096), "y": (32, 4096)},
    ),
    (
        "swiglu",
        "H=2048,W=1024",
        None,
        "l1_height",
        "H@xy|a=local,b=local",
        None,
        {"a": (2048, 1024), "b": (2048, 1024), "y": (2048, 1024)},
    ),
]


@pytest.mark.parametrize(
    "kernel,shape,activation,placement,candidate,config_class,shapes",
    ROWWISE_CASES,
    ids=[f"{c[0]}-{c[3]}" for c in ROWWISE_CASES],
)
def test_an_elementwise_or_norm_file_builds_real_ttnn_objects_up_to_open_device(
    kernel, shape, activation, placement, candidate, config_class, shapes, tmp_path, stop_at_open_device
) -> None:
    placements = tuple((t, placement) for t in shapes if t not in ("gamma", "beta"))  # the [H, W] tensors
    doc = solved(kernel, shape, placements, activation=activation)[candidate]
    source = ttnn_source(rebuild_own(doc), doc)
    assert _constant(source, "PROGRAM_CONFIG_CLASS") == config_class
    _, memory = _check_file(source, tmp_path, stop_at_open_device, shapes)
    layout = {"l1_width": "WIDTH_SHARDED", "l1_block": "BLOCK_SHARDED", "l1_height": "HEIGHT_SHARDED"}[placement]
    assert {t: m["memory_layout"] for t, m in memory.items() if m != "DRAM"} == {t: layout for t, _ in placements}


def test_every_unary_op_the_export_names_is_a_ttnn_op_and_a_fusable_activation() -> None:
    from loom_explorer.families.elementwise.ttnn import UNARY_OPS

    for name, function in UNARY_OPS.items():
        assert callable(getattr(ttnn, function.removeprefix("ttnn."))), function
        assert hasattr(ttnn.UnaryOpType, name.upper()), name
