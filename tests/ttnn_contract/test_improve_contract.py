"""``improve -o configs.py`` against the real ttnn: the module imports, and every CONFIGS entry is a real ttnn
program config carrying the values the JSON form (and ``predict --ttnn-config``) reads."""

from __future__ import annotations

from pathlib import Path

import ttnn
from contract_helpers import check_program_config, import_file

from loom_explorer.accuracy.improve import improve_report
from loom_explorer.accuracy.improve_configs import configs_python, read_config
from loom_explorer.accuracy.ingest import choose_hardware, read_ops_perf
from loom_explorer.data import capture_path


def test_the_configs_module_of_a_real_capture_builds_real_ttnn_configs(tmp_path: Path) -> None:
    report = read_ops_perf(capture_path("bh_p100_dlv3.csv.gz"))  # 1-D, 2-D and height-sharded configs
    hw, grid, chip = choose_hardware(report)
    result = improve_report(report, hw, grid, chip, store=tmp_path / "store.sqlite")
    source = configs_python(result, "loom-explorer improve bh_p100_dlv3.csv.gz")
    module = import_file(source, tmp_path, "improved_configs")
    written = [o for o in result.ops if o.best_config is not None]
    assert len(written) >= 10 and set(module.CONFIGS) == {o.key for o in written}
    path = tmp_path / "improved_configs.py"
    classes = set()
    for o in written:
        _, fields = read_config(path, o.key)  # the form predict --ttnn-config reads, parsed without running
        name = str(fields.pop("program_config"))
        args = {k: v for k, v in fields.items() if k not in ("memory", "compute")}
        check_program_config(ttnn, module.CONFIGS[o.key], name, args)
        classes.add(name)
    assert classes == {
        "MatmulMultiCoreReuseMultiCastProgramConfig",
        "MatmulMultiCoreReuseMultiCast1DProgramConfig",
        "Conv2dConfig",  # the conv ops: their literal arguments, the sharding in DETAILS' memory block
    }
