"""The schedule document (``export/schedule_json.py``): a solved schedule as versioned JSON that round-trips.

Real solves on the Wormhole n150 (small shapes, one solve per module where possible). A document written
by ``schedule_document`` must parse back to an equal document, and ``rebuild`` must recompute exactly the
solver's parameters, latency, breakdown and L1. Every way a document can go stale or be mistyped is
reported as a ScheduleFileError whose message names the part at fault.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from datetime import datetime
from importlib.metadata import version

import ortools
import pytest

from loom_explorer.export.schedule_json import (
    SCHEDULE_SCHEMA_VERSION,
    ScheduleDocument,
    ScheduleFileError,
    load_schedule_document,
    parse_schedule_document,
    rebuild,
    schedule_document,
)
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.load import resolve_hardware_path
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.program.load import shipped_kernels_dir
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.validate import referee

HW = "wormhole_n150"
SHAPE = "M=256,K=256,N=256"
# not the defaults, so that the recorded values can only come from these options
OPTIONS = SolveOptions(time_limit_seconds=20.0, workers_per_model=2, seed=3)
DRAM = "M@y,N@x|in0=dram,in1=dram"  # its NoC bound changes its latency at SHAPE
FA_SHAPE = "B=1,H=2,Sq=512,Skv=512,D=64"


@pytest.fixture(scope="module")
def gemm(n150):
    """(session, results, documents by candidate) of every candidate of gemm SHAPE."""
    problem = make_problem(load_program("gemm"), SHAPE)
    session = Session(n150, problem)
    results = session.solve({}, OPTIONS)
    docs = {
        r.candidate_name: schedule_document(n150, HW, "gemm", problem, r, OPTIONS)
        for r in results
        if r.solution is not None
    }
    assert len(docs) == len(results) == 20, [(r.candidate_name, r.status) for r in results]
    return session, results, docs


@pytest.fixture(scope="module")
def dram_doc(gemm) -> ScheduleDocument:
    return gemm[2][DRAM]


def _edit(doc: ScheduleDocument, **parts) -> ScheduleDocument:
    """``doc`` with some of its records replaced, e.g. ``_edit(doc, prediction={"latency_cycles": 5})``."""
    update = {}
    for key, value in parts.items():
        record = getattr(doc, key)
        update[key] = record.model_copy(update=value) if hasattr(record, "model_copy") else value
    return doc.model_copy(update=update)


def _rebuild_error(doc: ScheduleDocument, **files) -> str:
    with pytest.raises(ScheduleFileError) as info:
        rebuild(doc, **files)
    return str(info.value)


# ----------------------------------------------------------------------------------------- round trip


def test_every_candidate_round_trips(gemm):
    _, results, docs = gemm
    for r in results:
        doc = docs[r.candidate_name]
        text = doc.to_json()
        parsed = parse_schedule_document(text)
        assert parsed == doc, r.candidate_name
        assert parsed.to_json() == text
        assert parsed.candidate == r.candidate_name and parsed.status == r.status
        assert parsed.params == r.solution.values()
        built = rebuild(parsed)
        # the same parameters, the identical latency, breakdown, L1 and DRAM bytes
        assert built.solution == r.solution, r.candidate_name
        assert built.schedule.candidate.name == r.candidate_name
        p = parsed.prediction
        assert p.latency_cycles == r.solution.latency_cycles
        assert p.breakdown == dict(r.solution.breakdown)
        assert sum(p.breakdown.values()) == p.latency_cycles
        assert p.l1_bytes == r.solution.l1_bytes
        assert p.dram_read_bytes == r.solution.dram_read_bytes


def test_round_trip_through_a_file(tmp_path, gemm):
    _, results, docs = gemm
    best = docs[results[0].candidate_name]
    path = tmp_path / "best.json"
    path.write_text(best.to_json())
    loaded = load_schedule_document(path)
    assert loaded == best
    assert rebuild(loaded).solution == results[0].solution
    assert json.loads(path.read_text())["schema_version"] == SCHEDULE_SCHEMA_VERSION == 1


def test_document_records_how_it_was_solved(gemm, n150):
    _, results, docs = gemm
    doc = docs[results[0].candidate_name]
    s = doc.solver
    assert s.ortools_version == ortools.__version__  # type: ignore[attr-defined]
    assert s.tool_version == version("loom-explorer")
    assert (s.time_limit_seconds, s.workers_per_model, s.seed) == (20.0, 2, 3)
    assert s.noc_bound is True
    # the hardware: as given, and the SHA-256 of its validated specification
    assert doc.hardware.source == HW and doc.hardware.name == n150.name == "wormhole_n150"
    assert re.fullmatch(r"[0-9a-f]{64}", doc.hardware.sha256)
    assert doc.hardware.sha256 == hashlib.sha256(n150.model_dump_json(exclude={"card"}).encode()).hexdigest()
    other = schedule_document(
        load_hardware("wormhole_n300"), "wormhole_n300", "gemm", gemm[0].problem, results[0], OPTIONS
    )
    assert other.hardware.sha256 != doc.hardware.sha256
    # the kernel: as given, and the SHA-256 of its file
    p = doc.problem
    assert p.kernel == "gemm"
    assert p.kernel_sha256 == hashlib.sha256((shipped_kernels_dir() / "gemm.py").read_bytes()).hexdigest()
    assert p.shape == {"M": 256, "K": 256, "N": 256}
    assert p.formats["in0"] == p.formats["in1"] == p.formats["out"] == "bfloat16"
    assert (p.fidelity, p.fp32_acc, p.placements, p.enabled, p.activation, p.options) == (
        "hifi2",
        False,
        {},
        [],
        None,
        [],
    )
    assert doc.pins == {}
    assert doc.prediction.latency_us == round(n150.cycles_to_us(doc.prediction.latency_cycles), 3)
    assert datetime.fromisoformat(doc.created).utcoffset() is not None


def test_pins_are_recorded(n150, gemm):
    problem = gemm[0].problem
    (r,) = gemm[0].solve({"out_block_w": 2}, OPTIONS, candidates=[DRAM])
    doc = schedule_document(n150, HW, "gemm", problem, r, OPTIONS)
    assert doc.pins == {"out_block_w": 2} and doc.params["out_block_w"] == 2
    assert rebuild(parse_schedule_document(doc.to_json())).solution == r.solution


def test_a_candidate_without_a_schedule_cannot_be_exported(n150, gemm):
    # one column of cores, one N tile per core: N (8 tiles) is not covered
    (r,) = gemm[0].solve({"grid_x": 1, "per_core_N": 1}, OPTIONS, candidates=[DRAM])
    assert r.solution is None, r.status
    with pytest.raises(ScheduleFileError, match=re.escape(DRAM)):
        schedule_document(n150, HW, "gemm", gemm[0].problem, r, OPTIONS)


def test_no_noc_bound_round_trips(n150, gemm):
    session, _, docs = gemm
    with_noc = docs[DRAM]
    (r,) = Session(n150, session.problem, noc_bound=False).solve({}, OPTIONS, candidates=[DRAM])
    doc = schedule_document(n150, HW, "gemm", session.problem, r, OPTIONS, noc_bound=False)
    assert doc.solver.noc_bound is False
    parsed = parse_schedule_document(doc.to_json())
    assert parsed == doc
    assert rebuild(parsed).solution == r.solution
    # the NoC bound matters for this candidate, so the flag recorded is the one the rebuild uses
    assert r.solution.latency_cycles < with_noc.prediction.latency_cycles
    noc_latency = referee(session.schedule(DRAM), doc.params).solution.latency_cycles
    assert noc_latency != r.solution.latency_cycles
    message = _rebuild_error(_edit(doc, solver={"noc_bound": True}))
    assert message.startswith("prediction.latency_cycles:")
    assert f"{noc_latency:,}" in message and f"{r.solution.latency_cycles:,}" in message


# ------------------------------------------------------------------------------------- parse errors


def _mutated(doc: ScheduleDocument, change) -> str:
    raw = json.loads(doc.to_json())
    change(raw)
    return json.dumps(raw)


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda d: d["prediction"].pop("latency_cycles"), "prediction.latency_cycles"),
        (lambda d: d["prediction"].update(latency_cycles="fast"), "prediction.latency_cycles"),
        (lambda d: d["prediction"].update(latency_cycles=12.5), "prediction.latency_cycles"),
        (lambda d: d["params"].update(grid_x="eight"), "params.grid_x"),
        (lambda d: d["hardware"].pop("sha256"), "hardware.sha256"),
        (lambda d: d["solver"].update(noc_bound="maybe"), "solver.noc_bound"),
        (lambda d: d["problem"].update(shape=[256, 256, 256]), "problem.shape"),
        (lambda d: d.pop("candidate"), "candidate"),
        (lambda d: d["prediction"].update(latency_ns=3), "prediction.latency_ns"),  # unknown fields are refused
    ],
)
def test_missing_or_mistyped_field_is_named(dram_doc, change, field):
    with pytest.raises(ScheduleFileError) as info:
        parse_schedule_document(_mutated(dram_doc, change), "edited.json")
    message = str(info.value)
    assert message.startswith(f"edited.json: field {field}:"), message


def test_not_json_names_the_origin():
    with pytest.raises(ScheduleFileError, match=r"^my_schedule\.json: not JSON"):
        parse_schedule_document('{"schema_version": 1, ', "my_schedule.json")


def test_not_an_object_is_reported_at_the_top_level():
    with pytest.raises(ScheduleFileError, match=r"^doc\.json: field \(top level\)"):
        parse_schedule_document("[1, 2, 3]", "doc.json")


@pytest.mark.parametrize("version_value", [2, 0, "1"])
def test_wrong_schema_version_says_which_is_read(dram_doc, version_value):
    text = _mutated(dram_doc, lambda d: d.update(schema_version=version_value))
    with pytest.raises(ScheduleFileError) as info:
        parse_schedule_document(text, "future.json")
    message = str(info.value)
    assert message.startswith("future.json: schema_version"), message
    assert repr(version_value) in message and f"reads {SCHEDULE_SCHEMA_VERSION}" in message


def test_load_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nowhere" / "schedule.json"
    with pytest.raises(ScheduleFileError, match=re.escape(str(path))):
        load_schedule_document(path)


def test_load_bad_file_names_the_path(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{ not json")
    with pytest.raises(ScheduleFileError, match=re.escape(f"{path}: not JSON")):
        load_schedule_document(path)


def test_load_binary_file_names_the_path(tmp_path):
    """Regression: a file that is not UTF-8 used to raise a bare UnicodeDecodeError."""
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00\x81 not text")
    with pytest.raises(ScheduleFileError, match=re.escape(str(path))):
        load_schedule_document(path)


# ------------------------------------------------------------------------------------ rebuild errors


def test_changed_hardware_file(tmp_path, gemm):
    shipped = resolve_hardware_path(HW)
    path = tmp_path / "my_chip.yaml"
    shutil.copyfile(shipped, path)
    hw = load_hardware(path)
    problem = gemm[0].problem
    (r,) = Session(hw, problem).solve({}, OPTIONS, candidates=[DRAM])
    doc = parse_schedule_document(schedule_document(hw, str(path), "gemm", problem, r, OPTIONS).to_json())
    assert doc.hardware.source == str(path)
    assert rebuild(doc, hw_file=path).solution == r.solution

    def rewrite(text: str, bump_ns: int) -> None:
        path.write_text(text)
        # load_hardware caches by modification time: make sure it sees the new contents whatever the
        # file system's timestamp resolution
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + bump_ns))

    # comments and layout are not the specification: the hash is of the validated contents
    rewrite("# my copy of the n150\n" + shipped.read_text() + "\n# end\n", 1_000_000_000)
    assert rebuild(doc, hw_file=path).solution == r.solution

    text = path.read_text()
    edited = re.sub(r"^clock_ghz: 1\.0 ", "clock_ghz: 1.2 ", text, count=1, flags=re.MULTILINE)
    assert edited != text, "the n150 YAML no longer has a 'clock_ghz: 1.0' line"
    rewrite(edited, 2_000_000_000)
    assert load_hardware(path).clock_ghz == 1.2
    message = _rebuild_error(doc, hw_file=path)
    assert message.startswith("hardware:") and str(path) in message and "changed" in message, message

    path.unlink()
    message = _rebuild_error(doc, hw_file=path)
    assert message.startswith("hardware:") and str(path) in message, message


def test_changed_kernel_file(tmp_path, n150):
    path = tmp_path / "my_gemm.py"
    shutil.copyfile(shipped_kernels_dir() / "gemm.py", path)
    problem = make_problem(load_program(str(path)), SHAPE)
    (r,) = Session(n150, problem).solve({}, OPTIONS, candidates=[DRAM])
    doc = schedule_document(n150, HW, str(path), problem, r, OPTIONS)
    assert doc.problem.kernel == str(path)
    assert doc.problem.kernel_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert rebuild(doc, kernel_file=path).solution == r.solution
    path.write_text(path.read_text() + "\n# edited after the export\n")
    message = _rebuild_error(doc, kernel_file=path)
    assert message.startswith("problem.kernel:") and str(path) in message and "changed" in message, message


def test_a_document_never_opens_the_files_it_names(tmp_path, n150):
    """A kernel file named by a document is Python: rebuilding never runs it, even when its hash matches,
    unless the person running the tool names that file; a named hardware file is never opened either."""
    marker = tmp_path / "ran"
    path = tmp_path / "my_gemm.py"
    path.write_text(
        (shipped_kernels_dir() / "gemm.py").read_text()
        + f"\nimport pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    )
    problem = make_problem(load_program(str(path)), SHAPE)
    marker.unlink()
    (r,) = Session(n150, problem).solve({}, OPTIONS, candidates=[DRAM])
    doc = parse_schedule_document(schedule_document(n150, HW, str(path), problem, r, OPTIONS).to_json())
    message = _rebuild_error(doc)
    assert message.startswith("problem.kernel:") and "--kernel FILE" in message, message
    assert not marker.exists(), "rebuilding a document ran the kernel file it names"
    assert rebuild(doc, kernel_file=path).solution == r.solution and marker.exists()

    hw_path = tmp_path / "chip.yaml"
    shutil.copyfile(resolve_hardware_path(HW), hw_path)
    hw_doc = _edit(
        parse_schedule_document(schedule_document(n150, HW, "gemm", problem, r, OPTIONS).to_json()),
        hardware={"source": str(hw_path)},
    )
    message = _rebuild_error(hw_doc)
    assert message.startswith("hardware:") and "--hw FILE" in message, message


def test_params_at_an_illegal_point(dram_doc):
    params = dict(dram_doc.params)
    per_core_n = params["per_core_N"]
    assert per_core_n + 1 <= 8, params  # out_block_w's domain is 1..8
    message = _rebuild_error(_edit(dram_doc, params={**params, "out_block_w": per_core_n + 1}))
    assert message.startswith("params:"), message
    assert DRAM in message
    assert "divisibility[out_block_w|per_core_N]" in message, message


def test_params_outside_a_domain(dram_doc):
    message = _rebuild_error(_edit(dram_doc, params={**dram_doc.params, "grid_x": 99}))
    assert message.startswith("params:") and "grid_x" in message and "domain" in message, message


@pytest.mark.parametrize("missing", ["in0_block_w", "grid_y", "in1_buffer_depth"])
def test_params_with_a_missing_parameter(dram_doc, missing):
    params = {k: v for k, v in dram_doc.params.items() if k != missing}
    message = _rebuild_error(_edit(dram_doc, params=params))
    assert message == f"params: missing {missing}", message


def test_params_with_an_unknown_parameter(dram_doc):
    message = _rebuild_error(_edit(dram_doc, params={**dram_doc.params, "warp_count": 2}))
    assert message == "params: unknown warp_count", message


def test_a_pin_that_disagrees_with_its_parameter(dram_doc):
    value = dram_doc.params["out_block_w"]
    message = _rebuild_error(_edit(dram_doc, pins={"out_block_w": value + 6}))
    assert message.startswith("pins: out_block_w=") and f"params say {value}" in message, message


@pytest.mark.parametrize("name", ["Q@xy|in0=dram", "M@y,N@x|in0=dram,in1=mcast_x", ""])
def test_unknown_candidate(dram_doc, name):
    message = _rebuild_error(_edit(dram_doc, candidate=name))
    assert message.startswith("candidate:") and repr(name) in message, message


@pytest.mark.parametrize("delta", [1, -1000])
def test_tampered_latency(dram_doc, delta):
    true = dram_doc.prediction.latency_cycles
    message = _rebuild_error(_edit(dram_doc, prediction={"latency_cycles": true + delta}))
    assert message.startswith("prediction.latency_cycles:"), message
    assert f"predicts {true:,} cycles" in message and f"says {true + delta:,}" in message, message


def test_changed_problem_fields(dram_doc):
    message = _rebuild_error(_edit(dram_doc, problem={"fidelity": "hifi9"}))
    assert message.startswith("problem:") and "hifi9" in message, message
    message = _rebuild_error(_edit(dram_doc, problem={"shape": {"M": 256, "K": 256}}))
    assert message.startswith("problem:") and "N" in message, message
    # a different (legal) problem: the same parameters no longer give the recorded latency (this
    # schedule's steps wait on data movement, so fewer bytes per tile change it)
    formats = {**dram_doc.problem.formats, "in0": "bfloat8_b", "in1": "bfloat8_b"}
    message = _rebuild_error(_edit(dram_doc, problem={"formats": formats}))
    assert message.startswith("prediction.latency_cycles:"), message


def test_formats_without_the_output_tensor(dram_doc):
    """Regression: rebuild used to let a bare KeyError('out') escape."""
    formats = {k: v for k, v in dram_doc.problem.formats.items() if k != "out"}
    message = _rebuild_error(_edit(dram_doc, problem={"formats": formats}))
    assert message.startswith("problem.formats") and "'out'" in message, message


# ---------------------------------------------------------------------------------- FlashAttention


@pytest.fixture(scope="module")
def attention(n150):
    problem = make_problem(load_program("flash_attention"), FA_SHAPE, options={"causal"})
    results = Session(n150, problem).solve({}, OPTIONS)
    solved = [r for r in results if r.solution is not None]
    assert solved, [(r.candidate_name, r.status) for r in results]
    return problem, solved


def test_flash_attention_documents_round_trip(attention, n150):
    problem, solved = attention
    for r in solved:
        doc = schedule_document(n150, HW, "flash_attention", problem, r, OPTIONS)
        parsed = parse_schedule_document(doc.to_json())
        assert parsed == doc, r.candidate_name
        assert parsed.problem.options == ["causal"]
        assert parsed.problem.shape == {"B": 1, "H": 2, "Hkv": 2, "Sq": 512, "Skv": 512, "D": 64}
        assert (
            parsed.problem.kernel_sha256
            == hashlib.sha256((shipped_kernels_dir() / "flash_attention.py").read_bytes()).hexdigest()
        )
        assert {"q_chunk_size", "k_chunk_size"} <= set(parsed.params)
        built = rebuild(parsed)
        assert built.solution == r.solution, r.candidate_name
        assert built.problem.options == frozenset({"causal"})


def test_flash_attention_causal_option_is_part_of_the_document(attention, n150):
    """Without the mask the problem differs: its '|balanced' candidates (causal load balancing) do not
    exist, and every other candidate's latency changes at the same parameters."""
    problem, solved = attention
    balanced = [r for r in solved if r.candidate_name.endswith("|balanced")]
    assert balanced and len(balanced) < len(solved), [r.candidate_name for r in solved]
    for r in solved:
        doc = schedule_document(n150, HW, "flash_attention", problem, r, OPTIONS)
        message = _rebuild_error(_edit(doc, problem={"options": []}))
        expected = "candidate:" if r in balanced else "prediction.latency_cycles:"
        assert message.startswith(expected), (r.candidate_name, message)
