"""Bring a results store file to ``STORE_SCHEMA_VERSION``, or refuse it untouched.

The version is read before anything is written. A file without a ``meta`` table is new: every table is
created and the current version recorded. Each older version has an entry in ``UPGRADES``: the SQL that
takes it one version forward after the ``CREATE TABLE IF NOT EXISTS`` script has added any missing table.
A version this tool does not know (a newer tool's file) raises :class:`StoreError` and nothing is written.

Version history: 1 had the ``measurements`` table only; 2 added ``sweep_results``; 3 added ``solved``
(each created by the script, so their upgrades have no SQL of their own).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from loom_explorer.store.schema import SCHEMA_SQL, STORE_SCHEMA_VERSION, StoreError

# version found -> SQL run after the CREATE script to reach the next version
UPGRADES: dict[int, str] = {1: "", 2: ""}


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
        raise StoreError(f"results store {path} has schema_version {found}; this tool uses "
                         f"{STORE_SCHEMA_VERSION} (keep it, or give another --store)")
    with db:
        db.executescript(SCHEMA_SQL)
        if found is None:
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(STORE_SCHEMA_VERSION),))
            return
        version = int(found)
        while version < STORE_SCHEMA_VERSION:
            if UPGRADES[version]:
                db.executescript(UPGRADES[version])
            version += 1
        if found != str(version):
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
