"""``panel serve apps/explorer.py``: the explorer on its defaults (wormhole_n150, GEMM 4096^3, bf16, HiFi2).

Query parameters choose another problem, e.g. ``?hw=blackhole_p150a&kernel=flash_attention&causal=1``.
"""

from loom_explorer.ui.app import create_app

create_app().servable(title="loom-explorer")
