"""``serve``: the explorer in a browser (what ``panel serve apps/explorer.py`` does)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from loom_explorer.cli.common import Command, InputError, add_command, whole
from loom_explorer.errors import EXIT_OK


@dataclass(frozen=True, slots=True)
class ServeCommand:
    port: int
    address: str
    allow_hosts: tuple[str, ...]
    hw_files: tuple[str, ...]
    hw_dirs: tuple[str, ...]
    kernel_files: tuple[str, ...]
    kernel_dirs: tuple[str, ...]
    show: bool


def parse_serve(args: argparse.Namespace) -> ServeCommand:
    return ServeCommand(
        args.port,
        args.address,
        tuple(args.allow_host or ()),
        tuple(args.hw or ()),
        tuple(args.hw_dir or ()),
        tuple(args.kernel or ()),
        tuple(args.kernel_dir or ()),
        args.show,
    )


def run_serve(req: ServeCommand) -> int:
    try:
        from loom_explorer.ui.app import ServeConfig, serve
        from loom_explorer.ui.catalog import Catalog
    except ImportError as exc:
        raise InputError(f"serve needs the app extra: pip install 'loom-explorer[app]' ({exc})") from None
    # a CatalogError or ServeError (a LoomError) names the flag and file, or the address
    catalog = Catalog.build(req.hw_files, req.kernel_files, req.hw_dirs, req.kernel_dirs)
    serve(ServeConfig(catalog, port=req.port, address=req.address, allow_hosts=req.allow_hosts), show=req.show)
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = add_command(sub, "serve", Command(parse_serve, run_serve))
    serve.add_argument("--port", type=whole(0, 65535), default=5006, help="port (default 5006; 0 picks a free one)")
    serve.add_argument(
        "--address",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; anything else is "
        "reachable by others and is announced with a warning)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="also answer requests that name this host (e.g. a DNS name in front of --address)",
    )
    serve.add_argument(
        "--hw", action="append", metavar="FILE", help="offer this hardware YAML too, named by its stem (repeatable)"
    )
    serve.add_argument("--hw-dir", action="append", metavar="DIR", help="offer every .yaml file of DIR too")
    serve.add_argument(
        "--kernel",
        action="append",
        metavar="FILE",
        help="offer this kernel file too, named by its stem (repeatable; it is Python and runs when the server starts)",
    )
    serve.add_argument("--kernel-dir", action="append", metavar="DIR", help="offer every .py kernel of DIR too")
    serve.add_argument("--show", action="store_true", help="open a browser tab")
