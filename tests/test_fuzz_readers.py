"""Fuzzing the readers of user input: a clean error of the reader's own class or a result, never a traceback.

For each reader, hypothesis feeds random input and targeted mutations of a valid one:

* shape strings (``make_problem``): random text and KEY=VALUE lists with odd keys and values (floats,
  signs, 10**400, other scripts' digits);
* pins (``parse_pins``): the same for NAME=VALUE;
* hardware YAML (``load_hardware`` on files in tmp_path): random bytes and text, and the shipped n150 file
  with one value replaced (NaN, infinities, -1, 0, 1e308, 10**400, ...) or one key line duplicated;
* schedule JSON (``parse_schedule_document`` / ``load_schedule_document``): random bytes, and a real exported
  document with one value replaced (NaN/Infinity literals, overflowing numbers, negatives, wrong types).

Each test runs a bounded number of examples (no deadline: a slow machine must not fail them).
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from loom_explorer.export.schedule_json import (
    ScheduleDocument,
    ScheduleFileError,
    load_schedule_document,
    parse_schedule_document,
)
from loom_explorer.hardware import HardwareError, load_hardware
from loom_explorer.hardware.load import shipped_hardware_dir
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.problem import ProblemError, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.pins import PinError, parse_pins

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
MAX_INT64 = (1 << 63) - 1
GEMM = load_program("gemm")

# odd numbers as text: what a user (or an attacker) may type where a whole number is expected
ODD_NUMBERS = [
    "nan",
    "inf",
    "-inf",
    "NaN",
    "Infinity",
    "-1",
    "0",
    "-0",
    "1.5",
    "1e3",
    "1e308",
    "4096.0",
    "1_024",
    "0x10",
    "١٢",
    "+7",
    " 12 ",
    "",
    "=",
    "1" + "0" * 400,
    "9" * 5000,
    str(MAX_INT64),
    str(MAX_INT64 + 1),
    "\x00",
    "12\n",
]
numbers = st.one_of(st.sampled_from(ODD_NUMBERS), st.integers(-(10**30), 10**30).map(str), st.text(max_size=8))


# ---------------------------------------------------------------------------------------------- shapes


def _shape_entry(keys: list[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda k, v, sep: f"{k}{sep}{v}",
        st.one_of(st.sampled_from(keys), st.text(max_size=3)),
        numbers,
        st.sampled_from(["=", "=", " = ", ":", ""]),
    )


def _full_shape() -> st.SearchStrategy[str]:
    """Every dimension of gemm given, one of them (or more) odd."""
    return st.builds(lambda m, n, k: f"M={m},N={n},K={k}", *(st.one_of(st.just("64"), numbers) for _ in range(3)))


@FUZZ
@given(
    st.one_of(
        st.text(max_size=60), st.lists(_shape_entry(["M", "N", "K", "m"]), max_size=5).map(",".join), _full_shape()
    )
)
@example("M=1" + "0" * 400 + ",N=1,K=1")
@example("M=-5,N=1,K=1")
@example("M=1_024,N=1,K=1")
@example("M=1,N=" + "9" * 5000 + ",K=1")
@example("")
def test_shape_strings(text):
    try:
        problem = make_problem(GEMM, text)
    except ProblemError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert [k for k, _ in problem.shape] == [d.name for d in GEMM.dims]
    assert all(type(v) is int and 1 <= v <= MAX_INT64 for _, v in problem.shape)


# ------------------------------------------------------------------------------------------------ pins


@FUZZ
@given(
    st.lists(
        st.one_of(
            st.text(max_size=12),
            st.builds(lambda k, v: f"{k}={v}", st.sampled_from(["grid_x", "in0_block_w", " ", ""]), numbers),
        ),
        max_size=4,
    )
)
@example(["grid_x=1" + "0" * 400])
@example(["grid_x=-1"])
@example(["grid_x=" + "9" * 5000])
def test_pins(items):
    try:
        pins = parse_pins(items)
    except PinError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert all(name and type(v) is int and 0 <= v <= MAX_INT64 for name, v in pins.items())


# -------------------------------------------------------------------------------------------- hardware

N150 = (shipped_hardware_dir() / "wormhole_n150.yaml").read_text()
N150_LINES = N150.splitlines()


def _number_line(line: str) -> bool:
    m = re.match(r"^\s*\w+:\s+([^\s\[{#][^#]*?)(\s+#.*)?$", line)
    value = yaml.safe_load(m.group(1)) if m else None
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# lines "key: number" (the mutation target), and every "key:" line
SCALAR_LINES = [i for i, x in enumerate(N150_LINES) if _number_line(x)]
KEY_LINES = [i for i, x in enumerate(N150_LINES) if re.match(r"^\s*\w+:", x)]
# values that no field of the schema accepts: not finite, or far beyond every bound
NEVER_VALID = [".nan", ".NaN", ".inf", "-.inf", "nan", "inf", "1e308", "-1e308", "1" + "0" * 400, "1" + "0" * 5000]
SOMETIMES_VALID = [
    "-1",
    "0",
    "0.0",
    "1.5",
    "-0.5",
    "true",
    "yes",
    "null",
    "~",
    "''",
    "[]",
    "{}",
    "'x'",
    "&a 1",
    "*a",
    "!!binary AAAA",
    "2001-13-01",
    "0x10",
    "0o17",
    "1_000",
    "4294967297",
    "68719476737",
]
_names = itertools.count()


def _hw_file(folder: Path, data: bytes | str) -> Path:
    """A new file for every example: load_hardware caches by path and modification time."""
    path = folder / f"hw_{next(_names)}.yaml"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return path


def _load(path: Path) -> HardwareSpec | str:
    try:
        return load_hardware(path)
    except HardwareError as exc:
        assert str(exc)
        return str(exc)


def _replaced(line_index: int, value: str) -> str:
    lines = list(N150_LINES)
    m = re.match(r"^(\s*\w+:\s+)([^#]*?)(\s+#.*)?$", lines[line_index])
    assert m, lines[line_index]
    lines[line_index] = m.group(1) + value + (m.group(3) or "")
    return "\n".join(lines) + "\n"


@FUZZ
@given(data=st.one_of(st.binary(max_size=300), st.text(max_size=300)))
@example(data=b"\x89PNG\r\n\x1a\n\x00\x00")
@example(data="x: 2001-13-01\n")
@example(data="")
def test_hardware_random_input(tmp_path, data):
    _load(_hw_file(tmp_path, data))


@FUZZ
@given(line=st.sampled_from(SCALAR_LINES), value=st.sampled_from(NEVER_VALID + SOMETIMES_VALID))
def test_hardware_one_value_replaced(tmp_path, line, value):
    path = _hw_file(tmp_path, _replaced(line, value))
    result = _load(path)
    if value in NEVER_VALID:
        assert isinstance(result, str), f"line {line + 1} = {value} was accepted"
        assert f"{path.resolve()}:{line + 1}:" in result, result  # the line at fault is named


@FUZZ
@given(line=st.sampled_from(KEY_LINES))
def test_hardware_duplicated_key(tmp_path, line):
    lines = list(N150_LINES)
    lines.insert(line + 1, lines[line])
    path = _hw_file(tmp_path, "\n".join(lines) + "\n")
    result = _load(path)
    assert isinstance(result, str) and "duplicate key" in result
    assert f"{path.resolve()}:{line + 2}:" in result


# ------------------------------------------------------------------------------------- schedule JSON


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> str:
    """A real schedule document, exported by the CLI (one small CP-SAT solve)."""
    from loom_explorer import cli

    path = tmp_path_factory.mktemp("export") / "schedule.json"
    assert (
        cli.main(
            [
                "export",
                "gemm",
                "--hw",
                "wormhole_n150",
                "--shape",
                "M=256,K=256,N=256",
                "--format",
                "json",
                "-o",
                str(path),
                "--time-limit",
                "10",
                "--candidate",
                "M@y,N@x|in0=dram,in1=dram",
            ]
        )
        == 0
    )
    return path.read_text()


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


MARK = "__replaced__"
# literal JSON text put in place of one value; the first five are never valid anywhere
JSON_NEVER_VALID = ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400]
JSON_SOMETIMES_VALID = ["-1", "0", "1.5", "-0.0", '"7"', "true", "null", "[]", "{}", '"\\u0000"', "1" + "0" * 19]


def _parse(text: str) -> ScheduleDocument | str:
    try:
        return parse_schedule_document(text, "fuzzed.json")
    except ScheduleFileError as exc:
        assert str(exc).startswith("fuzzed.json")
        return str(exc)


@FUZZ
@given(data=st.data(), literal=st.sampled_from(JSON_NEVER_VALID + JSON_SOMETIMES_VALID))
def test_schedule_json_one_value_replaced(exported, data, literal):
    assert isinstance(_parse(exported), ScheduleDocument)  # the mutations start from a valid document
    doc = json.loads(exported)
    path = data.draw(st.sampled_from([p for p in _paths(doc) if p]))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = MARK
    result = _parse(json.dumps(doc, indent=1).replace(f'"{MARK}"', literal))
    if literal in JSON_NEVER_VALID:
        assert isinstance(result, str), f"{path} = {literal} was accepted"
        assert ".".join(map(str, path)) in result, result  # the field at fault is named


@FUZZ
@given(
    data=st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200).map(str.encode),
        st.sampled_from([b"[" * 100_000, b"1" * 5000, b"{" * 3000]),
    )
)
@example(data=b"[" * 100_000)  # Python's json recurses: RecursionError
@example(data=b"1" * 5000)  # int() of more than 4300 digits: ValueError, not JSONDecodeError
def test_schedule_json_random_files(tmp_path, data):
    path = tmp_path / "random.json"
    path.write_bytes(data)
    try:
        load_schedule_document(path)
    except ScheduleFileError as exc:
        assert str(path) in str(exc)
