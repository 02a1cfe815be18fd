"""Import layers: every module of ``loom_explorer`` imports only its own layer or lower ones, with no cycle.

The modules are parsed with ``ast``, never imported, and every import counts: at the top, inside a
function (a lazy import), under ``TYPE_CHECKING``, absolute or relative (``from . import x``). An import
of ``a.b.c`` is an edge to the longest prefix that is a module of the package (``from pkg import mod``
names the module ``pkg.mod``; ``from mod import name`` the module ``mod``).

A module's layer is the first name below ``loom_explorer`` (``loom_explorer.model.expr`` -> ``model``,
``loom_explorer.validate`` -> ``validate``; the package's own ``__init__`` -> ``__init__``). ``RANKS`` lists
the layers from the bottom up: a module may import its own layer and any layer of a lower rank; a layer
of the same rank only through an entry of ``SAME_RANK_ALLOWED`` (each says why).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "loom_explorer"
PACKAGE_DIR = Path(__file__).resolve().parents[1] / PACKAGE

# the layers, bottom first; a layer may import the layers of lower ranks
RANKS: tuple[tuple[str, ...], ...] = (
    ("__init__", "errors"),  # the package itself (empty) and its error base class: import nothing
    ("plugins",),  # reads the plug-ins (kernel families) registered under an entry-point group
    ("data", "shipped"),  # where the shipped files are (published measurements, hw/, kernels/)
    ("hardware",),  # chip descriptions
    ("hashing", "noc"),  # SHA-256 of a hardware description or file; the chip's NoC routes and link tables
    ("store",),  # the results store: SQLite schema, migrations and plain records, nothing of the model
    ("program",),  # the tile DSL and kernels
    ("problem",),  # a program with extents, formats, placements
    ("mapping",),  # spatial mapping candidates
    ("model",),  # the symbolic schedule: expressions, constraints, latency
    ("result",),  # what a solve returns (Solution, CandidateResult): below the referee and the solver
    ("validate", "brute"),  # the referee and the brute-force oracle, beside the solver
    ("solve",),  # CP-SAT
    ("mesh",),  # splits over a mesh's chips: the joint CP-SAT model over the solver's proven per-chip optima
    ("traffic", "export"),  # a concrete schedule's NoC transfers; exports of a schedule
    ("targets",),  # what ttnn and the TT-Lang kernels run: their ops, configs, defaults and exports
    ("report",),  # solve results as JSON and tables (with their traffic)
    ("deploy", "accuracy", "sweep"),  # running schedules; scoring against measurements; sweeps over models
    ("families",),  # the kernel families: plug-ins of every layer below (``FAMILY_IMPORTERS``: none imports them)
    ("ui", "cli"),  # the explorer and the command line
)

# (importing layer, imported layer) pairs of the same rank that are allowed, and why
SAME_RANK_ALLOWED: dict[tuple[str, str], str] = {
    ("export", "traffic"): "the tt-npe workload writes out the schedule's NoC transfers",
    ("sweep", "accuracy"): "a sweep prices ttnn's default config of each op, as the accuracy tools read it",
    ("cli", "ui"): "`loom-explorer serve` starts the explorer; `report --html` renders the sweep's plots",
}

# modules outside ``loom_explorer.families`` that still import a family module, and why (none may: a family
# plugs in through its entry points; each entry here is a family's code not moved into its folder yet)
FAMILY_IMPORTERS: dict[str, str] = {}
# (importing family, imported family) pairs allowed, and why (families are independent otherwise)
CROSS_FAMILY_ALLOWED: dict[tuple[str, str], str] = {
    ("flash_decoding", "attention"): "flash-decoding is a variant of attention's programs (its analysis): its "
    "quantities, buffers, latency, kernel and TTNN op extend attention's",
    ("convolution", "contraction"): "a conv is ttnn's implicit GEMM: its model and the matmul configs its program "
    "factory runs are the contraction's",
    ("convolution", "data_movement"): "a conv's halo step is a copy of row-major sticks between shards: the "
    "data-movement family's sharded split costs it",
}

# third-party packages only these layers may import (any import, top level or lazy)
CONFINED_IMPORTS: dict[str, tuple[str, ...]] = {"panel": ("ui",), "bokeh": ("ui",), "ttnn": ("deploy",)}
# ... and of those, the ones that must be imported lazily (inside a function: ttnn needs a card or its wheel)
LAZY_ONLY = ("ttnn",)


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement's edge: ``importer`` imports ``target`` (a module name) at ``line``."""

    importer: str
    target: str
    line: int
    lazy: bool  # inside a function


