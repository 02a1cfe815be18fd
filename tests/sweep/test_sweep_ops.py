"""The ops of a sweep (``loom_explorer.sweep.ops``) and ``loom-explorer sweep``'s refusals of bad input.

Fast: nothing here solves or starts a Dask cluster (``dask_client`` is replaced by one that fails the
test if it is ever entered).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_explorer import cli
from loom_explorer.hardware.schema import DataFormat, Fidelity
from loom_explorer.sweep.ops import (
    COLUMNS,
    DECODE_KV,
    MODELS,
    OpsError,
    SweepOp,
    make_op,
    model_ops,
    read_shapes,
    write_shapes,
)

HEADER = "kernel,shape,dtype,fidelity"
GEMM_ROW = 'gemm,"M=128,K=128,N=128",bf16,hifi2'


def write(tmp_path: Path, text: str, name: str = "shapes.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def dims(shape: str) -> dict[str, int]:
    return {k: int(v) for k, v in (kv.split("=") for kv in shape.split(","))}


# ---------------------------------------------------------------- reading shapes.csv
def test_read_shapes_minimal_columns(tmp_path):
    p = write(tmp_path, f"{HEADER}\n{GEMM_ROW}\n")
    [op] = read_shapes(p)
    assert op == SweepOp("gemm", op.shape, DataFormat.bfloat16, Fidelity.hifi2, frozenset(), "")
    assert dims(op.shape) == {"M": 128, "K": 128, "N": 128}


def test_read_shapes_all_columns_and_canonical_forms(tmp_path):
    p = write(
        tmp_path,
        f"{HEADER},causal,label\n"
        'gemm,"M=256,K=128,N=64",bfloat8_b,lofi,0,"my model: proj"\n'
        'flash_attention,"B=1,H=2,Sq=128,Skv=128,D=64",bf16,HiFi4,true,attn\n'
        'flash_attention,"B=1,H=2,Sq=1,Skv=128,D=64",bf16,hifi2,,\n',
    )
    gemm, causal, decode = read_shapes(p)
    assert (gemm.kernel, gemm.dtype, gemm.fidelity, gemm.options, gemm.label) == (
        "gemm",
        DataFormat.bfloat8_b,
        Fidelity.lofi,
        frozenset(),
        "my model: proj",
    )
    assert dims(gemm.shape) == {"M": 256, "K": 128, "N": 64}
    assert (causal.kernel, causal.fidelity, causal.options, causal.label) == (
        "flash_attention",
        Fidelity.hifi4,
        frozenset({"causal"}),
        "attn",
    )
    assert dims(causal.shape)["Hkv"] == 2  # defaulted to H and written out: the shape is canonical
    assert decode.options == frozenset() and decode.label == ""
    # the key tells the ops apart (it is a sweep's skip key with the hardware and version)
    assert len({gemm.key, causal.key, decode.key}) == 3
    assert "causal" in causal.key and "causal" not in decode.key


def test_equivalent_spellings_give_the_same_op_and_key(tmp_path):
    a = write(tmp_path, f"{HEADER}\n{GEMM_ROW}\n", "a.csv")
    b = write(tmp_path, f'{HEADER}\ngemm,"N=128,M=128,K=128",bfloat16,HIFI2\n', "b.csv")
    assert read_shapes(a) == read_shapes(b)
    assert read_shapes(a)[0].key == read_shapes(b)[0].key


def test_blank_rows_are_skipped(tmp_path):
    p = write(tmp_path, f'{HEADER}\n{GEMM_ROW}\n,,,\n\ngemm,"M=64,K=64,N=64",bf16,hifi2\n')
    assert [dims(op.shape)["M"] for op in read_shapes(p)] == [128, 64]


@pytest.mark.parametrize(
    "row, row_number, needle",
    [
        ('nope,"M=128,K=128,N=128",bf16,hifi2', 3, "nope"),
        ('gemm,"M=128,K=128",bf16,hifi2', 3, "N"),
        ('gemm,"M=abc,K=128,N=128",bf16,hifi2', 3, "abc"),
        ('gemm,"M=0,K=128,N=128",bf16,hifi2', 3, "M=0"),
        ('gemm,"M=128,K=128,N=128",bf99,hifi2', 3, "bf99"),
        ('gemm,"M=128,K=128,N=128",bf16,hifi9', 3, "hifi9"),
    ],
)
def test_bad_row_is_refused_naming_row_and_cause(tmp_path, row, row_number, needle):
    p = write(tmp_path, f"{HEADER}\n{GEMM_ROW}\n{row}\n")
    with pytest.raises(OpsError) as exc:
        read_shapes(p)
    msg = str(exc.value)
    assert str(p) in msg and f"row {row_number}" in msg and needle in msg


def test_a_kernel_file_named_by_a_shapes_file_is_never_imported(tmp_path):
    """A shapes file is data: its kernel column names a shipped kernel, never a file to import."""
    marker = tmp_path / "ran"
    kernel = tmp_path / "evil.py"
    kernel.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    p = write(tmp_path, f'{HEADER}\n{kernel},"M=64,K=64,N=64",bf16,hifi2\n')
    with pytest.raises(OpsError, match=r"row 2, column kernel: .* is not a shipped kernel"):
        read_shapes(p)
    assert not marker.exists(), "reading a shapes file imported the kernel file it names"


def test_row_number_after_a_blank_line_is_the_file_line(tmp_path):
    """Rows are numbered as an editor numbers lines (header = row 1), blank lines included."""
    p = write(tmp_path, f'{HEADER}\n{GEMM_ROW}\n\ngemm,"M=128,K=128,N=128",bf99,hifi2\n')
    with pytest.raises(OpsError, match=r"row 4: .*bf99"):
        read_shapes(p)


def test_bad_causal_cell_names_row_and_column(tmp_path):
    p = write(tmp_path, f'{HEADER},causal\n{GEMM_ROW},0\ngemm,"M=64,K=64,N=64",bf16,hifi2,maybe\n')
    with pytest.raises(OpsError, match=r"row 3, column causal: .*'maybe'"):
        read_shapes(p)


def test_causal_on_a_kernel_without_the_option_is_refused(tmp_path):
    p = write(tmp_path, f"{HEADER},causal\n{GEMM_ROW},1\n")
    with pytest.raises(OpsError, match=r"row 2: kernel gemm has no causal option \(its options: none\)"):
        read_shapes(p)


def test_the_options_column_names_program_options(tmp_path):
    p = write(
        tmp_path,
        f"{HEADER},options,label\n"
        'flash_attention,"B=1,H=2,Sq=128,Skv=128,D=64",bf16,hifi2,causal,attn\n'
        'flash_attention,"B=1,H=2,Sq=128,Skv=128,D=64",bf16,hifi2,,plain\n',
    )
    causal, plain = read_shapes(p)
    assert causal.options == frozenset({"causal"}) and plain.options == frozenset()
    assert causal.key.endswith("|causal") and plain.key.endswith("|")  # the key spells them as it always has
    bad = write(tmp_path, f'{HEADER},options\nflash_attention,"B=1,H=2,Sq=128,Skv=128,D=64",bf16,hifi2,window\n')
    with pytest.raises(OpsError, match=r"row 2: kernel flash_attention has no window option \(its options: causal\)"):
        read_shapes(bad)


def test_causal_attention_with_sq_ne_skv_passes_reading(tmp_path):
    """The model refuses it (Sq == Skv) only when it is built: a sweep records it as failed."""
    p = write(tmp_path, f'{HEADER},causal\nflash_attention,"B=1,H=2,Sq=256,Skv=128,D=64",bf16,hifi2,1\n')
    [op] = read_shapes(p)
    assert op.options == frozenset({"causal"}) and dims(op.shape)["Sq"] == 256


@pytest.mark.parametrize(
    "header, missing",
    [
        ("kernel,shape", "missing columns dtype, fidelity"),
        ("kernel,shape,dtype", "missing column fidelity"),
        ("shape,dtype,fidelity", "missing column kernel"),
    ],
)
def test_missing_columns_are_named(tmp_path, header, missing):
    p = write(tmp_path, f"{header}\ngemm\n")
    with pytest.raises(OpsError, match=missing):
        read_shapes(p)


def test_header_only_and_unreadable_files(tmp_path):
    with pytest.raises(OpsError, match="no ops"):
        read_shapes(write(tmp_path, f"{HEADER}\n"))
    with pytest.raises(OpsError, match="cannot read"):
        read_shapes(tmp_path / "absent.csv")
    with pytest.raises(OpsError, match="cannot read"):
        read_shapes(tmp_path)  # a folder


# ---------------------------------------------------------------- make_op / write_shapes round trip
def test_make_op_checks_its_input():
    assert make_op("gemm", "M=32,K=32,N=32").dtype is DataFormat.bfloat16
    assert make_op("gemm", "M=32,K=32,N=32").fidelity is Fidelity.hifi2
    with pytest.raises(ValueError):
        make_op("gemm", "M=32,K=32")
    with pytest.raises(ValueError, match="causal"):
        make_op("gemm", "M=32,K=32,N=32", options={"causal"})


def test_write_shapes_round_trips_through_read_shapes(tmp_path):
    ops = [
        make_op("gemm", "M=128,K=256,N=64", label="m: proj, fused"),
        make_op("gemm", "M=32,K=32,N=32", "bfloat8_b", "lofi"),
        make_op("flash_attention", "B=1,H=4,Hkv=2,Sq=128,Skv=128,D=64", options={"causal"}, label="m: attention"),
        make_op("flash_attention", "B=2,H=4,Sq=1,Skv=256,D=64", label="m: decode"),
    ]
    text = write_shapes(ops)
    assert text.splitlines()[0] == ",".join((*COLUMNS, "options", "label"))
    assert read_shapes(write(tmp_path, text)) == ops


def test_write_shapes_round_trips_a_model(tmp_path):
    ops = model_ops("llama-3-8b")
    assert read_shapes(write(tmp_path, write_shapes(ops))) == ops


def test_write_shapes_round_trips_a_label_with_quotes(tmp_path):
    """A label is free text; the CSV must quote it so that it reads back unchanged."""
    ops = [make_op("gemm", "M=32,K=32,N=32", label='proj "fused", v2')]
    assert read_shapes(write(tmp_path, write_shapes(ops))) == ops


# ---------------------------------------------------------------- model_ops
GEMMS = ("qkv", "wo", "w1", "w3", "w2", "lm_head")
# the ops around the matmuls and the attention: (label, kernel, width: "hidden" or "ffn"), H = the phase's rows
LAYER_OPS = (
    ("attn_norm", "rmsnorm", "hidden"),
    ("ffn_norm", "rmsnorm", "hidden"),
    ("residual_attn", "binary", "hidden"),
    ("residual_ffn", "binary", "hidden"),
    ("swiglu", "swiglu", "ffn"),
    ("final_norm", "rmsnorm", "hidden"),
)


@pytest.mark.parametrize(
    "name, hidden, ffn, heads, kv_heads",
    [
        ("llama-3-8b", 4096, 14336, 32, 8),
        ("llama-3-70b", 8192, 28672, 64, 8),
    ],
)
def test_model_ops_dimensions(name, hidden, ffn, heads, kv_heads):
    """Meta's model cards: hidden, FFN, heads, 8 KV heads, head dim 128, vocabulary 128256."""
    ops = model_ops(name)
    by_label = {op.label: op for op in ops}
    assert len(by_label) == len(ops) == 4 * (len(GEMMS) + 1 + len(LAYER_OPS))
    assert all(op.dtype is DataFormat.bfloat16 and op.fidelity is Fidelity.hifi2 for op in ops)
    assert not any(op.kernel == "softmax" for op in ops)  # inside the attention
    expect_gemm = {
        "qkv": (hidden, (heads + 2 * kv_heads) * 128),
        "wo": (heads * 128, hidden),
        "w1": (hidden, ffn),
        "w3": (hidden, ffn),
        "w2": (ffn, hidden),
        "lm_head": (hidden, 128256),
    }
    for phase, rows, prefill in (
        ("prefill 2k", 2048, True),
        ("prefill 8k", 8192, True),
        ("decode b1", 1, False),
        ("decode b32", 32, False),
    ):
        for g in GEMMS:
            op = by_label[f"{name} {phase}: {g}"]
            k, n = expect_gemm[g]
            assert op.kernel == "gemm" and not op.options
            assert dims(op.shape) == {"M": rows, "K": k, "N": n}, op.label
        attn = by_label[f"{name} {phase}: attention"]
        assert attn.kernel == "flash_attention"
        if prefill:
            assert attn.options == frozenset({"causal"})
            assert dims(attn.shape) == {"B": 1, "H": heads, "Hkv": kv_heads, "Sq": rows, "Skv": rows, "D": 128}
        else:
            assert not attn.options
            assert dims(attn.shape) == {"B": rows, "H": heads, "Hkv": kv_heads, "Sq": 1, "Skv": DECODE_KV, "D": 128}
        for label, kernel, width in LAYER_OPS:
            op = by_label[f"{name} {phase}: {label}"]
            assert op.kernel == kernel and not op.options
            assert dims(op.shape) == {"H": rows, "W": hidden if width == "hidden" else ffn}, op.label
        # ops of one shape keep their labels (the sweep records each): three norms, two adds, w1 and w3
        keys = {op.key for op in ops if op.label.startswith(f"{name} {phase}:")}
        assert len(keys) == len(GEMMS) + 1 + len(LAYER_OPS) - 4


