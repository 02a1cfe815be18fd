"""The served page: one :class:`Explorer` per browser session, solved after the page has loaded.

``panel serve apps/explorer.py`` and ``loom-explorer serve`` both build it with :func:`create_app`.
Query parameters (``?hw=..&kernel=..&shape=..&dtype=..&fidelity=..&causal=1``) pick the first problem.
"""

from __future__ import annotations

import panel as pn

from loom_explorer.ui.explorer import Explorer

QUERY_KEYS = ("hw", "kernel", "shape", "dtype", "fidelity")


def _query() -> dict[str, object]:
    args = pn.state.session_args if pn.state.curdoc is not None else {}
    out: dict[str, object] = {}
    for key in QUERY_KEYS:
        if key in args:
            out[key] = args[key][0].decode()
    if "causal" in args:
        out["causal"] = args["causal"][0].decode().lower() in ("1", "true", "yes")
    return out


def create_app() -> Explorer:
    """An explorer for this session; its first solve starts once the page is shown (a spinner meanwhile)."""
    pn.extension("tabulator", notifications=False)
    explorer = Explorer(solve=False, **_query())  # type: ignore[arg-type]
    pn.state.onload(explorer.solve_async)
    return explorer


def serve(port: int = 5006, show: bool = False, address: str | None = None) -> None:
    """Serve the explorer (what ``loom-explorer serve`` runs)."""
    pn.serve({"explorer": create_app}, port=port, show=show, address=address, title="loom-explorer",
             websocket_origin="*" if address else None)


class RunningServer:
    """A served explorer on a background thread (tests, benchmarks): ``url`` and :meth:`stop`."""

    def __init__(self, port: int = 0) -> None:
        import socket

        if port == 0:
            with socket.socket() as sock:
                sock.bind(("localhost", 0))
                port = sock.getsockname()[1]
        self.port = port
        self.url = f"http://localhost:{port}/explorer"
        self._thread = pn.serve({"explorer": create_app}, port=port, threaded=True, show=False, start=True,
                                title="loom-explorer")

    def stop(self) -> None:
        self._thread.stop()
