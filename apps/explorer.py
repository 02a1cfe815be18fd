"""``panel serve apps/explorer.py``: the explorer on its defaults (wormhole_n150, GEMM 4096^3, bf16, HiFi2).

Query parameters choose another problem among the shipped names, e.g.
``?hw=blackhole_p150a&kernel=flash_attention&causal=1``; a path is never loaded. This is Panel's own server:
it listens where Panel's flags say (``--address 127.0.0.1`` for this machine only) and does not check the
Host header; ``loom-explorer serve`` does both (docs/explorer.md, "Serving safely").
"""

from loom_explorer.ui.app import create_app

create_app().servable(title="loom-explorer")