def test_model_ops_table_matches_the_model_cards():
    m8, m70 = MODELS["llama-3-8b"], MODELS["llama-3-70b"]
    assert (m8.hidden, m8.ffn, m8.heads, m8.kv_heads, m8.head_dim, m8.vocab) == (4096, 14336, 32, 8, 128, 128256)
    assert (m70.hidden, m70.ffn, m70.heads, m70.kv_heads, m70.head_dim, m70.vocab) == (8192, 28672, 64, 8, 128, 128256)


def test_model_ops_unknown_model_lists_the_known_ones():
    with pytest.raises(OpsError, match="llama-3-8b, llama-3-70b") as exc:
        model_ops("gpt-5")
    assert "gpt-5" in str(exc.value)


# ---------------------------------------------------------------- the CLI refuses bad input before any cluster


def run_cli(argv, capsys):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_sweep_needs_shapes_or_model(tmp_path, capsys, no_cluster):
    code, _, err = run_cli(["sweep", "--hw", "wormhole_n150", "--out", tmp_path / "s.sqlite", "--workers", "1"], capsys)
    assert code == 2 and "shapes.csv or --model" in err
    assert not (tmp_path / "s.sqlite").exists()


def test_cli_sweep_refuses_shapes_and_model_together(tmp_path, capsys, no_cluster):
    shapes = write(tmp_path, f"{HEADER}\n{GEMM_ROW}\n")
    code, _, err = run_cli(
        [
            "sweep",
            shapes,
            "--model",
            "llama-3-8b",
            "--hw",
            "wormhole_n150",
            "--out",
            tmp_path / "s.sqlite",
            "--workers",
            "1",
        ],
        capsys,
    )
    assert code == 2 and "not both" in err


