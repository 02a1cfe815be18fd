"""The ttnn-contract tier (tests/ttnn_contract) runs under the toolchain's Python 3.12 against the real ttnn
0.81.1 (no card); this test runs it from the main suite, so one pytest command runs every tier."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIER = ROOT / "tests" / "ttnn_contract"


@pytest.mark.toolchain
def test_the_ttnn_contract_tier_passes(toolchain) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [str(toolchain.python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--confcutdir", str(TIER), str(TIER)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=900,
        check=False,
    )
    tail = done.stdout[-6000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    summary = re.search(r"(\d+) passed", done.stdout)
    assert summary and int(summary.group(1)) >= 5, tail
    assert "skipped" not in done.stdout.splitlines()[-1], tail  # every contract check ran
