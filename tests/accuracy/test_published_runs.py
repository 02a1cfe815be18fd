"""``accuracy`` and ``calibrate`` over the registered kernels with published measurements
(``accuracy/published_runs.py``, ``AccuracyOps.published``): the command's ``--kernel`` choices are the
registered ones, the default first; the flags every kernel shares are checked before a family's run starts,
which gets them checked and reports through the console; and the coverage words come from the families."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
from collections.abc import Sequence
from pathlib import Path

import pytest

from loom_explorer.accuracy import op_mapping, published_runs
from loom_explorer.accuracy.coverage import is_matmul_or_attention
from loom_explorer.accuracy.csv_input import RowIssue
from loom_explorer.accuracy.published import AccuracyRun, CalibrateRun, Console, PublishedKernel
from loom_explorer.accuracy.published_runs import AccuracyRequest, RunInputError, measurement_file
from loom_explorer.cli import entry, main
from loom_explorer.data import published_path

RUNS: list[object] = []


def _accuracy(run: AccuracyRun, console: Console) -> None:
    RUNS.append(run)
    console.out(f"rows of {run.data}")
    console.say_rows("could not score 1 rows:", [RowIssue(run.data, 2, None, "too odd")])


def _calibrate(run: CalibrateRun, console: Console) -> None:
    RUNS.append(run)
    console.out(f"fitted {', '.join(run.constants)}")


def _kernel(kernel: str, **given: object) -> PublishedKernel:
    fields: dict[str, object] = {
        "kernel": kernel,
        "title": kernel.upper(),
        "ops": kernel,
        "constants": ("compute.tile_pack_cycles", "compute.kernel_launch_cycles"),
        "kernel_help": f"{kernel} (its help)",
        "calibrate_help": f"{kernel} (its constants)",
        "data_help": f"of {kernel}.csv",
        "accuracy": _accuracy,
        "calibrate": _calibrate,
        "measure_errors": lambda cross_validate: [],
    }
    return PublishedKernel(**{**fields, **given})  # type: ignore[arg-type]


TOY = _kernel("toy", options=frozenset({"--configs", "--constants"}), example_data="toy.csv")
SHIPPED = _kernel("shipped", shipped_data="sdpa_op_times.csv", default=True)


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry holds the two toy kernels, the default one first."""
    monkeypatch.setattr(op_mapping, "published_kernels", lambda: (SHIPPED, TOY))
    monkeypatch.setattr(published_runs, "published_kernels", lambda: (SHIPPED, TOY))
    monkeypatch.setattr(published_runs, "published_kernel", lambda k: next(p for p in (SHIPPED, TOY) if p.kernel == k))
    RUNS.clear()


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _kernel_flag(command: str) -> tuple[tuple[str, ...], str, str]:
    """(choices, default, help) of ``command``'s ``--kernel``."""
    parser = entry.build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flag = next(a for a in sub.choices[command]._actions if a.dest == "kernel")
    return tuple(flag.choices or ()), str(flag.default), str(flag.help)


def test_the_shipped_kernels_are_registered_the_default_first() -> None:
    kernels = op_mapping.published_kernels()
    assert [p.kernel for p in kernels] == ["gemm", "flash_attention"]
    assert [p.default for p in kernels] == [True, False]
    for ops in op_mapping.accuracy_ops():  # a family publishes measurements of a kernel it reads rows as
        assert ops.published is None or ops.published.kernel in ops.kernels, ops.name
    assert _kernel_flag("accuracy")[:2] == (("gemm", "flash_attention"), "gemm")
    assert _kernel_flag("calibrate")[:2] == (("gemm", "flash_attention"), "gemm")


def test_the_kernel_choices_and_help_are_the_registered_ones(toys: None) -> None:
    assert _kernel_flag("accuracy") == (("shipped", "toy"), "shipped", "shipped (its help) or toy (its help)")
    assert _kernel_flag("calibrate")[2] == "shipped (its constants) or toy (its constants)"
    code, _, err = run("accuracy", "--kernel", "gemm")
    assert code == 2 and "invalid choice: 'gemm'" in err


