"""The matmul rows of a device-profiler report, and the error-table family of the ``gemm`` kernel
(``accuracy/op_mapping.py``: ``ACCURACY`` plugs into ``loom_explorer.accuracy_ops``).

``Matmul`` / ``MatmulDeviceOperation`` / ``MinimalMatmulOp`` rows are this family's; ``accuracy/ingest.py``
reads their program config. The published matmul timings (``matmul`` in ``model_error.csv``) speak for the
``gemm`` kernel only (a batched or fused matmul has none).
"""

from __future__ import annotations

from collections.abc import Mapping

from loom_explorer.accuracy.op_mapping import AccuracyOps

MATMUL_OP_CODES = frozenset({"matmul", "matmuldeviceoperation", "minimalmatmulop"})


def error_family(kernel: str, shape: Mapping[str, int]) -> str | None:
    """``matmul`` for the ``gemm`` kernel, None for any other."""
    return "matmul" if kernel == "gemm" else None


ACCURACY = AccuracyOps(name="contraction", op_codes=MATMUL_OP_CODES, error_family=error_family)
