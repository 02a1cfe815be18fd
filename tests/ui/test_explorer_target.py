"""The explorer solves for TTNN's kernels or the exported TT-Lang kernels (``Problem.target``), chosen in the
page or the query string; a TT-Lang download of a TTNN schedule whose TT-Lang buffers overflow L1 says so."""

from __future__ import annotations

import pytest

from loom_explorer.ui.app import query_choices
from loom_explorer.ui.catalog import Catalog
from loom_explorer.ui.state import ExplorerState

SHAPE = "M=4096,K=4096,N=4096"  # TTNN's best schedule here needs more L1 as a TT-Lang kernel than a core has
SMALL = "M=128,K=128,N=128"


def _solved_for_tt_lang(st: ExplorerState) -> None:
    """Switch ``st`` (solved for TTNN) to the TT-Lang target: its accumulator buffer counts, and it downloads."""
    assert "acc" not in dict(st.l1_usage())
    st.target = "ttlang"
    st.solve_all()
    assert st.session is not None and st.session.problem.target.value == "ttlang"
    assert dict(st.l1_usage())["acc"] > 0
    assert st.export_blocker("ttlang") is None
    assert "def kernel_arguments" in st.export("ttlang")


@pytest.mark.slow  # two solves of 4096^3, over 8 s: CI runs it, the quick tier runs the small shape below
def test_the_target_changes_the_buffers_and_the_tt_lang_download() -> None:
    st = ExplorerState(shape=SHAPE)
    st.solve_all()
    blocker = st.export_blocker("ttlang")
    assert blocker is not None and "--target ttlang" in blocker
    _solved_for_tt_lang(st)


def test_the_target_changes_the_buffers_on_a_small_shape() -> None:
    st = ExplorerState(shape=SMALL)
    st.solve_all()
    _solved_for_tt_lang(st)


def test_the_query_names_a_target_or_is_told_the_choices() -> None:
    catalog = Catalog.local()
    chosen, notes = query_choices({"target": [b"ttlang"]}, catalog)
    assert chosen == {"target": "ttlang"} and not notes
    chosen, notes = query_choices({"target": [b"/etc/passwd"]}, catalog)
    assert "target" not in chosen and "target: unknown value; choose one of ttnn, ttlang" in notes[0]
