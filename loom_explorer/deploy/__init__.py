"""Running schedules: in Tenstorrent's functional simulator (tt-lang-sim) and, later, on a card."""
