"""The export formats as one registry (``export/formats.py``): the command line offers exactly its formats,
the explorer downloads them, each says why it cannot write a schedule before ``export`` refuses it, and a
refusal repeated by every candidate is said once."""

from __future__ import annotations

import contextlib
import io

import pytest

from loom_explorer import cli
from loom_explorer.export.exporter import ExportError, SolvedSchedule
from loom_explorer.export.formats import export_blocker, export_formats, export_text, exporter, exporters
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions

HW = "wormhole_n150"
EXPORT_FORMATS = export_formats()
EXPORTERS = exporters()


def test_formats_are_named_once_with_distinct_suffixes() -> None:
    assert EXPORT_FORMATS == ("ttlang", "ttnn", "json", "npe")
    assert len({e.suffix for e in EXPORTERS}) == len(EXPORTERS)
    assert exporter("ttnn").suffix == "_ttnn.py" and exporter("ttlang").kernel_target is KernelTarget.ttlang
    with pytest.raises(ExportError, match="no export format 'csv'; formats: ttlang, ttnn, json, npe"):
        exporter("csv")


def test_the_command_line_and_the_explorer_offer_the_registry() -> None:
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    fmt = next(a for a in subparsers.choices["export"]._actions if a.dest == "output_format")  # type: ignore[index]
    assert tuple(fmt.choices) == EXPORT_FORMATS
    assert all(f"{e.name}: {e.summary}" in fmt.help for e in EXPORTERS)
    from loom_explorer.ui.explorer import DOWNLOADS

    assert [v for v in DOWNLOADS.values() if v != "solve"] == list(EXPORT_FORMATS)


@pytest.fixture(scope="module")
def solved() -> list[SolvedSchedule]:
    """Every candidate of a GEMM with a schedule, best first."""
    hw = load_hardware(HW)
    session = Session(hw, make_problem(load_program("gemm"), "M=256,K=4096,N=256"))
    options = SolveOptions(time_limit_seconds=20)
    results = session.solve({}, options)
    return [
        SolvedSchedule(session.schedule(r.candidate_name), r, HW, "gemm", options)
        for r in results
        if r.solution is not None
    ]


@pytest.mark.parametrize("name", EXPORT_FORMATS)
def test_can_export_says_what_export_does(solved: list[SolvedSchedule], name: str) -> None:
    """A schedule a format can express is written; one it cannot is refused with the reason it gave."""
    written = refused = 0
    for s in solved:
        why = export_blocker(name, s)
        if why is None:
            assert export_text(name, s).strip()
            written += 1
        else:
            with pytest.raises(ExportError) as refusal:
                export_text(name, s)
            assert str(refusal.value) == why
            refused += 1
    assert written > 0
    if name in ("json", "npe"):  # any schedule
        assert refused == 0
    if name == "ttnn":  # the split-K candidates this tall K favours have no TTNN config
        assert refused > 0


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, err.getvalue()


def test_a_refusal_every_candidate_shares_is_said_once(tmp_path) -> None:
    """TT-Lang export reads DRAM-interleaved tensors only: with in0 sharded in L1 every candidate is refused
    for that one reason, and the message says it once."""
    out = tmp_path / "sharded.py"
    code, err = _run(
        [
            "export",
            "gemm",
            "--hw",
            HW,
            "--shape",
            "M=256,K=256,N=256",
            "--memory",
            "in0=l1_height",
            "--format",
            "ttlang",
            "-o",
            str(out),
            "--time-limit",
            "10",
        ]
    )
    assert code == 2 and not out.exists(), err
    line = next(x for x in err.splitlines() if x.startswith("loom-explorer: error:"))
    assert line.startswith("loom-explorer: error: no candidate with a schedule has a TT-Lang export: ")
    assert line.count("DRAM-interleaved") == 1, line