def test_a_run_gets_its_flags_checked_and_reports_through_the_console(toys: None, tmp_path: Path) -> None:
    code, out, err = run(
        "accuracy", "--kernel", "toy", "--data", "x.csv", "--configs", "c.csv", "--hw", "n150=wormhole_n150"
    )
    assert code == 0, err
    assert out == "rows of x.csv\n" and err == "could not score 1 rows:\n  x.csv: too odd: 1 row (line 2)\n"
    [got] = RUNS
    assert isinstance(got, AccuracyRun)
    assert (got.data, got.configs, set(got.hardware), got.constants) == ("x.csv", "c.csv", {"n150"}, None)
    assert dict(got.hardware_files) == {"n150": "wormhole_n150", "p150": "blackhole_p150a"}
    # the default kernel ships its data; calibrate's constants are the kernel's
    code, out, err = run("calibrate", "--hw", "wormhole_n150", "-o", str(tmp_path / "o.yaml"))
    assert code == 0 and out == "fitted compute.tile_pack_cycles, compute.kernel_launch_cycles\n", err
    assert isinstance(RUNS[-1], CalibrateRun) and RUNS[-1].data == str(published_path("sdpa_op_times.csv"))
    toy = ("calibrate", "--kernel", "toy", "--hw", "wormhole_n150", "--data", "x.csv", "-o", str(tmp_path / "o.yaml"))
    code, _, err = run(*toy, "--constants", "x.y")
    assert code == 2 and "x.y is not a constant calibrate fits (compute.tile_pack_cycles," in err
    code, _, err = run("calibrate", "--hw", "wormhole_n150", "-o", str(tmp_path / "o.yaml"), "--constants", "x.y")
    assert code == 2 and "--constants: TOY options; --kernel shipped takes" in err
    assert len(RUNS) == 2 and not (tmp_path / "o.yaml").exists()


def test_measurement_file_refuses_what_the_kernel_does_not_take(toys: None) -> None:
    with pytest.raises(RunInputError, match=r"^--configs: TOY options; --kernel shipped takes --data, --hw, "):
        measurement_file(SHIPPED, None, {"--configs": "c.csv", "--record": False})
    with pytest.raises(RunInputError, match=r"^--data FILE is required for toy \(e.g\. .*/published/toy\.csv\)$"):
        measurement_file(TOY, None, {"--configs": "c.csv"})
    assert measurement_file(TOY, "mine.csv", {"--configs": "c.csv"}) == "mine.csv"
    assert measurement_file(SHIPPED, None, {}) == str(published_path("sdpa_op_times.csv"))
    assert measurement_file(SHIPPED, "mine.csv", {}) == "mine.csv"


def test_the_request_is_the_parsed_flags() -> None:
    args = entry.build_parser("accuracy").parse_args(["accuracy", "--data", "d.csv", "--hw", "p150=f.yaml"])
    request = args.handler.parse(args)
    assert request == AccuracyRequest("gemm", "d.csv", None, ("p150=f.yaml",), False, False, None, False, False, None)
    assert dataclasses.is_dataclass(request)


class _Collect:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def out(self, text: str) -> None:
        self.lines.append(text)

    def say(self, text: str) -> None:
        self.lines.append(f"say: {text}")

    def say_rows(self, title: str, issues: Sequence[RowIssue]) -> None:
        self.lines.append(f"rows: {title} {len(issues)}")


def test_a_console_is_what_the_runs_print_through() -> None:
    console: Console = _Collect()
    _accuracy(
        AccuracyRun("d.csv", None, {}, {}, False, False, None, False, None, False),
        console,
    )
    assert console.lines == ["rows of d.csv", "rows: could not score 1 rows: 1"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("op_code", "counted"),
    [
        ("MinimalMatmulOp", True),
        ("ttnn::operations::MatmulDeviceOperation", True),
        ("RingJointSDPADeviceOperation", True),
        ("ScaledDotProductAttentionDecode", True),
        ("LayerNormDeviceOperation", False),
        ("BinaryDeviceOperation", False),
    ],
)
def test_the_matmul_and_attention_time_is_that_of_the_families_words(op_code: str, counted: bool) -> None:
    assert is_matmul_or_attention(op_code) is counted
    assert op_mapping.worded_kernels() == {"gemm", "flash_attention"}
