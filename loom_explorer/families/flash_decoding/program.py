"""Flash-decoding at the program layer: a variant of the attention family's programs (``FLASH_DECODING``), whose
analysis is attention's. It claims no program: it contributes its candidates to attention's
(``candidates.py``)."""

from __future__ import annotations

from loom_explorer.families.attention.program import ATTENTION, analyse_attention
from loom_explorer.program.family import ProgramFamily

FLASH_DECODING = ProgramFamily(
    name="flash_decoding",
    description="attention with the key/value sequence split over cores and the partials combined (flash-decoding)",
    matches=lambda program: False,
    analyse=analyse_attention,
    variant_of=ATTENTION.name,
)
