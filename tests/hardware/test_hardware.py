"""Hardware descriptions: the shipped ``hw/*.yaml`` files, a user's own file, and the error messages.

Three groups of checks:

* physical invariants of every shipped file (L1, grid, DRAM endpoints, bandwidths, tile sizes), plus the
  published facts of the four cards we ship (core counts, DRAM channels, spec bandwidth);
* the comment discipline of the raw YAML text: every number carries its source (rule in
  ``test_every_number_has_a_source_comment``);
* that a user can write a description of a chip we do not ship, and that bad files fail with a
  ``HardwareError`` naming the file and the field.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest
import yaml

from loom_explorer.accuracy.op_mapping import published_kernels
from loom_explorer.data import PublishedDataMissing, published_path
from loom_explorer.hardware import DataFormat, Fidelity, HardwareError, list_hardware, load_hardware
from loom_explorer.hardware.load import shipped_hardware_dir

SHIPPED = list_hardware()
CONSTANTS = published_kernels()[0].constants  # what `calibrate` fits by default (the default kernel's)

# Published facts of the cards we ship (docs.tenstorrent.com specification pages; tt-metal's core and soc
# descriptors, as each YAML file cites them). A file added later for
# another card is still checked against every general invariant below, just not against this table.
KNOWN_CARDS = {
    # name: (arch, compute cores, DRAM channels, spec DRAM GB/s per chip, NoC columns holding DRAM tiles)
    "wormhole_n150": ("wormhole_b0", 8 * 8, 12, 288, {0, 5}),
    "wormhole_n300": ("wormhole_b0", 8 * 7, 12, 288, {0, 5}),
    "blackhole_p150a": ("blackhole", 13 * 10, 8, 512, {0, 9}),
    "blackhole_p100a": ("blackhole", 11 * 10, 7, 448, {0, 9}),
}

TILE_BYTES = {
    DataFormat.bfloat16: 2048,
    DataFormat.bfloat8_b: 1088,
    DataFormat.bfloat4_b: 576,
    DataFormat.float32: 4096,
}


def test_the_four_cards_are_shipped():
    assert set(KNOWN_CARDS) <= set(SHIPPED)


# --------------------------------------------------------------------------------------------------------
# Physical invariants of every shipped file


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_file_loads_by_name_and_by_path(name):
    spec = load_hardware(name)
    assert spec.name == name, "the name field must match the file name"
    assert load_hardware(shipped_hardware_dir() / f"{name}.yaml") == spec


@pytest.mark.parametrize("name", SHIPPED)
def test_l1(name):
    spec = load_hardware(name)
    assert 0 < spec.l1.usable_bytes <= spec.l1.total_bytes
    # the reserved region (firmware, mailboxes) is small: under 16 % of L1 on every chip we know
    assert spec.l1.usable_bytes >= 0.84 * spec.l1.total_bytes


@pytest.mark.parametrize("name", SHIPPED)
def test_grid(name):
    spec = load_hardware(name)
    g = spec.grid
    assert g.cores == g.columns * g.rows == len(g.noc_x) * len(g.noc_y)
    assert g.noc_x == sorted(g.noc_x), "compute columns are listed left to right"
    assert g.noc_y == sorted(g.noc_y), "compute rows are listed top to bottom"
    assert all(0 <= x < g.noc_width for x in g.noc_x)
    assert all(0 <= y < g.noc_height for y in g.noc_y)
    assert g.columns < g.noc_width and g.rows < g.noc_height, "the NoC grid also holds DRAM/Ethernet/PCIe tiles"
    if name in KNOWN_CARDS:
        arch, cores, *_ = KNOWN_CARDS[name]
        assert spec.arch == arch
        assert g.cores == cores


@pytest.mark.parametrize("name", SHIPPED)
def test_dram_endpoints(name):
    spec = load_hardware(name)
    g, d = spec.grid, spec.dram
    compute = {(x, y) for x in g.noc_x for y in g.noc_y}
    channels = {e.channel for e in d.endpoints}
    assert channels == set(range(d.channels)), "every channel has an endpoint, and no endpoint names another"
    triples = [(e.channel, e.x, e.y) for e in d.endpoints]
    assert len(triples) == len(set(triples)), "one DramEndpoint per (channel, x, y)"
    for e in d.endpoints:
        assert 0 <= e.x < g.noc_width and 0 <= e.y < g.noc_height, e
        assert (e.x, e.y) not in compute, f"DRAM endpoint {e} sits on a compute core"
    if name in KNOWN_CARDS:
        _, _, n_channels, _, dram_columns = KNOWN_CARDS[name]
        assert d.channels == n_channels
        assert {e.x for e in d.endpoints} <= dram_columns
        assert not dram_columns & set(g.noc_x), "no compute core shares a NoC column with the DRAM tiles"
        # every channel is reachable through 3 NoC endpoints on these chips (soc descriptors' `dram:` lists)
        for c in range(d.channels):
            assert sum(e.channel == c for e in d.endpoints) == 3
        # the first endpoint of each channel is tt-metal's preferred worker endpoint: distinct per channel
        first: dict[int, tuple[int, int]] = {}
        for e in d.endpoints:
            first.setdefault(e.channel, (e.x, e.y))
        assert len(set(first.values())) == d.channels


@pytest.mark.parametrize("name", SHIPPED)
def test_dram_bandwidth(name):
    spec = load_hardware(name)
    d = spec.dram
    peak = d.channels * d.channel_peak_bytes_per_cycle
    assert d.chip_read_bytes_per_cycle <= peak, "measured chip bandwidth cannot exceed channels x peak"
    assert d.core_read_bytes_per_cycle <= d.chip_read_bytes_per_cycle
    # one core's traffic goes through its one NoC link
    assert d.core_read_bytes_per_cycle <= spec.noc.link_bytes_per_cycle
    assert d.core_write_bytes_per_cycle <= spec.noc.link_bytes_per_cycle
    assert d.read_latency_cycles > 0 and d.write_latency_cycles > 0
    if name in KNOWN_CARDS:
        spec_gbps = KNOWN_CARDS[name][3]
        # bytes/cycle x GHz = GB/s: the per-channel figure must reproduce the spec sheet within 1 %
        assert math.isclose(peak * spec.clock_ghz, spec_gbps, rel_tol=0.01)
        assert d.channel_bytes >= 2**30


@pytest.mark.parametrize("name", SHIPPED)
def test_noc(name):
    n = load_hardware(name).noc
    assert len(n.routing) == n.count
    assert n.multicast_bytes_per_cycle <= n.unicast_bytes_per_cycle <= n.link_bytes_per_cycle
    assert n.max_packet_bytes % n.link_bytes_per_cycle == 0, "a packet is a whole number of flits"
    assert n.transaction_latency_cycles >= n.hop_latency_cycles


@pytest.mark.parametrize("name", SHIPPED)
def test_compute_and_tiles(name):
    spec = load_hardware(name)
    c = spec.compute
    cycles = [c.matmul_tile_cycles[f] for f in (Fidelity.lofi, Fidelity.hifi2, Fidelity.hifi3, Fidelity.hifi4)]
    assert cycles == sorted(cycles) and len(set(cycles)) == 4, "more fidelity phases cost more cycles"
    assert c.dst_tiles_fp32_acc <= c.dst_tiles
    assert spec.tile_bytes == TILE_BYTES


# --------------------------------------------------------------------------------------------------------
# Comment discipline of the raw text

_KEY_LINE = re.compile(r"^(?P<indent>\s*)(?P<key>[^\s#:-][^:#]*?):(?:\s+(?P<value>.*))?$")
_ITEM_LINE = re.compile(r"^(?P<indent>\s*)-\s+(?P<value>.*)$")
_ESTIMATE = re.compile(r"\bestimated?\b", re.IGNORECASE)  # the word, not a path such as noc_estimator/
# a file of the published data folder cited in a comment (``FILE``, with no suffix, is the header's placeholder)
_PUBLISHED = re.compile(r"loom_explorer/data/published/(?P<name>[\w.-]+\.\w+)")
_UNCALIBRATED = re.compile(r"\buncalibrated\b", re.IGNORECASE)


def _split_comment(line: str) -> tuple[str, str | None]:
    """Split ``line`` into (code, comment); a '#' starts a comment outside quotes, at line start or after a blank."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), None


