"""Tenstorrent's own tools in a Python 3.12 environment of their own: the TT-Lang compiler and ttnn.

Their wheels exist for Python 3.12 (and 3.10) only, and the compiler needs a newer glibc past 1.1.1, so
loom-explorer, on any Python >= 3.10, runs them in a virtual environment it creates and finds by itself
(``loom-explorer toolchain install``). The pins are the newest versions that install and load on a
glibc 2.36 machine without a card:

* ``tt-lang`` (the compiler) 1.1.1: 1.1.6 is built for glibc 2.38;
* ``ttnn`` 0.81.1: tt-lang 1.1.1 asks for 0.69.0, whose host tensors need a mock cluster description; the
  0.81.1 runtime compiles the same kernels to the same C++ and builds host tensors without one;
* ``torch`` 2.14.1 (tt-lang imports it): PyPI's only Linux build is the CUDA one, about 4 GB installed;
  it runs on the CPU. Its ``triton`` and ``cuda-bindings`` requirements are left out (nothing here uses them);
* the project's own requirements and pytest, so the card-path tests run against the real ttnn.

The simulator is ``tt-lang-sim`` in the project's own environment (the ``sim`` extra). Where the compiler
and the simulator accept different forms, the exported kernels use the forms both accept (docs/export.md).

Where: ``$LOOM_TOOLCHAIN`` if set (a virtual environment's folder), else
``$XDG_CACHE_HOME/loom-explorer/toolchain-<pins>`` (``~/.cache`` by default). ``uv`` (in the ``dev`` extra,
or on ``PATH``) installs in seconds from its cache; without it, ``pip`` does, in minutes.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loom_explorer.errors import LoomError
from loom_explorer.targets.ttlang import TT_LANG_VERSION
from loom_explorer.targets.ttnn import TTNN_VERSION

TORCH_VERSION = "2.14.1"
PYTHON_VERSION = "3.12"
REQUIREMENTS = (
    f"tt-lang=={TT_LANG_VERSION}",
    f"ttnn=={TTNN_VERSION}",
    f"torch=={TORCH_VERSION}",
    "ortools>=9.10,<10",
    "pydantic>=2.5,<3",
    "PyYAML>=6",
    "networkx>=3.0",
    "numpy>=1.24",
    "pytest>=8",
)
# tt-lang pins an older ttnn; torch's GPU-only requirements are never installed
OVERRIDES = (f"ttnn=={TTNN_VERSION}", 'triton; sys_platform == "never"', 'cuda-bindings; sys_platform == "never"')
ENV_VAR = "LOOM_TOOLCHAIN"


class ToolchainError(LoomError, RuntimeError):
    """The toolchain is missing or could not be installed; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Toolchain:
    """A ready Python 3.12 environment with the TT-Lang compiler and ttnn."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"


def _pins_tag() -> str:
    digest = hashlib.sha256("\n".join(REQUIREMENTS + OVERRIDES).encode()).hexdigest()[:8]
    return f"toolchain-py{PYTHON_VERSION}-ttlang{TT_LANG_VERSION}-ttnn{TTNN_VERSION}-{digest}"


def default_root() -> Path:
    """Where the toolchain lives (module docstring)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "loom-explorer" / _pins_tag()


_READY = ".loom-toolchain-ready"  # written last by install: a half-built environment is never used


def find_toolchain(root: Path | None = None) -> Toolchain | None:
    """The installed toolchain, or None."""
    root = root or default_root()
    tc = Toolchain(root)
    if tc.python.is_file() and ((root / _READY).is_file() or os.environ.get(ENV_VAR)):
        return tc
    return None


def require_toolchain(root: Path | None = None) -> Toolchain:
    tc = find_toolchain(root)
    if tc is None:
        raise ToolchainError(
            f"the TT-Lang compiler and ttnn toolchain is not installed at {root or default_root()}; "
            "run `loom-explorer toolchain install` (a Python 3.12 environment, about 5 GB)"
        )
    return tc


def find_python312() -> Path | None:
    """A Python 3.12 interpreter: ``python3.12`` on PATH, else one of pyenv's."""
    found = shutil.which(f"python{PYTHON_VERSION}")
    candidates = [found] if found else []
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    pattern = pyenv_root / "versions" / f"{PYTHON_VERSION}*" / "bin" / f"python{PYTHON_VERSION}"
    candidates += sorted(glob.glob(str(pattern)), reverse=True)
    return next((Path(c) for c in candidates if _version_of(Path(c)) == PYTHON_VERSION), None)


