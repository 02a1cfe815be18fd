"""Reading a table of published measurements (``loom_explorer/data/published``): the file, its header and its
records, each cell checked by its column's parser, and the cells every such table shares.

``read_table`` reads a CSV whole (the rules of ``csv_input``: UTF-8, a bounded size and row count) and
refuses one without a header, without data rows or without a required column (``DataError``, naming the
file). ``CellChecker`` parses the named columns of a record (a ``CellError`` becomes a ``RowIssue`` naming
file, line and column); ``checked_records`` yields the records of the header's width whose cells all pass
and whose grid fits its card's chip, and collects the others' issues.

The cells the tables share: ``card`` (one of ``CARDS``, the reference card of each architecture:
``hardware/cards.py``), data formats and math fidelities as ttnn names them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from loom_explorer.accuracy.csv_input import CellError, RowIssue, cell_issue, csv_records, read_text, width_issue
from loom_explorer.errors import LoomError
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.cards import reference_cards
from loom_explorer.hardware.schema import DataFormat, Fidelity, GridSpec, parse_data_format, parse_fidelity

CARDS = reference_cards()  # card -> shipped chip, of each architecture's reference card (hardware/cards.py)


class DataError(LoomError, ValueError):
    """A measurement file the report cannot use; the message names the file, row and column."""


def card_cell(text: str) -> str:
    if text not in CARDS:
        raise CellError(text, f"not a card ({', '.join(CARDS)})")
    return text


def data_format_cell(text: str) -> DataFormat:
    try:
        return parse_data_format(text)
    except ValueError:
        raise CellError(text, "not a data format (BFLOAT16, BFLOAT8_B, BFLOAT4_B, FLOAT32)") from None


def fidelity_cell(text: str) -> Fidelity:
    try:
        return parse_fidelity(text)
    except ValueError:
        raise CellError(text, "not a math fidelity (LoFi, HiFi2, HiFi3, HiFi4)") from None


_UNSEEN = object()


class CellChecker:
    """Reads the named columns of a file's rows, each with its parser (``CellError`` -> a ``RowIssue``
    naming file, line and column). Each distinct text of a column is parsed once: rows repeat cards,
    shapes and formats."""

    def __init__(
        self, file: str, header: list[str], parsers: dict[str, Callable[[str], object]], unique: tuple[str, ...] = ()
    ) -> None:
        self.file = file
        self.columns = [
            (name, header.index(name), parse, None if name in unique else dict[str, object]())
            for name, parse in parsers.items()
        ]

    def __call__(self, line: int, cells: list[str]) -> tuple[dict[str, Any], list[RowIssue]]:
        values: dict[str, Any] = {}
        issues: list[RowIssue] = []
        for name, i, parse, memo in self.columns:
            text = cells[i]
            value = _UNSEEN if memo is None else memo.get(text, _UNSEEN)
            if value is _UNSEEN:
                try:
                    value = parse(text)
                except CellError as exc:
                    value = exc
                if memo is not None:
                    memo[text] = value
            if isinstance(value, CellError):
                issues.append(cell_issue(self.file, line, name, value))
            else:
                values[name] = value
        return values, issues


@lru_cache(maxsize=len(CARDS))
def _card_grid(card: str) -> GridSpec:
    return load_hardware(CARDS[card]).grid


def _grid_fits(file: str, line: int, v: dict[str, Any]) -> list[RowIssue]:
    """The row's grid must fit its card's chip (the shipped hardware file's grid)."""
    if "card" not in v or "grid_x" not in v or "grid_y" not in v:
        return []
    chip = _card_grid(v["card"])
    if v["grid_x"] <= chip.columns and v["grid_y"] <= chip.rows:
        return []
    return [
        RowIssue(
            file,
            line,
            column,
            "more cores than the card's chip has",
            f"{v[column]} is more than {CARDS[v['card']]}'s {most}",
        )
        for column, most in (("grid_x", chip.columns), ("grid_y", chip.rows))
        if v[column] > most
    ]


def read_table(path: str | Path, required: tuple[str, ...]) -> tuple[str, list[str], list[tuple[int, list[str]]]]:
    """(file name as given, header, data records) of a CSV with ``required`` columns (DataError otherwise)."""
    file = str(path)
    records = csv_records(file, read_text(path, DataError), DataError)
    first = next(records, None)
    if first is None:
        raise DataError(f"{file}: empty file (no header, no data rows)")
    header = [h.strip() for h in first[1]]
    missing = [c for c in required if c not in header]
    if missing:
        raise DataError(f"{file}: missing columns {', '.join(missing)}")
    rows = list(records)
    if not rows:
        raise DataError(f"{file}: no data rows (only the header)")
    return file, header, rows


def checked_records(
    file: str, header: list[str], records: Iterable[tuple[int, list[str]]], check: CellChecker, issues: list[RowIssue]
) -> Iterator[tuple[int, list[str], dict[str, Any]]]:
    """(line, cells, checked values) of every record of the right width whose cells pass ``check`` and whose
    grid fits its card; the other records' issues are appended to ``issues``."""
    for line, cells in records:
        wrong = width_issue(file, line, cells, header)
        if wrong:
            issues.append(wrong)
            continue
        v, bad = check(line, cells)
        bad += _grid_fits(file, line, v)
        if bad:
            issues.extend(bad)
            continue
        yield line, cells, v