def _holds_number(text: str) -> bool:
    """Does this YAML value hold a number (int or float, not bool), at any depth of a flow collection?"""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return bool(re.search(r"\d", text))  # cannot tell: be strict

    def walk(v) -> bool:
        if isinstance(v, bool):
            return False
        if isinstance(v, (int, float)):
            return True
        if isinstance(v, dict):
            return any(walk(k) or walk(x) for k, x in v.items())
        if isinstance(v, list):
            return any(walk(x) for x in v)
        return False

    return walk(value)


def comment_violations(text: str) -> list[str]:
    """Lines of a hardware YAML whose value holds a number but that carry no source comment.

    The rule:
    * a ``key: value`` line whose value (parsed as YAML) holds a number must end in a non-empty ``# comment``;
      a plain string value (``name: wormhole_n150``, a description mentioning "8x8") is not a number;
    * a block list item (``- {channel: 0, x: 0, y: 11}``) may instead rely on the comment of its parent key,
      the nearest line above it that is less indented and is a ``key:`` line with no value of its own
      (``endpoints:  # source``); one source then covers the whole list. Mapping children (``bfloat16: 2048``
      under ``tile_bytes:``) get no such allowance: each carries its own comment;
    * a comment that calls the number an estimate must name the file of ``loom_explorer/data/published`` it
      was (or can be) fitted to, or say "uncalibrated";
    * every file of ``loom_explorer/data/published`` a comment cites (header comments included) must exist.
    """
    bad = []
    parents: list[tuple[int, bool]] = []  # (indent, has comment) of the enclosing value-less key lines
    for lineno, raw in enumerate(text.splitlines(), 1):
        code, comment = _split_comment(raw)
        for cited in _PUBLISHED.finditer(comment or ""):
            try:
                published_path(cited["name"])
            except PublishedDataMissing as exc:
                bad.append(f"line {lineno}: cites a published data file that is not there: {exc}")
        if not code.strip():
            continue
        indent = len(code) - len(code.lstrip())
        item = _ITEM_LINE.match(code)
        key = None if item else _KEY_LINE.match(code)
        if item is None and key is None:
            bad.append(f"line {lineno}: cannot read {raw!r}")
            continue
        while parents and parents[-1][0] >= indent and not (item and parents[-1][0] == indent):
            parents.pop()
        value = (item or key).group("value") or ""
        if key is not None and not value:
            parents.append((indent, bool(comment)))
        if (
            comment is not None
            and _ESTIMATE.search(comment)
            and not _PUBLISHED.search(comment)
            and not _UNCALIBRATED.search(comment)
        ):
            bad.append(
                f"line {lineno}: an estimate must name the published data file it was fitted to, "
                f"or say 'uncalibrated': {raw.strip()!r}"
            )
        if not value or not _holds_number(value):
            continue
        if comment:
            continue
        if item is not None and parents and parents[-1][1]:
            continue
        bad.append(f"line {lineno}: number without a source comment: {raw.strip()!r}")
    return bad


