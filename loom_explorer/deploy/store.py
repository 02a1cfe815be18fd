"""The local results store: every prediction beside what was measured for it, in one SQLite file.

Default location: ``$LOOM_EXPLORER_STORE``, else ``$XDG_DATA_HOME/loom-explorer/results.sqlite`` (``~/.local/
share`` when unset). The schema carries a version in its ``meta`` table: a file of an older version is
migrated forward (version 1 had no ``sweep_results`` table), a newer one is refused with a message.

A measurement records the hardware (and its spec's sha256), kernel, shape, candidate, the schedule
document, the prediction (cycles, ns, breakdown), what was measured (``measured_ns``, ``None`` for a
simulator run, whose ticks are not cycles; the PCC and whether the traffic matched the model, for
simulator runs), where it came from (``card``, ``simulator`` or ``report``), tool versions and time.

A sweep result (``loom-explorer sweep``) records one op on one chip: the op (kernel, shape, data format,
fidelity, causal), the best schedule and the runner-up (candidate, parameters, predicted latency,
utilisation), ttnn's default config's predicted latency for the same op, or why the op failed. Its key
(hardware sha256, tool version, op) makes a re-run skip what is already solved.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Literal

STORE_SCHEMA_VERSION = 2
Source = Literal["card", "simulator", "report"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('card', 'simulator', 'report')),
    hardware TEXT NOT NULL,
    hardware_sha256 TEXT NOT NULL,
    kernel TEXT NOT NULL,
    shape TEXT NOT NULL,
    candidate TEXT NOT NULL,
    schedule_json TEXT NOT NULL,
    predicted_cycles INTEGER,
    predicted_ns REAL,
    breakdown TEXT NOT NULL,
    measured_ns REAL,
    measured_what TEXT NOT NULL,
    pcc REAL,
    traffic_equal INTEGER,
    tool_version TEXT NOT NULL,
    ortools_version TEXT NOT NULL,
    note TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS by_hw_kernel ON measurements (hardware, kernel);
CREATE TABLE IF NOT EXISTS sweep_results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    op_key TEXT NOT NULL UNIQUE,
    hardware TEXT NOT NULL,
    hardware_sha256 TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    label TEXT NOT NULL,
    kernel TEXT NOT NULL,
    shape TEXT NOT NULL,
    dtype TEXT NOT NULL,
    fidelity TEXT NOT NULL,
    causal INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'no_schedule', 'failed')),
    error TEXT NOT NULL,
    best TEXT,
    runner_up TEXT,
    ideal_ns REAL,
    ttnn_default_ns REAL,
    ttnn_default_note TEXT NOT NULL,
    solve_seconds REAL NOT NULL
);
"""


class StoreError(RuntimeError):
    """A results store that cannot be opened or used; the message names the file."""


@dataclass(frozen=True, slots=True)
class Measurement:
    source: Source
    hardware: str
    hardware_sha256: str
    kernel: str
    shape: dict[str, int]
    candidate: str
    schedule_json: str
    predicted_cycles: int | None
    predicted_ns: float | None
    breakdown: dict[str, int]
    measured_ns: float | None
    measured_what: str  # e.g. "device kernel duration", "wall clock with trace", "simulated (no time)"
    pcc: float | None = None
    traffic_equal: bool | None = None
    note: str = ""
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    tool_version: str = field(default_factory=lambda: package_version("loom-explorer"))
    ortools_version: str = field(default_factory=lambda: package_version("ortools"))


