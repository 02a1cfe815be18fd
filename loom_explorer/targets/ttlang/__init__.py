"""The TT-Lang kernels loom-explorer writes (``KernelTarget.ttlang``): everything about them but each kernel
family's own writer (``families/<family>/ttlang.py``, its kernel text and writer rules beside it).

* ``exporter.py``: ``--format ttlang`` (``EXPORTER``, group ``loom_explorer.export_formats``): what the kernel
  file holds, the checks every TT-Lang export needs, the dispatch to the family's writer, and why a schedule
  solved for TTNN's kernels cannot be written (the TT-Lang kernel's buffers overflow L1, or a writer rule
  breaks);
* ``writer.py``: ``TtlangWriter``, the plug-in a family registers under ``loom_explorer.ttlang_writers``, with
  ``HostTensor`` (where a problem tensor sits in the file's host arguments) and ``KernelContractError``;
* ``contract.py``: what ``loom-explorer verify`` holds a kernel file to (its constants, and its outputs against
  the writer's torch reference);
* ``common.py``: what every kernel file shares (header, footer, the simulator adapter, host helpers, the
  dataflow template, the pipe-net statements);
* ``ops.py``: the element-wise ops as TT-Lang and torch text.

The writers' rules are a constraint family of the model (``model/constraints/ttlang_export.py``), so the
solve for the TT-Lang kernels only returns schedules they write.
"""

from __future__ import annotations

TT_LANG_VERSION = "1.1.1"
"""The release of the TT-Lang compiler (``tt-lang``) the kernel files are written for: the one the toolchain
installs (``deploy/toolchain.py`` says why this release). The files keep to the forms both it and the simulator
(the ``sim`` extra's ``tt-lang-sim``) accept."""