@pytest.mark.parametrize("name", SHIPPED)
def test_every_number_has_a_source_comment(name):
    text = (shipped_hardware_dir() / f"{name}.yaml").read_text()
    assert comment_violations(text) == []


@pytest.mark.parametrize("name", SHIPPED)
def test_the_fitted_estimates_name_the_data_they_are_fitted_to(name):
    """Every estimate ``loom-explorer calibrate`` fits names the measurements it fits it to, which ship here."""
    fitted_keys = {constant.split(".")[1] for constant in CONSTANTS}
    named = []
    for raw in (shipped_hardware_dir() / f"{name}.yaml").read_text().splitlines():
        code, comment = _split_comment(raw)
        key = _KEY_LINE.match(code)
        if key is None or key["key"].strip() not in fitted_keys or not _ESTIMATE.search(comment or ""):
            continue
        cited = [m["name"] for m in _PUBLISHED.finditer(comment or "")]
        assert "gemm_flops_calibration.csv" in cited, f"{name}: {raw.strip()!r}"
        named.append(key["key"].strip())
    # the three constants that are estimates on every card (the others calibrate fits are sourced figures)
    assert {
        "subblock_overhead_cycles",
        "tile_pack_cycles",
        "multicast_handshake_cycles",
    } <= set(named)