def module_files(package_dir: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, from its ``__init__.py``)."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: Iterable[str]) -> str | None:
    """The longest prefix of the dotted ``name`` that is one of ``modules``."""
    known = set(modules)
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


class _Visitor(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[str, tuple[str, ...], int, int, bool]] = []  # (module, names, level, line, lazy)
        self._depth = 0

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, (), 0, node.lineno, self._depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        names = tuple(a.name for a in node.names)
        self.found.append((node.module or "", names, node.level, node.lineno, self._depth > 0))


def parse_imports(module: str, path: Path, modules: Iterable[str]) -> tuple[list[Import], list[Import]]:
    """(imports of the package's modules, imports of anything else by top-level name) of one module."""
    known = set(modules)
    visitor = _Visitor()
    visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    ours: list[Import] = []
    theirs: list[Import] = []
    for name, names, level, line, lazy in visitor.found:
        if level:  # relative: "." is this module's package, each more dot one package up
            base = package.split(".")[: len(package.split(".")) - (level - 1)]
            name = ".".join(base + ([name] if name else []))
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            theirs.append(Import(module, name.split(".")[0], line, lazy))
            continue
        targets = [f"{name}.{n}" if f"{name}.{n}" in known else name for n in names] or [name]
        for target in targets:
            resolved = _resolve(target, known)
            if resolved is not None and resolved != module:
                ours.append(Import(module, resolved, line, lazy))
    return ours, theirs


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(
    imports: Iterable[Import],
    ranks: tuple[tuple[str, ...], ...] = RANKS,
    allowed: Mapping[tuple[str, str], str] = SAME_RANK_ALLOWED,
) -> list[str]:
    """One message per import that points up, across a rank without an allowance, or from/to a layer
    without a rank."""
    rank = {layer: i for i, group in enumerate(ranks) for layer in group}
    out = []
    unranked: set[str] = set()
    for imp in imports:
        a, b = layer_of(imp.importer), layer_of(imp.target)
        for layer in (a, b):
            if layer not in rank and layer not in unranked:
                unranked.add(layer)
                out.append(
                    f"layer {layer!r} (e.g. module {imp.importer if layer == a else imp.target}) has no "
                    f"rank: add it to RANKS in tests/test_layers.py, above every layer it imports and "
                    f"below every layer that imports it"
                )
        if a == b or a not in rank or b not in rank:
            continue
        if rank[b] > rank[a]:
            out.append(
                f"{imp.importer} (layer {a}, rank {rank[a]}) imports {imp.target} (layer {b}, rank {rank[b]}) "
                f"at line {imp.line}: a layer may import only lower ones"
            )
        elif rank[b] == rank[a] and (a, b) not in allowed:
            out.append(
                f"{imp.importer} (layer {a}) imports {imp.target} (layer {b}, the same rank {rank[a]}) at "
                f"line {imp.line}: layers of one rank are independent unless SAME_RANK_ALLOWED says why"
            )
    return out


