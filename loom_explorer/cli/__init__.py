"""``loom-explorer``: solve, explore, export, verify and measure schedules for Tenstorrent chips.

Subcommands list hardware and kernels, solve a problem on a chip, route its NoC traffic, export and verify
kernels, predict and score TTNN configs against measurements, deploy, and serve the explorer. One module per
command family (``listing``, ``solve``, ``export``, ``deploy``, ``accuracy``, ``sweep``, ``serve``), each
parsing its arguments into a frozen request and doing it apart (``common.py``); ``entry.py`` builds the
parser and runs a command.

Exit status (``loom_explorer/errors.py``):

* 0 when at least one candidate has a schedule;
* 1 when ``verify`` or ``deploy`` finds a numerical or traffic mismatch (or ``toolchain`` cannot install or
  find the toolchain);
* 2 for bad input (unknown hardware, malformed YAML, bad shape, unknown pin or candidate, pin outside its
  domain, a schedule an export format cannot express, ...), with a one-line message naming the culprit:
  every ``LoomError``;
* 3 when no candidate has a schedule (explanations are still printed);
* 70 for an internal error (a bug: any exception that is not a ``LoomError``, among them a
  ``RefereeError``, the solver and the referee disagreeing): a one-line message asking for a report;
  ``--debug`` prints the traceback too;
* 130 on Ctrl-C (``solve`` prints what it has proven, the unfinished candidates marked ``interrupted``;
  ``solve/interrupt.py``).
"""

from loom_explorer.cli.entry import build_parser, main

__all__ = ["build_parser", "main"]
