"""Which family reads a profiler op (``accuracy/op_mapping.py``): the op codes each family claims, and the
reason a row no family claims is skipped, said in the families' own words."""

from __future__ import annotations

import pytest

from loom_explorer.accuracy.op_mapping import accuracy_ops, op_families, unmapped_reason


def test_every_claimed_op_code_belongs_to_one_family() -> None:
    claimed = [code for ops in accuracy_ops() for code in ops.op_codes]
    assert len(claimed) == len(set(claimed)) == len(op_families())
    assert op_families()["matmuldeviceoperation"].name == "contraction"


@pytest.mark.parametrize(
    ("op_code", "says"),
    [
        ("batchedmatmulfoo", "a matmul variant the model does not map (only Matmul[DeviceOperation]"),
        ("ringjointsdpa", "an SDPA variant the model does not map (only ScaledDotProductAttention"),
        ("pagedscaleddotproductattentiondecode", "an SDPA variant"),
        (
            "accumulationdeviceoperation",
            "not an op the model maps (SDPA, matmul, tilize/untilize, transpose, copy, reshape, slice, concat, "
            "typecast, binary, unary and rotary element-wise ops, SDPA decode, embedding, bilinear grid sample, "
            "layer/RMS/group norm, softmax, fast_reduce_nc)",
        ),
    ],
)
def test_an_unclaimed_op_is_skipped_naming_its_kind(op_code: str, says: str) -> None:
    assert op_code not in op_families()
    assert unmapped_reason(op_code).startswith(says)
