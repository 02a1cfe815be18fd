"""The chip's NoCs: routing (``graph.py``) and per-grid-shape link-load coefficients (``tables.py``)."""

from loom_explorer.noc.graph import Coord, Link, NocGraph, core_coord, dram_endpoints

__all__ = ["Coord", "Link", "NocGraph", "core_coord", "dram_endpoints"]
