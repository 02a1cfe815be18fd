"""The served page: one :class:`Explorer` per browser session, solved after the page has loaded.

``loom-explorer serve`` (:func:`serve`) and ``panel serve apps/explorer.py`` both build it with
:func:`create_app`. Query parameters
(``?hw=..&kernel=..&shape=..&dtype=..&fidelity=..&target=..&activation=..&option=causal``; ``option`` is
repeatable, and ``causal=1`` is short for ``option=causal``) pick the first problem,
among the names of the server's :class:`~loom_explorer.ui.catalog.Catalog` only: a query
value is never opened or imported as a path, and one the server does not know is named in the page (without
quoting it unless it is a plain name) while the default is shown.

What :func:`serve` guards, since whoever reaches the port drives the solver:

* it listens on the loopback (127.0.0.1) unless ``address`` says otherwise;
* every request must carry a ``Host`` header naming an address the server was started for (a page on
  another site that rebinds its DNS name to this machine is refused), and a request with an ``Origin``
  header (every websocket) must come from one of those hosts on this port;
* each session's explorer is closed when the session ends (its solver work dropped, its memory released).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import socket
import sys
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import panel as pn
from panel.io.server import Server, get_server
from tornado.httputil import HTTPServerRequest
from tornado.routing import Matcher, Rule
from tornado.web import RequestHandler

from loom_explorer.errors import LoomError
from loom_explorer.hardware.schema import (
    DataFormat,
    Fidelity,
    parse_data_format,
    parse_fidelity,
)
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.ui.catalog import Catalog, InputError
from loom_explorer.ui.explorer import Explorer
from loom_explorer.ui.mesh_request import MeshChoice, checked
from loom_explorer.ui.state import DEFAULT_KERNEL, MAX_SHAPE_CHARS, activation_names

QUERY_KEYS = ("hw", "kernel", "shape", "dtype", "fidelity", "target", "activation")
# the mesh section's (ui/mesh_request.py): ``mesh`` opens it; ``mesh_shape`` is the matmul's M,K,N
MESH_KEYS = {"mesh": "mesh", "graph": "graph", "model": "model", "phase": "phase", "mesh_shape": "shape"}
OPTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")  # ``option=NAME`` (repeatable): a program option's name
LOOPBACK = "127.0.0.1"
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")  # what "localhost" may resolve to
WILDCARDS = ("0.0.0.0", "::")


_LIVE: weakref.WeakSet[Explorer] = weakref.WeakSet()  # this process's session explorers (closed on shutdown)


class ServeError(LoomError, ValueError):
    """The server cannot start as asked (address, port); the message names the flag."""


# ---------------------------------------------------------------------------------------------- the page


def query_choices(args: Mapping[str, Sequence[bytes]], catalog: Catalog) -> tuple[dict[str, Any], list[str]]:
    """The explorer's keyword arguments from a query string, and one message per value refused.

    ``hw`` and ``kernel`` must be names of ``catalog``; ``dtype`` and ``fidelity`` must parse; ``shape``
    must be short and valid for the kernel. A refused value is dropped (the default is used instead) and
    its message names the field, quoting the value only when it is a plain name. Nothing is loaded but
    the catalog's own files."""
    raw = {key: bytes(args[key][0]).decode("utf-8", "replace") for key in QUERY_KEYS if args.get(key)}
    out: dict[str, Any] = {}
    notes: list[str] = []

    def take(key: str, check: Callable[[str], object]) -> None:
        if key not in raw:
            return
        try:
            check(raw[key])
        except ValueError as exc:
            notes.append(str(exc) if isinstance(exc, InputError) else f"{key}: {_parse_note(key)}")
        else:
            out[key] = raw[key]

    take("hw", catalog.hw_source)
    take("kernel", catalog.kernel_source)
    take("dtype", parse_data_format)
    take("fidelity", parse_fidelity)
    take("target", KernelTarget)
    take("activation", _activation)
    if "shape" in raw:
        try:
            _check_shape(raw["shape"], catalog, out)
        except InputError as exc:
            notes.append(str(exc))
        else:
            out["shape"] = raw["shape"]
    names = [bytes(v).decode("utf-8", "replace") for v in args.get("option", [])]
    if args.get("causal") and bytes(args["causal"][0]).decode("utf-8", "replace").lower() in ("1", "true", "yes"):
        names.append("causal")  # causal=1: short for option=causal
    if any(not OPTION_NAME.fullmatch(n) for n in names):
        notes.append("option: not an option name (a kernel's program option, e.g. causal)")
    if any(OPTION_NAME.fullmatch(n) for n in names):
        out["program_options"] = sorted({n for n in names if OPTION_NAME.fullmatch(n)})
    if notes:
        notes.append("showing the default instead")
    return out, notes


def mesh_query(args: Mapping[str, Sequence[bytes]]) -> tuple[MeshChoice | None, list[str]]:
    """The mesh section's choice from a query string (None without ``mesh``), and a message per refusal:
    every value is one of the names the section offers (a shipped mesh, never a path), else the choice is
    dropped and the message names the field."""
    raw = {field: bytes(args[key][0]).decode("utf-8", "replace") for key, field in MESH_KEYS.items() if args.get(key)}
    if "mesh" not in raw:
        return None, []
    try:
        return checked(MeshChoice(**raw)), []
    except InputError as exc:
        return None, [f"{exc}; the mesh section stays closed"]


