"""The data formats and math fidelities of a model's ops on a mesh: what each chip's weights, KV cache and
matrix engine run at.

A ``Precision`` names, per op of a decoder layer, the format of its resident tensor (a matmul's weights
``in1``; decode attention's key/value cache ``k`` and ``v``) and the fidelity of its tile math. Activations
stay bf16 (as the collectives between ops move them). Two presets:

* ``performance``: tt-transformers' ``ModelOptimizations.performance`` over its ``_default_settings``
  (tenstorrent/tt-metal@17a8a99d62bb4a596727b72bfd98f574f2d5f002,
  ``models/tt_transformers/tt/model_config.py``): ``FF1_FF3`` (``w1``, ``w3``) ``BFP4`` at ``LOFI``; ``FF2``
  (``w2``), ``WQKV`` (``qkv``), ``WO`` (``wo``) and ``KV_CACHE`` ``BFP8``; ``LI_FF2`` ``HIFI2_FP16``,
  ``LI_QKV_*``, ``LI_O_*`` and ``SDPA_DECODE`` ``HIFI2``, ``SDPA_PREFILL`` ``HIFI4``. Its ``accuracy`` mode
  keeps the same formats for Llama-3.1-70B ("70B+ models still use bfp4 MLPs and BFP8 attention"). The
  default of the mesh commands, the sweep and the benchmark.
* ``bf16``: every tensor bf16, every op HiFi2 (the per-chip model's own default).
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.hardware.schema import DataFormat, Fidelity
from loom_explorer.mesh.states import MeshError


@dataclass(frozen=True, slots=True)
class OpPrecision:
    """One op's resident tensor format and its fidelity."""

    resident: DataFormat = DataFormat.bfloat16
    fidelity: Fidelity = Fidelity.hifi2


@dataclass(frozen=True, slots=True)
class Precision:
    """A named preset (module docstring): ``ops`` the ops it sets, ``prefill_attention`` attention's fidelity
    in prefill; any other op is bf16 at HiFi2."""

    name: str
    ops: tuple[tuple[str, OpPrecision], ...]
    prefill_attention: Fidelity = Fidelity.hifi2

    def of(self, op: str, prefill: bool = False) -> OpPrecision:
        found = dict(self.ops).get(op, OpPrecision())
        if op == "attention" and prefill:
            return OpPrecision(found.resident, self.prefill_attention)
        return found


_BFP8 = OpPrecision(DataFormat.bfloat8_b)
PRECISIONS = {
    "performance": Precision(
        "performance",
        (
            ("qkv", _BFP8),
            ("wo", _BFP8),
            ("w1", OpPrecision(DataFormat.bfloat4_b, Fidelity.lofi)),
            ("w3", OpPrecision(DataFormat.bfloat4_b, Fidelity.lofi)),
            ("w2", _BFP8),
            ("attention", _BFP8),  # the decode KV cache
        ),
        Fidelity.hifi4,
    ),
    "bf16": Precision("bf16", ()),
}
DEFAULT_PRECISION = "performance"


def precision(name: str) -> Precision:
    """The preset called ``name``; :class:`MeshError` naming the known ones otherwise."""
    found = PRECISIONS.get(name)
    if found is None:
        raise MeshError(f"--precision {name}: known presets are {', '.join(PRECISIONS)}")
    return found
