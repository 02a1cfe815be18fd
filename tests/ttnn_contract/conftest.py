"""The ttnn-contract tier: the TTNN export and the card runner against the real ttnn (0.81.1), no card.

It runs under the Python 3.12 toolchain interpreter, where ttnn imports without a device:
``PYTHONPATH=. /tmp/tt312/venv-combo/bin/python -m pytest -q tests/ttnn_contract -p no:cacheprovider``.
Where ttnn is not importable (the project's own Python) the folder is not collected at all.

Fixtures build schedule documents of the candidates the TTNN export maps (solved once per module).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from contract_helpers import OpenDeviceReached  # raised by the stand-in below; the tests import it from there

if importlib.util.find_spec("ttnn") is None:
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture
def stop_at_open_device(monkeypatch):  # type: ignore[no-untyped-def]
    """Replace ``ttnn.open_device`` by a function that records its caller's local variables and arguments
    and raises OpenDeviceReached; returns the record (``locals``, ``kwargs``)."""
    import ttnn

    seen: dict[str, object] = {}

    def open_device(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen["locals"] = dict(sys._getframe(1).f_locals)
        seen["args"], seen["kwargs"] = args, kwargs
        raise OpenDeviceReached

    monkeypatch.setattr(ttnn, "open_device", open_device)
    return seen
