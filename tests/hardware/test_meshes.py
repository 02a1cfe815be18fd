"""The shipped mesh descriptions (``hw/meshes/*.yaml``): they load with their chips, every number carries its
source (the chips' comment rule, ``test_hardware.comment_violations``), the rates agree with the chip clocks
and the published fabric goldens, bad files fail on one line naming file, line, column and field, and the
``hw list`` / ``hw show`` output of meshes.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from hardware.test_hardware import comment_violations

from loom_explorer import cli
from loom_explorer.data import published_path
from loom_explorer.hardware import HardwareError, list_hardware, load_hardware
from loom_explorer.hardware.mesh_load import (
    is_mesh_file,
    list_meshes,
    load_mesh,
    mesh_chip,
    shipped_mesh_dir,
    shipped_name_clashes,
)

SHIPPED = list_meshes()
# line rate per link per direction in GB/s, by chip architecture: Wormhole 100 Gb/s (CCL developer guide),
# Blackhole 400 Gb/s per Ethernet tile (tt-isa-documentation); loom_explorer/data/published/ethernet_facts.md
LINE_GB_S = {"wormhole_b0": 12.5, "blackhole": 50.0}


def test_the_five_meshes_are_shipped():
    assert set(SHIPPED) == {"n300", "t3000", "galaxy", "p150x4", "p150x8", "bh_galaxy"}


def test_no_name_is_both_a_chip_and_a_mesh():
    assert shipped_name_clashes() == []
    assert not set(list_hardware()) & set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_mesh_loads_with_its_chip(name):
    mesh = load_mesh(name)
    assert mesh.name == name
    assert load_mesh(shipped_mesh_dir() / f"{name}.yaml") == mesh  # by path too
    chip = mesh_chip(mesh)
    assert chip == load_hardware(mesh.chip)
    assert mesh.chips == mesh.rows.chips * mesh.columns.chips > 1


@pytest.mark.parametrize("name", SHIPPED)
def test_every_number_has_a_source_comment(name):
    assert comment_violations((shipped_mesh_dir() / f"{name}.yaml").read_text()) == []


# Meshes whose links run below their architecture's rate, as a source says: the CCL bandwidth report (tt-metal
# tech_reports/CCLs/CCL_bandwidth.md @ 1080d1c4) "Blackhole links currently run at half their rated speed".
BELOW_RATED_GB_S = {"bh_galaxy": 25.0}


@pytest.mark.parametrize("name", SHIPPED)
def test_line_rate_is_the_architectures_at_the_chip_clock(name):
    mesh = load_mesh(name)
    chip = mesh_chip(mesh)
    gb_s = mesh.ethernet.link_bytes_per_cycle * chip.clock_ghz
    assert gb_s == pytest.approx(BELOW_RATED_GB_S.get(name, LINE_GB_S[chip.arch]), abs=0.01)
    assert mesh.ethernet.fabric_bytes_per_cycle <= mesh.ethernet.link_bytes_per_cycle


def _golden_gb_s(mesh_name: str, packet_bytes: int | None = None) -> float:
    """The transcribed golden of ``fabric_bandwidth.csv``: unicast write, 1 link, at ``packet_bytes`` (the
    largest packet when None)."""
    with published_path("fabric_bandwidth.csv").open(newline="") as f:
        rows = [
            r
            for r in csv.DictReader(f)
            if r["mesh"] == mesh_name
            and r["test_name"] == "SingleSenderLinearUnicastAllDevices"
            and r["ntype"] == "NOC_UNICAST_WRITE"
            and r["num_links"] == "1"
        ]
    size = packet_bytes if packet_bytes is not None else max(int(r["packet_size_bytes"]) for r in rows)
    (row,) = [r for r in rows if int(r["packet_size_bytes"]) == size]
    return float(row["bandwidth_gb_s"])


GOLDEN_MESHES = ["t3000", "galaxy", "p150x4", "p150x8", "bh_galaxy"]  # the meshes with a fabric golden of their own


@pytest.mark.parametrize("name", GOLDEN_MESHES)
def test_fabric_rate_is_the_published_golden_at_the_chip_clock(name):
    mesh = load_mesh(name)
    clock = mesh_chip(mesh).clock_ghz
    assert mesh.ethernet.fabric_bytes_per_cycle == pytest.approx(_golden_gb_s(name) / clock, abs=0.006)


@pytest.mark.parametrize("name", GOLDEN_MESHES)
def test_small_packet_rate_is_the_published_golden_at_the_chip_clock(name):
    eth = load_mesh(name).ethernet
    clock = mesh_chip(load_mesh(name)).clock_ghz
    assert eth.fabric_small_packet_bytes == 2048
    assert eth.fabric_small_bytes_per_cycle is not None
    golden = _golden_gb_s(name, eth.fabric_small_packet_bytes) / clock
    assert eth.fabric_small_bytes_per_cycle == pytest.approx(golden, abs=0.006)


def test_the_n300_borrows_the_t3000s_two_points():
    n300, t3000 = load_mesh("n300").ethernet, load_mesh("t3000").ethernet
    assert (n300.fabric_small_packet_bytes, n300.fabric_small_bytes_per_cycle) == (
        t3000.fabric_small_packet_bytes,
        t3000.fabric_small_bytes_per_cycle,
    )


def test_shapes_as_ttnn_opens_them():
    assert load_mesh("n300").shape == (1, 2)
    assert load_mesh("t3000").shape == (2, 4) and load_mesh("t3000").flat_ring
    galaxy = load_mesh("galaxy")
    assert galaxy.shape == (8, 4) and galaxy.rows.wraps and galaxy.columns.wraps
    assert galaxy.rows.links == galaxy.columns.links == 4
    assert load_mesh("p150x4").shape == (1, 4) and load_mesh("p150x4").columns.wraps
    p150x8 = load_mesh("p150x8")
    assert p150x8.shape == (2, 4) and p150x8.axis(1).wraps and not p150x8.axis(0).wraps
    assert p150x8.axis(1).links == 2


# ------------------------------------------------------------------------------------------- bad files


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad_mesh.yaml"
    path.write_text(text)
    return path


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


BASE = (shipped_mesh_dir() / "t3000.yaml").read_text()
BAD = {
    # case: (replace this, with that, field named, text on the line the error points at)
    "boolean for a number": ("  chips: 4  ", "  chips: yes", "columns.chips", "chips: yes"),
    "links 0 on 4 chips": ("  links: 2  ", "  links: 0  ", "columns.links", "links: 0"),
    "wraps on 2 chips": ("  wraps: false\ncolumns:", "  wraps: true\ncolumns:", "rows.wraps", "wraps: true"),
    "unknown chip": ("chip: wormhole_n300", "chip: no_such_chip", "chip", "chip: no_such_chip"),
    "fabric above the line rate": (
        "fabric_bytes_per_cycle: 11.78",
        "fabric_bytes_per_cycle: 12.6",
        "ethernet.fabric_bytes_per_cycle",
        "fabric_bytes_per_cycle: 12.6",
    ),
    "small packet not below the packet": (
        "fabric_small_packet_bytes: 2048",
        "fabric_small_packet_bytes: 4096",
        "ethernet.fabric_small_packet_bytes",
        "fabric_small_packet_bytes: 4096",
    ),
    "small point slower per packet than the large": (
        "fabric_small_bytes_per_cycle: 8.03",
        "fabric_small_bytes_per_cycle: 5.5",
        "ethernet.fabric_small_bytes_per_cycle",
        "fabric_small_bytes_per_cycle: 5.5",
    ),
    "small point faster per wire byte than the large": (
        "fabric_small_bytes_per_cycle: 8.03",
        "fabric_small_bytes_per_cycle: 12.0",
        "ethernet.fabric_small_bytes_per_cycle",
        "fabric_small_bytes_per_cycle: 12.0",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_file_fails_on_one_line_naming_file_line_and_field(tmp_path, case):
    old, new, field, on_line = BAD[case]
    assert BASE.count(old) == 1, old
    text = BASE.replace(old, new)
    path = _write(tmp_path, text)
    with pytest.raises(HardwareError) as exc:
        load_mesh(path)
    message = str(exc.value)
    assert "\n" not in message, message
    match = re.match(rf"^{re.escape(str(path))}:(\d+):(\d+): field {re.escape(field)}: ", message)
    assert match, message
    assert int(match[1]) == _line_of(text, on_line), message


def test_small_packet_alone_names_the_rate(tmp_path):
    text = "\n".join(ln for ln in BASE.splitlines() if "fabric_small_bytes_per_cycle" not in ln) + "\n"
    path = _write(tmp_path, text)
    with pytest.raises(HardwareError) as exc:
        load_mesh(path)
    message = str(exc.value)
    assert re.match(rf"^{re.escape(str(path))}:\d+:\d+: field ethernet.fabric_small_bytes_per_cycle: ", message)
    assert "both or neither" in message


def test_without_the_small_point_the_mesh_loads(tmp_path):
    text = "\n".join(ln for ln in BASE.splitlines() if "fabric_small_" not in ln) + "\n"
    mesh = load_mesh(_write(tmp_path, text))
    assert mesh.ethernet.fabric_small_packet_bytes is None and mesh.ethernet.fabric_small_bytes_per_cycle is None


def test_missing_axis_names_it(tmp_path):
    start, end = BASE.index("columns:"), BASE.index("flat_ring:")
    path = _write(tmp_path, BASE[:start] + BASE[end:])
    with pytest.raises(HardwareError, match=rf"^{re.escape(str(path))}:\d+:\d+: field columns: Field required"):
        load_mesh(path)


def test_a_chip_file_is_no_mesh_file(tmp_path):
    assert is_mesh_file(shipped_mesh_dir() / "t3000.yaml")
    assert not is_mesh_file(shipped_mesh_dir().parent / "wormhole_n150.yaml")
    assert not is_mesh_file(tmp_path / "absent.yaml")


# ------------------------------------------------------------------------------------------- the CLI


def test_hw_list_shows_meshes_after_chips(capsys):
    assert cli.main(["hw", "list"]) == 0
    out = capsys.readouterr().out
    chips_block, _, meshes_block = out.partition("\nmeshes")
    assert meshes_block, out
    for name in list_hardware():
        assert re.search(rf"^{name}\s", chips_block, re.M)
    for name in SHIPPED:
        mesh = load_mesh(name)
        (line,) = [ln for ln in meshes_block.splitlines() if ln.startswith(f"{name} ")]
        gb_s = mesh.ethernet.fabric_bytes_per_cycle * mesh_chip(mesh).clock_ghz
        rows, columns = mesh.shape
        assert f"{rows}x{columns} = {mesh.chips} chips" in line
        assert f"chip {mesh.chip}" in line and f"links {mesh.rows.links}/{mesh.columns.links}" in line
        assert f"fabric {gb_s:.2f} GB/s" in line and mesh.description in line


def test_hw_show_mesh_text_and_json(capsys):
    assert cli.main(["hw", "show", "p150x4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("p150x4: ")
    assert "MeshShape(1, 4)" in out and "4 chips, 4 link(s) per neighbouring pair, a ring" in out
    assert "fabric rate: 28.07 GB/s at 1.35 GHz" in out  # 20.79 B/cycle x 1.35 GHz
    assert cli.main(["hw", "show", "t3000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == load_mesh("t3000").model_dump(mode="json")


def test_hw_show_mesh_file_by_path(tmp_path, capsys):
    path = tmp_path / "my_mesh.yaml"
    path.write_text(BASE.replace("name: t3000", "name: my_mesh"))
    assert cli.main(["hw", "show", str(path)]) == 0
    assert capsys.readouterr().out.startswith("my_mesh: ")


def test_hw_show_chip_is_unchanged(capsys):
    """A chip shows as before meshes: its description, then each field (a section's lists of 10+ counted)."""
    hw = load_hardware("wormhole_n150")
    expected = [f"{hw.name}: {hw.description}"]
    for key, value in hw.model_dump(mode="json").items():
        if isinstance(value, dict):
            expected.append(f"  {key}:")
            expected += [
                f"    {k}: {v if not isinstance(v, list) or len(v) < 10 else f'[{len(v)} entries]'}"
                for k, v in value.items()
            ]
        else:
            expected.append(f"  {key}: {value}")
    assert cli.main(["hw", "show", "wormhole_n150"]) == 0
    assert capsys.readouterr().out.splitlines() == expected


def test_hw_refuses_a_name_shipped_as_chip_and_mesh(tmp_path, monkeypatch, capsys):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "twin.yaml").write_text("")
    (tmp_path / "meshes" / "twin.yaml").write_text("")
    monkeypatch.setattr("loom_explorer.hardware.load.shipped_dir", lambda name: tmp_path)
    assert shipped_name_clashes() == ["twin"]
    assert cli.main(["hw", "list"]) == 2
    err = capsys.readouterr().err
    assert "twin" in err and "both as a chip and as a mesh" in err
