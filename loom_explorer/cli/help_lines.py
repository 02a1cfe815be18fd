"""The line ``--help`` shows for each command, in the order it lists them: written once, here, so that the
listing needs no command module (``cli/entry.py``) and each command's own parser takes its line from here
(``cli/common.py: add_command``)."""

HELP_LINES: dict[str, str] = {
    "hw": "list or show hardware descriptions",
    "kernels": "list shipped tile programs",
    "solve": "solve every mapping candidate of a problem to optimality",
    "traffic": "route the NoC traffic of the best (or a chosen) schedule",
    "export": "write the best (or a chosen) schedule as a kernel file or JSON",
    "verify": (
        "check an exported TT-Lang kernel: numerics and traffic in tt-lang-sim, and the real TT-Lang compiler "
        "(compile-only)"
    ),
    "toolchain": (
        "install or show the Python 3.12 environment of Tenstorrent's tools (the TT-Lang compiler, ttnn) "
        "that verify and the card-path tests use"
    ),
    "predict": "evaluate an existing TTNN program config (matmul or SDPA), or ttnn's default for an op, with the model",
    "accuracy": "error table of the model on measured matmul or SDPA data",
    "calibrate": "fit the hardware file's estimated constants to measured data",
    "deploy": "run the best (or a chosen) schedule on a card, or in the simulator, and record predicted vs measured",
    "ingest": (
        "read a device-profiler ops_perf_results CSV: each matmul predicted with its own config beside its "
        "measured kernel duration"
    ),
    "improve": (
        "a device-profiler capture's matmul and attention ops: the config each ran, the best config ttnn can "
        "run instead and the predicted gain; -o writes the configs"
    ),
    "sweep": "solve every op of a shapes file (or a model) on every chip, with Dask",
    "report": "report a sweep: per op ours vs ttnn's default, with plots",
    "mesh": "split an op, a block or a decoder layer over a mesh's chips: the proven fastest split, ttnn's beside it",
    "results": "list the results store: predictions beside measurements",
    "serve": "open the explorer in a browser (what `panel serve apps/explorer.py` does)",
}