def _activation(name: str) -> str:
    if name not in activation_names():
        raise ValueError(name)
    return name


def _parse_note(key: str) -> str:
    kinds = {
        "dtype": [f.value for f in DataFormat],
        "fidelity": [f.value for f in Fidelity],
        "target": [t.value for t in KernelTarget],
        "activation": activation_names(),
    }
    return f"unknown value; choose one of {', '.join(kinds[key])}"


def _check_shape(shape: str, catalog: Catalog, chosen: Mapping[str, Any]) -> None:
    """InputError (field ``shape``) unless ``shape`` makes a problem of the chosen kernel (cheap: no model)."""
    if len(shape) > MAX_SHAPE_CHARS:
        raise InputError("shape", f"too long ({len(shape)} characters; at most {MAX_SHAPE_CHARS})")
    program = catalog.program(chosen.get("kernel", DEFAULT_KERNEL))
    try:
        make_problem(
            program,
            shape,
            parse_data_format(chosen.get("dtype", "bfloat16")),
            parse_fidelity(chosen.get("fidelity", "hifi2")),
        )
    except (ValueError, MemoryError) as exc:
        raise InputError("shape", str(exc) if isinstance(exc, ValueError) else "too large") from None


def _session_args() -> Mapping[str, Sequence[bytes]]:
    return pn.state.session_args if pn.state.curdoc is not None else {}


def create_app(catalog: Catalog | None = None) -> Explorer:
    """An explorer for this browser session (``catalog``: what it may load; default the shipped hardware and
    kernels); its first solve starts once the page is shown (a spinner meanwhile), and it is closed when
    the browser session ends."""
    pn.extension("tabulator", notifications=False)
    catalog = catalog if catalog is not None else Catalog.shipped()
    kwargs, notes = query_choices(_session_args(), catalog)
    mesh, mesh_notes = mesh_query(_session_args())
    notes += mesh_notes
    try:
        explorer = Explorer(solve=False, catalog=catalog, notice="; ".join(notes), **kwargs)
    except InputError as exc:  # a command-line kernel file that broke since startup: the defaults instead
        explorer = Explorer(solve=False, catalog=catalog, notice=f"{exc}; showing the default instead")
    pn.state.onload(explorer.solve_async)
    if mesh is not None:
        chosen = mesh

        async def open_mesh() -> None:
            await explorer.open_mesh_async(chosen)

        pn.state.onload(open_mesh)
    if pn.state.curdoc is not None:
        pn.state.on_session_destroyed(lambda _context: explorer.close())
    _LIVE.add(explorer)
    return explorer


def close_all() -> None:
    """Close every session's explorer (the server stops): running searches stop, so the process ends promptly."""
    for explorer in list(_LIVE):
        explorer.close()


# ---------------------------------------------------------------------------------------------- the server


@dataclass(frozen=True)
class ServeConfig:
    """What ``loom-explorer serve`` was asked for: the catalog, the port (0: any free one), the address
    to listen on, and extra host names a request may use (beside those of the address)."""

    catalog: Catalog = field(default_factory=Catalog.shipped)
    port: int = 5006
    address: str = LOOPBACK
    allow_hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for host in self.allow_hosts:
            if not (re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})", host) or _is_ip(host.strip("[]"))):
                raise ServeError(f"--allow-host {host}: expected a host name or an address, without a port")

    @property
    def is_loopback(self) -> bool:
        return self.address == "localhost" or _is_loopback_ip(self.address)

    def hosts(self) -> tuple[str, ...]:
        """Host names (no port) that requests may carry: the loopback names when listening there; the
        address itself when it is one address; for a wildcard address, the loopback names, this machine's
        name and its addresses; plus ``allow_hosts``."""
        names: list[str] = []
        if self.address == "localhost":
            names += LOOPBACK_HOSTS
        elif self.is_loopback:
            names += ["localhost", _host_form(self.address)]
        elif self.address in WILDCARDS:
            names += [*LOOPBACK_HOSTS, *_machine_names()]
        else:
            names.append(_host_form(self.address))
        names += [_host_form(h) for h in self.allow_hosts]
        return tuple(dict.fromkeys(n.lower() for n in names))

    def url_host(self) -> str:
        if self.is_loopback:
            return LOOPBACK if self.address == "localhost" else _host_form(self.address)
        if self.address in WILDCARDS:
            return socket.gethostname()
        return _host_form(self.address)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _is_loopback_ip(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def _host_form(host: str) -> str:
    """How a Host header names ``host``: an IPv6 address in brackets."""
    try:
        return f"[{host}]" if ipaddress.ip_address(host.strip("[]")).version == 6 else host
    except ValueError:
        return host


def _machine_names() -> list[str]:
    names = [socket.gethostname(), socket.getfqdn()]
    with contextlib.suppress(OSError):
        names += [str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)]
    return [_host_form(n) for n in names if n]


