"""The explorer's activation: offered for kernels with an ``activation`` op, required (relu by default)
for an element-wise one, taken from the query string by name only."""

from __future__ import annotations

import pytest

from loom_explorer.ui.app import query_choices
from loom_explorer.ui.catalog import Catalog, InputError
from loom_explorer.ui.explorer import Explorer
from loom_explorer.ui.state import ExplorerState


def test_an_element_wise_activation_kernel_opens_with_relu_and_solves() -> None:
    explorer = Explorer(kernel="unary")
    st = explorer.state
    assert st.activation == "relu" and st.shape == "H=32,W=4096" and explorer.w_activation.visible
    st.solve_all()
    assert st.results and st.results[0].solution is not None and not st.error
    st.activation = "none"
    with pytest.raises(InputError, match="activation: unary applies the activation: choose one"):
        st.solve_all()


def test_choosing_the_kernel_sets_its_shape_and_activation() -> None:
    explorer = Explorer(solve=False)  # the widgets follow the kernel; the first problem need not be solved
    assert not explorer.w_activation.visible or explorer.state.activation == "none"
    explorer.state.kernel = "unary"
    assert explorer.state.activation == "relu" and explorer.state.shape == "H=32,W=4096"
    assert explorer.w_activation.visible


def test_a_gemm_activation_costs_its_epilogue() -> None:
    plain = ExplorerState(shape="M=256,K=256,N=256")  # any shape: the epilogue adds its cycles to every schedule
    plain.solve_all()
    gelu = ExplorerState(shape="M=256,K=256,N=256", activation="gelu")
    gelu.solve_all()
    assert gelu.results[0].solution.latency_cycles > plain.results[0].solution.latency_cycles
    with pytest.raises(InputError, match="activation"):
        ExplorerState(activation="/etc/passwd")


def test_the_query_names_an_activation_or_is_told_the_choices() -> None:
    catalog = Catalog.local()
    chosen, notes = query_choices({"kernel": [b"unary"], "activation": [b"gelu"]}, catalog)
    assert chosen == {"kernel": "unary", "activation": "gelu"} and not notes
    chosen, notes = query_choices({"activation": [b"os.system"]}, catalog)
    assert "activation" not in chosen and "activation: unknown value; choose one of none, exp" in notes[0]
