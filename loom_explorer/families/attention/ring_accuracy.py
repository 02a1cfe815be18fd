"""The ``RingJointSDPADeviceOperation`` rows of a device-profiler report: one row per device of the ring, read
as that device's local SDPA (``accuracy.read_sdpa``) plus its place in the ring (``RingAttentionCall``),
predicted by ``ring_predict.py``.

Inputs as ttnn's ring-joint SDPA prints them: ``INPUT_0`` q ``[B, H, N_l, D]``, ``INPUT_1`` k ``[B, Hkv, N_l,
D]``, ``INPUT_2`` v ``[B, Hv, N_l, Dv]`` (each device's local ``N_l`` tokens), ``INPUT_3`` the joint q ``[B,
H, L, D]`` (``L = 0``: no joint tokens; its extents may be 0, so it is read here, not as a shape), then the
joint k, v and the gathered k, v. ATTRIBUTES: ``ring_size``, ``is_causal``, ``is_balanced``, ``logical_n``
and the ``SDPAProgramConfig`` (as SDPA's). ``DEVICE ID`` places the row in the ring.
"""

from __future__ import annotations

import re
from dataclasses import replace

from loom_explorer.accuracy.capture import NO_VALUE, OpReading, ProfilerRow, RowSkip, flag, whole_or_none
from loom_explorer.targets.ttnn.op import RingAttentionCall

RING_JOINT_OP_CODES = frozenset({"ringjointsdpadeviceoperation", "ringjointsdpaoperation"})
_EXTENT = re.compile(r"\s*([0-9]+)\s*(?:\[\s*([0-9]+)\s*\])?\s*")


def _joint_tokens(row: ProfilerRow) -> int:
    """Logical length of the joint q (``INPUT_3`` Y), 0 when absent or empty."""
    text = row.get("INPUT_3_Y_PAD[LOGICAL]", "INPUT_3_Y")
    if text.lower() in NO_VALUE:
        return 0
    m = _EXTENT.fullmatch(text)
    if m is None:
        raise RowSkip(f"INPUT_3_Y {text!r} (the joint q's length) is not a tensor extent")
    return int(m.group(2) or m.group(1))


def _whole(attrs: dict[str, str], key: str) -> int:
    value = whole_or_none(attrs.get(key, ""))
    if value is None:
        raise RowSkip(f"a ring-joint SDPA row needs a whole-number {key} attribute, has {attrs.get(key, '')!r}")
    return value


def read_ring_joint(reading: OpReading, row: ProfilerRow, attrs: dict[str, str]) -> OpReading:
    """``reading`` (the row read as its device's local SDPA) with its place in the ring (module docstring)."""
    q, v = row.shape("INPUT_0"), row.shape("INPUT_2")
    if q is None or v is None:
        raise RowSkip("a ring-joint SDPA row needs the shapes of q (INPUT_0) and v (INPUT_2); latent V is not read")
    (b, _, n_local, _), (bv, v_heads, nv, v_head_dim) = q, v
    if (bv, nv) != (b, n_local):
        raise RowSkip(f"v [{bv}, {v_heads}, {nv}, {v_head_dim}] does not match q's batch and local tokens")
    ring_size = _whole(attrs, "ring_size")
    if ring_size < 2:
        raise RowSkip(f"ring_size {ring_size}: a ring joins at least 2 devices")
    device = whole_or_none(row.get("DEVICE ID").removesuffix(".0"))
    ring = RingAttentionCall(
        ring_size=ring_size,
        device_id=device,
        is_balanced=bool(flag(attrs.get("is_balanced", ""))),
        logical_n=_whole(attrs, "logical_n"),
        joint_tokens=_joint_tokens(row),
        v_heads=v_heads,
        v_head_dim=v_head_dim,
    )
    note = f"ring-joint SDPA, device {device} of a ring of {ring_size}: the device's local SDPA over the ring's steps"
    return replace(reading, ring=ring, note="; ".join(filter(None, [note, reading.note])))
