"""``loom-explorer serve`` is safe by default: a real server, driven over plain HTTP.

It listens on the loopback only and prints its real URL; a request naming another host (or coming from
another origin) is refused; a path in the query string is never imported (a plain GET already builds the
session's explorer on the server); files named on the command line are refused when their names clash.
The requests go to the same guarded server (``build_server``) on a thread of this process in the quick tier,
and to a real ``loom-explorer serve`` in a subprocess (a fresh interpreter, seconds to start) with the slow
tests. What the page then shows (no path, no file content, no other session's values) is checked in Chromium
by ``tests/browser/test_served_safely.py``.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from served_cli import ROOT, Served
from waits import WAIT_S, wait_until


class InProcess:
    """The guarded server ``loom-explorer serve`` runs (``RunningServer``: ``build_server`` on a thread of this
    process), with ``Served``'s ``url``, ``port``, ``get`` and ``stop``."""

    def __init__(self) -> None:
        from loom_explorer.ui.app import RunningServer

        self.server = RunningServer()
        self.url, self.port = self.server.url, self.server.port

    def get(self, query: str = "", headers: dict[str, str] | None = None) -> tuple[int, str]:
        request = urllib.request.Request(self.url + query, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=WAIT_S) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def stop(self) -> None:
        self.server.stop()


@pytest.fixture(scope="module", params=["in-process", pytest.param("subprocess", marks=pytest.mark.slow)])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served | InProcess]:
    server: Served | InProcess = (
        InProcess() if request.param == "in-process" else Served([], tmp_path_factory.mktemp("served"))
    )
    try:
        yield server
    finally:
        server.stop()


def _listening_addresses(pid: int, port: int | None = None) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Local addresses of the TCP sockets ``pid`` listens on (on ``port``, if given), from /proc: the
    process's socket inodes looked up in /proc/net/tcp and /proc/net/tcp6."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] != "0A" or cols[9] not in inodes:  # 0A: LISTEN
                continue
            hex_address, hex_port = cols[1].split(":")
            if port is not None and int(hex_port, 16) != port:
                continue
            raw = bytes.fromhex(hex_address)
            packed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))  # per 32-bit word, host order
            addr = ipaddress.ip_address(packed)
            out.append(addr.ipv4_mapped or addr if isinstance(addr, ipaddress.IPv6Address) else addr)
    return out


@pytest.mark.skipif(not Path("/proc/net/tcp").is_file(), reason="reads Linux's /proc/net/tcp")
def test_it_listens_on_the_loopback_only_and_prints_its_real_url(served: Served | InProcess) -> None:
    assert served.url.startswith("http://127.0.0.1:") and served.port != 0
    status, html = served.get()
    assert status == 200 and "<title>loom-explorer</title>" in html
    if isinstance(served, Served):
        addresses = _listening_addresses(served.proc.pid)
    else:  # this process listens on other ports too (other tests' servers): the server's port only
        addresses = _listening_addresses(os.getpid(), served.port)
    assert addresses, "found no listening socket of the server"
    assert all(a.is_loopback for a in addresses), f"listening on {addresses}"


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "evil.example"},
        {"Host": "evil.example:{port}"},
        {"Origin": "http://evil.example"},
        {"Origin": "http://127.0.0.1:1"},
    ],
)
def test_a_request_for_another_host_or_from_another_origin_is_refused(
    served: Served | InProcess, headers: dict[str, str]
) -> None:
    status, body = served.get(headers={k: v.format(port=served.port) for k, v in headers.items()})
    assert status == 403
    assert "evil" not in body


@pytest.mark.parametrize("headers", [{"Host": "localhost:{port}"}, {"Origin": "http://127.0.0.1:{port}"}])
def test_the_loopback_names_are_answered(served: Served | InProcess, headers: dict[str, str]) -> None:
    status, _ = served.get(headers={k: v.format(port=served.port) for k, v in headers.items()})
    assert status == 200


