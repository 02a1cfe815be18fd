"""``improve`` on the shipped DeepLabV3 capture lists its conv ops with the config each ran and a better one
ttnn can run, costed as that config runs (the acceptance line of the convolution family)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_explorer.accuracy.improve import improve_report
from loom_explorer.accuracy.ingest import calibrated_ns, choose_hardware, read_ops_perf
from loom_explorer.accuracy.term_calibration import shipped_scales
from loom_explorer.data import capture_path
from loom_explorer.families.convolution.ttnn_config import TtnnConv2dConfig, evaluate_conv_config
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.grid import restrict_grid
from loom_explorer.solve.solver import SolveOptions


@pytest.mark.slow
def test_improve_lists_each_conv_with_the_config_it_ran_and_a_better_one(tmp_path: Path) -> None:
    report = read_ops_perf(capture_path("bh_p100_dlv3.csv.gz"))
    hw_name, grid, chip = choose_hardware(report)
    options = SolveOptions(time_limit_seconds=5.0, explain=False, fastest=1)
    result = improve_report(report, hw_name, grid, chip, options, store=tmp_path / "store.sqlite")
    convs = [o for o in result.ops if o.op_code == "Conv2dDeviceOperation"]
    assert sum(o.calls for o in convs) == 46  # every conv row, grouped by op
    assert all(isinstance(o.ran_config, TtnnConv2dConfig) and o.ran_ns for o in convs)
    better = [o for o in convs if o.best_config is not None]
    assert better, [o.note for o in convs]
    assert {o.best_config.shard_layout for o in better if isinstance(o.best_config, TtnnConv2dConfig)} <= {
        "HEIGHT_SHARDED",
        "BLOCK_SHARDED",
    }
    hw = load_hardware(hw_name)
    hw = restrict_grid(hw, *grid) if grid else hw
    for o in better:
        assert o.best_ns is not None and o.ran_ns is not None and o.best_ns < o.ran_ns
        assert o.problem is not None and o.best_config is not None
        again = evaluate_conv_config(hw, o.problem, o.best_config).result.solution  # as predict costs it
        assert again is not None  # and as predict reports it: calibrated
        assert abs(calibrated_ns(shipped_scales(), o.problem.program, hw, again.breakdown) - o.best_ns) < 1.0
