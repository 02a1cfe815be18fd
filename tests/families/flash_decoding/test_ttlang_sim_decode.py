"""Exported flash-decoding kernels in Tenstorrent's simulator (tt-lang-sim): the result matches torch and the
simulator moves exactly the tiles the model predicts, on a ragged cache (the padded last key chunk masked),
with the partials gathered to each group's first core, and with several groups per core."""

from __future__ import annotations

import pytest
from loom_helpers import NEEDS_SIM, simulate_attention

from loom_explorer.deploy.verify import PCC_MIN

pytestmark = NEEDS_SIM


def _decode_report(tmp_path, shape: str, pins: dict[str, int]):
    return simulate_attention(tmp_path, shape, pins, lambda c: c.has_tag("kv_split"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "shape,pins,pipe_tiles",
    [
        # a 1000-token cache (not whole chunks, not whole tiles) of 8 grouped heads, each group on 4 cores:
        # 3 partials of 2 tiles of D plus max and sum into each group's first core
        (
            "B=2,H=8,Hkv=1,Sq=1,Skv=1000,D=64",
            {"kv_cores": 4, "k_chunk_size": 64, "grid_x": 4},
            {(0, 0): 12, (0, 1): 12},
        ),
        # 4 query rows of 4 heads packed into one tile; 2 groups per core, no split
        ("B=3,H=8,Hkv=2,Sq=4,Skv=700,D=64", {"kv_cores": 1, "per_core_B*Hkv": 2, "k_chunk_size": 64}, {}),
    ],
)
def test_flash_decoding_matches_torch_and_moves_the_models_tiles(
    tmp_path,
    shape: str,
    pins: dict[str, int],
    pipe_tiles: dict[tuple[int, int], int],
) -> None:
    path, report = _decode_report(tmp_path, shape, pins)
    assert report.pcc >= PCC_MIN, report.pcc
    assert report.traffic_equal, report.differences()
    assert report.simulated.pipe_received_tiles == pipe_tiles
    assert report.simulated.dram_read_tiles["key_mask"] > 0 and "Note:" not in path.read_text()


@pytest.mark.slow
def test_uneven_runs_of_key_chunks_move_each_cores_own_tiles(tmp_path) -> None:
    """5 key chunks on 3 cores: runs of 2, 2 and the first core's 1; the model counts each core at its own run
    (the latency at the slowest), so it predicts exactly the simulator's reads."""
    path, report = _decode_report(tmp_path, "B=1,H=4,Hkv=1,Sq=1,Skv=640,D=64", {"kv_cores": 3, "k_chunk_size": 128})
    assert report.pcc >= PCC_MIN, report.pcc
    assert report.traffic_equal, report.differences()
    assert report.simulated.dram_read_tiles["k"] == report.predicted.dram_read_tiles["k"] == (2 + 2 + 1) * 4 * 2
    assert "Note:" not in path.read_text()
