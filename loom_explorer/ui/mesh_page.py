"""The explorer's "Mesh" section: split a graph over the chips of a shipped mesh and see where the bytes go.

Above the chip view: choose a mesh (``hw/meshes/*.yaml``, by name only) and a graph (a matmul and its shape,
or a Llama-3 MLP, attention block or decoder layer in a phase: ``ui/mesh_request.py``); the multi-chip
planner (``mesh/plan.py``) proves the fastest split. The section draws the mesh: the chips as boxes, every
Ethernet pair link as two lanes (one per direction) coloured and sized by the bytes the plan's collectives
move over it (``ui/mesh_links.py``, ``ui/mesh_scene.py``), with a colour bar and a hover giving a lane's
bytes, busy time and collectives; a table of the ops (split, per-chip problem, proven on-chip cycles, the
collectives after each, its time), with tt-transformers' split of a decoder layer beside ours (total and per
op) when the mesh has its 1 x 8 ring. Clicking an op opens its per-chip problem in the explorer below (the
mesh's chip), which solves it and shows its schedule on one chip.

Pins use the planner's syntax (``OP.split=NAME``, ``TENSOR.num_links=L``, ``TENSOR.topology=T``,
``view=V``: ``mesh/pins.py``); a pin set no view admits is explained (``mesh/joint.py``'s minimal conflict)
while the last solution stays drawn. Plans run on the section's own worker thread (``ui/runner.py``: the
newest request wins; a plan already running finishes before the next starts, and its answer is dropped).
A planner is kept per mesh and graph, so a re-solve under new pins reuses every per-chip answer.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, LinearColorMapper, Range1d
from bokeh.models.annotations import ColorBar
from bokeh.plotting import figure
from panel.models.tabulator import CellClickEvent

from loom_explorer.hardware.mesh_load import list_meshes, load_mesh
from loom_explorer.mesh.joint import JointConflict, JointSolution
from loom_explorer.mesh.plan import MeshPlan, Planner
from loom_explorer.mesh.splits import ChipProblem
from loom_explorer.mesh.states import MeshError
from loom_explorer.mesh.ttnn_split import ttnn_layer_pins
from loom_explorer.sweep.ops import MODELS
from loom_explorer.ui.grid_view import LINK_PALETTE
from loom_explorer.ui.mesh_links import link_loads, plan_collectives
from loom_explorer.ui.mesh_request import GRAPHS, MeshChoice, build, checked, phase_names
from loom_explorer.ui.mesh_scene import BOX, TOTAL, MeshScene, mesh_scene, op_costs, ops_frame
from loom_explorer.ui.runner import SolveRunner
from loom_explorer.ui.state import NO_ACTIVATION

PIN_FIELDS = ("split", "num_links", "topology", "view")
NO_MESH = ""


class OpensProblems(Protocol):
    """What the section needs of the explorer it sits in: opening a problem (``ui/explorer.py``)."""

    def open_problem(self, inputs: dict[str, object]) -> bool: ...


@dataclass(frozen=True)
class MeshOutcome:
    """One plan as the section shows it: ours, ttnn's (or why not), and the scene of ours."""

    choice: MeshChoice
    planner: Planner
    ours: MeshPlan
    ttnn: MeshPlan | None
    ttnn_note: str
    scene: MeshScene | None  # None when ours is a conflict


def mesh_label(name: str) -> str:
    m = load_mesh(name)
    ring = f", ring of {m.chips}" if m.flat_ring else ""
    return f"{name}: {m.rows.chips} x {m.columns.chips} {m.chip}{ring}"