@cache
def package_version(name: str) -> str:
    """The installed version of ``name`` (read once per process: every Measurement carries two)."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def default_store_path() -> Path:
    if os.environ.get("LOOM_EXPLORER_STORE"):
        return Path(os.environ["LOOM_EXPLORER_STORE"])
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "loom-explorer" / "results.sqlite"


_COLUMNS = ("created", "source", "hardware", "hardware_sha256", "kernel", "shape", "candidate", "schedule_json",
            "predicted_cycles", "predicted_ns", "breakdown", "measured_ns", "measured_what", "pcc", "traffic_equal",
            "tool_version", "ortools_version", "note")


class ResultsStore:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path)
            # the version is read before anything is written: a newer store is refused untouched
            has_meta = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
            row = (self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                   if has_meta else None)
            if row is not None and row[0] not in ("1", str(STORE_SCHEMA_VERSION)):
                self._db.close()
                raise StoreError(f"results store {self.path} has schema_version {row[0]}; this tool uses "
                                 f"{STORE_SCHEMA_VERSION} (keep it, or give another --store)")
            with self._db:
                self._db.executescript(_SCHEMA)
                if row is None:
                    self._db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(STORE_SCHEMA_VERSION),))
                elif row[0] == "1":  # version 2 only added sweep_results (created above)
                    self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                                     (str(STORE_SCHEMA_VERSION),))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"results store {self.path}: {exc}") from None

    def close(self) -> None:
        self._db.close()

    def record(self, m: Measurement) -> int:
        return self.record_many([m])[0]

    def record_many(self, measurements: Iterable[Measurement]) -> list[int]:
        """Record ``measurements`` in one transaction (all of them or, on an error, none); their row ids."""
        insert = f"INSERT INTO measurements ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
        ids = []
        with self._db:
            for m in measurements:
                values = {c: getattr(m, c) for c in _COLUMNS}
                values.update(shape=json.dumps(m.shape), breakdown=json.dumps(m.breakdown),
                              traffic_equal=None if m.traffic_equal is None else int(m.traffic_equal))
                ids.append(int(self._db.execute(insert, [values[c] for c in _COLUMNS]).lastrowid or 0))
        return ids

    def measurements(self, hardware: str | None = None, kernel: str | None = None) -> list[Measurement]:
        query = f"SELECT {', '.join(_COLUMNS)} FROM measurements"
        where, args = [], []
        for column, value in (("hardware", hardware), ("kernel", kernel)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if where:
            query += " WHERE " + " AND ".join(where)
        out = []
        for row in self._db.execute(query + " ORDER BY id", args):
            d = dict(zip(_COLUMNS, row))
            d["shape"], d["breakdown"] = json.loads(d["shape"]), json.loads(d["breakdown"])
            d["traffic_equal"] = None if d["traffic_equal"] is None else bool(d["traffic_equal"])
            out.append(Measurement(**d))
        return out


    # ---------------------------------------------------------------- sweep results
    def sweep_keys(self) -> set[str]:
        """The op keys already solved (``SweepRecord.op_key``); failed ops are not, so a re-run retries them."""
        return {row[0] for row in self._db.execute("SELECT op_key FROM sweep_results WHERE status != 'failed'")}

    def record_sweep(self, r: SweepRecord) -> int:
        """Record one sweep result in one transaction (replacing an earlier one of the same key)."""
        values = [r.created, r.op_key, r.hardware, r.hardware_sha256, r.tool_version, r.label, r.kernel, r.shape,
                  r.dtype, r.fidelity, int(r.causal), r.status, r.error,
                  r.best.to_json() if r.best else None, r.runner_up.to_json() if r.runner_up else None,
                  r.ideal_ns, r.ttnn_default_ns, r.ttnn_default_note, r.solve_seconds]
        with self._db:
            cur = self._db.execute(f"INSERT OR REPLACE INTO sweep_results ({', '.join(_SWEEP_COLUMNS)}) "
                                   f"VALUES ({', '.join('?' * len(_SWEEP_COLUMNS))})", values)
        return int(cur.lastrowid or 0)

    def sweep_results(self) -> list[SweepRecord]:
        out = []
        for row in self._db.execute(f"SELECT {', '.join(_SWEEP_COLUMNS)} FROM sweep_results ORDER BY id"):
            d = dict(zip(_SWEEP_COLUMNS, row))
            d["causal"] = bool(d["causal"])
            d["best"] = SweepChoice.from_json(d["best"]) if d["best"] else None
            d["runner_up"] = SweepChoice.from_json(d["runner_up"]) if d["runner_up"] else None
            out.append(SweepRecord(**d))
        return out


@dataclass(frozen=True, slots=True)
class SweepChoice:
    """One schedule a sweep kept: candidate, parameter values, predicted latency, utilisation (ideal
    compute cycles over the predicted latency)."""

    candidate: str
    params: tuple[tuple[str, int], ...]
    latency_cycles: int
    latency_ns: float
    utilisation: float

    def to_json(self) -> str:
        return json.dumps({"candidate": self.candidate, "params": dict(self.params),
                           "latency_cycles": self.latency_cycles, "latency_ns": self.latency_ns,
                           "utilisation": self.utilisation})

    @staticmethod
    def from_json(text: str) -> SweepChoice:
        d = json.loads(text)
        return SweepChoice(d["candidate"], tuple(d["params"].items()), d["latency_cycles"], d["latency_ns"],
                           d["utilisation"])


SweepStatus = Literal["ok", "no_schedule", "failed"]


@dataclass(frozen=True, slots=True)
class SweepRecord:
    """One op of a sweep on one chip (module docstring)."""

    op_key: str
    hardware: str
    hardware_sha256: str
    tool_version: str
    label: str
    kernel: str
    shape: str
    dtype: str
    fidelity: str
    causal: bool
    status: SweepStatus
    error: str
    best: SweepChoice | None
    runner_up: SweepChoice | None
    ideal_ns: float | None
    ttnn_default_ns: float | None
    ttnn_default_note: str
    solve_seconds: float
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    @property
    def speedup(self) -> float | None:
        """ttnn's default config's predicted latency over ours."""
        if self.best is None or not self.ttnn_default_ns:
            return None
        return self.ttnn_default_ns / self.best.latency_ns


_SWEEP_COLUMNS = ("created", "op_key", "hardware", "hardware_sha256", "tool_version", "label", "kernel", "shape",
                  "dtype", "fidelity", "causal", "status", "error", "best", "runner_up", "ideal_ns",
                  "ttnn_default_ns", "ttnn_default_note", "solve_seconds")


@contextmanager
def open_store(path: str | Path | None = None) -> Iterator[ResultsStore]:
    store = ResultsStore(path)
    try:
        yield store
    finally:
        store.close()