def test_comment_rule_itself():
    ok = (
        "name: chip_n150\n"
        "description: an 8x8 grid\n"
        "clock_ghz: 1.0   # spec sheet\n"
        "dram:\n"
        "  endpoints:     # soc descriptor\n"
        "    - {channel: 0, x: 0, y: 0}\n"
        "  channels: 12   # spec\n"
        "  note: 'has # inside quotes'\n"
        "kernel_launch_cycles: 4000   # estimate, fitted to loom_explorer/data/published/gemm_flops_calibration.csv\n"
        "eltwise_tile_cycles: 32   # estimate, uncalibrated\n"
        "# FILE of loom_explorer/data/published/FILE: a placeholder, not a citation\n"
    )
    assert comment_violations(ok) == []
    missing = "clock_ghz: 1.0\n"
    assert len(comment_violations(missing)) == 1
    item_without_parent_comment = "dram:\n  endpoints:\n    - {channel: 0, x: 0, y: 0}\n"
    assert len(comment_violations(item_without_parent_comment)) == 1
    child_of_commented_mapping = "tile_bytes:   # source\n  bfloat16: 2048\n"
    assert len(comment_violations(child_of_commented_mapping)) == 1
    flow_list = "grid:\n  noc_x: [1, 2, 3]\n"
    assert len(comment_violations(flow_list)) == 1
    hash_in_quotes_is_no_comment = "clock_ghz: 1.0 #source\nx: 'a # b'\ny: [3, '#']\n"
    assert len(comment_violations(hash_in_quotes_is_no_comment)) == 1
    estimate_without_data = "kernel_launch_cycles: 4000   # estimate\n"
    assert len(comment_violations(estimate_without_data)) == 1
    gone = "loom_explorer/data/published/" + "gone.csv"  # (spelt in two so that no repository check reads it)
    missing_data_file = f"kernel_launch_cycles: 4000   # estimate, fitted to {gone}\n"
    assert [v for v in comment_violations(missing_data_file) if "'gone.csv' is missing" in v] != []
    missing_data_file_in_header = f"# see {gone}\nclock_ghz: 1.0   # spec\n"
    assert len(comment_violations(missing_data_file_in_header)) == 1
    path_named_estimator = "latency: 293   # tt-metal@.../noc_estimator/noc_latencies.yaml\n"
    assert comment_violations(path_named_estimator) == []


# --------------------------------------------------------------------------------------------------------
# A user's own file


def _n150_dict() -> dict:
    return load_hardware("wormhole_n150").model_dump(mode="json")