def test_cli_sweep_unknown_hw(tmp_path, capsys, no_cluster):
    shapes = write(tmp_path, f"{HEADER}\n{GEMM_ROW}\n")
    code, _, err = run_cli(
        ["sweep", shapes, "--hw", "wormhole_n150,no_such_chip", "--out", tmp_path / "s.sqlite", "--workers", "1"],
        capsys,
    )
    assert code == 2 and "no_such_chip" in err
    assert not (tmp_path / "s.sqlite").exists()


def test_cli_sweep_bad_row(tmp_path, capsys, no_cluster):
    shapes = write(tmp_path, f'{HEADER}\n{GEMM_ROW}\ngemm,"M=128,K=128,N=128",bf16,hifi9\n')
    code, _, err = run_cli(
        ["sweep", shapes, "--hw", "wormhole_n150", "--out", tmp_path / "s.sqlite", "--workers", "1"], capsys
    )
    assert code == 2 and "row 3" in err and "hifi9" in err and str(shapes) in err
    assert not (tmp_path / "s.sqlite").exists()


def test_cli_sweep_unknown_model(tmp_path, capsys, no_cluster):
    code, _, err = run_cli(
        ["sweep", "--model", "gpt-5", "--hw", "wormhole_n150", "--out", tmp_path / "s.sqlite", "--workers", "1"], capsys
    )
    assert code == 2 and "gpt-5" in err and "llama-3-8b" in err


