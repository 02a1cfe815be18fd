"""A traffic flow: one kind of NoC transfer that each of its senders repeats (see ``model/traffic.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.mapping.candidate import Axis
from loom_explorer.model.expr import Expr
from loom_explorer.noc.tables import FlowKind, Senders


@dataclass(frozen=True, slots=True)
class TrafficFlow:
    name: str
    tensor: str
    kind: FlowKind
    senders: Senders
    axis: Axis | None  # multicast (and the read feeding it): row (x), column (y) or all cores (xy); gather
    noc: int
    bytes: Expr  # per sender per repetition
    count: Expr  # repetitions per sender
    group: Expr | None = None  # grouped multicast (and its read): cores per group along group_axis
    group_axis: Axis | None = None
    format_of: str | None = None  # whose data format the bytes are in, for auxiliary data; None: tensor

    @property
    def format_tensor(self) -> str:
        return self.format_of or self.tensor
