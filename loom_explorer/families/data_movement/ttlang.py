"""The data-movement family's TT-Lang writer: it refuses every schedule, saying why.

The TT-Lang writers' kernels move 32x32 tiles through dataflow buffers between tiled host tensors
(``targets/ttlang/writer.py``: ``HostTensor`` blocks of a tiled tensor), so a row-major page (stick) read or
write, a tilize and an untilize have no TT-Lang form here. A tiled copy, and a tiled transpose
(``ttl.transpose``), could be written as the element-wise writer's block copies; that writer is not written
yet, and the refusal says so rather than exporting a kernel nobody verified in the simulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.families.data_movement.program import analyse_data_movement
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.targets.ttlang.writer import HostTensors, TtlangWriter


def unsupported(schedule: SymbolicSchedule) -> str:
    """Why TT-Lang export does not write this data-movement schedule (module docstring)."""
    program = schedule.problem.program
    st = analyse_data_movement(program)
    row_major = [t.name for t in program.tensors if t.layout == "row_major"]
    if row_major:
        return (
            f"{program.name} moves row-major {', '.join(row_major)}: the TT-Lang kernels move 32x32 tiles between "
            "tiled tensors, so row-major pages, tilize and untilize have no TT-Lang form"
        )
    what = "transpose" if any(st.relayout(t) == "transpose" for t in st.streamed) else "copy"
    return (
        f"{program.name} is a tiled {what}, which TT-Lang can express (block copies"
        f"{', ttl.transpose' if what == 'transpose' else ''}), but the data-movement family's TT-Lang writer is "
        "not written yet"
    )


def _refused(built: RebuiltSchedule, *args: object) -> Any:
    raise ExportError(unsupported(built.schedule))


def _source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    return _refused(built)  # type: ignore[no-any-return]


def _host_tensors(built: RebuiltSchedule) -> HostTensors:
    return _refused(built)  # type: ignore[no-any-return]


def _reference(built: RebuiltSchedule, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return _refused(built)  # type: ignore[no-any-return]


WRITER = TtlangWriter("data_movement", unsupported, _source, _host_tensors, _reference)
"""The data-movement family's TT-Lang writer (module docstring): a refusal with the reason."""
