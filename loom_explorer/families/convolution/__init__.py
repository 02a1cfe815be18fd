"""The convolution family: ttnn's ``conv2d`` as the implicit GEMM its sharded program factories run, and
the profiler rows of a CNN (conv2d; the halo step beside it).

``program.py`` recognises its programs (``Convolution``, ``CONVOLUTION``: a Matmul over filter rows and a
filter row's window); ``implicit_gemm.py`` maps a convolution problem to its GEMM; ``model.py`` is its model
(``FAMILY``: the GEMM's, costed by the contraction family); ``ttnn_config.py`` reads, costs and writes
ttnn's ``Conv2dConfig`` as the program factory resolves it; ``ttnn.py`` is its TTNN op (``OP``:
``ttnn.conv2d``); ``accuracy.py`` reads the profiler rows (``ACCURACY``; ``halo.py`` the halo step's, as
the data-movement family's ``copy_rows``; ``upsample.py`` a nearest upsample's, as ``upsample_rows``);
``ttlang.py`` refuses the TT-Lang export with the reason (``WRITER``).
"""