class _ForeignRequest(Matcher):
    """Matches a request whose Host names none of ``hosts``, or whose Origin is not one of them on ``port``."""

    def __init__(self, hosts: Sequence[str], port: int) -> None:
        self.hosts = frozenset(hosts)
        self.origins = frozenset(f"{h}:{port}" for h in hosts)

    def match(self, request: HTTPServerRequest) -> dict[str, Any] | None:
        if request.host_name not in self.hosts:
            return {}
        origin = request.headers.get("Origin")
        if origin is not None and _origin_netloc(origin) not in self.origins:
            return {}
        return None


def _origin_netloc(origin: str) -> str:
    parts = urlsplit(origin.lower())
    if parts.port is not None or not parts.hostname:
        return parts.netloc
    return f"{parts.netloc}:{443 if parts.scheme == 'https' else 80}"


class _Refused(RequestHandler):
    """403 for a request from an unexpected host or origin (the refused value is not echoed)."""

    def prepare(self) -> None:
        self.set_status(403)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(
            "403: this loom-explorer server does not answer to this host or origin "
            "(see `loom-explorer serve --help`: --address, --allow-host)\n"
        )


def guard(server: Any, hosts: Sequence[str]) -> None:
    """Refuse requests from other hosts or origins on a built Bokeh ``server``: a Tornado routing rule ahead
    of Bokeh's own, and Bokeh's websocket origin allowlist set to the same hosts on the real port."""
    app = server._tornado  # the Tornado application (Bokeh's BaseServer keeps it there; Panel reads it too)
    app.default_router.rules.insert(0, Rule(_ForeignRequest(hosts, server.port), _Refused))
    origins = app.websocket_origins
    origins.clear()
    origins.update(f"{h}:{server.port}" for h in hosts)


def build_server(config: ServeConfig, **server_options: Any) -> tuple[Server, str]:
    """The guarded, not yet started Bokeh server for ``config``, and the page's URL (with the real port).

    ``server_options`` go to Bokeh's server. Raises :class:`ServeError` when the address or port cannot be
    listened on."""

    def explorer_of_the_session() -> Explorer:  # a plain function (Panel calls it once per session)
        return create_app(config.catalog)

    try:
        server = get_server(
            {"explorer": explorer_of_the_session},
            port=config.port,
            address=config.address,
            title="loom-explorer",
            start=False,
            show=False,
            verbose=False,
            location=False,
            **server_options,
        )
    except OSError as exc:
        raise ServeError(
            f"--address {config.address} --port {config.port}: cannot listen there: {exc.strerror or exc}"
        ) from None
    guard(server, config.hosts())
    return server, f"http://{config.url_host()}:{server.port}/explorer"


def serve(config: ServeConfig, show: bool = False) -> None:
    """Serve the explorer until Ctrl-C (what ``loom-explorer serve`` runs); the URL and, when not on the
    loopback, a warning go to stderr."""
    server, url = build_server(config)
    if not config.is_loopback:
        print(
            f"loom-explorer: WARNING: listening on {config.address}, not only this machine's loopback: anyone "
            "who can reach this port can run the solver here and see the hardware and kernels it serves. "
            f"Requests must name one of these hosts: {', '.join(config.hosts())} (--allow-host adds one).",
            file=sys.stderr,
        )
    print(f"loom-explorer: serving the explorer on {url} (Ctrl-C stops)", file=sys.stderr, flush=True)
    server.start()
    if show:
        server.io_loop.add_callback(lambda: server.show("/explorer"))
    try:
        server.io_loop.start()  # until Ctrl-C (Panel's handler stops the loop)
    finally:
        close_all()


class RunningServer:
    """A guarded explorer server on a background thread, on the loopback (tests, benchmarks): ``url``,
    ``port`` and :meth:`stop`."""

    def __init__(self, catalog: Catalog | None = None, port: int = 0, **server_options: Any) -> None:
        self._config = ServeConfig(catalog if catalog is not None else Catalog.shipped(), port=port)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._server: Server | None = None
        self.url = ""
        self._thread = threading.Thread(
            target=self._run, args=(server_options,), daemon=True, name="loom-explorer-server"
        )
        self._thread.start()
        if not self._ready.wait(60):
            raise RuntimeError("the explorer server did not start within 60 s")
        if self._error is not None:
            raise self._error
        self.port = self._listening_port()

    def _listening_port(self) -> int:
        """The port the started server listens on (it is set before the constructor stops waiting)."""
        assert self._server is not None and self._server.port is not None
        return self._server.port

    def _run(self, server_options: dict[str, Any]) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            server, self.url = build_server(self._config, **server_options)
        except BaseException as exc:  # handed to the constructor's thread
            self._error = exc
            self._ready.set()
            return
        self._server = server
        server.start()
        self._ready.set()
        try:
            server.io_loop.start()
        finally:
            server.stop(wait=False)
            loop.close()

    def stop(self) -> None:
        if self._server is not None and self._thread.is_alive():
            self._server.io_loop.add_callback(self._server.io_loop.stop)
            self._thread.join(timeout=30)