def _write(path: Path, data) -> Path:
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def _mesh_16x16() -> dict:
    d = _n150_dict()
    d["name"] = "my_mesh_16x16"
    d["description"] = "hypothetical 16x16 mesh with a DRAM column on the left"
    d["grid"] = {
        "columns": 16,
        "rows": 16,
        "noc_x": list(range(1, 17)),
        "noc_y": list(range(1, 17)),
        "noc_width": 17,
        "noc_height": 17,
    }
    d["noc"]["topology"] = "mesh"
    channels = d["dram"]["channels"]
    d["dram"]["endpoints"] = [{"channel": c, "x": 0, "y": 1 + c} for c in range(channels)]
    return d


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ""])
def test_user_file_16x16_mesh(tmp_path, suffix):
    path = _write(tmp_path / f"my_mesh{suffix}", _mesh_16x16())
    for arg in (path, str(path)):
        spec = load_hardware(arg)
        assert spec.name == "my_mesh_16x16"
        assert (spec.grid.columns, spec.grid.rows, spec.grid.cores) == (16, 16, 256)
        assert spec.noc.topology == "mesh"
        assert {(e.x, e.y) for e in spec.dram.endpoints}.isdisjoint(
            {(x, y) for x in spec.grid.noc_x for y in spec.grid.noc_y}
        )
        assert spec.tile_bytes == TILE_BYTES


def test_user_file_reloads_after_edit(tmp_path):
    d = _mesh_16x16()
    path = _write(tmp_path / "edited.yaml", d)
    assert load_hardware(path).clock_ghz == 1.0
    d["clock_ghz"] = 1.2
    _write(path, d)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # coarse file-system clocks
    assert load_hardware(path).clock_ghz == 1.2


def test_user_file_endpoint_on_a_compute_core(tmp_path):
    d = _mesh_16x16()
    d["dram"]["endpoints"][0] = {"channel": 0, "x": 3, "y": 4}
    path = _write(tmp_path / "bad_endpoint.yaml", d)
    with pytest.raises(HardwareError) as ei:
        load_hardware(path)
    msg = str(ei.value)
    assert str(path.resolve()) in msg
    assert "(3, 4)" in msg and "compute core" in msg


def test_user_file_grid_lists_disagree(tmp_path):
    d = _mesh_16x16()
    d["grid"]["noc_x"] = d["grid"]["noc_x"][:-1]
    path = _write(tmp_path / "bad_grid.yaml", d)
    with pytest.raises(HardwareError) as ei:
        load_hardware(path)
    msg = str(ei.value)
    assert str(path.resolve()) in msg and "grid" in msg and "noc_x" in msg


# --------------------------------------------------------------------------------------------------------
# Error messages: each names the file and the field


def _error(arg) -> str:
    with pytest.raises(HardwareError) as ei:
        load_hardware(arg)
    return str(ei.value)


def test_malformed_yaml(tmp_path):
    path = _write(tmp_path / "malformed.yaml", "grid: [1, 2\ndram: {channels: 12\n")
    msg = _error(path)
    assert msg.startswith(f"{path.resolve()}:2:5: malformed YAML")  # FILE:LINE:COLUMN of the problem
    assert "\n" not in msg


def test_not_a_mapping(tmp_path):
    path = _write(tmp_path / "list.yaml", "- 1\n- 2\n")
    msg = _error(path)
    assert str(path.resolve()) in msg and "mapping" in msg


def test_missing_field(tmp_path):
    d = _n150_dict()
    del d["dram"]["channels"]
    path = _write(tmp_path / "missing.yaml", d)
    msg = _error(path)
    assert str(path.resolve()) in msg
    assert "dram.channels" in msg
    assert "required" in msg.lower()


def test_wrong_type(tmp_path):
    d = _n150_dict()
    d["dram"]["channels"] = "twelve"
    path = _write(tmp_path / "wrong_type.yaml", d)
    msg = _error(path)
    assert str(path.resolve()) in msg
    assert "dram.channels" in msg
    assert "integer" in msg


def test_wrong_type_inside_a_list(tmp_path):
    d = _n150_dict()
    d["dram"]["endpoints"][3]["x"] = "left"
    path = _write(tmp_path / "wrong_type_list.yaml", d)
    msg = _error(path)
    assert str(path.resolve()) in msg
    assert "dram.endpoints.3.x" in msg


def test_extra_unknown_field(tmp_path):
    d = _n150_dict()
    d["dram"]["bandwith_typo"] = 288
    path = _write(tmp_path / "extra.yaml", d)
    msg = _error(path)
    assert str(path.resolve()) in msg
    assert "dram.bandwith_typo" in msg


