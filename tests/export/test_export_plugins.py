"""An export format shipped in a package of its own plugs in through ``loom_explorer.export_formats``: the
command line and the explorer offer it in its ``order``, and a bad entry is refused naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_site import install

from loom_explorer import cli
from loom_explorer.export.formats import export_formats, exporter
from loom_explorer.plugins import PluginError

_FORMAT_MODULE = """\
from loom_explorer.problem import KernelTarget


class CsvExporter:
    name = "csv"
    order = 25
    suffix = ".csv"
    summary = "parameters as comma-separated values"
    noun = "a CSV file"
    label = "parameters (.csv)"
    kernel_target = None

    def can_export(self, solved):
        return None

    def export(self, solved):
        return "\\n".join(f"{k},{v}" for k, v in sorted(solved.values.items())) + "\\n"


EXPORTER = CsvExporter()
NOT_AN_EXPORTER = object()
"""


def test_a_third_party_format_is_offered_in_its_order(site: Path) -> None:
    assert export_formats() == ("ttlang", "ttnn", "json", "npe")
    install(site, "csvfmt", "[loom_explorer.export_formats]\ncsv = csvfmt_mod:EXPORTER\n", _FORMAT_MODULE)
    assert export_formats() == ("ttlang", "ttnn", "csv", "json", "npe")
    assert exporter("csv").suffix == ".csv"
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    fmt = next(a for a in subparsers.choices["export"]._actions if a.dest == "output_format")  # type: ignore[index]
    assert fmt.choices is not None and "csv" in fmt.choices and "csv: parameters as comma-separated" in str(fmt.help)


def test_an_object_that_is_no_exporter_is_refused_naming_its_entry(site: Path) -> None:
    install(site, "badfmt", "[loom_explorer.export_formats]\nbad = badfmt_mod:NOT_AN_EXPORTER\n", _FORMAT_MODULE)
    with pytest.raises(PluginError, match="bad = 'badfmt_mod:NOT_AN_EXPORTER' of group loom_explorer.export_formats"):
        export_formats()
