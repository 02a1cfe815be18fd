"""The collective family's model plug-in (group ``loom_explorer.collective_models``): ``latency.py``."""

from __future__ import annotations

from loom_explorer.families.collective.latency import collective_latency
from loom_explorer.model.collective import CollectiveModel

MODEL = CollectiveModel(name="collective", latency=collective_latency)