def test_several_errors_are_all_reported(tmp_path):
    d = _n150_dict()
    del d["clock_ghz"]
    d["l1"]["total_bytes"] = -1
    path = _write(tmp_path / "two_errors.yaml", d)
    msg = _error(path)
    assert "clock_ghz" in msg and "l1.total_bytes" in msg


def test_unknown_hardware_name():
    msg = _error("wormhole_n999")
    assert "wormhole_n999" in msg
    for name in SHIPPED:  # the message lists what is shipped
        assert name in msg


def test_nonexistent_yaml_path(tmp_path):
    path = tmp_path / "no_such_chip.yaml"
    msg = _error(path)
    assert str(path) in msg and "does not exist" in msg
    msg = _error(str(tmp_path / "no_such_chip.yml"))
    assert "no_such_chip.yml" in msg


def test_hardware_error_is_a_value_error():
    assert issubclass(HardwareError, ValueError)


# --------------------------------------------------------------------------------------------------------
# Strict reading: every number checked, one line per problem at FILE:LINE:COLUMN


_N150_TEXT = (shipped_hardware_dir() / "wormhole_n150.yaml").read_text()


def _edited(tmp_path: Path, key: str, value: str, name: str = "edited.yaml") -> tuple[Path, int, int]:
    """The shipped n150 file with the value of the first ``key:`` line replaced; (path, line, column) of it."""
    lines = _N150_TEXT.splitlines()
    for i, line in enumerate(lines):
        m = re.match(rf"^(\s*{key}:\s+)(\S+)(.*)$", line)
        if m:
            lines[i] = m.group(1) + value + m.group(3)
            path = tmp_path / name
            path.write_text("\n".join(lines) + "\n")
            return path, i + 1, len(m.group(1)) + 1
    raise AssertionError(f"no {key} line")


@pytest.mark.parametrize(
    "key, value, why",
    [
        ("clock_ghz", "1e308", "less than or equal to 1000"),
        ("clock_ghz", ".nan", "finite number"),
        ("clock_ghz", ".inf", "finite number"),
        ("clock_ghz", "nan", "finite number"),
        ("clock_ghz", "0", "greater than or equal to 0.001"),
        ("clock_ghz", "-1.0", "greater than or equal to 0.001"),
        ("link_bytes_per_cycle", "-.inf", "finite number"),
        ("link_bytes_per_cycle", "0.0001", "greater than or equal to 0.001"),
        ("link_bytes_per_cycle", "1e300", "less than or equal to"),
        ("hop_latency_cycles", "-1", "greater than or equal to 0"),
        ("kernel_launch_cycles", "1" + "0" * 30, "less than or equal to 4294967296"),
        ("kernel_launch_cycles", "4294967297", "less than or equal to 4294967296"),
        ("total_bytes", "0", "greater than 0"),
        ("channel_bytes", "1000000000000000000000000", "less than or equal to 68719476736"),
        ("noc_width", "1000000000000", "less than or equal to 64"),
        ("dst_tiles", "yes", "is a boolean"),
        ("bfloat16", "-2048", "greater than 0"),
    ],
)
def test_bad_number_is_refused_at_its_line_and_column(tmp_path, key, value, why):
    path, line, column = _edited(tmp_path, key, value)
    msg = _error(path)
    assert msg.startswith(f"{path.resolve()}:{line}:{column}: field "), msg
    assert key in msg.splitlines()[0] and why in msg, msg


def test_every_problem_is_one_line_at_its_own_position(tmp_path):
    path, line1, _ = _edited(tmp_path, "clock_ghz", ".nan")
    text = re.sub(r"(?m)^(  hop_latency_cycles:\s+)\d+", r"\g<1>-9", path.read_text())
    path.write_text(text)
    line2 = next(i for i, x in enumerate(text.splitlines(), 1) if "hop_latency_cycles:" in x)
    lines = _error(path).splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{path.resolve()}:{line1}:") and "clock_ghz" in lines[0]
    assert lines[1].startswith(f"{path.resolve()}:{line2}:") and "noc.hop_latency_cycles" in lines[1]


