"""The SDPA rows of a device-profiler report, and the error-table family of the ``flash_attention`` kernel
(``accuracy/op_mapping.py``: ``ACCURACY`` plugs into ``loom_explorer.accuracy_ops``).

``ScaledDotProductAttention`` / ``ScaledDotProductAttentionDeviceOperation`` / ``SDPAOperation`` rows are this
family's; ``accuracy/ingest.py`` reads their program config. An op with one query row is ttnn's decode op
(``sdpa_decode`` in ``model_error.csv``), any other its prefill op (``sdpa``).
"""

from __future__ import annotations

from collections.abc import Mapping

from loom_explorer.accuracy.op_mapping import AccuracyOps

SDPA_OP_CODES = frozenset({"scaleddotproductattention", "scaleddotproductattentiondeviceoperation", "sdpaoperation"})


def error_family(kernel: str, shape: Mapping[str, int]) -> str | None:
    """``sdpa_decode`` (one query row) or ``sdpa`` for the ``flash_attention`` kernel, None for any other."""
    if kernel != "flash_attention":
        return None
    return "sdpa_decode" if shape.get("Sq") == 1 else "sdpa"


ACCURACY = AccuracyOps(name="attention", op_codes=SDPA_OP_CODES, error_family=error_family)
