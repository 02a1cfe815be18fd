"""Find, read and validate hardware descriptions.

``load_hardware("wormhole_n150")`` reads the shipped ``hw/wormhole_n150.yaml``; any path ending in
``.yaml``/``.yml`` (or naming an existing file) is read from disk. Errors name the file and the field.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import ValidationError

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.shipped import shipped_dir


class HardwareError(ValueError):
    """A hardware description that cannot be found or is malformed."""


def shipped_hardware_dir() -> Path:
    """Folder of the hardware files shipped with the package (``hw/`` in a checkout)."""
    return shipped_dir("hw")


def list_hardware() -> list[str]:
    return sorted(p.stem for p in shipped_hardware_dir().glob("*.yaml"))


def resolve_hardware_path(name_or_path: str | Path) -> Path:
    text = str(name_or_path)
    path = Path(text)
    if text.endswith((".yaml", ".yml")) or path.is_file():
        if not path.is_file():
            raise HardwareError(f"hardware file {text} does not exist")
        return path
    shipped = shipped_hardware_dir() / f"{text}.yaml"
    if shipped.is_file():
        return shipped
    raise HardwareError(
        f"unknown hardware {text!r}; shipped: {', '.join(list_hardware())} (or give a path to a .yaml file)"
    )


def load_hardware(name_or_path: str | Path) -> HardwareSpec:
    path = resolve_hardware_path(name_or_path)
    return _load_file(path.resolve(), path.stat().st_mtime_ns)


@lru_cache(maxsize=32)
def _load_file(path: Path, _mtime_ns: int) -> HardwareSpec:
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise HardwareError(f"{path}: malformed YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise HardwareError(f"{path}: expected a mapping at the top level")
    try:
        return HardwareSpec.model_validate(raw)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "(top level)"
            lines.append(f"  field {field}: {err['msg']}")
        raise HardwareError(f"{path}: invalid hardware description\n" + "\n".join(lines)) from None
