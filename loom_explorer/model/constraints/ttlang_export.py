"""What the exported TT-Lang kernels need of a schedule beyond what TTNN's kernels do: the writers' rules
(``export/ttlang_*.py``) as constraints, so that the best schedule solved for them is one they write. Only
when the schedule is solved for those kernels (``Problem.target`` ttlang: ``export --format ttlang``,
``--target ttlang``); for TTNN's kernels the family is empty.

A kernel family's own writer's rules are constraints its model supplies (``FamilyModel.constraints``) naming
this family (``ttlang_export``), added after these.
"""

from __future__ import annotations

from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint
from loom_explorer.problem import KernelTarget

FAMILY = "ttlang_export"


def ttlang_export(q: GridQuantities) -> list[Constraint]:
    """The TT-Lang writers' rules on ``q`` (module docstring); none unless the target is TT-Lang."""
    if q.problem.target is not KernelTarget.ttlang:
        return []
    return []
