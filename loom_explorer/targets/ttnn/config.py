"""What every ttnn config the model reads, costs and prints is (``TtnnConfig``): a program config of an op that
takes one (a family's pydantic model, e.g. the matmul's and SDPA's, in ``families/<family>/ttnn_config.py``) or,
for an op ttnn runs without one, the work split its program factory makes (``defaults.TtnnDefaultOp``).

The core reads a config only through this protocol, never through a family's class: its grid, its JSON
(``model_dump``), how it prints (``config_text``), the operand placements and compute block it was read with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from loom_explorer.problem import Placement

C = TypeVar("C")


class TtnnConfig(Protocol):
    """A ttnn config as ``predict``, ``ingest`` and ``improve`` read it (module docstring)."""

    @property
    def compute_with_storage_grid_size(self) -> tuple[int, int]:
        """The grid the op deals its work over: (columns, rows)."""
        ...

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        """The config's fields (pydantic's): ``mode="json"`` is the JSON the tools write."""
        ...

    def model_dump_json(self) -> str:
        """The config's fields as JSON text (pydantic's)."""
        ...

    def ttnn_call(self) -> str | None:
        """The ttnn call that runs the config when the config names it (an op without a program config, e.g.
        ``ttnn.rms_norm``); None when it is the call of the op the config is given to (``TtnnOp.function``)."""
        ...

    def ttnn_class(self) -> str | None:
        """The program config class ttnn constructs (e.g. ``ttnn.SDPAProgramConfig``); None for an op that
        takes none."""
        ...

    def ttnn_arguments(self) -> dict[str, object]:
        """The constructor's arguments in its own names (or, with no program config, the op's split)."""
        ...

    def ttnn_lines(self) -> list[str]:
        """What is said after the constructor call (the placements and compute fields it was read with); for an
        op without a program config, the lines that say what ttnn runs instead."""
        ...

    def read_with(self) -> dict[str, Mapping[str, object]]:
        """The blocks beside the constructor's arguments the config was read with (a matmul config's ``memory``
        and ``compute``), by name; empty for a config without any."""
        ...

    def placements(self) -> dict[str, Placement]:
        """Where the config places each operand that is not DRAM-interleaved."""
        ...


class NoProgramConfig(BaseModel):
    """The ``TtnnConfig`` of an op ttnn runs without a program config, e.g. a work split its program factory
    makes: the config names its call (``op``), constructs no class, its arguments are its own fields, and its
    line says what ttnn runs (``describe``, which begins with the op). A subclass adds the split's fields and
    the grid, and the placements of the operands it holds in L1."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    op: str  # the ttnn call, e.g. "ttnn.rms_norm"

    def describe(self) -> str:
        """What ttnn runs, beginning with ``op``."""
        return self.op

    def ttnn_call(self) -> str | None:
        return self.op

    def ttnn_class(self) -> str | None:
        return None

    def ttnn_arguments(self) -> dict[str, object]:
        return self.model_dump(mode="json")

    def ttnn_lines(self) -> list[str]:
        return [f"no program config {self.describe().removeprefix(f'{self.op} ')}"]

    def read_with(self) -> dict[str, Mapping[str, object]]:
        return {}

    def placements(self) -> dict[str, Placement]:
        return {}


def own(cfg: TtnnConfig, kind: type[C]) -> C:
    """``cfg`` as the config class ``kind`` of the op that reads it (TypeError when another op's config is
    given to it: a caller's mistake, never an input's)."""
    if not isinstance(cfg, kind):
        raise TypeError(f"a {type(cfg).__name__} is not a {kind.__name__}")
    return cfg