def test_cli_sweep_zero_workers(tmp_path, capsys, no_cluster):
    shapes = write(tmp_path, f"{HEADER}\n{GEMM_ROW}\n")
    code, _, err = run_cli(
        ["sweep", shapes, "--hw", "wormhole_n150", "--out", tmp_path / "s.sqlite", "--workers", "0"], capsys
    )
    assert code == 2 and "--workers" in err


def test_cli_sweep_without_workers_option_reaches_its_checks(tmp_path, capsys, no_cluster):
    """``--workers`` is optional (default: one per core); leaving it out must not crash the argument checks."""
    code, _, err = run_cli(["sweep", "--hw", "wormhole_n150", "--out", tmp_path / "s.sqlite"], capsys)
    assert code == 2 and "shapes.csv or --model" in err


def test_cli_sweep_short_row_is_bad_input(tmp_path, capsys, no_cluster):
    """A row with fewer cells than the header is bad input (exit 2 naming the row), not a crash."""
    shapes = write(tmp_path, f"{HEADER}\n{GEMM_ROW}\ngemm\n")
    code, _, err = run_cli(
        ["sweep", shapes, "--hw", "wormhole_n150", "--out", tmp_path / "s.sqlite", "--workers", "1"], capsys
    )
    assert code == 2 and "row 3" in err


def test_cli_sweep_write_shapes_refuses_to_overwrite(tmp_path, capsys, no_cluster):
    target = write(tmp_path, "keep me\n", "ops.csv")
    code, _, err = run_cli(
        [
            "sweep",
            "--model",
            "llama-3-8b",
            "--write-shapes",
            target,
            "--hw",
            "wormhole_n150",
            "--out",
            tmp_path / "s.sqlite",
            "--workers",
            "1",
        ],
        capsys,
    )
    assert code == 2 and str(target) in err and "--force" in err
    assert target.read_text() == "keep me\n"
