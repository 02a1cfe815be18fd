"""ttnn's names of the data formats (``ttnn.<name>``): the dtypes a TTNN export gives its tensors."""

from __future__ import annotations

from loom_explorer.hardware.schema import DataFormat

TTNN_DTYPES = {
    DataFormat.bfloat16: "bfloat16",
    DataFormat.bfloat8_b: "bfloat8_b",
    DataFormat.bfloat4_b: "bfloat4_b",
    DataFormat.float32: "float32",
}
