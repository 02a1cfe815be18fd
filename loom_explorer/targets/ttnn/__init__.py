"""What ttnn runs, in one package: its ops, their program and memory configs both ways, its defaults and work
splits, and the ttnn version the code follows (``TTNN_VERSION``: the toolchain installs it, and the
sources cited in the docstrings are its).

- ``op.py``: ``TtnnOp``, what a kernel family's ttnn op supplies (a plug-in of ``loom_explorer.ttnn_ops``, in
  ``families/<family>/ttnn.py``), and the registry: the op of a candidate, a program and a problem;
  ``ttnn_runs``, ``ttnn_equivalent`` and ``ttnn_memory`` of a schedule;
- ``sharding.py``: the sharded L1 memory configs that pin a schedule's layout on the card;
- ``exporter.py``: ``--format ttnn``, the exported Python file (program, compute and memory configs and the
  call) and the compute kernel config;
- ``config.py``: ``TtnnConfig``, what a config read from the user or a capture is to the core;
- ``evaluate.py``: a config's schedule costed by the referee (``Evaluated``), ``ConfigError``;
- ``defaults.py``: ttnn's interleaved default of the ops it runs without a program config (element-wise,
  norms, softmax): ``split_work_to_cores``' work split, costed; and ``evaluate_ttnn_default``, what ttnn
  runs for any problem when the call gives no config;
- ``config_text.py``: a config as the constructor call a user would write;
- ``dtypes.py``: ttnn's names of the data formats.

Each family's own op and configs stay in its folder: ``families/<family>/ttnn.py`` (the export side) and
``ttnn_config.py`` (the matmul's and SDPA's program configs read and costed; ``families/contraction/
ttnn_mapping.py`` the matmul config table both directions read).
"""

TTNN_VERSION = "0.81.1"
