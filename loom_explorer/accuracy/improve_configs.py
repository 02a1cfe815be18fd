"""The configs ``improve -o FILE`` writes, keyed by op, and how ``predict --ttnn-config FILE --op KEY`` reads
one back.

Two forms, by the file's suffix:

* ``.json``: ``{"format": "loom-explorer improve configs", "version": 1, "capture", "hardware", "grid",
  "ops": {KEY: {"ttnn_op", "config", "predict_args", "batch_repeats", "calls", "measured_ns", "ran_ns",
  "best_ns", "gain_ns", "candidate"}}}``; ``config`` is the program config in its constructor's argument
  names with the ``memory`` and ``compute`` blocks ``predict --ttnn-config`` reads (``predict`` costs one
  batch of a batched matmul: ``batch_repeats`` of them make ``best_ns``);
* ``.py``: a module for a machine with ttnn: ``CONFIGS = {KEY: ttnn.<Class>(...)}`` (the constructor calls)
  and ``DETAILS = {KEY: {...}}`` (the same fields as the JSON entry but ``config``, plus the ``memory`` and
  ``compute`` blocks).

Reading never runs the file: a ``.py`` is parsed (``ast``) and only literals, ``ttnn.<Class>(...)`` calls
with literal arguments and ``ttnn.CoreCoord(x, y)`` are accepted; anything else is an ``ImproveFileError``
naming the file and the key. ``read_entry`` also gives the op's recorded ``predict_args``, the problem its
config was chosen for: ``predict`` refuses to cost the config on another (``cli/accuracy.py``).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from loom_explorer.accuracy.improve import Improvement, ImproveReport
from loom_explorer.errors import LoomError
from loom_explorer.targets.ttnn.config_text import config_call, op_name
from loom_explorer.targets.ttnn.op import problem_ttnn_op

FORMAT, VERSION = "loom-explorer improve configs", 1


class ImproveFileError(LoomError, ValueError):
    """An improve configs file that cannot be read; the message names the file (and the op key)."""


def predict_args(report: ImproveReport, op: Improvement) -> list[str]:
    """The ``loom-explorer predict`` arguments that cost ``op``'s best config from the written file (the file
    and ``--op`` added by the caller)."""
    problem = op.problem
    assert problem is not None and op.best_config is not None
    dtype = problem.formats[0][1]
    args = [
        problem.program.name,
        "--hw",
        report.hardware,
        "--shape",
        problem.shape_text,
        "--dtype",
        dtype.value,
        "--fidelity",
        problem.fidelity.value,
    ]
    if report.grid:
        args += ["--grid", f"{report.grid[0]}x{report.grid[1]}"]
    args += [a for t, f in problem.formats if f is not dtype for a in ("--format", f"{t}={f.value}")]
    args += [a for t, p in problem.placements for a in ("--memory", f"{t}={p.value}")]
    if problem.fp32_acc:
        args.append("--fp32-acc")
    if any(t.name == "bias" and t.optional for t in problem.program.tensors) and problem.is_enabled("bias"):
        args.append("--bias")
    if problem.activation:
        args += ["--activation", problem.activation]
    args += [a for option in sorted(problem.options) for a in ("--option", option)]
    return args


def _entry(report: ImproveReport, op: Improvement) -> dict[str, object]:
    cfg, problem = op.best_config, op.problem
    assert cfg is not None and problem is not None
    return {
        "ttnn_op": op_name(cfg, problem_ttnn_op(problem)),
        "predict_args": predict_args(report, op),
        "batch_repeats": op.batch_repeats,
        "calls": op.calls,
        "measured_ns": op.measured_ns,
        "ran_ns": op.ran_ns,
        "best_ns": op.best_ns,
        "gain_ns": op.gain_ns,
        "candidate": op.best_candidate,
    }


def configs_json(report: ImproveReport) -> str:
    ops = {
        o.key: {**_entry(report, o), "config": o.best_config.model_dump(mode="json")}
        for o in report.ops
        if o.best_config is not None
    }
    return (
        json.dumps(
            {
                "format": FORMAT,
                "version": VERSION,
                "capture": report.file.name,
                "hardware": report.hardware,
                "grid": list(report.grid) if report.grid else None,
                "ops": ops,
            },
            indent=2,
        )
        + "\n"
    )


def configs_python(report: ImproveReport, command: str) -> str:
    lines = [
        f'"""TTNN program configs for the ops of {report.file.name}, from `{command}`.',
        "",
        f"Predicted on {report.chip}. CONFIGS[key] is the program config to pass to the op; DETAILS[key]",
        "says what the key's op is, the operand placements and compute config the config assumes, and the",
        "`loom-explorer predict` arguments that cost it again (with --ttnn-config this file --op key).",
        '"""',
        "",
        "import ttnn",
        "",
        "CONFIGS = {",
    ]
    details = {}
    for o in report.ops:
        cfg = o.best_config
        if cfg is None:
            continue
        lines.append(f"    {o.key!r}: {config_call(cfg)[0]},")
        extra = cfg.read_with()  # a matmul config's memory and compute blocks
        details[o.key] = {**_entry(report, o), **extra}
    lines += ["}", "", f"DETAILS = {json.dumps(details, indent=4)}", ""]
    # JSON's true/false/null are not Python: the dict is written with Python's literals
    return "\n".join(lines).replace(": true", ": True").replace(": false", ": False").replace(": null", ": None")