def _version_of(python: Path) -> str | None:
    """``major.minor`` of the interpreter at ``python`` (None when it does not run)."""
    try:
        out = subprocess.run(
            [str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _uv() -> list[str] | None:
    found = shutil.which("uv")
    if found:
        return [found]
    try:
        import uv  # the PyPI package ships the binary
    except ImportError:
        return None
    return [uv.find_uv_bin()]


def install_toolchain(
    root: Path | None = None, python: Path | None = None, log: Callable[[str], None] = print
) -> Toolchain:
    """Create (or re-create) the toolchain at ``root``; ToolchainError naming what is missing."""
    root = root or default_root()
    python = python or find_python312()
    if python is None:
        raise ToolchainError(
            "no Python 3.12 found (python3.12 on PATH, or pyenv's versions); install one or pass --python"
        )
    version = _version_of(python)
    if version != PYTHON_VERSION:
        found = "not a Python that runs" if version is None else f"Python {version}"
        raise ToolchainError(f"--python {python} is {found}; the toolchain's wheels need Python {PYTHON_VERSION}")
    root.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=root.name + ".building-", dir=root.parent))
    uv = _uv()
    with tempfile.TemporaryDirectory() as tmp:
        overrides = Path(tmp) / "overrides.txt"
        overrides.write_text("\n".join(OVERRIDES) + "\n")
        if uv:
            steps = [
                [*uv, "venv", "--quiet", "--python", str(python), str(building)],
                [
                    *uv,
                    "pip",
                    "install",
                    "--quiet",
                    "--compile-bytecode",  # else every process compiles torch and ttnn afresh: about 3 s each
                    "--python",
                    str(building / "bin" / "python"),
                    "--override",
                    str(overrides),
                    *REQUIREMENTS,
                ],
            ]
        else:
            pip = [str(building / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
            no_gpu = [r for r in REQUIREMENTS if not r.startswith("tt-lang")]
            steps = [
                [str(python), "-m", "venv", "--clear", str(building)],
                [*pip, *no_gpu],
                [*pip, "--no-deps", f"tt-lang=={TT_LANG_VERSION}"],
            ]
        log(
            f"installing the toolchain ({', '.join(REQUIREMENTS[:3])}) at {root} with "
            f"{'uv' if uv else 'pip (slow; pip install uv makes this seconds)'} ..."
        )
        try:
            for step in steps:
                done = subprocess.run(step, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise ToolchainError(
                        f"`{' '.join(step[:4])} ...` failed (exit {done.returncode}):\n"
                        + (done.stderr or done.stdout)[-3000:]
                    )
            if not uv:  # tt-lang's own requirements but its ttnn pin
                _pip_missing_requirements(building)
            check = subprocess.run(
                [str(building / "bin" / "python"), "-c", "import ttnn, ttl"],
                capture_output=True,
                text=True,
                check=False,
                timeout=300,
            )
            if check.returncode != 0:
                raise ToolchainError("the toolchain installed but does not import:\n" + check.stderr[-3000:])
            (building / _READY).write_text("\n".join(REQUIREMENTS) + "\n")
            if root.exists():
                shutil.rmtree(root)
            building.rename(root)
        finally:
            if building.exists():
                shutil.rmtree(building, ignore_errors=True)
    log(f"toolchain ready: {root}")
    return Toolchain(root)


def _pip_missing_requirements(venv: Path) -> None:
    """pip has no overrides: install tt-lang's requirements other than ttnn and torch by name."""
    script = (
        "import importlib.metadata as m, re; print('\\n'.join(r for r in (m.requires('tt-lang') or []) "
        "if not re.match(r'(ttnn|torch)\\b', r) and 'extra ==' not in r))"
    )
    reqs = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    if reqs:
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *reqs], check=True)


def describe() -> str:
    """One line on where the toolchain is, or that it is missing."""
    tc = find_toolchain()
    return f"toolchain: {tc.root}" if tc else f"toolchain: not installed (expected at {default_root()})"
