"""The TTNN config readers refuse what cannot be, naming the field and the file: exit 2, never 70 or a number.

Each case below was once accepted (and costed on cores the config does not give) or crashed: a grid of
``[0, 0]`` (a 1-D config divided by zero; a 2-D one was costed on the chip's 8x8), ``True`` where a count
is meant, a 2-D config whose blocks need more cores than its grid, and ``predict --ttnn-config FILE --op
KEY`` run on another problem than the one ``improve`` chose the op's config for. Random matmul and SDPA
configs (hypothesis, odd values in every field) are costed or refused with the input error, never another
exception.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom_explorer.accuracy.improve_configs import FORMAT, ImproveFileError, read_entry
from loom_explorer.cli import main
from loom_explorer.errors import EXIT_BAD_INPUT, EXIT_OK, LoomError
from loom_explorer.families.attention.ttnn_config import evaluate_sdpa_config, parse_sdpa_config
from loom_explorer.families.contraction.ttnn_config import evaluate_config, parse_config
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.evaluate import ConfigError

TWO_D = {
    "program_config": "MatmulMultiCoreReuseMultiCastProgramConfig",
    "compute_with_storage_grid_size": [8, 8],
    "in0_block_w": 2,
    "per_core_M": 1,
    "per_core_N": 1,
    "out_subblock_h": 1,
    "out_subblock_w": 1,
}
ONE_D = {**TWO_D, "program_config": "MatmulMultiCoreReuseMultiCast1DProgramConfig", "mcast_in0": True}
SHAPE = ["--hw", "wormhole_n150", "--shape", "M=256,K=256,N=256"]


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (
            {**ONE_D, "compute_with_storage_grid_size": [0, 0]},
            r"field compute_with_storage_grid_size\.0: Input should be greater than or equal to 1 \(got 0\)",
        ),
        ({**TWO_D, "compute_with_storage_grid_size": [8, 0]}, r"field compute_with_storage_grid_size\.1: .* \(got 0\)"),
        (
            {**TWO_D, "compute_with_storage_grid_size": [True, 8]},
            r"field compute_with_storage_grid_size\.0: Input should be a valid integer \(got True\)",
        ),
        ({**TWO_D, "in0_block_w": True}, r"field in0_block_w: Input should be a valid integer \(got True\)"),
        ({**TWO_D, "per_core_M": False}, r"field per_core_M: Input should be a valid integer \(got False\)"),
        ({**TWO_D, "out_block_h": True}, r"field out_block_h: .* \(got True\)"),
        ({**TWO_D, "out_subblock_w": 2.0}, r"field out_subblock_w: Input should be a valid integer \(got 2\.0\)"),
        ({**TWO_D, "in0_block_w": "2"}, r"field in0_block_w: Input should be a valid integer \(got '2'\)"),
        ({**TWO_D, "per_core_N": -1}, r"field per_core_N: Input should be greater than or equal to 1 \(got -1\)"),
    ],
)
def test_a_matmul_config_that_cannot_be_is_refused_naming_the_field(raw: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=r"^cfg\.json: " + says):
        parse_config(raw, "cfg.json")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("compute_with_storage_grid_size", [0, 0]),
        ("compute_with_storage_grid_size", [True, 1]),
        ("q_chunk_size", True),
        ("max_cores_per_head_batch", True),
        ("max_cores_per_head_batch", 0),
    ],
)
def test_an_sdpa_config_that_cannot_be_is_refused_naming_the_field(field: str, value: object) -> None:
    raw = {"compute_with_storage_grid_size": [8, 8], "q_chunk_size": 64, "k_chunk_size": 64, field: value}
    with pytest.raises(ConfigError, match=rf"^sdpa\.json: field {field}"):
        parse_sdpa_config(raw, "sdpa.json")


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (
            {**TWO_D, "compute_with_storage_grid_size": [4, 4], "per_core_M": 16, "per_core_N": 16},
            r"per_core_M=16, per_core_N=16 need 8x8 cores \(columns x rows\), more than compute_with_storage_grid_size "
            r"\[4, 4\] gives",
        ),
        (
            {
                **TWO_D,
                "compute_with_storage_grid_size": [8, 4],
                "per_core_M": 16,
                "per_core_N": 16,
                "transpose_mcast": True,
            },
            r"need 8x8 cores",
        ),  # transposed: M on the columns, N on the rows
        ({**ONE_D, "compute_with_storage_grid_size": [4, 2], "per_core_M": 128, "per_core_N": 8}, r"need 4x4 cores"),
    ],
)
def test_blocks_that_need_more_cores_than_the_config_s_grid_are_refused(raw: dict[str, object], says: str) -> None:
    problem = make_problem(load_program("gemm"), "M=4096,K=4096,N=4096")
    with pytest.raises(ConfigError, match=says):
        evaluate_config(load_hardware("wormhole_n150"), problem, parse_config(raw))


def test_blocks_that_fit_the_config_s_grid_are_costed() -> None:
    problem = make_problem(load_program("gemm"), "M=4096,K=4096,N=4096")
    raw = {**TWO_D, "in0_block_w": 4, "per_core_M": 16, "per_core_N": 16, "out_subblock_h": 2, "out_subblock_w": 4}
    evaluated = evaluate_config(load_hardware("wormhole_n150"), problem, parse_config(raw))
    assert (evaluated.values["grid_x"], evaluated.values["grid_y"]) == (8, 8)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({**ONE_D, "compute_with_storage_grid_size": [0, 0]}, "compute_with_storage_grid_size.0"),  # was exit 70
        ({**TWO_D, "compute_with_storage_grid_size": [0, 0]}, "compute_with_storage_grid_size.0"),  # was costed on 8x8
        ({**TWO_D, "in0_block_w": True}, "in0_block_w"),  # was costed as 1
        (
            {**TWO_D, "compute_with_storage_grid_size": [2, 2], "per_core_M": 1, "per_core_N": 1},
            "need 8x8 cores",
        ),  # was costed on 8x8
    ],
    ids=["1d_grid_0", "2d_grid_0", "bool_block", "blocks_beyond_grid"],
)
def test_predict_exits_2_naming_the_file_and_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], raw: dict[str, object], says: str
) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(raw))
    assert main(["predict", "gemm", *SHAPE, "--ttnn-config", str(cfg)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"loom-explorer: error: {cfg}: ") and says in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------------------- improve configs files

RECORDED = [
    "gemm",
    "--hw",
    "wormhole_n150",
    "--shape",
    "M=256,N=256,K=256",
    "--dtype",
    "bfloat16",
    "--fidelity",
    "hifi2",
]


def improve_json(tmp_path: Path, config: dict[str, object], predict_args: object = RECORDED) -> Path:
    """An improve configs file (the ``improve -o x.json`` form) with the one op ``op1``."""
    path = tmp_path / "configs.json"
    path.write_text(
        json.dumps(
            {
                "format": FORMAT,
                "version": 1,
                "capture": "x.csv",
                "hardware": "wormhole_n150",
                "grid": None,
                "ops": {"op1": {"ttnn_op": "ttnn.matmul", "config": config, "predict_args": predict_args}},
            }
        )
    )
    return path


def improve_py(tmp_path: Path, call_args: str, predict_args: object = RECORDED) -> Path:
    """An improve configs module (the ``improve -o x.py`` form) with the one op ``op1``."""
    path = tmp_path / "configs.py"
    path.write_text(
        "import ttnn\n\nCONFIGS = {\n    'op1': ttnn.MatmulMultiCoreReuseMultiCastProgramConfig("
        f"{call_args}),\n}}\n\nDETAILS = {{'op1': {{'predict_args': {predict_args!r}, 'memory': {{}}, "
        "'compute': {}}}\n"
    )
    return path


PY_ARGS = (
    "compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), in0_block_w=2, per_core_M=1, per_core_N=1, "
    "out_subblock_h=1, out_subblock_w=1, transpose_mcast=False, fuse_batch=True"
)


@pytest.mark.parametrize("form", ["json", "py"])
def test_the_recorded_problem_is_costed(tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str) -> None:
    path = improve_json(tmp_path, TWO_D) if form == "json" else improve_py(tmp_path, PY_ARGS)
    assert read_entry(path, "op1").predict_args == tuple(RECORDED)
    # the same problem in other words: the shape in another order, the grid as the whole chip, defaults spelt out
    assert (
        main(
            [
                "predict",
                "gemm",
                "--hw",
                "wormhole_n150",
                "--shape",
                "M=256,K=256,N=256",
                "--grid",
                "8x8",
                "--ttnn-config",
                str(path),
                "--op",
                "op1",
            ]
        )
        == EXIT_OK
    ), capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (
            ["--hw", "wormhole_n150", "--shape", "M=512,K=256,N=256"],
            "the config was chosen for --shape M=256,N=256,K=256, not M=512,N=256,K=256",
        ),
        ([*SHAPE, "--grid", "7x8"], "the config was chosen for --grid 8x8, not 7x8"),
        (
            ["--hw", "blackhole_p150a", "--shape", "M=256,K=256,N=256"],
            "the config was chosen for --hw wormhole_n150, not blackhole_p150a",
        ),
        ([*SHAPE, "--fp32-acc"], "the config was chosen for --fp32-acc off, not on"),
        ([*SHAPE, "--dtype", "bfp8_b"], "the config was chosen for --dtype/--format"),
        ([*SHAPE, "--format", "in1=bfp8_b"], "in1=bfloat16"),
        ([*SHAPE, "--bias"], "the config was chosen for --bias off, not on"),
        ([*SHAPE, "--activation", "gelu"], "the config was chosen for --activation none, not gelu"),
        ([*SHAPE, "--memory", "in0=l1_block"], "the config was chosen for --memory none, not in0=l1_block"),
    ],
)
@pytest.mark.parametrize("form", ["json", "py"])
def test_another_problem_than_the_recorded_one_is_refused_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str, flags: list[str], says: str
) -> None:
    path = improve_json(tmp_path, TWO_D) if form == "json" else improve_py(tmp_path, PY_ARGS)
    assert main(["predict", "gemm", *flags, "--ttnn-config", str(path), "--op", "op1"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"loom-explorer: error: --ttnn-config {path} --op op1: ") and says in err, err
    assert "predict it with the op's own arguments: gemm --hw wormhole_n150" in err and len(err.splitlines()) == 1


def test_another_kernel_than_the_recorded_one_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = improve_json(tmp_path, TWO_D, ["batched_gemm", *RECORDED[1:]])
    assert main(["predict", "gemm", *SHAPE, "--ttnn-config", str(path), "--op", "op1"]) == EXIT_BAD_INPUT
    assert "the config was chosen for kernel batched_gemm, not gemm" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("predict_args", "says"),
    [
        ("gemm --hw wormhole_n150", "predict_args is not a list of command-line words"),
        ([], "predict_args is not a list of command-line words"),
        (["gemm", 3], "predict_args is not a list of command-line words"),
    ],
)
def test_unreadable_predict_args_are_refused_naming_the_op(tmp_path: Path, predict_args: object, says: str) -> None:
    with pytest.raises(ImproveFileError, match=f"op 'op1': {says}"):
        read_entry(improve_json(tmp_path, TWO_D, predict_args), "op1")


def test_predict_args_that_make_no_problem_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = improve_json(tmp_path, TWO_D, ["gemm", "--hw", "wormhole_n150", "--shape", "M=256,N=256,Q=1"])
    assert main(["predict", "gemm", *SHAPE, "--ttnn-config", str(path), "--op", "op1"]) == EXIT_BAD_INPUT
    assert "its predict_args do not make a problem of gemm" in capsys.readouterr().err
    path = improve_json(tmp_path, TWO_D, ["gemm", "--shape", "M=256,N=256,K=256"])  # no --hw
    assert main(["predict", "gemm", *SHAPE, "--ttnn-config", str(path), "--op", "op1"]) == EXIT_BAD_INPUT
    assert "its predict_args cannot be read (the following arguments are required: --hw)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("call_args", "says"),
    [
        (PY_ARGS.replace("CoreCoord(8, 8)", "CoreCoord(0, 0)"), "field compute_with_storage_grid_size.0"),
        (
            PY_ARGS.replace("in0_block_w=2", "in0_block_w=True"),
            "field in0_block_w: Input should be a valid integer (got True)",
        ),
    ],
)
def test_a_configs_module_with_a_config_that_cannot_be_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], call_args: str, says: str
) -> None:
    path = improve_py(tmp_path, call_args)
    assert main(["predict", "gemm", *SHAPE, "--ttnn-config", str(path), "--op", "op1"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"loom-explorer: error: {path}: {says}"), err


# ---------------------------------------------------------------------------------------------- fuzzing

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
N150 = load_hardware("wormhole_n150")
ODD = st.one_of(st.integers(-2, 20), st.sampled_from([0, 64, 128, 10**9, True, False, None, 2.5, "4", [8, 8]]))


def refused_or_costed(evaluate: object) -> None:
    """``evaluate()`` costs the config (a result, legal or a conflict) or raises the input error (exit 2)."""
    try:
        result = evaluate()  # type: ignore[operator]
    except LoomError as exc:
        assert exc.exit_status == EXIT_BAD_INPUT and str(exc) and "\n" not in str(exc), repr(exc)
        return
    assert result.result.status in ("feasible", "conflict")


@FUZZ
@given(
    st.sampled_from([TWO_D, ONE_D]),
    st.tuples(ODD, ODD),
    ODD,
    ODD,
    ODD,
    ODD,
    ODD,
    ODD,
    st.booleans(),
    st.sampled_from(["M=256,K=256,N=256", "M=32,K=4096,N=1024", "M=4096,K=64,N=96"]),
)
def test_random_matmul_configs_are_costed_or_refused(base, grid, ibw, pm, pn, bh, sh, sw, flag, shape) -> None:
    raw = {
        **base,
        "compute_with_storage_grid_size": list(grid),
        "in0_block_w": ibw,
        "per_core_M": pm,
        "per_core_N": pn,
        "out_block_h": bh,
        "out_subblock_h": sh,
        "out_subblock_w": sw,
        "transpose_mcast": flag,
    }
    problem = make_problem(load_program("gemm"), shape)
    refused_or_costed(lambda: evaluate_config(N150, problem, parse_config(raw, "f.json")))


@FUZZ
@given(
    st.tuples(ODD, ODD),
    st.sampled_from([32, 64, 96, 256, 0, 33, True]),
    st.sampled_from([32, 128, 512, 33]),
    ODD,
    st.sampled_from(["B=1,H=8,Sq=1024,Skv=1024,D=64", "B=2,H=8,Hkv=2,Sq=32,Skv=4096,D=128"]),
    st.booleans(),
)
def test_random_sdpa_configs_are_costed_or_refused(grid, q, k, cores, shape, causal) -> None:
    raw = {
        "compute_with_storage_grid_size": list(grid),
        "q_chunk_size": q,
        "k_chunk_size": k,
        "max_cores_per_head_batch": cores,
    }
    problem = make_problem(load_program("flash_attention"), shape, options={"causal"} if causal else set())
    refused_or_costed(lambda: evaluate_sdpa_config(N150, problem, parse_sdpa_config(raw, "f.json")))
