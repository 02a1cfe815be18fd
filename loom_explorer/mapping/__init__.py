"""Spatial mapping candidates."""

from loom_explorer.mapping.candidate import Axis, Candidate, Comm
from loom_explorer.mapping.enumerate import enumerate_candidates

__all__ = ["Axis", "Candidate", "Comm", "enumerate_candidates"]