def test_a_kernel_path_in_the_query_is_never_run_nor_echoed(served: Served | InProcess, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.py"
    evil.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    for query in (f"?kernel={evil}", f"?kernel={evil}&shape=M=256,K=256,N=256", f"?kernel=file://{evil}"):
        status, html = served.get(query)
        assert status == 200
        assert str(tmp_path) not in html
    time.sleep(0.5)
    assert not marker.exists(), "the server imported a kernel file named by a query string"


def _own_files(folder: Path) -> tuple[Path, Path, Path]:
    """A kernel file (that writes a marker file when it runs), a hardware file, and the marker's path."""
    kernel = folder / "my_gemm.py"
    marker = folder / "loaded"
    kernel.write_text(
        (ROOT / "kernels" / "gemm.py").read_text()
        + f"\nimport pathlib\npathlib.Path({str(marker)!r}).write_text('yes')\n"
    )
    hw = folder / "my_chip.yaml"
    hw.write_text((ROOT / "hw" / "wormhole_n150.yaml").read_text())
    return kernel, hw, marker


@pytest.mark.slow  # a second server in a fresh interpreter: the quick tier builds its catalog in-process (below)
def test_the_server_takes_kernels_and_hardware_from_its_command_line(tmp_path: Path) -> None:
    """``--kernel`` and ``--hw`` files are loaded when the server starts (a kernel file runs then); the page
    offering them by name is checked in tests/browser."""
    kernel, hw, marker = _own_files(tmp_path)
    server = Served(["--kernel", str(kernel), "--hw", str(hw)], tmp_path)
    try:
        assert marker.exists()
        status, html = server.get("?kernel=my_gemm&hw=my_chip")
        assert status == 200 and "<title>loom-explorer</title>" in html
    finally:
        server.stop()


def test_the_catalog_of_the_command_line_loads_its_files_and_offers_them_by_name(tmp_path: Path) -> None:
    """What ``serve --kernel ... --hw ...`` builds before it listens: each file loaded (a kernel file runs),
    then offered to a query by its name."""
    from loom_explorer.ui.app import query_choices
    from loom_explorer.ui.catalog import Catalog

    kernel, hw, marker = _own_files(tmp_path)
    catalog = Catalog.build(hw_files=[hw], kernel_files=[kernel])
    assert marker.exists()
    chosen, notes = query_choices({"kernel": [b"my_gemm"], "hw": [b"my_chip"]}, catalog)
    assert chosen == {"kernel": "my_gemm", "hw": "my_chip"} and not notes


@pytest.mark.slow  # a fresh interpreter: the quick tier runs the same command in-process (below)
def test_a_name_clash_on_the_command_line_exits_2_naming_the_flag(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "loom_explorer.cli",
            "serve",
            "--port",
            "0",
            "--kernel",
            str(ROOT / "kernels" / "gemm.py"),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        f"--kernel {ROOT / 'kernels' / 'gemm.py'}: the name 'gemm' is already taken by a shipped kernel" in done.stderr
    )


def test_a_name_clash_on_the_command_line_is_refused_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    from loom_explorer import cli

    kernel = ROOT / "kernels" / "gemm.py"
    assert cli.main(["serve", "--port", "0", "--kernel", str(kernel)]) == 2
    assert f"--kernel {kernel}: the name 'gemm' is already taken by a shipped kernel" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flag,message",
    [
        ("hw_files", "--hw {tmp}/missing.yaml: no such file"),
        ("kernel_files", "--kernel {tmp}/notes.txt: a kernel file ends in .py"),
        ("kernel_dirs", "--kernel-dir {tmp}: no .py files"),
        ("hw_dirs", "--hw-dir {tmp}/nowhere: no such folder"),
    ],
)
def test_the_catalog_refuses_bad_files_naming_the_flag(tmp_path: Path, flag: str, message: str) -> None:
    from loom_explorer.ui.catalog import Catalog, CatalogError

    (tmp_path / "notes.txt").write_text("x")
    value = {
        "hw_files": tmp_path / "missing.yaml",
        "kernel_files": tmp_path / "notes.txt",
        "kernel_dirs": tmp_path,
        "hw_dirs": tmp_path / "nowhere",
    }[flag]
    with pytest.raises(CatalogError) as info:
        Catalog.build(**{flag: [value]})
    assert str(info.value).startswith(message.format(tmp=tmp_path))


