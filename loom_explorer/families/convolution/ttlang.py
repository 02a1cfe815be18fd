"""The convolution family's TT-Lang writer: a refusal with the reason.

A conv's activation operand is an im2col view of the halo'd input shard: each output pixel's filter-row
window starts at ``(oh * stride + kh) * W + ow * stride`` input rows, an affine, strided gather that TT-Lang's
tensor accessors (whole tiles of a tensor's own row-major tiling) cannot address, and the halo exchange
between neighbouring cores' shards has no TT-Lang form either. The implicit GEMM on an im2col'd input is
the ``gemm`` kernel, which TT-Lang exports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.targets.ttlang.writer import HostTensors, TtlangWriter

REASON = (
    "TT-Lang cannot express a convolution: its activation is an im2col gather of the halo'd input "
    "(rows (oh*stride + kh)*W + ow*stride), which tile accessors over a tensor's own tiling cannot address; "
    "export the implicit GEMM of an im2col'd input with the gemm kernel instead"
)


def _unsupported(schedule: SymbolicSchedule) -> str | None:
    return REASON


def _refused(*args: object) -> Any:
    raise NotImplementedError(REASON)


def _source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    return str(_refused(built, doc))


def _host_tensors(built: RebuiltSchedule) -> HostTensors:
    return _refused(built)  # type: ignore[no-any-return]


def _reference(built: RebuiltSchedule, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return dict(_refused(built, inputs))


WRITER = TtlangWriter("convolution", _unsupported, _source, _host_tensors, _reference)
"""The convolution family's TT-Lang writer (module docstring): every candidate refused with the reason."""
