"""The results store's tables and their version.

``STORE_SCHEMA_VERSION`` is written to the ``meta`` table; ``store/migrations.py`` brings an older file
forward and refuses a newer one. ``MEASUREMENT_COLUMNS``, ``SWEEP_COLUMNS`` and ``SOLVED_COLUMNS`` are the
columns the records (``store/records.py``) are written to and read from, in the order ``store/database.py``
binds them.

A sweep result's program options (``sweep_results.options``) are a sorted JSON list of option names as
text, e.g. ``["causal"]`` or ``[]``; its ``precision`` the weights' precision preset of a mesh sweep's op,
``''`` for a chip's op.
"""

from __future__ import annotations

from loom_explorer.errors import LoomError

STORE_SCHEMA_VERSION = 5

SWEEP_RESULTS_SQL = """
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
    options TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'no_schedule', 'failed')),
    error TEXT NOT NULL,
    best TEXT,
    runner_up TEXT,
    ideal_ns REAL,
    ttnn_default_ns REAL,
    ttnn_default_note TEXT NOT NULL,
    solve_seconds REAL NOT NULL,
    precision TEXT NOT NULL DEFAULT ''
);
"""

SCHEMA_SQL = (
    """
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
"""
    + SWEEP_RESULTS_SQL
    + """CREATE TABLE IF NOT EXISTS solved (
    key TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    hardware TEXT NOT NULL,
    hardware_sha256 TEXT NOT NULL,
    kernel TEXT NOT NULL,
    problem TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    results TEXT NOT NULL
);
"""
)

MEASUREMENT_COLUMNS = (
    "created",
    "source",
    "hardware",
    "hardware_sha256",
    "kernel",
    "shape",
    "candidate",
    "schedule_json",
    "predicted_cycles",
    "predicted_ns",
    "breakdown",
    "measured_ns",
    "measured_what",
    "pcc",
    "traffic_equal",
    "tool_version",
    "ortools_version",
    "note",
)

SWEEP_COLUMNS = (
    "created",
    "op_key",
    "hardware",
    "hardware_sha256",
    "tool_version",
    "label",
    "kernel",
    "shape",
    "dtype",
    "fidelity",
    "options",
    "status",
    "error",
    "best",
    "runner_up",
    "ideal_ns",
    "ttnn_default_ns",
    "ttnn_default_note",
    "solve_seconds",
    "precision",
)

SOLVED_COLUMNS = ("key", "created", "hardware", "hardware_sha256", "kernel", "problem", "tool_version", "results")


class StoreError(LoomError, RuntimeError):
    """A results store that cannot be opened or used; the message names the file."""