@dataclass(frozen=True, slots=True)
class ImproveEntry:
    """One op of an improve configs file: its key, its config as ``predict --ttnn-config`` reads it, and the
    ``predict`` arguments improve recorded for it (the problem the config was chosen for; None when the
    file does not say)."""

    key: str
    config: dict[str, object]
    predict_args: tuple[str, ...] | None


def read_config(path: str | Path, key: str | None, text: str | None = None) -> tuple[str, dict[str, object]]:
    """(the op key, its config as ``predict --ttnn-config`` reads it) from an improve configs file (its
    ``text`` when the caller has read it already); ``key`` may be left out when the file holds one op."""
    entry = read_entry(path, key, text)
    return entry.key, entry.config


def read_entry(path: str | Path, key: str | None, text: str | None = None) -> ImproveEntry:
    """The op ``key`` of an improve configs file (:class:`ImproveEntry`; ``text`` when the caller has read the
    file already); ``key`` may be left out when the file holds one op."""
    p = Path(path)
    if text is None:
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ImproveFileError(f"{p}: cannot read ({exc})") from None
    configs = _python_configs(p, text) if p.suffix == ".py" else _json_configs(p, text)
    if key is None:
        if len(configs) != 1:
            raise ImproveFileError(f"{p} holds {len(configs)} ops: give --op, one of: {', '.join(configs)}")
        key = next(iter(configs))
    if key not in configs:
        raise ImproveFileError(f"{p}: no op {key!r}; ops: {', '.join(configs)}")
    return configs[key]


def _predict_args(p: Path, key: str, entry: object) -> tuple[str, ...] | None:
    """The ``predict_args`` an op's entry records (None if it has none; ImproveFileError if not a list of
    strings)."""
    args = entry.get("predict_args") if isinstance(entry, dict) else None
    if args is None:
        return None
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args) or not args:
        raise ImproveFileError(f"{p}: op {key!r}: predict_args is not a list of command-line words")
    return tuple(args)


def is_improve_file(text: str) -> bool:
    return f'"format": "{FORMAT}"' in text or "\nCONFIGS = {" in text


def _json_configs(p: Path, text: str) -> dict[str, ImproveEntry]:
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ImproveFileError(f"{p}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("ops"), dict):
        raise ImproveFileError(f"{p}: not an improve configs file (format {FORMAT!r} with an 'ops' object)")
    out = {}
    for key, entry in doc["ops"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
            raise ImproveFileError(f"{p}: op {key!r} has no 'config' object")
        out[str(key)] = ImproveEntry(str(key), entry["config"], _predict_args(p, key, entry))
    return out


def _python_configs(p: Path, text: str) -> dict[str, ImproveEntry]:
    try:
        tree = ast.parse(text, filename=str(p))
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise ImproveFileError(f"{p}: not a Python module ({exc})") from None
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
    if not isinstance(found.get("CONFIGS"), ast.Dict):
        raise ImproveFileError(f"{p}: no CONFIGS = {{...}} dict (not an improve configs module)")
    details = _literal(p, "DETAILS", found["DETAILS"]) if "DETAILS" in found else {}
    configs = found["CONFIGS"]
    assert isinstance(configs, ast.Dict)
    out = {}
    for k, v in zip(configs.keys, configs.values, strict=True):
        if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
            raise ImproveFileError(f"{p}: a CONFIGS key that is not a string")
        extra = details.get(k.value, {}) if isinstance(details, dict) else {}
        extra = extra if isinstance(extra, dict) else {}
        config = {**_call(p, k.value, v), **{b: extra[b] for b in ("memory", "compute") if b in extra}}
        out[k.value] = ImproveEntry(k.value, config, _predict_args(p, k.value, extra))
    return out


def _call(p: Path, key: str, node: ast.expr) -> dict[str, object]:
    """``ttnn.<Class>(name=literal, ...)`` -> ``{"program_config": Class, name: value, ...}``."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and not node.args
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "ttnn"
    ):
        raise ImproveFileError(f"{p}: CONFIGS[{key!r}] is not a ttnn.<ProgramConfig>(name=value, ...) call")
    fields: dict[str, object] = {"program_config": node.func.attr}
    for kw in node.keywords:
        if kw.arg is None:
            raise ImproveFileError(f"{p}: CONFIGS[{key!r}]: **kwargs are not read")
        value = kw.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "CoreCoord":
            fields[kw.arg] = [_literal(p, f"CONFIGS[{key!r}].{kw.arg}", a) for a in value.args]
        else:
            fields[kw.arg] = _literal(p, f"CONFIGS[{key!r}].{kw.arg}", value)
    return fields


def _literal(p: Path, where: str, node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        raise ImproveFileError(f"{p}: {where} is not a literal (the file is read, never run)") from None
