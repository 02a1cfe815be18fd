"""The kernels a schedule runs as, one package per target (``problem.KernelTarget``): ``targets/ttnn/`` says
what ttnn runs (its ops, program and memory configs both ways, its defaults, circular buffers, validation
rules, work splits and the ttnn version followed) and ``targets/ttlang/`` what the TT-Lang kernels are. A
kernel family supplies its own op or kernel through the target's plug-in group; no module outside a target's
package branches on the target."""