def test_an_address_it_cannot_listen_on_is_a_clear_error() -> None:
    from loom_explorer.ui.app import ServeConfig, ServeError, build_server

    with pytest.raises(ServeError, match=r"--address 192\.0\.2\.1 --port 0: cannot listen there"):
        build_server(ServeConfig(address="192.0.2.1", port=0))


def test_query_values_are_names_of_the_catalog_and_never_loaded(tmp_path: Path) -> None:
    from loom_explorer.ui.app import query_choices
    from loom_explorer.ui.catalog import Catalog

    marker = tmp_path / "ran"
    evil = tmp_path / "evil.py"
    evil.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    args = {
        "kernel": [str(evil).encode()],
        "hw": [b"/etc/passwd"],
        "dtype": [b"<img src=x>"],
        "fidelity": [b"hifi4"],
        "shape": [b"M=256,K=256,N=256"],
    }
    chosen, notes = query_choices(args, Catalog.shipped())
    assert chosen == {"fidelity": "hifi4", "shape": "M=256,K=256,N=256"}
    assert [n.split(":")[0] for n in notes] == ["hw", "kernel", "dtype", "showing the default instead"]
    text = "; ".join(notes)
    assert str(tmp_path) not in text and "passwd" not in text and "<img" not in text
    assert not marker.exists()
    chosen, notes = query_choices({"kernel": [b"nonexistent"], "shape": [b"M=abc"]}, Catalog.shipped())
    assert chosen == {} and notes[0].startswith("kernel: unknown kernel 'nonexistent'; choose one of ")
    assert notes[1].startswith("shape: ")


# ------------------------------------------------------------------------------------ in-process server


@pytest.mark.skipif(not Path("/proc/net/tcp").is_file(), reason="reads Linux's /proc/net/tcp")
def test_the_running_server_of_the_tests_listens_on_the_loopback_only() -> None:
    from loom_explorer.ui.app import RunningServer

    server = RunningServer()
    try:
        addresses = _listening_addresses(os.getpid(), server.port)
        assert addresses and all(a.is_loopback for a in addresses), addresses
        assert server.url == f"http://127.0.0.1:{server.port}/explorer"
    finally:
        server.stop()


def test_a_closed_session_releases_its_explorer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain GET builds the session's explorer (from its query); nobody connects, so the server discards
    the session after the unused-session lifetime, and the explorer is then closed: no watchers, no solver
    thread, no session or results kept."""
    from loom_explorer.ui import app as served_app

    made = []
    build = served_app.create_app

    def create_app(catalog):
        made.append(build(catalog))
        return made[-1]

    monkeypatch.setattr(served_app, "create_app", create_app)  # records what the server builds, unchanged
    server = served_app.RunningServer(unused_session_lifetime_milliseconds=200, check_unused_sessions_milliseconds=200)
    try:
        with urllib.request.urlopen(server.url + "?kernel=flash_attention", timeout=WAIT_S) as resp:
            assert resp.status == 200
        assert len(made) == 1 and made[0].state.kernel == "flash_attention"
        explorer = made[0]
        wait_until(lambda: not explorer._watchers, "the unused session's explorer to be closed")
        assert explorer._watchers == [] and explorer.runner._executor._shutdown
        assert explorer.state.session is None and explorer.state.results == [] and explorer.state.stop_token.stopped
    finally:
        server.stop()
