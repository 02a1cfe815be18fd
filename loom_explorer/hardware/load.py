"""Find, read and validate hardware descriptions.

``load_hardware("wormhole_n150")`` reads the shipped ``hw/wormhole_n150.yaml``; any path ending in
``.yaml``/``.yml`` (or naming an existing file) is read from disk.

Reading is strict: the file must be UTF-8 text (a binary file is refused in one line), YAML with no duplicate
mapping key, and every value must pass :class:`HardwareSpec` (finite numbers inside the bounds stated there).
Every problem is reported as one line ``FILE:LINE:COLUMN: field PATH: what is wrong``, the position being
the YAML node of the value at fault (or of its enclosing mapping when the value is missing).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from loom_explorer.errors import LoomError
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.shipped import shipped_dir

_Model = TypeVar("_Model", bound=BaseModel)


class HardwareError(LoomError, ValueError):
    """A hardware description that cannot be found or is malformed."""


def shipped_hardware_dir() -> Path:
    """Folder of the hardware files shipped with the package (``hw/`` in a checkout)."""
    return shipped_dir("hw")


def list_hardware() -> list[str]:
    return sorted(p.stem for p in shipped_hardware_dir().glob("*.yaml"))


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def resolve_hardware_path(name_or_path: str | Path) -> Path:
    text = str(name_or_path)
    path = Path(text)
    if text.endswith((".yaml", ".yml")) or _is_file(path):
        if not _is_file(path):
            what = "is not a regular file" if _exists(path) else "does not exist"
            raise HardwareError(f"hardware file {text} {what}")
        return path
    shipped = shipped_hardware_dir() / f"{text}.yaml"
    if _is_file(shipped):
        return shipped
    raise HardwareError(
        f"unknown hardware {text!r}; shipped: {', '.join(list_hardware())} (or give a path to a .yaml file)"
    )


def load_hardware(name_or_path: str | Path) -> HardwareSpec:
    path = resolve_hardware_path(name_or_path)
    try:
        return _load_file(path.resolve(), path.stat().st_mtime_ns)
    except OSError as exc:
        raise HardwareError(f"{path}: cannot read: {exc.strerror or exc}") from None


# a hardware description is a few KiB; anything much larger is not one (and is not read into memory)
MAX_FILE_BYTES = 1 << 20

_KeyPath = tuple[Any, ...]


if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:  # libyaml's parser when PyYAML was built with it
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_SafeLoader):
    """PyYAML's safe loader (libyaml's parser when present: 10x faster); :func:`_positions` adds the
    duplicate-key check and the value positions."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """An integer, refused at its position when longer than any bound of the schema could allow (Python's
        ``int()`` gives up past 4300 digits with a message that has no position)."""
        if len(node.value) > 40:
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of {len(node.value)} characters is too large for any field", node.start_mark
            )
        return super().construct_yaml_int(node)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)


def _where(path: Path, mark: yaml.Mark | None) -> str:
    return f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)


def _positions(
    loader: _StrictLoader, root: yaml.Node, path: Path, booleans: frozenset[str]
) -> dict[_KeyPath, yaml.Mark]:
    """Start mark of every value node by its key path; HardwareError listing every duplicate mapping key and
    every boolean but those of a key in ``booleans`` (a chip's schema has no boolean field, and pydantic
    would take ``yes`` for 1).

    A node reached twice through YAML aliases is walked once (an alias bomb stays linear).
    """
    marks: dict[_KeyPath, yaml.Mark] = {}
    problems: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[_KeyPath, yaml.Node]] = [((), root)]
    while stack:
        key_path, node = stack.pop()
        marks.setdefault(key_path, node.start_mark)
        if id(node) in seen:
            continue
        seen.add(id(node))
        if (
            isinstance(node, yaml.ScalarNode)
            and node.tag == "tag:yaml.org,2002:bool"
            and not (key_path and key_path[-1] in booleans)
        ):
            field = ".".join(str(k) for k in key_path) or "(top level)"
            problems.append(
                f"{_where(path, node.start_mark)}: field {field}: {node.value!r} is a boolean; "
                + (f"only {', '.join(sorted(booleans))} may be one" if booleans else "no field of a chip is one")
            )
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((key_path + (i,), item) for i, item in enumerate(node.value))
        elif isinstance(node, yaml.MappingNode):
            first: dict[Any, yaml.Mark] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    problems.append(f"{_where(path, key_node.start_mark)}: a mapping key must be a plain value")
                    continue
                key = loader.construct_object(key_node)
                if key in first:
                    problems.append(
                        f"{_where(path, key_node.start_mark)}: duplicate key {key!r} "
                        f"(first given at line {first[key].line + 1})"
                    )
                    continue
                first[key] = key_node.start_mark
                stack.append((key_path + (key,), value_node))
    if problems:
        raise HardwareError("\n".join(sorted(problems, key=_line_col)))
    return marks


def _line_col(message: str) -> tuple[int, ...]:
    """Sort key of ``FILE:LINE:COL: ...`` messages: by line, then column."""
    parts = message.split(": ", 1)[0].rsplit(":", 2)
    return tuple(int(p) for p in parts[1:] if p.isdigit())


def _read_yaml(path: Path, booleans: frozenset[str] = frozenset()) -> tuple[Any, dict[_KeyPath, yaml.Mark]]:
    """The YAML document of ``path`` and the positions of its values; HardwareError (one line) otherwise.
    ``booleans``: the keys whose value may be a YAML boolean."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise HardwareError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise HardwareError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes; not a hardware description")
    if b"\0" in data:
        raise HardwareError(f"{path}: a binary file, not YAML text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise HardwareError(f"{path}:{line}: not UTF-8 text (byte {exc.start})") from None
    loader: _StrictLoader | None = None
    try:
        loader = _StrictLoader(text)  # its reader refuses control characters at once
        node = loader.get_single_node()
        if node is None:
            raise HardwareError(f"{path}: empty file; expected a hardware description (a YAML mapping)")
        marks = _positions(loader, node, path, booleans)
        return loader.construct_document(node), marks
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = "; ".join(str(x) for x in (exc.context, exc.problem) if x)
        raise HardwareError(f"{_where(path, mark)}: malformed YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise HardwareError(f"{path}: malformed YAML: {' '.join(str(exc).split())}") from None
    except (ValueError, OverflowError, RecursionError) as exc:  # e.g. a timestamp with month 13
        if isinstance(exc, HardwareError):
            raise
        raise HardwareError(f"{path}: malformed YAML: {str(exc) or type(exc).__name__}") from None
    finally:
        if loader is not None:
            loader.dispose()


def _mark_of(marks: dict[_KeyPath, yaml.Mark], loc: tuple[Any, ...]) -> yaml.Mark | None:
    """Position of the deepest node on ``loc`` (pydantic's error location) that the file holds."""
    by_text = {tuple(str(p) for p in k): m for k, m in marks.items()}
    parts = tuple(str(p) for p in loc)
    for n in range(len(parts), -1, -1):
        if parts[:n] in by_text:
            return by_text[parts[:n]]
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def validated(model: type[_Model], path: Path, booleans: frozenset[str] = frozenset()) -> _Model:
    """``path`` read strictly (``_read_yaml``) and validated as ``model``; every problem one line
    ``FILE:LINE:COLUMN: field PATH: what is wrong``."""
    raw, marks = _read_yaml(path, booleans)
    if not isinstance(raw, dict):
        raise HardwareError(f"{_where(path, marks.get(()))}: expected a mapping at the top level")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "(top level)"
            got = (
                ""
                if err["type"] == "missing" or isinstance(err["input"], (dict, list))
                else f" (got {_shown(err['input'])})"
            )
            lines.append(f"{_where(path, _mark_of(marks, err['loc']))}: field {field}: {err['msg']}{got}")
        raise HardwareError("\n".join(lines)) from None


@lru_cache(maxsize=32)
def _load_file(path: Path, _mtime_ns: int) -> HardwareSpec:
    return validated(HardwareSpec, path)
