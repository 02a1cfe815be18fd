"""Compile TT-Lang kernel files with the real TT-Lang compiler, compile-only (no card).

Run by the toolchain's Python 3.12 as a script, never imported by loom-explorer (which runs on other
Pythons; ``deploy/compiler.py`` starts it)::

    python ttlang_compile.py FILE [FILE ...]

Each FILE is an exported kernel: it defines ``KERNEL`` (the ``@ttl.operation``) and ``kernel_arguments()``
(the host torch tensors the kernel takes, in order); its ``main()`` is not run. The compiler runs its whole
pass pipeline (pipe guards, dataflow buffers, the L1 budget of circular buffers) down to the generated C++
on host ``ttnn`` tensors (bfloat16, tile layout), with ``TTLANG_COMPILE_ONLY=1``. Every file gives one line
``LOOM_COMPILE {json}`` with ``passed``, ``message`` (the compiler's error), and the circular buffers the
compiler allocated: tiles per block, blocks, bytes per tile (user-declared and compiler-allocated ones,
sized as tt-lang's own L1-budget check sizes them). The compiler's own output (the generated C++) goes to
this process's output too; the caller keeps the ``LOOM_COMPILE`` lines. A compile error's ``message`` starts
with its real first line (``error_message``: tt-lang puts a version banner line before a pass pipeline's
error).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import traceback
from typing import Any

os.environ["TTLANG_COMPILE_ONLY"] = "1"  # before ttl is imported: it reads the variable when it runs a kernel

MESSAGE_CHARS = 4000
_BANNER = re.compile(r"ttlang \S+")  # tt-lang's version line before a pass pipeline's error ("ttlang 1.1.1")


def error_message(exc: BaseException) -> str:
    """``Type: first line`` and the rest of the compiler's error, its version banner lines dropped from the front
    (the report names the compiler) so that the real error is the first line; the traceback's last frames
    when the error has no text."""
    lines = str(exc).strip().splitlines()
    while lines and _BANNER.fullmatch(lines[0].strip()):
        lines.pop(0)
    text = f"{type(exc).__name__}: " + "\n".join(lines)
    if not lines:
        text += "\n" + "".join(traceback.format_exception(exc)[-3:])
    return text[:MESSAGE_CHARS]


def _circular_buffers(kernel: Any) -> list[dict[str, int]]:
    """The circular buffers of the kernel just compiled (tt-lang keeps the compiled kernel in the cache
    dict of the ``@ttl.operation`` closure)."""
    from ttl.dataflow_buffer import CompilerAllocatedDFBConfig
    from ttl.dtype_utils import (
        format_name_to_ttnn_dtype,
        tile_bytes_from_dtype,
        torch_dtype_to_ttnn_datatype,
    )

    caches = [c.cell_contents for c in (kernel.__closure__ or ()) if isinstance(c.cell_contents, dict)]
    compiled = [v for cache in caches for v in cache.values() if hasattr(v, "cb_configs")]
    if len(compiled) != 1:
        raise RuntimeError(f"expected one compiled kernel in tt-lang's cache, found {len(compiled)}")
    out = []
    for index, cb in enumerate(compiled[0].cb_configs):
        if cb is None:  # tt-lang's runtime refuses such a kernel ("Missing CB config"): so does this check
            raise RuntimeError(
                f"dataflow buffer {index} has no configuration (declared but never used?): "
                "the TT-Lang runtime refuses to run the kernel"
            )
        if isinstance(cb, CompilerAllocatedDFBConfig):
            page = tile_bytes_from_dtype(format_name_to_ttnn_dtype(cb.data_format))
            out.append(
                {"tiles": cb.num_tiles, "block_count": cb.block_count, "page_bytes": page, "compiler_allocated": True}
            )
            continue
        dtype = cb.tensor.dtype
        fmt = dtype if hasattr(dtype, "name") else torch_dtype_to_ttnn_datatype(dtype)
        out.append(
            {
                "tiles": cb.shape[0] * cb.shape[1],
                "block_count": cb.block_count,
                "page_bytes": tile_bytes_from_dtype(fmt),
                "compiler_allocated": False,
            }
        )
    return out


def compile_one(path: str) -> dict[str, Any]:
    import ttnn

    spec = importlib.util.spec_from_file_location("loom_compiled_kernel", path)
    if spec is None or spec.loader is None:
        return {"passed": False, "message": f"{path}: cannot be imported"}
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        kernel, arguments = module.KERNEL, module.kernel_arguments()
    except Exception as exc:  # reported, the next file still compiles
        return {"passed": False, "message": f"{path}: does not load: {type(exc).__name__}: {exc}"}
    host = [ttnn.from_torch(t, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT) for t in arguments]
    try:
        kernel(*host)
    except Exception as exc:  # the compiler's refusal is the result
        return {"passed": False, "message": error_message(exc)}
    try:
        buffers = _circular_buffers(kernel)
    except Exception as exc:  # as above: reported for this file
        return {"passed": False, "message": f"{type(exc).__name__}: {exc}"}
    return {"passed": True, "message": "", "circular_buffers": buffers}


def main(paths: list[str]) -> int:
    from ttl.constants import DEFAULT_L1_CB_BUDGET_BYTES

    compiler = f"tt-lang {importlib.metadata.version('tt-lang')}"
    for path in paths:
        result = {
            "file": path,
            "compiler": compiler,
            "l1_budget_bytes": DEFAULT_L1_CB_BUDGET_BYTES,
            **compile_one(path),
        }
        sys.stdout.flush()
        print("LOOM_COMPILE " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