def find_cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (or a module importing itself), each
    reported as one cycle through it: ``[m0, m1, ..., m0]``. Tarjan's algorithm, iterative."""
    graph = {m: sorted(set(ts)) for m, ts in edges.items()}
    for ts in list(graph.values()):
        for t in ts:
            graph.setdefault(t, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            if i < len(graph[node]):
                work.append((node, i + 1))
                nxt = graph[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    components.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return [_cycle_through(c, graph) for c in components]


def _cycle_through(component: list[str], graph: Mapping[str, list[str]]) -> list[str]:
    """A shortest cycle from the component's first module back to itself (breadth first, inside it)."""
    start, members = component[0], set(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for m in frontier:
            for t in graph[m]:
                if t == start:
                    path = [m]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if t in members and t not in previous:
                    previous[t] = m
                    following.append(t)
        frontier = following
    return component  # unreachable for a strongly connected component


def confined_violations(imports: Iterable[Import]) -> list[str]:
    """Third-party imports outside the layers they are confined to, or eager where they must be lazy."""
    out = []
    for imp in imports:
        layers = CONFINED_IMPORTS.get(imp.target)
        if layers is None:
            continue
        layer = layer_of(imp.importer)
        if layer not in layers:
            out.append(
                f"{imp.importer} (layer {layer}) imports {imp.target} at line {imp.line}: only {', '.join(layers)} may"
            )
        elif imp.target in LAZY_ONLY and not imp.lazy:
            out.append(
                f"{imp.importer} (layer {layer}) imports {imp.target} at line {imp.line} at module level: "
                f"import it inside the function that needs it"
            )
    return out


@pytest.fixture(scope="module")
def package_imports() -> tuple[list[Import], list[Import]]:
    modules = module_files()
    ours: list[Import] = []
    theirs: list[Import] = []
    for module, path in modules.items():
        a, b = parse_imports(module, path, modules)
        ours += a
        theirs += b
    return ours, theirs


def test_the_package_is_parsed(package_imports: tuple[list[Import], list[Import]]) -> None:
    ours, _ = package_imports
    importers = {imp.importer for imp in ours}
    assert len(module_files()) > 50 and {"loom_explorer.solve.solver", "loom_explorer.validate"} <= importers


def test_layers_point_down(package_imports: tuple[list[Import], list[Import]]) -> None:
    ours, _ = package_imports
    layers = {layer_of(m) for m in module_files()}
    ranked = {layer for group in RANKS for layer in group}
    assert not layers - ranked, (
        f"layers without a rank: {sorted(layers - ranked)}; add each to RANKS in "
        f"tests/test_layers.py, above every layer it imports"
    )
    assert not ranked - layers, f"RANKS names layers that no longer exist: {sorted(ranked - layers)}"
    # a module FAMILY_IMPORTERS lists imports a family's code not moved yet: upwards, and said why there
    problems = layer_violations(
        [i for i in ours if not (i.importer in FAMILY_IMPORTERS and layer_of(i.target) == "families")]
    )
    assert not problems, "\n".join(problems)


def test_no_import_cycles(package_imports: tuple[list[Import], list[Import]]) -> None:
    ours, _ = package_imports
    edges: dict[str, set[str]] = {m: set() for m in module_files()}
    for imp in ours:
        edges[imp.importer].add(imp.target)
    cycles = find_cycles(edges)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_ui_and_card_libraries_stay_in_their_layers(package_imports: tuple[list[Import], list[Import]]) -> None:
    _, theirs = package_imports
    problems = confined_violations(theirs)
    assert not problems, "\n".join(problems)


def family_import_violations(
    imports: Iterable[Import],
    importers: Mapping[str, str] = FAMILY_IMPORTERS,
    cross: Mapping[tuple[str, str], str] = CROSS_FAMILY_ALLOWED,
) -> list[str]:
    """One message per import of a family module from outside its family: from the core (unless
    ``importers`` lists the importer) or from another family (unless ``cross`` allows the pair)."""
    out = []
    for imp in imports:
        if layer_of(imp.target) != "families" or len(imp.target.split(".")) < 3:
            continue
        target_family = imp.target.split(".")[2]
        if layer_of(imp.importer) != "families":
            if imp.importer not in importers:
                out.append(
                    f"{imp.importer} imports {imp.target} at line {imp.line}: the core imports no kernel "
                    "family (a family plugs in through its entry points in pyproject.toml)"
                )
            continue
        parts = imp.importer.split(".")
        family = parts[2] if len(parts) > 2 else ""
        if family and family != target_family and (family, target_family) not in cross:
            out.append(
                f"{imp.importer} (family {family}) imports {imp.target} (family {target_family}) at line "
                f"{imp.line}: families are independent unless CROSS_FAMILY_ALLOWED says why"
            )
    return out


def test_no_core_module_imports_a_family(package_imports: tuple[list[Import], list[Import]]) -> None:
    ours, _ = package_imports
    problems = family_import_violations(ours)
    assert not problems, "\n".join(problems)
    still = {i.importer for i in ours if layer_of(i.target) == "families" and layer_of(i.importer) != "families"}
    assert not set(FAMILY_IMPORTERS) - still, (
        f"FAMILY_IMPORTERS lists modules that no longer import a family: {sorted(set(FAMILY_IMPORTERS) - still)}"
    )


def test_the_checker_reports_a_core_or_cross_family_import() -> None:
    core = _imp("targets.ttlang.exporter", "families.attention.writer")
    cross = _imp("families.attention.model", "families.contraction.model")
    problems = family_import_violations(
        [core, cross, _imp("families.attention.model", "families.attention.work")], importers={}, cross={}
    )
    assert len(problems) == 2 and "the core imports no kernel family" in problems[0]
    assert "families are independent" in problems[1]
    assert family_import_violations([core], importers={f"{PACKAGE}.targets.ttlang.exporter": "pending"}, cross={}) == []


def test_the_same_rank_allowances_are_used(package_imports: tuple[list[Import], list[Import]]) -> None:
    ours, _ = package_imports
    used = {(layer_of(i.importer), layer_of(i.target)) for i in ours}
    assert not set(SAME_RANK_ALLOWED) - used, f"allowances no import needs: {sorted(set(SAME_RANK_ALLOWED) - used)}"


# ------------------------------------------------------------------ the checker catches what it should


def _imp(importer: str, target: str, lazy: bool = False) -> Import:
    return Import(f"{PACKAGE}.{importer}", f"{PACKAGE}.{target}", 7, lazy)


def test_the_checker_reports_an_upward_import_with_both_modules_and_layers() -> None:
    graph = [_imp("model.latency", "solve.solver"), _imp("solve.solver", "model.expr")]
    problems = layer_violations(graph)
    assert len(problems) == 1
    message = problems[0]
    for part in ("loom_explorer.model.latency", "layer model", "loom_explorer.solve.solver", "layer solve", "line 7"):
        assert part in message


def test_the_checker_reports_same_rank_imports_unless_allowed() -> None:
    assert len(layer_violations([_imp("deploy.runner", "sweep.task")])) == 1
    assert layer_violations([_imp("export.npe_workload", "traffic.loads")]) == []
    assert len(layer_violations([_imp("traffic.loads", "export.npe_workload")])) == 1


def test_the_checker_asks_for_a_rank_for_a_new_layer() -> None:
    problems = layer_violations([_imp("kernels_v2.gemm", "model.expr"), _imp("kernels_v2.attn", "model.expr")])
    assert len(problems) == 1 and "'kernels_v2'" in problems[0] and "add it to RANKS" in problems[0]


def test_the_checker_finds_a_cycle_and_names_it() -> None:
    edges = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["e"]}
    assert find_cycles(edges) == [["a", "b", "c", "a"], ["e", "e"]]
    assert find_cycles({"a": ["b"], "b": [], "c": ["a", "b"]}) == []


def test_the_checker_confines_ui_and_card_libraries() -> None:
    def imp(importer: str, target: str, lazy: bool) -> Import:
        return Import(f"{PACKAGE}.{importer}", target, 3, lazy)

    assert confined_violations([imp("ui.charts", "bokeh", False), imp("deploy.runner", "ttnn", True)]) == []
    problems = confined_violations(
        [
            imp("sweep.report", "bokeh", True),
            imp("deploy.runner", "ttnn", False),
            imp("targets.ttnn.exporter", "ttnn", True),
        ]
    )
    assert len(problems) == 3
    assert "loom_explorer.sweep.report" in problems[0] and "only ui may" in problems[0]
    assert "at module level" in problems[1]


def test_relative_imports_and_function_imports_are_edges(tmp_path: Path) -> None:
    root = tmp_path / PACKAGE
    (root / "model").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "model" / "__init__.py").write_text("from . import expr\n")
    (root / "model" / "expr.py").write_text("")
    (root / "model" / "latency.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from .expr import Expr\n"
        "if TYPE_CHECKING:\n    from ..solve import solver\n"
        "def f():\n    from loom_explorer.ui.explorer import Explorer\n    import ttnn\n"
    )
    (root / "solve").mkdir()
    (root / "solve" / "__init__.py").write_text("")
    (root / "solve" / "solver.py").write_text("")
    (root / "ui").mkdir()
    (root / "ui" / "__init__.py").write_text("")
    (root / "ui" / "explorer.py").write_text("")
    modules = module_files(root)
    init, _ = parse_imports("loom_explorer.model", root / "model" / "__init__.py", modules)
    assert [(i.target, i.lazy) for i in init] == [("loom_explorer.model.expr", False)]
    ours, theirs = parse_imports("loom_explorer.model.latency", root / "model" / "latency.py", modules)
    assert [(i.target, i.lazy) for i in ours] == [
        ("loom_explorer.model.expr", False),
        ("loom_explorer.solve.solver", False),
        ("loom_explorer.ui.explorer", True),
    ]
    assert [(i.target, i.lazy) for i in theirs if i.target == "ttnn"] == [("ttnn", True)]
    assert len(layer_violations(ours)) == 2
