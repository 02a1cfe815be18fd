"""The explorer's program options: one checkbox per option the kernel declares, kept in step with the state's
``program_options`` both ways; ``causal`` (keyword, ``open_problem`` input, query ``causal=1``) is short for
the option ``causal``, and ``option=NAME`` in the query names any option."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from loom_explorer.ui.app import query_choices
from loom_explorer.ui.catalog import Catalog
from loom_explorer.ui.explorer import Explorer

ATTENTION = "B=1,H=1,Sq=64,Skv=64,D=64"


@pytest.fixture()
def explorer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Explorer]:
    monkeypatch.setenv("LOOM_EXPLORER_STORE", str(tmp_path / "results.sqlite"))
    ex = Explorer(kernel="flash_attention", shape=ATTENTION, solve=False)
    try:
        yield ex
    finally:
        ex.close()


def test_one_checkbox_per_declared_option(explorer: Explorer) -> None:
    w = explorer.w_options
    assert w.options == ["causal"] and w.value == [] and w.visible
    assert "in-options" in w.css_classes and "in-causal" in w.css_classes
    gemm = Explorer(solve=False)
    try:
        assert gemm.w_options.options == [] and not gemm.w_options.visible
        assert "in-causal" not in gemm.w_options.css_classes
    finally:
        gemm.close()


def test_the_checkboxes_and_the_state_follow_each_other(explorer: Explorer) -> None:
    explorer.w_options.value = ["causal"]
    assert explorer.state.program_options == ["causal"] and explorer.state.causal
    assert explorer.state.session is not None and explorer.state.problem.options == frozenset({"causal"})
    explorer.w_options.value = []
    assert explorer.state.program_options == [] and explorer.state.problem.options == frozenset()
    assert explorer.open_problem({"causal": True})  # causal: short for the option
    assert explorer.w_options.value == ["causal"] and explorer.state.problem.has_option("causal")
    assert not explorer.open_problem({"program_options": ["causal"]})  # nothing changed: nothing solved
    with pytest.raises(ValueError, match="program_options: a list of option names"):
        explorer.open_problem({"program_options": "causal"})


def test_a_kernel_without_the_option_keeps_it_for_the_next_that_has_it(explorer: Explorer) -> None:
    explorer.open_problem({"causal": True})
    explorer.open_problem({"kernel": "gemm", "shape": "M=64,K=64,N=64"})
    assert explorer.w_options.options == [] and not explorer.w_options.visible
    assert explorer.state.program_options == ["causal"] and explorer.state.problem.options == frozenset()
    explorer.open_problem({"kernel": "flash_attention", "shape": ATTENTION})
    assert explorer.w_options.options == ["causal"] and explorer.w_options.value == ["causal"]
    assert explorer.state.problem.options == frozenset({"causal"})


def test_the_query_names_options() -> None:
    catalog = Catalog.local()
    assert query_choices({"causal": [b"1"]}, catalog) == ({"program_options": ["causal"]}, [])
    assert query_choices({"option": [b"causal"]}, catalog) == ({"program_options": ["causal"]}, [])
    assert query_choices({"causal": [b"0"]}, catalog) == ({}, [])
    chosen, notes = query_choices({"option": [b"<script>"]}, catalog)
    assert chosen == {} and notes[0] == "option: not an option name (a kernel's program option, e.g. causal)"
    assert "<script>" not in "; ".join(notes)
