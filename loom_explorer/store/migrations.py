"""Bring a results store file to ``STORE_SCHEMA_VERSION``, or refuse it untouched.

The version is read before anything is written. A file without a ``meta`` table is new: every table is
created and the current version recorded. Each older version has an entry in ``UPGRADES``: the step that
takes it one version forward after the ``CREATE TABLE IF NOT EXISTS`` script has added any missing table
(a missing table is created in the current form, so a step changes only a table it finds in an older form).
A version this tool does not know (a newer tool's file) raises :class:`StoreError` and nothing is written.

Version history: 1 had the ``measurements`` table only; 2 added ``sweep_results``; 3 added ``solved``
(each created by the script, so their upgrades do nothing of their own); 4 replaced the sweep results'
``causal`` column (0/1) by ``options``, a sorted JSON list of program option names: a row of causal 1
reads ``["causal"]``, one of 0 ``[]`` (``_sweep_options``); 5 added the sweep results' ``precision`` (a mesh
op's weights' preset), ``''`` on the rows found (``_sweep_precision``: which preset an older mesh sweep ran
at is not in the file).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from loom_explorer.store.schema import SCHEMA_SQL, STORE_SCHEMA_VERSION, SWEEP_COLUMNS, SWEEP_RESULTS_SQL, StoreError


def _nothing(db: sqlite3.Connection) -> None:
    """A version whose new table the CREATE script adds."""


def _sweep_options(db: sqlite3.Connection) -> None:
    """Version 3 -> 4: a ``sweep_results`` table with the ``causal`` column is rebuilt in the current form
    (SQLite cannot change a column in place), each row's flag becoming its ``options`` list; rows, ids and
    keys are kept."""
    columns = [row[1] for row in db.execute("PRAGMA table_info(sweep_results)")]
    if "causal" not in columns:
        return
    db.execute("ALTER TABLE sweep_results RENAME TO sweep_results_v3")
    db.execute(SWEEP_RESULTS_SQL)
    kept = ", ".join(c for c in SWEEP_COLUMNS if c not in ("options", "precision"))  # precision: its default
    db.execute(
        f"INSERT INTO sweep_results (id, {kept}, options) "
        f"SELECT id, {kept}, CASE WHEN causal THEN '[\"causal\"]' ELSE '[]' END FROM sweep_results_v3"
    )
    db.execute("DROP TABLE sweep_results_v3")


def _sweep_precision(db: sqlite3.Connection) -> None:
    """Version 4 -> 5: the ``precision`` column added to a ``sweep_results`` table without it, ``''`` on
    every row."""
    columns = [row[1] for row in db.execute("PRAGMA table_info(sweep_results)")]
    if "precision" not in columns:
        db.execute("ALTER TABLE sweep_results ADD COLUMN precision TEXT NOT NULL DEFAULT ''")


# version found -> the step run after the CREATE script to reach the next version
UPGRADES: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _nothing,
    2: _nothing,
    3: _sweep_options,
    4: _sweep_precision,
}


def schema_version(db: sqlite3.Connection) -> str | None:
    """The ``schema_version`` the file records (text, as stored), or None for a file without one."""
    has_meta = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() if has_meta else None
    return None if row is None else str(row[0])


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Create or upgrade the tables of the store at ``path`` (open as ``db``) in one transaction."""
    found = schema_version(db)
    known = {str(v) for v in UPGRADES} | {str(STORE_SCHEMA_VERSION)}
    if found is not None and found not in known:
        raise StoreError(
            f"results store {path} has schema_version {found}; this tool uses "
            f"{STORE_SCHEMA_VERSION} (keep it, or give another --store)"
        )
    with db:
        db.executescript(SCHEMA_SQL)
        if found is None:
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(STORE_SCHEMA_VERSION),))
            return
        version = int(found)
        while version < STORE_SCHEMA_VERSION:
            UPGRADES[version](db)
            version += 1
        if found != str(version):
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