class MeshPage:
    """The "Mesh" section of ``explorer`` (module docstring)."""

    def __init__(self, explorer: OpensProblems, choice: MeshChoice | None = None) -> None:
        self.explorer = explorer
        self.runner = SolveRunner()
        self.choice = choice or MeshChoice()
        self.pins: dict[tuple[str, str], str] = {}  # (target, field) -> value
        self.outcome: MeshOutcome | None = None
        self._planners: dict[tuple[str, str], tuple[Planner, bool, MeshPlan | None, str]] = {}
        self._build()

    # ------------------------------------------------------------------ widgets
    def _build(self) -> None:
        c = self.choice
        meshes = {mesh_label(n): n for n in list_meshes()}
        self.w_mesh = pn.widgets.Select(label="Mesh", options=meshes, value=c.mesh, width=300, css_classes=["mesh-hw"])
        self.w_graph = pn.widgets.Select(
            label="Graph",
            options={v: k for k, v in GRAPHS.items()},
            value=c.graph,
            width=300,
            css_classes=["mesh-graph"],
        )
        self.w_shape = pn.widgets.TextInput(label="Matmul shape", value=c.shape, width=220, css_classes=["mesh-shape"])
        self.w_model = pn.widgets.Select(
            label="Model", options=list(MODELS), value=c.model, width=160, css_classes=["mesh-model"]
        )
        self.w_phase = pn.widgets.Select(
            label="Phase", options=phase_names(), value=c.phase, width=140, css_classes=["mesh-phase"]
        )
        self.b_plan = pn.widgets.Button(label="Split over the mesh", color="primary", css_classes=["mesh-plan"])
        self.b_plan.on_click(self._on_plan_click)
        self.w_graph.param.watch(lambda _: self._show_graph_inputs(), "value")
        self.spinner = pn.indicators.LoadingSpinner(value=False, width=22, height=22, css_classes=["mesh-busy"])
        self.status = pn.pane.Markdown("", css_classes=["mesh-status"], margin=(0, 10))
        self.error = pn.pane.Alert("", alert_type="danger", visible=False, css_classes=["mesh-error"])
        self.summary = pn.pane.Markdown("", css_classes=["mesh-summary"], sizing_mode="stretch_width")
        self._build_figure()
        self.table = pn.widgets.Tabulator(
            None,
            disabled=True,
            show_index=False,
            selectable=1,
            sizing_mode="stretch_width",
            layout="fit_data_stretch",
            css_classes=["mesh-ops"],
            formatters={"collectives after it": {"type": "textarea"}},
            widths={"split": 170, "per-chip problem": 230, "collectives after it": 340},
        )
        self.table.on_click(self._on_table_click)
        self.opened = pn.pane.Markdown("", css_classes=["mesh-opened"], sizing_mode="stretch_width")
        self.w_pin_field = pn.widgets.Select(
            label="Pin", options=list(PIN_FIELDS), value="split", width=110, css_classes=["mesh-pin-field"]
        )
        self.w_pin_target = pn.widgets.Select(
            label="of op / tensor", options=[], width=150, css_classes=["mesh-pin-target"]
        )
        self.w_pin_value = pn.widgets.Select(label="Value", options=[], width=200, css_classes=["mesh-pin-value"])
        self.w_pin_field.param.watch(lambda _: self._refresh_pin_choices(), "value")
        self.w_pin_target.param.watch(lambda _: self._refresh_pin_values(), "value")
        self.b_pin = pn.widgets.Button(label="Pin", color="primary", width=70, css_classes=["mesh-pin"])
        self.b_free = pn.widgets.Button(label="Free", width=70, css_classes=["mesh-free"])
        self.b_free_all = pn.widgets.Button(label="Free all", width=80, css_classes=["mesh-free-all"])
        self.b_pin.on_click(self._on_pin_click)
        self.b_free.on_click(self._on_free_click)
        self.b_free_all.on_click(self._on_free_all_click)
        self.pins_text = pn.pane.Markdown("pins: none", css_classes=["mesh-pins"], margin=(0, 10))
        self.conflict = pn.pane.Alert(
            "", alert_type="warning", visible=False, css_classes=["mesh-conflict"], sizing_mode="stretch_width"
        )
        self._show_graph_inputs()

    def _build_figure(self) -> None:
        self.chips = ColumnDataSource(
            name="mesh_chips", data={k: [] for k in ("x", "y", "label", "id", "position", "problem")}
        )
        keys = (
            "xs",
            "ys",
            "src",
            "dst",
            "axis",
            "links",
            "bytes",
            "share",
            "busy_us",
            "collectives",
            "colour",
            "width",
        )
        self.links = ColumnDataSource(name="mesh_links", data={k: [] for k in keys})
        f = figure(
            height=330,
            sizing_mode="stretch_width",
            match_aspect=True,
            x_range=Range1d(start=-1, end=1),
            y_range=Range1d(start=1, end=-1),
            tools="pan,wheel_zoom,reset,save",
            title="chips and Ethernet links (a lane per direction; colour and width: bytes over the plan)",
        )
        f.axis.visible = False
        f.grid.visible = False
        lanes = f.multi_line(
            "xs", "ys", source=self.links, line_color="colour", line_width="width", line_cap="round", name="lanes"
        )
        boxes = f.rect("x", "y", BOX, BOX, source=self.chips, fill_color="#dbe9f6", line_color="#4a6785", name="chips")
        f.text(
            "x",
            "y",
            text="label",
            source=self.chips,
            text_align="center",
            text_baseline="middle",
            text_font_size="11pt",
        )
        f.add_tools(
            HoverTool(
                renderers=[lanes],
                line_policy="interp",
                tooltips=[
                    ("from", "@src"),
                    ("to", "@dst"),
                    ("pair", "@axis, @links links"),
                    ("bytes", "@bytes{0,0}"),
                    ("busy", "@busy_us{0,0.00} us"),
                    ("collectives", "@collectives"),
                ],
            )
        )
        f.add_tools(
            HoverTool(renderers=[boxes], tooltips=[("chip", "@id @position"), ("each chip computes", "@problem")])
        )
        self.mapper = LinearColorMapper(palette=LINK_PALETTE, low=0.0, high=1.0)
        f.add_layout(ColorBar(color_mapper=self.mapper, title="bytes per direction", width=10), "right")
        self.figure = f

    def panel(self) -> pn.viewable.Viewable:
        inputs = pn.FlexBox(
            self.w_mesh,
            self.w_graph,
            self.w_shape,
            self.w_model,
            self.w_phase,
            pn.Column(pn.Spacer(height=18), pn.Row(self.b_plan, self.spinner)),
            align_items="flex-start",
        )
        pins = pn.FlexBox(
            self.w_pin_field,
            self.w_pin_target,
            self.w_pin_value,
            pn.Column(pn.Spacer(height=18), pn.Row(self.b_pin, self.b_free, self.b_free_all)),
            align_items="flex-start",
        )
        return pn.Column(
            inputs,
            self.status,
            self.error,
            self.summary,
            self.figure,
            self.table,
            self.opened,
            pins,
            self.pins_text,
            self.conflict,
            sizing_mode="stretch_width",
        )

    def close(self) -> None:
        self.runner.new_request()
        self.runner.shutdown()
        self._planners.clear()
        self.outcome = None

    def _show_graph_inputs(self) -> None:
        matmul = self.w_graph.value == "matmul"
        self.w_shape.visible = matmul
        self.w_model.visible = self.w_phase.visible = not matmul

    def _chosen(self) -> MeshChoice:
        return MeshChoice(
            str(self.w_mesh.value),
            str(self.w_graph.value),
            str(self.w_model.value),
            str(self.w_phase.value),
            str(self.w_shape.value).strip(),
        )

    # ------------------------------------------------------------------ planning
    def pin_texts(self) -> tuple[str, ...]:
        return tuple(f"view={v}" if f == "view" else f"{t}.{f}={v}" for (t, f), v in self.pins.items())

    def _planner(self, choice: MeshChoice) -> tuple[Planner, bool, MeshPlan | None, str]:
        """The kept planner of ``choice``'s mesh and graph, and ttnn's plan (once) or why there is none."""
        key = (choice.mesh, choice.title)
        if key not in self._planners:
            mesh, graph, prefill = build(choice)
            planner = Planner(mesh, graph)
            ttnn, note = None, ""
            if choice.graph != "layer":
                note = "tt-transformers' split is written for a decoder layer (docs/mesh.md, ttnn's split)"
            else:
                try:
                    ttnn = planner.plan(ttnn_layer_pins(graph, planner.views, prefill))
                except MeshError as exc:
                    note = str(exc)
            self._planners = {key: (planner, prefill, ttnn, note)}  # one graph kept: memory stays bounded
        return self._planners[key]

    def plan(self, choice: MeshChoice, pins: tuple[str, ...]) -> MeshOutcome:
        """Plan ``choice`` under ``pins`` (on the worker thread)."""
        planner, _, ttnn, note = self._planner(checked(choice))
        ours = planner.plan(pins)
        scene = None
        if isinstance(ours.result, JointSolution):
            loads = link_loads(planner.mesh, planner.chip, plan_collectives(planner.tables, ours.result))
            work = [s.problem.label for _, s in ours.result.splits if s.problem is not None]
            scene = mesh_scene(planner.mesh, planner.chip, loads, "; ".join(work))
        return MeshOutcome(choice, planner, ours, ttnn, note, scene)

    async def plan_async(self, choice: MeshChoice | None = None) -> MeshOutcome | None:
        """Plan ``choice`` (default: the widgets') under the section's pins, off the event loop; the outcome
        shown, or None (an error shown, or a newer request superseded it)."""
        try:
            choice = checked(choice or self._chosen())
        except ValueError as exc:
            self._say_error(str(exc))
            return None
        if (choice.mesh, choice.title) != (self.choice.mesh, self.choice.title):
            self.pins = {}  # pins name the ops of one graph
        self.choice = choice
        gen = self.runner.new_request()
        self.spinner.value = True
        self.error.visible = False
        self.status.object = html.escape(f"splitting {choice.title} ...")
        try:
            outcome = await self.runner.run(gen, partial(self.plan, choice, self.pin_texts()))
        except Exception as exc:  # the page's boundary: say what failed, never spin forever
            if self.runner.is_current(gen):
                self.spinner.value = False
                self.status.object = ""
                self._say_error(str(exc).strip("'\""))
            return None
        if outcome is not None:
            with pn.io.unlocked():
                self.show(outcome)
        return outcome

    def _say_error(self, text: str) -> None:
        self.error.object, self.error.visible = html.escape(text), True

    # ------------------------------------------------------------------ showing
    def show(self, outcome: MeshOutcome) -> None:
        self.spinner.value = False
        ours, chip = outcome.ours, outcome.planner.chip
        held = f"{ours.precision} precision, {ours.layers} layer{'s' if ours.layers > 1 else ''} of weights per chip"
        if isinstance(ours.result, JointSolution):
            capacity = outcome.planner.tables.capacity_bytes
            held += f" ({ours.result.dram_bytes / 1e9:.2f} of {capacity / 1e9:.2f} GB of DRAM)"
        self.status.object = html.escape(
            f"{outcome.choice.title}, {held}: {ours.problems_solved} per-chip problems solved "
            f"({ours.problems_from_store} from the store), {ours.problems_pruned} pruned by their bound, "
            f"{ours.rounds} joint solves, {ours.seconds:.1f} s"
        )
        self._refresh_pin_choices(outcome.planner)
        self.pins_text.object = "pins: " + (", ".join(f"`{t}`" for t in self.pin_texts()) or "none")
        if isinstance(ours.result, JointConflict):
            self.conflict.object = html.escape(ours.result.message) + "<br>(the drawing shows the last solution)"
            self.conflict.visible = True
            return
        self.conflict.visible = False
        self.outcome = outcome
        assert outcome.scene is not None
        self._draw(outcome.scene)
        self.table.value = ops_frame(ours, outcome.ttnn, chip)
        us = chip.cycles_to_us(ours.result.latency_cycles)
        text = f"**best (proven): {us:,.2f} us per device** on view `{ours.result.view}`"
        t = outcome.ttnn
        if t is not None and isinstance(t.result, JointSolution):
            theirs = chip.cycles_to_us(t.result.latency_cycles)
            text += f"; tt-transformers' split: {theirs:,.2f} us ({theirs / us:.2f}x ours)"
        elif t is not None and isinstance(t.result, JointConflict):
            text += f"; tt-transformers' split: {html.escape(t.result.message)}"
        elif outcome.ttnn_note:
            text += f"; ttnn's split not costed: {html.escape(outcome.ttnn_note)}"
        self.summary.object = text + "<br>click an op to open its per-chip problem on one chip in the explorer below"

    def _draw(self, scene: MeshScene) -> None:
        self.figure.x_range.update(start=-0.95, end=scene.columns - 0.05)
        self.figure.y_range.update(start=scene.rows - 0.05, end=-0.95)
        self.chips.data = scene.chips.source_data()
        self.links.data = scene.links.source_data()
        self.mapper.high = scene.max_link_bytes or 1.0

    # ------------------------------------------------------------------ pins
    def _refresh_pin_choices(self, planner: Planner | None = None) -> None:
        planner = planner or (self.outcome.planner if self.outcome else None)
        if planner is None:
            return
        field = self.w_pin_field.value
        if field == "view":
            targets = ["(the mesh)"]
        else:
            targets = [o.name for o in planner.graph.ops if o.name != "out"]
            if field == "split":
                targets = [o.name for o in planner.graph.work_ops] + ["x"]
        keep = self.w_pin_target.value
        self.w_pin_target.options = targets
        self.w_pin_target.value = keep if keep in targets else targets[0]
        self._refresh_pin_values(planner)

    def _refresh_pin_values(self, planner: Planner | None = None) -> None:
        planner = planner or (self.outcome.planner if self.outcome else None)
        if planner is None:
            return
        field, target = self.w_pin_field.value, self.w_pin_target.value
        if field == "split":
            values = [s.name for s in planner.tables.splits.get(str(target), [])]
        elif field == "num_links":
            values = [str(n) for n in range(1, max(a.links for v in planner.views for a in v.axes) + 1)]
        elif field == "topology":
            values = ["linear", "ring"]
        else:
            values = [v.name for v in planner.views]
        keep = self.pins.get((self._target(), str(field)), self.w_pin_value.value)
        self.w_pin_value.options = values
        self.w_pin_value.value = keep if keep in values else (values[0] if values else None)

    def _target(self) -> str:
        return "" if self.w_pin_field.value == "view" else str(self.w_pin_target.value)

    async def set_pins(self, pins: dict[tuple[str, str], str]) -> MeshOutcome | None:
        """Re-solve the shown graph under ``pins`` ((target, field) -> value); the planner checks each pin."""
        before = self.pins
        self.pins = pins
        outcome = await self.plan_async(self.choice)
        if outcome is None and self.error.visible:  # a refused pin: back to the pins that held
            self.pins = before
            self.pins_text.object = "pins: " + (", ".join(f"`{t}`" for t in self.pin_texts()) or "none")
        return outcome

    async def _on_pin_click(self, _: object) -> None:
        value = self.w_pin_value.value
        if value is None or (self.w_pin_field.value != "view" and not self.w_pin_target.value):
            self._say_error("pin: choose what to pin and its value first")
            return
        await self.set_pins({**self.pins, (self._target(), str(self.w_pin_field.value)): str(value)})

    async def _on_free_click(self, _: object) -> None:
        key = (self._target(), str(self.w_pin_field.value))
        if key in self.pins:
            await self.set_pins({k: v for k, v in self.pins.items() if k != key})

    async def _on_free_all_click(self, _: object) -> None:
        await self.set_pins({})

    async def _on_plan_click(self, _: object) -> None:
        await self.plan_async()

    # ------------------------------------------------------------------ opening an op
    def open(self, op: str) -> ChipProblem | None:
        """Open op ``op``'s per-chip problem in the explorer (the mesh's chip); the problem, or None."""
        outcome = self.outcome
        if outcome is None or not isinstance(outcome.ours.result, JointSolution):
            return None
        cost = next((c for c in op_costs(outcome.ours.result) if c.op == op), None)
        if cost is None or cost.problem is None:
            self.opened.object = html.escape(f"{op} has no per-chip problem (the graph's input)")
            return None
        p, chip = cost.problem, outcome.planner.mesh.chip
        inputs: dict[str, object] = {
            "hw": chip,
            "kernel": p.kernel,
            "shape": p.shape_text,
            "dtype": "bfloat16",
            "fidelity": "hifi2",
            "target": "ttnn",
            "activation": NO_ACTIVATION,
            "program_options": sorted(p.options),
        }
        try:
            self.explorer.open_problem(inputs)
        except ValueError as exc:  # a chip or kernel the explorer's catalog does not offer
            self.opened.object = html.escape(f"{op} cannot be opened in the explorer: {exc}")
            return None
        self.opened.object = html.escape(
            f"opened {op} ({cost.split}): each chip computes {p.label} on one {chip}; the explorer below solves it"
        )
        return p

    def _on_table_click(self, event: CellClickEvent) -> None:
        frame = self.table.value
        if frame is not None and 0 <= event.row < len(frame):
            name = str(frame.iloc[event.row]["op"])
            if name != TOTAL:
                self.open(name)
