"""The explorer as a Panel viewer: served by ``apps/explorer.py`` / ``loom-explorer serve``, or inline in
Jupyter (``Explorer(hw="wormhole_n150", kernel="gemm", shape={...})`` after ``pn.extension()``).

Layout: problem inputs and status on the left; the candidate table; the chip with its NoC traffic beside
the selected candidate's parameters and pin controls; latency breakdown and L1 bars; comparison with a
kept schedule; the symbolic latency formula. Widgets and figures are built once and updated in place
from :class:`~loom_explorer.ui.state.ExplorerState` watchers.

Widget actions run the solver through :class:`~loom_explorer.ui.runner.SolveRunner` (a worker thread;
the newest request wins) and apply results on the event loop; the notebook methods (:meth:`solve`,
:meth:`pin`, :meth:`free`, :meth:`select`) block until their answer is shown.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Sequence
from functools import partial
from typing import Any

import panel as pn
import param

from loom_explorer.accuracy.family_error import error_for_op, family_of
from loom_explorer.export.formats import exporter, exporters
from loom_explorer.hardware.mesh_load import list_meshes
from loom_explorer.model.expr import describe
from loom_explorer.problem import example_shape
from loom_explorer.program.dsl import TileProgram
from loom_explorer.result import CandidateResult
from loom_explorer.solve.pins import PinError
from loom_explorer.solve.solver import rank
from loom_explorer.ui.catalog import Catalog
from loom_explorer.ui.charts import StackedBars
from loom_explorer.ui.grid_view import GridView
from loom_explorer.ui.measure import MeasurePanel
from loom_explorer.ui.mesh_page import NO_MESH, MeshPage, mesh_label
from loom_explorer.ui.mesh_request import MeshChoice
from loom_explorer.ui.profiler_page import ProfilerPage
from loom_explorer.ui.runner import SolveRunner
from loom_explorer.ui.scene import grid_scene
from loom_explorer.ui.state import (
    DEFAULT_ACTIVATION,
    DEFAULT_HW,
    DEFAULT_KERNEL,
    NO_ACTIVATION,
    ExplorerSchedule,
    ExplorerState,
    SolveJob,
    needs_activation,
    with_option,
)
from loom_explorer.ui.tables import TTNN_DEFAULT, candidate_frame, comparison_frame, param_frame

INPUTS = ["hw", "kernel", "shape", "dtype", "fidelity", "program_options", "activation", "target"]
# the solve contract, then every export format (export/formats.py)
DOWNLOADS = {"schedule (solve JSON)": "solve", **{e.label: e.name for e in exporters()}}
ALL_TENSORS = "all operands"


def _shape_text(shape: str | dict[str, int]) -> str:
    return shape if isinstance(shape, str) else ",".join(f"{k}={v}" for k, v in shape.items())


class Explorer(pn.viewable.Viewer):
    """Every candidate of one problem; pin, free, compare and download the selected schedule.

    ``catalog`` lists the hardware and kernels to choose from (default: the shipped ones, and a path given
    here, for a notebook); the served page passes the server's. ``notice`` is shown in the page's alert
    until the user changes an input (the served page's word on a query value it ignored)."""

    def __init__(
        self,
        hw: str = DEFAULT_HW,
        kernel: str = DEFAULT_KERNEL,
        shape: str | dict[str, int] | None = None,
        dtype: str = "bfloat16",
        fidelity: str = "hifi2",
        causal: bool = False,
        target: str = "ttnn",
        solve: bool = True,
        catalog: Catalog | None = None,
        notice: str = "",
        program_options: Sequence[str] = (),
        **params: Any,
    ) -> None:
        super().__init__(**params)  # type: ignore[no-untyped-call]  # panel's Viewer.__init__ is untyped
        chosen = {} if shape is None else {"shape": _shape_text(shape)}  # None: the kernel's example shape
        options = with_option(sorted(set(program_options)), "causal", True) if causal else sorted(set(program_options))
        self.state = ExplorerState(
            catalog,
            hw=hw,
            kernel=kernel,
            dtype=dtype,
            fidelity=fidelity,
            program_options=options,
            target=target,
            **chosen,
        )
        self.notice = notice
        self.runner = SolveRunner()
        self._picked_by_user = False
        self._syncing_table = False
        self._formula_of: tuple[object, str] | None = None
        self._measured_for: object = None  # the session the Measure scatter shows
        self._shown: CandidateResult | None = None  # the result the selected views show
        self._build()
        self._watchers = [
            self.state.param.watch(self._on_state, ["results", "candidate", "pins", "compare", "error"]),
            self.state.param.watch(self._on_inputs, INPUTS),
        ]
        self._show_alert()
        if solve:
            self.solve()

    # ------------------------------------------------------------------ notebook API
    @property
    def schedule(self) -> ExplorerSchedule:
        """The selected candidate's schedule under its pins."""
        return self.state.schedule

    def solve(self) -> None:
        """Solve every candidate of the current inputs (blocking); select the best."""
        self._set_busy(True, "solving every candidate ...")
        try:
            self.state.apply(self.runner.run_now(lambda: self.state.plan_problem().run()))
        finally:
            self._set_busy(False)

    def pin(self, name: str, value: int) -> ExplorerSchedule:
        """Pin a parameter of the selected candidate and re-solve it (blocking)."""
        return self._run_blocking(self.state.plan_pins({**self.state.pins, name: value}))

    def free(self, name: str | None = None) -> ExplorerSchedule:
        """Free one pin (all with ``None``) and re-solve (blocking)."""
        return self._run_blocking(self.state.plan_pins(self.state.pins_without(name)))

    def widget(self) -> Any:
        """The explorer as a plain ipywidget (``ipywidgets.DOMWidget``, through jupyter_bokeh): for a Jupyter
        front end where Panel's own notebook extension is not loaded."""
        return pn.ipywidget(self)

    def show_ttnn_default(self) -> ExplorerSchedule:
        """Select ttnn's default: its candidate with every parameter pinned to the config's values (blocking;
        RuntimeError when ttnn has none the model can cost)."""
        return self._run_blocking(self.state.plan_ttnn_default())

    def select(self, candidate: str) -> ExplorerSchedule:
        job = self.state.plan_select(candidate)
        if job is None:
            self.state.select(candidate)
            return self.schedule
        return self._run_blocking(job)

    _profiler: ProfilerPage | None
    profiler_place: pn.Column
    _mesh: MeshPage | None
    mesh_place: pn.Column

    @property
    def mesh(self) -> MeshPage:
        """The mesh section (``ui/mesh_page.py``), built and shown on first use."""
        if self._mesh is None:
            self._mesh = MeshPage(self)
            self.mesh_place.objects = [pn.pane.Markdown("### Mesh"), self._mesh.panel()]
        return self._mesh

    async def open_mesh_async(self, choice: MeshChoice) -> None:
        """Show the mesh section and split ``choice`` (the served page's ``?mesh=...``)."""
        page = self.mesh
        for widget, value in (
            (page.w_mesh, choice.mesh),
            (page.w_graph, choice.graph),
            (page.w_shape, choice.shape),
            (page.w_model, choice.model),
            (page.w_phase, choice.phase),
        ):
            widget.value = value
        await page.plan_async(choice)

    async def _on_mesh_open(self, event: param.parameterized.Event) -> None:
        if event.new != NO_MESH:
            await self.open_mesh_async(MeshChoice(mesh=str(event.new)))

    @property
    def profiler(self) -> ProfilerPage:
        """The profiler-report section (``ui/profiler_page.py``), built and shown on first use."""
        if self._profiler is None:
            self._profiler = ProfilerPage(self)
            self.profiler_place.objects = [self._profiler.panel()]
        return self._profiler

    def open_problem(self, inputs: dict[str, object]) -> bool:
        """Show another problem: set the inputs named in ``inputs`` (keys of ``INPUTS``, and ``causal``, short
        for the program option causal) at once, which solves it as any input change does (blocking in a
        notebook, off the event loop in a served page); whether any input changed. ValueError for a key that
        is not an input or a value the state refuses."""
        inputs = dict(inputs)
        if "causal" in inputs or "program_options" in inputs:  # causal=True: short for the option causal
            names = inputs.get("program_options", self.state.program_options)
            if not isinstance(names, (list, tuple, set, frozenset)):
                raise ValueError(f"program_options: a list of option names, not {names!r}")
            chosen = sorted({str(n) for n in names})
            if "causal" in inputs:
                chosen = with_option(chosen, "causal", bool(inputs.pop("causal")))
            inputs["program_options"] = chosen
        unknown = sorted(set(inputs) - set(INPUTS))
        if unknown:
            raise ValueError(f"not explorer inputs: {', '.join(unknown)}; inputs: {', '.join(INPUTS)}, causal")
        changed = {k: v for k, v in inputs.items() if getattr(self.state, k) != v}
        if changed:
            self.state.param.update(**changed)
        return bool(changed)

    def _run_blocking(self, job: SolveJob) -> ExplorerSchedule:
        self.state.apply(self.runner.run_now(job.run))
        return self.schedule

    def close(self) -> None:
        """Forget this explorer's work (its browser session closed): stop watching, stop the running search
        and drop queued solver work, and release the session, results and caches. Idempotent."""
        for watcher in self._watchers:
            self.state.param.unwatch(watcher)
        self._watchers = []
        self.runner.new_request()  # anything still queued or running is superseded: its answer is dropped
        self.runner.shutdown()
        if self._profiler is not None:
            self._profiler.close()
        if self._mesh is not None:
            self._mesh.close()
        self.state.release()
        self._shown = None
        self._measured_for = self._formula_of = None

    # ------------------------------------------------------------------ widgets
    def _build(self) -> None:
        st = self.state
        self.w_hw = pn.widgets.Select.from_param(st.param.hw, label="Hardware", css_classes=["in-hw"])
        self.w_kernel = pn.widgets.Select.from_param(st.param.kernel, label="Kernel", css_classes=["in-kernel"])
        self.w_shape = pn.widgets.TextInput.from_param(st.param.shape, label="Shape", css_classes=["in-shape"])
        self.w_dtype = pn.widgets.Select.from_param(st.param.dtype, label="Data format")
        self.w_fidelity = pn.widgets.Select.from_param(st.param.fidelity, label="Math fidelity")
        self.w_options = self._options_widget(st.catalog.program(st.kernel))
        self.options_place = pn.Column(self.w_options, margin=0)
        self.w_activation = pn.widgets.Select.from_param(
            st.param.activation,
            label="Activation",
            css_classes=["in-activation"],
            visible=st.catalog.program(st.kernel).uses_activation,
        )
        self.w_target = pn.widgets.Select.from_param(
            st.param.target, label="Kernels (whose buffers fill L1)", css_classes=["in-target"]
        )
        self.b_solve = pn.widgets.Button(label="Solve all candidates", color="primary", css_classes=["solve"])
        self.b_solve.on_click(self._on_solve_click)
        self.spinner = pn.indicators.LoadingSpinner(value=False, width=22, height=22, css_classes=["busy"])
        # the status wraps inside the controls' column: never drawn over the candidates beside it
        self.status = pn.pane.Markdown(
            "", css_classes=["status"], margin=(0, 10), width=250, styles={"overflow-wrap": "anywhere"}
        )
        self.alert = pn.pane.Alert("", alert_type="danger", visible=False, css_classes=["error"])

        # pages of CANDIDATE_PAGE rows: the page of the selected candidate is shown (_select_row), so its row is
        # always in view, whatever a pin does to the ranking
        self.table = pn.widgets.Tabulator(
            None,
            selectable=1,
            disabled=True,
            show_index=False,
            pagination="local",
            page_size=CANDIDATE_PAGE,
            sizing_mode="stretch_width",
            layout="fit_data_stretch",
            css_classes=["candidates"],
        )
        self.table.param.watch(self._on_table_selection, "selection")
        self.summary = pn.pane.Markdown("", css_classes=["summary"], sizing_mode="stretch_width")

        self.grid = GridView()
        self.w_operand = pn.widgets.Select(
            label="Show traffic of", options=[ALL_TENSORS], value=ALL_TENSORS, width=180, css_classes=["operand"]
        )
        self.w_operand.param.watch(lambda _: self._on_state_names({"operand"}), "value")

        # the description wraps (the table scrolls inside its own frame rather than past the page's edge)
        self.params_table = pn.widgets.Tabulator(
            None,
            disabled=True,
            show_index=False,
            selectable=1,
            height=330,
            sizing_mode="stretch_width",
            layout="fit_data_fill",
            css_classes=["params"],
            formatters={"description": {"type": "textarea"}},
            widths={"description": 220},
        )
        self.params_table.param.watch(self._on_param_row, "selection")
        self.w_pin_name = pn.widgets.Select(label="Parameter", options=[], width=170, css_classes=["pin-name"])
        self.w_pin_value = pn.widgets.Select(label="Value", options=[], width=110, css_classes=["pin-value"])
        self.w_pin_name.param.watch(self._on_pin_name, "value")
        self.b_pin = pn.widgets.Button(label="Pin", color="primary", width=70, css_classes=["pin"])
        self.b_free = pn.widgets.Button(label="Free", width=70, css_classes=["free"])
        self.b_free_all = pn.widgets.Button(label="Free all", width=80, css_classes=["free-all"])
        self.b_pin.on_click(self._on_pin_click)
        self.b_free.on_click(self._on_free_click)
        self.b_free_all.on_click(self._on_free_all_click)
        self.conflict = pn.pane.Alert(
            "", alert_type="warning", visible=False, css_classes=["conflict"], sizing_mode="stretch_width"
        )

        self.breakdown = StackedBars("latency breakdown (critical path)", "cycles")
        self.l1 = StackedBars("L1 per core: circular buffers (dashed: usable L1)", "bytes")
        self.formula = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["formula"])

        self.b_keep = pn.widgets.Button(label="Keep for comparison", css_classes=["keep"])
        self.b_clear = pn.widgets.Button(label="Clear comparison", css_classes=["clear-compare"])
        self.b_keep.on_click(self._on_keep_click)
        self.b_clear.on_click(lambda _: setattr(self.state, "compare", None))
        self.compare_table = pn.widgets.Tabulator(
            None,
            disabled=True,
            show_index=False,
            height=300,
            visible=False,
            sizing_mode="stretch_width",
            css_classes=["compare"],
        )
        self.w_download_format = pn.widgets.Select(
            label="Download as", options=DOWNLOADS, value="solve", width=260, css_classes=["download-format"]
        )
        self.w_download_format.param.watch(lambda _: self._refresh_download(), "value")
        self.download = pn.widgets.FileDownload(
            callback=self._download,
            filename="schedule.json",
            label="Download",
            color="success",
            css_classes=["download"],
        )
        self.download_note = pn.pane.Markdown("", css_classes=["download-note"], margin=(0, 10))
        self.measure = MeasurePanel(self.state)
        # the profiler-report section is built when first opened: a page that never opens it is the faster for it
        self._profiler = None
        self.b_profiler = pn.widgets.Button(label="Open a profiler report", css_classes=["profiler-open"])
        self.b_profiler.on_click(self._on_profiler_click)
        self.profiler_place = pn.Column(
            "### Profiler report",
            pn.pane.Markdown(
                "A tt-metal device-profiler report (a shipped capture of a real model, or your own): "
                "every matmul and attention op with the config it ran, the best config ttnn can run "
                "instead and the predicted gain.",
                sizing_mode="stretch_width",
            ),
            self.b_profiler,
            sizing_mode="stretch_width",
        )
        self._mesh = None
        meshes = {"(choose a mesh)": NO_MESH, **{mesh_label(n): n for n in list_meshes()}}
        self.w_mesh_open = pn.widgets.Select(
            label="Split over a mesh", options=meshes, value=NO_MESH, width=300, css_classes=["mesh-open"]
        )
        self.w_mesh_open.param.watch(self._on_mesh_open, "value")
        self.mesh_place = pn.Column(
            pn.Column(
                "### Mesh",
                pn.pane.Markdown(
                    "Split a matmul, an MLP, an attention block or a Llama decoder layer over the chips of a mesh "
                    "(T3000, Galaxy, ...): the proven fastest split of every op, the collectives between them and "
                    "the bytes on every Ethernet link; click an op to see its per-chip schedule in the chip view "
                    "below.",
                    sizing_mode="stretch_width",
                ),
                self.w_mesh_open,
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
        self._layout = self._arrange()

    def _arrange(self) -> pn.viewable.Viewable:
        controls = pn.Column(
            "### Problem",
            self.w_hw,
            self.w_kernel,
            self.w_shape,
            self.w_dtype,
            self.w_fidelity,
            self.options_place,
            self.w_activation,
            self.w_target,
            self.b_solve,
            pn.Row(self.spinner, self.status),
            self.alert,
            width=310,
        )
        pin_controls = pn.Column(
            "### Parameters of the selected candidate",
            self.params_table,
            pn.FlexBox(
                self.w_pin_name,
                self.w_pin_value,
                pn.Column(pn.Spacer(height=18), pn.Row(self.b_pin, self.b_free, self.b_free_all)),
                align_items="flex-start",
            ),
            self.conflict,
            pn.FlexBox(
                self.w_download_format, pn.Column(pn.Spacer(height=18), self.download), align_items="flex-start"
            ),
            self.download_note,
            sizing_mode="stretch_width",
            min_width=420,
        )
        return pn.Column(
            pn.pane.Markdown("## loom-explorer: schedules for spatial dataflow accelerators"),
            self.mesh_place,
            pn.Row(
                controls,
                pn.Column("### Mapping candidates", self.table, self.summary, sizing_mode="stretch_width"),
                sizing_mode="stretch_width",
            ),
            pn.Row(
                pn.Column(self.w_operand, self.grid.figure, sizing_mode="stretch_width", min_width=480),
                pin_controls,
                sizing_mode="stretch_width",
            ),
            pn.Row(self.breakdown.figure, self.l1.figure, sizing_mode="stretch_width"),
            pn.Column(
                "### Compare", pn.Row(self.b_keep, self.b_clear), self.compare_table, sizing_mode="stretch_width"
            ),
            self.profiler_place,
            self.measure.panel(),
            pn.Column("### Symbolic latency of the selected candidate", self.formula, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
        )

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout

    # ------------------------------------------------------------------ async actions (widgets)
    def _set_busy(self, busy: bool, text: str = "") -> None:
        self.spinner.value = busy
        self.status.object = text

    async def solve_async(self) -> None:
        """Find the fastest candidate first (every other one proven no faster), then solve every other
        candidate to its own optimum, streaming each result into the table as it arrives."""
        gen = self.runner.new_request()
        self._picked_by_user = False
        self._set_busy(True, "building the candidates' models ...")
        try:
            job = await self.runner.run(gen, self.state.plan_problem)
            if job is None:
                return
            provenance = await self.runner.run(gen, job.recall)
            if provenance is None:
                return
            if provenance:
                self.state.apply(job)
                self._set_busy(False, f"{len(job.tasks)} candidates solved ({provenance})")
                return
            self._set_busy(True, f"finding the fastest of {len(job.tasks)} candidates ...")
            first = await self.runner.run(gen, job.run_fastest)
            if first is None:
                return
            self.state.apply(job)
            settled = {r.candidate_name for r in first if r.status != "dominated"}
            for i, (name, _) in enumerate(job.tasks):
                if name in settled:
                    continue
                self._set_busy(
                    True,
                    f"best proven: `{first[0].candidate_name}`; solving the others "
                    f"({i + 1}/{len(job.tasks)}): `{name}`",
                )
                if await self.runner.run(gen, partial(job.run_one, i)) is None:
                    return
                if not self._picked_by_user or self.state.session is not job.session:
                    job.select = rank(list(job.results))[0].candidate_name
                self.state.apply(job)
                job.select = None
            await self.runner.run(gen, job.remember)
            if not self.runner.is_current(gen):
                return
            self._set_busy(False, f"{len(job.tasks)} candidates solved" + (f" ({job.note})" if job.note else ""))
        except Exception as exc:  # the page's boundary: say what failed, never spin forever
            self._fail(gen, exc)

    async def _apply_async(self, job: SolveJob, text: str) -> None:
        gen = self.runner.new_request()
        self._set_busy(True, text)
        try:
            done = await self.runner.run(gen, job.run)
        except Exception as exc:  # as in solve_async
            self._fail(gen, exc)
            return
        if done is not None:
            self.state.apply(done)
            self._set_busy(False, "")

    def _fail(self, gen: int, exc: Exception) -> None:
        if self.runner.is_current(gen):
            self.state.error = str(exc).strip("'\"")
            self._set_busy(False, "")

    async def _pins_async(self, pins: dict[str, int]) -> None:
        try:
            job = self.state.plan_pins(pins)
        except (PinError, RuntimeError) as exc:
            self.state.error = str(exc)
            return
        await self._apply_async(job, "re-solving under the pins ...")

    async def _on_inputs(self, *events: param.parameterized.Event) -> None:
        if self.notice:  # the user chose something: the word on the first request's query is done
            self.notice = ""
            self._show_alert()
        chosen = {e.name for e in events}
        if "kernel" in chosen:
            try:
                program = self.state.catalog.program(self.state.kernel)
            except ValueError as exc:  # InputError: the kernel's file no longer loads
                self.state.error = str(exc)
                return
            self.w_options = self._options_widget(program)  # the new kernel's own options
            self.options_place.objects = [self.w_options]
            self.w_activation.visible = program.uses_activation
            updates: dict[str, str] = {}
            # the kernel's example shape and default activation, unless chosen with it (open_problem)
            if "activation" not in chosen and self.state.activation == NO_ACTIVATION and needs_activation(program):
                updates["activation"] = DEFAULT_ACTIVATION  # an element-wise activation kernel needs one
            if "shape" not in chosen and self.state.shape != example_shape(program):
                updates["shape"] = example_shape(program)
            if updates:
                self.state.param.update(**updates)  # one more call of this watcher, which solves
                return
        elif "program_options" in chosen:
            shown = [o for o in self.w_options.options if o in self.state.program_options]
            if self.w_options.value != shown:
                self.w_options.value = shown
        await self.solve_async()

    def _options_widget(self, program: TileProgram) -> pn.widgets.CheckBoxGroup:
        """One checkbox per program option ``program`` declares (hidden when it has none), checked as the
        state's ``program_options`` say; CSS classes ``in-options`` and ``in-<option>`` (``in-causal``)."""
        declared = list(program.options)
        widget = pn.widgets.CheckBoxGroup(
            name="Options",
            options=declared,
            value=[o for o in declared if o in self.state.program_options],
            inline=True,
            visible=bool(declared),
            css_classes=["in-options", *(f"in-{o}" for o in declared)],
        )
        widget.param.watch(self._on_options_chosen, "value")
        return widget

    def _on_options_chosen(self, event: param.parameterized.Event) -> None:
        """The checkboxes' choice into the state (an option of another kernel stays as it was)."""
        declared = set(event.obj.options)
        chosen = sorted({*(o for o in self.state.program_options if o not in declared), *event.new})
        if chosen != self.state.program_options:
            self.state.program_options = chosen

    async def _on_solve_click(self, _: object) -> None:
        await self.solve_async()

    async def _on_pin_click(self, _: object) -> None:
        name, value = self.w_pin_name.value, self.w_pin_value.value
        if name is None or value is None:
            self.state.error = "pin: choose a parameter and a value first"
            return
        await self._pins_async({**self.state.pins, name: int(value)})

    async def _on_free_click(self, _: object) -> None:
        try:
            pins = self.state.pins_without(self.w_pin_name.value)
        except PinError as exc:
            self.state.error = f"free: {exc}"
            return
        await self._pins_async(pins)

    async def _on_free_all_click(self, _: object) -> None:
        await self._pins_async({})

    def _on_profiler_click(self, _: object) -> None:
        self.profiler  # noqa: B018 - built and shown on first use

    def _on_keep_click(self, _: object) -> None:
        self.state.keep_for_compare()

    async def _on_table_selection(self, event: param.parameterized.Event) -> None:
        if self._syncing_table or not event.new or self.table.value is None:
            return
        name = str(self.table.value.iloc[event.new[0]]["candidate"])
        if name.startswith(TTNN_DEFAULT):  # ttnn's default: its candidate with every parameter pinned to it
            self._picked_by_user = True
            try:
                default_job = self.state.plan_ttnn_default()
            except RuntimeError as exc:
                self.state.error = str(exc)
                return
            await self._apply_async(default_job, "costing ttnn's default ...")
            return
        if name == self.state.candidate:
            return
        self._picked_by_user = True
        job = self.state.plan_select(name)
        if job is None:
            self.state.select(name)
        else:
            await self._apply_async(job, f"solving `{name}` ...")

    def _on_param_row(self, event: param.parameterized.Event) -> None:
        frame = self.params_table.value
        if event.new and frame is not None:
            self.w_pin_name.value = str(frame.iloc[event.new[0]]["parameter"])

    def _download(self) -> io.StringIO:
        fmt = self.w_download_format.value
        return io.StringIO(self.state.schedule_json() if fmt == "solve" else self.state.export(fmt))

    def _refresh_download(self) -> None:
        st, fmt = self.state, self.w_download_format.value
        if st.session is None or not st.candidate:
            return
        blocker = st.export_blocker(fmt) if fmt != "solve" else None
        self.download.disabled = blocker is not None
        self.download_note.object = f"cannot download: {blocker}" if blocker else ""
        suffix = ".json" if fmt == "solve" else exporter(fmt).suffix
        self.download.filename = re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{st.kernel}_{st.candidate}") + suffix

    # ------------------------------------------------------------------ refresh (state -> views)
    def _on_state(self, *events: param.parameterized.Event) -> None:
        self._on_state_names({e.name for e in events})

    def _on_state_names(self, names: set[str]) -> None:
        # raw Bokeh models (grid, charts) change here too: hold the document and send one batch of events
        with pn.io.unlocked():
            self._refresh(names)

    def _show_alert(self) -> None:
        """The error and the notice, as text: a message quoting the user's input never becomes markup."""
        text = "\n\n".join(html.escape(t) for t in (self.state.error, self.notice) if t)
        self.alert.object, self.alert.visible = text, bool(text)

    def _refresh(self, names: set[str]) -> None:
        if "error" in names:
            self._show_alert()
        if "results" in names:
            self._refresh_table()
        # the selected schedule only changes with the candidate or its pins (another candidate's result
        # arriving, e.g. while the first solve streams in, only touches the table)
        if self.state.candidate and (names & {"candidate", "pins", "compare"} or self.state.result is not self._shown):
            self._refresh_selected()
        elif "operand" in names:
            self._refresh_grid()

    def _refresh_table(self) -> None:
        st = self.state
        if st.session is None:
            return
        frame = candidate_frame(
            st.hardware, {s.candidate.name: s for s in st.session.schedules}, st.results, st.ttnn_default()
        )
        self.table.value = frame
        self._select_row()

    def _select_row(self) -> None:
        """Highlight the selected candidate's row (without treating it as a click)."""
        frame = self.table.value
        if frame is None:
            return
        self._syncing_table = True
        try:
            shown = self.state.candidate
            default = self.state.ttnn_default().result
            if (
                default
                and default.solution
                and (shown, tuple(sorted(self.state.pins.items())))
                == (default.candidate_name, tuple(sorted(default.solution.params)))
            ):
                shown = f"{TTNN_DEFAULT}: {shown}"  # ttnn's default itself is shown: its own row
            rows = frame.index[frame["candidate"] == shown].tolist()[:1]
            if rows:  # the page that holds it: the selected row stays in view after a re-ranking
                self.table.page = frame.index.get_loc(rows[0]) // CANDIDATE_PAGE + 1
            self.table.selection = rows
        finally:
            self._syncing_table = False

    def _refresh_selected(self) -> None:
        st = self.state
        result = self._shown = st.result
        self._select_row()
        self.summary.object = _summary(st, result)
        tensors = [ALL_TENSORS, *st.tensors_moved()]
        if self.w_operand.options != tensors:
            self.w_operand.options = tensors
            if self.w_operand.value not in tensors:
                self.w_operand.value = ALL_TENSORS
        self._refresh_grid()
        self.params_table.value = param_frame(st)
        names = [p.name for p in st.symbolic.params if not p.fixed]
        if self.w_pin_name.options != names:
            keep = self.w_pin_name.value
            self.w_pin_name.options = names
            self.w_pin_name.value = keep if keep in names else (names[0] if names else None)
        self._refresh_pin_values()
        message = (
            result.conflict.message if result.conflict else ("" if result.solution else f"no schedule: {result.status}")
        )
        self.conflict.object, self.conflict.visible = message, bool(message)
        self._refresh_charts()
        if self._measured_for is not st.session:  # a new problem: its hardware and kernel's measurements
            self._measured_for = st.session
            self.measure.refresh()
        if self._formula_of != (st.session, st.candidate):  # the formula is the candidate's, whatever the pins
            self._formula_of = (st.session, st.candidate)
            self.formula.object = _formula(st)
        self._refresh_download()
        self.compare_table.visible = st.compare is not None
        self.compare_table.value = comparison_frame(st, st.compare) if st.compare is not None else None

    def _refresh_grid(self) -> None:
        st = self.state
        if st.session is None or not st.candidate:
            return
        tensor = None if self.w_operand.value == ALL_TENSORS else self.w_operand.value
        s = st.solution
        self.grid.update(
            grid_scene(
                st.hardware,
                st.symbolic if s else None,
                s.values() if s else {},
                st.transfers(tensor),
                st.traffic(tensor),
            )
        )

    def _on_pin_name(self, _: object) -> None:
        # one message for the value list and the value: a value chosen in between would be overwritten
        with pn.io.hold():
            self._refresh_pin_values()

    def _refresh_pin_values(self) -> None:
        st = self.state
        name = self.w_pin_name.value
        if st.session is None or not st.candidate or name not in st.symbolic.param_names:
            self.w_pin_value.options = []
            return
        current = st.pins.get(name, st.solution.values().get(name) if st.solution else None)
        # a huge domain (per_core_M of M=10**9) offers a spread of values, never all of them
        values = list(st.symbolic.param(name).values.choices(PIN_CHOICES, keep=(current,)))
        self.w_pin_value.options = values
        self.w_pin_value.value = current if current in values else values[0]

    def _refresh_charts(self) -> None:
        st = self.state
        rows: list[tuple[str, list[tuple[str, int]]]] = []
        l1_rows: list[tuple[str, list[tuple[str, int]]]] = []
        if st.solution:
            rows.append(("selected", list(st.solution.breakdown)))
            l1_rows.append(("selected", st.l1_usage()))
        kept = st.compare
        if kept is not None and kept.result.solution is not None:
            rows.append(("kept", list(kept.result.solution.breakdown)))
        self.breakdown.update(rows)
        self.l1.update(l1_rows, st.hardware.l1.usable_bytes)


PIN_CHOICES = 2000  # most values a pin's drop-down lists
CANDIDATE_PAGE = 10  # rows of the candidate table per page


def _summary(st: ExplorerState, r: CandidateResult) -> str:
    sch = st.schedule
    pins = ", ".join(f"`{k}={v}`" for k, v in sch.pins.items()) or "none"
    head = f"**selected** `{sch.candidate}` ({sch.status}); pins: {pins}"
    if sch.latency_cycles is None:
        return head + f"<br>{sch.conflict or 'no schedule'}"
    return (
        head + f"<br>**{sch.latency_us:,.2f} us** ({sch.latency_cycles:,} cycles), {sch.tflops:.1f} TFLOP/s, "
        f"{sch.roofline_pct:.1f}% of the compute roofline, L1 {sch.l1_bytes:,} B; {r.description}"
        f"<br>{_versus_ttnn_default(st, sch.latency_cycles)}"
    )


def _versus_ttnn_default(st: ExplorerState, latency_cycles: int) -> str:
    """The predicted speed-up over ttnn's default, beside the model's measured error for the kernel family
    and the speed-up's floor at it (``accuracy/family_error.py``)."""
    default = st.ttnn_default()
    if default.result is None:
        return html.escape(default.note)
    if default.latency_cycles is None:
        why = default.result.conflict.message if default.result.conflict else default.result.status
        return f"ttnn's default (`{default.call}`) is illegal in the model: {html.escape(why)}"
    speedup = default.latency_cycles / latency_cycles
    text = (
        f"ttnn's default `{default.call}` runs as `{default.result.candidate_name}` in "
        f"{st.hardware.cycles_to_us(default.latency_cycles):,.2f} us: **{speedup:.2f}x** predicted for this "
        "schedule"
    )
    family = family_of(st.problem.program.name, dict(st.problem.shape))
    error = error_for_op(st.problem.program.name, dict(st.problem.shape), st.hardware.name)
    if error is None:
        return text + f"; the model's error on {family} is not measured"
    low, worst = error.floors(speedup)
    within = " (within the error)" if low <= 1 else ""
    return (
        text + f"; the model's error on {error.family}: {error.figure()} median / worst ({error.source()}), so at "
        f"least {low:.2f}x at the median error{within} and {worst:.2f}x at the worst"
    )


_TABLE = re.compile(r"([A-Za-z_][\w*]*)->(\{[^{}]*\})")


def _formula(st: ExplorerState) -> str:
    """Every latency term in symbols; lookup tables (``x->{1: 384, ...}``) named once, e.g. ``T1[x]``."""
    sym = st.symbolic
    tables: dict[tuple[str, str], str] = {}

    def short(m: re.Match[str]) -> str:
        key = (m.group(1), m.group(2))
        tables.setdefault(key, f"T{len(tables) + 1}")
        return f"{tables[key]}[{m.group(1)}]"

    lines = [f"{t.name} = {_TABLE.sub(short, describe(t.expr))}" for t in sym.terms]
    lines += [f"{name}[{var}] = {table}" for (var, table), name in tables.items()]
    return (
        "latency = "
        + " + ".join(t.name for t in sym.terms)
        + " (cycles), where\n\n```text\n"
        + "\n\n".join(lines)
        + "\n```"
    )
