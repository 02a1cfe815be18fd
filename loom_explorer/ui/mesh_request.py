"""What the explorer's mesh section is asked to split: a shipped mesh, a graph and its size, checked as names.

A :class:`MeshChoice` names a shipped mesh (``hw/meshes/*.yaml``, never a path), a graph (``matmul`` with
its ``M,K,N`` shape, or an ``mlp``, ``attention`` block or decoder ``layer`` of a Llama model in a phase,
``sweep/ops.py``'s ``MODELS`` and ``PHASES``), as ``loom-explorer mesh solve`` takes them. :func:`checked`
refuses a bad value with an :class:`~loom_explorer.ui.catalog.InputError` naming the field; the query
string's values go through it before anything is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.hardware.mesh_load import list_meshes, load_mesh
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.mesh.graph import OpGraph, matmul_graph, model_graph
from loom_explorer.mesh.precision import DEFAULT_PRECISION, precision
from loom_explorer.problem import parse_shape
from loom_explorer.program import load_program
from loom_explorer.sweep.ops import DECODE_KV, MODELS, PHASES
from loom_explorer.ui.catalog import InputError, shown

GRAPHS = {
    "matmul": "one matmul (M x K x N)",
    "mlp": "MLP: w1, w3 -> SwiGLU -> w2",
    "attention": "attention block: qkv -> attention -> wo",
    "layer": "decoder layer",
}
DEFAULT_MESH = "t3000"
DEFAULT_MATMUL = "M=1024,K=4096,N=4096"
MAX_SHAPE_CHARS = 200
MAX_MATMUL_DIM = 1 << 20  # elements per dim: a larger matmul is beyond what a page should solve


@dataclass(frozen=True, slots=True)
class MeshChoice:
    mesh: str = DEFAULT_MESH
    graph: str = "matmul"
    model: str = "llama-3-70b"
    phase: str = "prefill 2k"
    shape: str = DEFAULT_MATMUL  # the matmul's

    @property
    def title(self) -> str:
        what = f"matmul {self.shape}" if self.graph == "matmul" else f"{self.model} {self.graph}, {self.phase}"
        return f"{what} on {self.mesh}"


def phase_names() -> list[str]:
    return [name for name, _, _ in PHASES]


def checked(choice: MeshChoice) -> MeshChoice:
    """``choice`` when every field is one the section offers; InputError naming the first that is not."""
    if choice.mesh not in list_meshes():
        raise InputError("mesh", f"unknown mesh {shown(choice.mesh)}; choose one of {', '.join(list_meshes())}")
    if choice.graph not in GRAPHS:
        raise InputError("graph", f"unknown graph {shown(choice.graph)}; choose one of {', '.join(GRAPHS)}")
    if choice.graph == "matmul":
        matmul_dims(choice.shape)
    else:
        if choice.model not in MODELS:
            raise InputError("model", f"unknown model {shown(choice.model)}; choose one of {', '.join(MODELS)}")
        if choice.phase not in phase_names():
            raise InputError("phase", f"unknown phase {shown(choice.phase)}; choose one of {', '.join(phase_names())}")
    return choice


def matmul_dims(shape: str) -> tuple[int, int, int]:
    """``M, K, N`` of a matmul shape text (InputError, field ``mesh_shape``)."""
    if len(shape) > MAX_SHAPE_CHARS:
        raise InputError("mesh_shape", f"too long ({len(shape)} characters; at most {MAX_SHAPE_CHARS})")
    try:
        dims = dict(parse_shape(shape, load_program("gemm")))
    except ValueError as exc:
        raise InputError("mesh_shape", str(exc)) from None
    m, k, n = dims["M"], dims["K"], dims["N"]
    if max(m, k, n) > MAX_MATMUL_DIM:
        raise InputError("mesh_shape", f"a dim over {MAX_MATMUL_DIM:,} elements")
    return m, k, n


def build(choice: MeshChoice) -> tuple[MeshSpec, OpGraph, bool]:
    """The mesh, the graph and whether it is a prefill (the checked ``choice``'s)."""
    choice = checked(choice)
    mesh = load_mesh(choice.mesh)
    if choice.graph == "matmul":
        return mesh, matmul_graph(*matmul_dims(choice.shape)), False
    model = MODELS[choice.model]
    rows, prefill = next((r, p) for name, r, p in PHASES if name == choice.phase)
    prec = precision(DEFAULT_PRECISION)
    return mesh, model_graph(choice.graph, model, rows, prefill, DECODE_KV, prec, model.layers), prefill
