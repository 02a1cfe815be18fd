"""What the exported TT-Lang kernels need of a schedule beyond what TTNN's kernels do: the writers' rules as
constraints, so that the best schedule solved for them is one they write, and ``export`` can say which rule
solved values break (``targets/ttlang/exporter.py::ttlang_rule_blocker``).

Every writer is a kernel family's (``families/<family>/ttlang.py``), so every rule is one its model supplies
(``FamilyModel.constraints``) naming this constraint family, and only when the schedule is solved for those
kernels (``Problem.target`` ttlang: ``export --format ttlang``, ``--target ttlang``). The family keeps its
place in the order of the shared families (``model/constraints/__init__.py``) with no rule of its own.
"""

from __future__ import annotations

from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint

FAMILY = "ttlang_export"


def ttlang_export(q: GridQuantities) -> list[Constraint]:
    """No rule shared by every writer: the families supply theirs (module docstring)."""
    return []
