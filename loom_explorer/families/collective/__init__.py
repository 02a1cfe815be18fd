"""The collective family: all-gather, reduce-scatter and all-reduce across the chips of a mesh."""
