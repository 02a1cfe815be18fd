"""The toolchain's place, discovery and install errors (no network, no 5 GB install: the install itself runs
in the README's test command and is used by the ``toolchain`` tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from loom_explorer.deploy import toolchain as tc
from loom_explorer.targets.ttlang import TT_LANG_VERSION
from loom_explorer.targets.ttnn import TTNN_VERSION


def test_the_default_place_follows_the_environment(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv(tc.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    root = tc.default_root()
    assert root.parent == tmp_path / "loom-explorer"
    assert f"ttlang{TT_LANG_VERSION}" in root.name and f"ttnn{TTNN_VERSION}" in root.name
    monkeypatch.setenv(tc.ENV_VAR, str(tmp_path / "mine"))
    assert tc.default_root() == tmp_path / "mine"


def test_a_half_built_environment_is_never_used(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv(tc.ENV_VAR, raising=False)
    root = tmp_path / "tc"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").write_text("")
    assert tc.find_toolchain(root) is None  # no ready mark: an install that stopped half-way
    with pytest.raises(tc.ToolchainError, match="loom-explorer toolchain install"):
        tc.require_toolchain(root)
    (root / ".loom-toolchain-ready").write_text("")
    assert tc.find_toolchain(root) == tc.Toolchain(root)


@pytest.mark.parametrize("python", [sys.executable, "/bin/false", "/no/such/python"])
def test_install_refuses_a_python_that_is_not_3_12(tmp_path, python: str) -> None:
    if python == sys.executable and sys.version_info[:2] == (3, 12):
        python = "/bin/false"
    with pytest.raises(tc.ToolchainError, match=f"--python {python} is .*Python 3.12"):
        tc.install_toolchain(tmp_path / "tc", Path(python), log=lambda _: None)
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_find_python312_finds_a_3_12_or_none() -> None:
    found = tc.find_python312()
    if found is not None:
        out = subprocess.run(
            [str(found), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == "(3, 12)"


def test_status_says_where_it_is_missing(tmp_path) -> None:
    env = {**os.environ, tc.ENV_VAR: ""}
    out = subprocess.run(
        [sys.executable, "-m", "loom_explorer.cli", "toolchain", "status", "--path", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert out.returncode == 1
    assert "not installed" in out.stdout and str(tmp_path / "none") in out.stdout
