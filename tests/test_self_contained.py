"""The repository stands alone: nothing refers to a folder beside the checkout, and the published data the
package, tests and docs use ships inside the package (``loom_explorer/data/published``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from loom_explorer.data import PUBLISHED_DIR, PUBLISHED_FILES, PublishedDataMissing, published_path

ROOT = Path(__file__).resolve().parents[1]

# a sibling folder of the checkout that a clone does not have (spelt in pieces so that no search finds this file)
SIBLING = "sha" + "red"
OUTSIDE = re.compile(
    "|".join([r"\.\./" + SIBLING, r"\b" + SIBLING + "/(?:data|reference|design)/", "/work/" + SIBLING])
)
# a citation of a published data file, by path or through the accessor
CITED = re.compile(
    r"loom_explorer/data/published/(?P<path>[\w.-]+\.\w+)"
    r"|published_path\(\s*[\"'](?P<call>[^\"']+)[\"']"
)


def tracked_files() -> list[Path]:
    """The files git tracks or would (not ignored); every file but ``.git`` when this is not a git checkout."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return [p for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.relative_to(ROOT).parts]
    return [ROOT / name for name in listed.decode().split("\0") if name and (ROOT / name).is_file()]


def _texts() -> list[tuple[Path, str]]:
    return [(p, p.read_bytes().decode("utf-8", errors="replace")) for p in tracked_files()]


def test_no_tracked_file_refers_to_a_folder_beside_the_checkout() -> None:
    files = _texts()
    assert len(files) > 100  # the listing found the repository
    hits = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
        for p, text in files
        for n, line in enumerate(text.splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert hits == [], "a clone has nothing beside it; cite loom_explorer/data/published instead:\n" + "\n".join(hits)


def test_the_pattern_catches_what_it_is_for() -> None:
    for line in (f"see ../{SIBLING}/data/x.csv", f"{SIBLING}/reference/tenstorrent.md", f"/work/{SIBLING}/data"):
        assert OUTSIDE.search(line), line
    for line in ("the shared weight", "shared_along", "tests/shared_helpers.py"):
        assert not OUTSIDE.search(line), line


def test_every_cited_published_file_is_found() -> None:
    cited = {m["path"] or m["call"] for _, text in _texts() for m in CITED.finditer(text)}
    assert {
        "gemm_flops_calibration.csv",
        "gemm_manual_configs.csv",
        "sdpa_perf.csv",
        "noc_dram_bench.md",
        "noc_dm_packet_sizes.csv",
    } <= cited
    missing = []
    for name in sorted(cited):
        try:
            published_path(name)
        except PublishedDataMissing as exc:
            missing.append(str(exc))
    assert missing == []


def test_the_folder_holds_exactly_the_listed_files_and_its_readme_names_each() -> None:
    present = {p.name for p in PUBLISHED_DIR.iterdir() if p.is_file()}
    assert present == {*PUBLISHED_FILES, "README.md"}
    readme = published_path("README.md").read_text()
    for name in PUBLISHED_FILES:
        assert published_path(name).stat().st_size > 0
        assert f"`{name}`" in readme, f"README.md gives no provenance for {name}"
    assert "Apache-2.0" in readme and "tenstorrent/tt-metal" in readme


def test_the_published_csv_files_name_their_sources() -> None:
    """Row-level provenance: the CSV files whose rows come from several upstream files carry path and commit."""
    for name in ("sdpa_perf.csv", "noc_dm_packet_sizes.csv"):
        header = published_path(name).read_text().splitlines()[0].split(",")
        assert {"source_path", "commit"} <= set(header), name


@pytest.mark.parametrize("name", ["no_such_file.csv", "../README.md", "", "published/sdpa_perf.csv"])
def test_a_missing_or_bad_name_is_refused_naming_it(name: str) -> None:
    with pytest.raises(PublishedDataMissing, match=re.escape(repr(name))):
        published_path(name)


def test_the_wheel_layout_matches_the_checkout() -> None:
    """The wheel puts ``hw/`` and ``kernels/`` beside ``published/`` in ``loom_explorer/data`` (pyproject's
    force-include); in a checkout those stay at the top level and ``shipped_dir`` finds them there."""
    tomllib = pytest.importorskip("tomllib")
    from loom_explorer.shipped import shipped_dir

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    forced = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert forced == {name: f"loom_explorer/data/{name}" for name in ("hw", "kernels")}
    for name in forced:
        assert not (PUBLISHED_DIR.parent / name).exists(), f"loom_explorer/data/{name} would shadow ./{name}"
        assert shipped_dir(name) == ROOT / name
