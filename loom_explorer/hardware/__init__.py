"""Hardware descriptions: schema, loading."""

from loom_explorer.hardware.load import HardwareError, list_hardware, load_hardware
from loom_explorer.hardware.schema import (
    DataFormat,
    Fidelity,
    HardwareSpec,
    parse_data_format,
    parse_fidelity,
)

__all__ = [
    "DataFormat",
    "Fidelity",
    "HardwareError",
    "HardwareSpec",
    "list_hardware",
    "load_hardware",
    "parse_data_format",
    "parse_fidelity",
]
