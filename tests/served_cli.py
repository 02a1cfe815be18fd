"""A real ``loom-explorer serve`` in a subprocess, for the server tests (tests/ui, tests/browser)."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from waits import WAIT_S

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = WAIT_S  # until the server prints its URL (its imports take minutes on a loaded machine)
ANSWER_TIMEOUT_S = WAIT_S  # until a request is answered
STOP_TIMEOUT_S = 60  # from SIGTERM to the process's exit, before it is killed


class Served:
    """A ``loom-explorer serve --port 0 ...`` process: its printed URL, port and stderr lines."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loom_explorer.cli", "serve", "--port", "0", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = self._wait_for_url()
        self.port = int(re.search(r":(\d+)/", self.url).group(1))

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            self.log.append(line)
            found = re.search(r"serving the explorer on (http://\S+)", line)
            if found:
                return found.group(1)
        self.stop()
        pytest.fail(f"the server printed no URL within {START_TIMEOUT_S:.0f} s: {''.join(self.log)}")

    def get(self, query: str = "", headers: dict[str, str] | None = None) -> tuple[int, str]:
        request = urllib.request.Request(self.url + query, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
