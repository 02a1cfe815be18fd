"""The local results store: every prediction beside what was measured for it, and every sweep result, in one
SQLite file that deploy, accuracy, sweep and the explorer share.

* ``schema.py``: the tables, their version, the column order, :class:`StoreError`;
* ``migrations.py``: an older file brought forward, a newer one refused untouched;
* ``records.py``: the rows as frozen records (:class:`Measurement`, :class:`SweepRecord`, :class:`SweepChoice`,
  :class:`SolvedRecord`);
* ``database.py``: :class:`ResultsStore` (open, read, write), :func:`open_store`, :func:`default_store_path`.

It imports nothing of the package but ``errors``, so every layer that records or reads results may use it.
"""

from loom_explorer.store.database import ResultsStore, default_store_path, open_store
from loom_explorer.store.records import (
    Measurement,
    SolvedRecord,
    Source,
    SweepChoice,
    SweepRecord,
    SweepStatus,
    package_version,
)
from loom_explorer.store.schema import STORE_SCHEMA_VERSION, StoreError

__all__ = [
    "STORE_SCHEMA_VERSION",
    "Measurement",
    "ResultsStore",
    "SolvedRecord",
    "Source",
    "StoreError",
    "SweepChoice",
    "SweepRecord",
    "SweepStatus",
    "default_store_path",
    "open_store",
    "package_version",
]
