"""The results store: one SQLite file of measurements, sweep results and proven solves, opened, migrated,
read and written.

Default location: ``$LOOM_EXPLORER_STORE``, else ``$XDG_DATA_HOME/loom-explorer/results.sqlite``
(``~/.local/share`` when unset). Opening a file brings its tables to the current version or refuses it
(``store/migrations.py``); every write is one transaction.

A store that cannot be opened, read or written is a :class:`StoreError` naming the file and what SQLite or
the system said (``cannot write (attempt to write a readonly database)``, ``(database or disk is full)``, a
folder that cannot be made): a one-line error of the command whose point is the write (``ingest``,
``sweep --out``, ``accuracy --record``), a warning where the store is only a memory of solves
(``solve/memory.py``).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from loom_explorer.store.migrations import migrate
from loom_explorer.store.records import Measurement, SolvedRecord, SweepChoice, SweepRecord
from loom_explorer.store.schema import MEASUREMENT_COLUMNS, SOLVED_COLUMNS, SWEEP_COLUMNS, StoreError


def default_store_path() -> Path:
    if os.environ.get("LOOM_EXPLORER_STORE"):
        return Path(os.environ["LOOM_EXPLORER_STORE"])
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "loom-explorer" / "results.sqlite"


class ResultsStore:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"results store {self.path}: cannot make its folder {self.path.parent} ({exc.strerror or exc})"
            ) from None
        try:
            self._db = sqlite3.connect(self.path)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"results store {self.path}: {exc}") from None
        try:
            migrate(self._db, self.path)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StoreError(f"results store {self.path}: {exc}") from None
        except StoreError:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _using(self, what: Literal["read", "write"]) -> Iterator[None]:
        """SQLite's and the system's errors inside as a :class:`StoreError` naming the file (module docstring);
        a row the schema refuses or a misused connection stays what it is (a bug of the caller)."""
        try:
            yield
        except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError):
            raise
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"results store {self.path}: cannot {what} ({exc})") from None

    # ---------------------------------------------------------------- measurements
    def record(self, m: Measurement) -> int:
        return self.record_many([m])[0]

    def record_many(self, measurements: Iterable[Measurement]) -> list[int]:
        """Record ``measurements`` in one transaction (all of them or, on an error, none); their row ids."""
        insert = (
            f"INSERT INTO measurements ({', '.join(MEASUREMENT_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(MEASUREMENT_COLUMNS))})"
        )
        ids = []
        with self._using("write"), self._db:
            for m in measurements:
                values = {c: getattr(m, c) for c in MEASUREMENT_COLUMNS}
                values.update(
                    shape=json.dumps(m.shape),
                    breakdown=json.dumps(m.breakdown),
                    traffic_equal=None if m.traffic_equal is None else int(m.traffic_equal),
                )
                ids.append(int(self._db.execute(insert, [values[c] for c in MEASUREMENT_COLUMNS]).lastrowid or 0))
        return ids

    def measurements(self, hardware: str | None = None, kernel: str | None = None) -> list[Measurement]:
        query = f"SELECT {', '.join(MEASUREMENT_COLUMNS)} FROM measurements"
        where, args = [], []
        for column, value in (("hardware", hardware), ("kernel", kernel)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if where:
            query += " WHERE " + " AND ".join(where)
        out = []
        with self._using("read"):
            rows = self._db.execute(query + " ORDER BY id", args).fetchall()
        for row in rows:
            d = dict(zip(MEASUREMENT_COLUMNS, row, strict=True))
            d["shape"], d["breakdown"] = json.loads(d["shape"]), json.loads(d["breakdown"])
            d["traffic_equal"] = None if d["traffic_equal"] is None else bool(d["traffic_equal"])
            out.append(Measurement(**d))
        return out

    # ---------------------------------------------------------------- sweep results
    def sweep_keys(self) -> set[str]:
        """The op keys already solved (``SweepRecord.op_key``); failed ops are not, so a re-run retries them."""
        with self._using("read"):
            return {row[0] for row in self._db.execute("SELECT op_key FROM sweep_results WHERE status != 'failed'")}

    def record_sweep(self, r: SweepRecord) -> int:
        """Record one sweep result in one transaction (replacing an earlier one of the same key)."""
        return self.record_sweeps([r])[0]

    def record_sweeps(self, records: Iterable[SweepRecord]) -> list[int]:
        """Record sweep results in one transaction (all of them or, on an error, none), each replacing an
        earlier one of its key; their row ids."""
        insert = (
            f"INSERT OR REPLACE INTO sweep_results ({', '.join(SWEEP_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(SWEEP_COLUMNS))})"
        )
        ids = []
        with self._using("write"), self._db:
            for r in records:
                values = [
                    r.created,
                    r.op_key,
                    r.hardware,
                    r.hardware_sha256,
                    r.tool_version,
                    r.label,
                    r.kernel,
                    r.shape,
                    r.dtype,
                    r.fidelity,
                    json.dumps(sorted(r.options)),
                    r.status,
                    r.error,
                    r.best.to_json() if r.best else None,
                    r.runner_up.to_json() if r.runner_up else None,
                    r.ideal_ns,
                    r.ttnn_default_ns,
                    r.ttnn_default_note,
                    r.solve_seconds,
                    r.precision,
                ]
                ids.append(int(self._db.execute(insert, values).lastrowid or 0))
        return ids

    def sweep_results(self) -> list[SweepRecord]:
        out = []
        with self._using("read"):
            rows = self._db.execute(f"SELECT {', '.join(SWEEP_COLUMNS)} FROM sweep_results ORDER BY id").fetchall()
        for row in rows:
            d = dict(zip(SWEEP_COLUMNS, row, strict=True))
            d["options"] = tuple(sorted(json.loads(d["options"])))
            d["best"] = SweepChoice.from_json(d["best"]) if d["best"] else None
            d["runner_up"] = SweepChoice.from_json(d["runner_up"]) if d["runner_up"] else None
            out.append(SweepRecord(**d))
        return out

    # ---------------------------------------------------------------- proven solves
    def solved(self, key: str) -> SolvedRecord | None:
        """The proven solve recorded under ``key``, if any."""
        with self._using("read"):
            row = self._db.execute(f"SELECT {', '.join(SOLVED_COLUMNS)} FROM solved WHERE key = ?", (key,)).fetchone()
        return None if row is None else SolvedRecord(**dict(zip(SOLVED_COLUMNS, row, strict=True)))

    def record_solved(self, r: SolvedRecord) -> None:
        """Record one proven solve in one transaction, replacing an earlier one of its key."""
        with self._using("write"), self._db:
            self._db.execute(
                f"INSERT OR REPLACE INTO solved ({', '.join(SOLVED_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(SOLVED_COLUMNS))})",
                [getattr(r, c) for c in SOLVED_COLUMNS],
            )


@contextmanager
def open_store(path: str | Path | None = None) -> Iterator[ResultsStore]:
    store = ResultsStore(path)
    try:
        yield store
    finally:
        store.close()