@pytest.mark.parametrize(
    "text, line, key",
    [
        ("name: a\nname: b\n", 2, "name"),
        ("grid:\n  rows: 8\n  columns: 8\n  rows: 9\n", 4, "rows"),
        ("tile_bytes: {bfloat16: 2048, bfloat16: 1}\n", 1, "bfloat16"),
    ],
)
def test_duplicate_key_is_an_error(tmp_path, text, line, key):
    path = _write(tmp_path / "dup.yaml", text)
    msg = _error(path)
    assert msg.startswith(f"{path.resolve()}:{line}:") and f"duplicate key {key!r}" in msg, msg


def test_duplicate_key_in_a_shipped_file_copy(tmp_path):
    lines = _N150_TEXT.splitlines()
    i = next(i for i, x in enumerate(lines) if x.startswith("clock_ghz:"))
    path = _write(tmp_path / "dup.yaml", "\n".join([*lines, "clock_ghz: 2.0"]) + "\n")
    msg = _error(path)
    assert msg == f"{path.resolve()}:{len(lines) + 1}:1: duplicate key 'clock_ghz' (first given at line {i + 1})"


@pytest.mark.parametrize(
    "data, what",
    [
        (bytes(range(256)), "a binary file"),
        (b"\x7fELF\x02\x01\x01\x00\x00", "a binary file"),
        (b"name: caf\xe9\n", "not UTF-8 text"),
        (b"\xff\xfe", "not UTF-8 text"),
    ],
    ids=["all-bytes", "elf", "latin-1", "utf-16-bom"],
)
def test_binary_or_non_utf8_file_is_refused_in_one_line(tmp_path, data, what):
    path = tmp_path / "binary.yaml"
    path.write_bytes(data)
    msg = _error(path)
    assert msg.startswith(str(path.resolve())) and what in msg and "\n" not in msg


@pytest.mark.parametrize(
    "text, what",
    [
        ("", "empty file"),
        ("x: 2001-13-01\n", "malformed YAML"),  # a timestamp PyYAML cannot build raises ValueError
        ("[" * 5000, "malformed YAML"),
        ("x: 1" + "0" * 5000 + "\n", "1:4: malformed YAML: an integer of 5001 characters is too large"),
        ("a: !!python/object:os.system {}\n", "malformed YAML"),
        ("? [1, 2]\n: 3\n", "plain value"),
    ],
    ids=["empty", "timestamp", "nested", "5001-digits", "python-tag", "list-key"],
)
def test_odd_yaml_is_refused_in_one_line(tmp_path, text, what):
    path = _write(tmp_path / "odd.yaml", text)
    msg = _error(path)
    assert str(path.resolve()) in msg and what in msg and "\n" not in msg, msg


def test_a_folder_named_yaml_is_not_a_file(tmp_path):
    (tmp_path / "dir.yaml").mkdir()
    assert "is not a regular file" in _error(tmp_path / "dir.yaml")


def test_bounds_keep_microseconds_finite():
    """The clock bound is what keeps cycles_to_us finite and nonzero (clock_ghz 1e308 divided to 0)."""
    from loom_explorer.hardware.schema import MAX_CLOCK_GHZ, MIN_CLOCK_GHZ

    hw = load_hardware("wormhole_n150")
    for clock in (MIN_CLOCK_GHZ, MAX_CLOCK_GHZ):
        us = hw.model_copy(update={"clock_ghz": clock}).cycles_to_us(1)
        assert math.isfinite(us) and us > 0


@pytest.mark.parametrize("name", ["a" * 300, "a" * 300 + ".yaml"], ids=["long-name", "long-path"])
def test_a_name_too_long_for_the_file_system_is_a_clean_error(name):
    assert "a" * 40 in _error(name)
