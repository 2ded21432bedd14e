"""Configuration as dataclasses that load from YAML and apply ``key=value`` overrides.

Every job (world, data build, training, scoring) takes one of these, so a run is fully
described by a YAML file plus the overrides printed at its start.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from .errors import AvjudgeError

T = TypeVar("T")


class _Yaml12Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans: only true/false, so `speech: off` stays the string "off"."""


_Yaml12Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _first in "tTfF":
    _Yaml12Loader.yaml_implicit_resolvers.setdefault(_first, []).insert(
        0, ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"))
    )


def load_yaml(text: str):
    return yaml.load(text, Loader=_Yaml12Loader)


class ConfigError(AvjudgeError, ValueError):
    """A configuration file or override that does not fit its dataclass."""


def coerce(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:  # Optional[X]: X's own message is the helpful one
            return coerce(value, options[0], where)
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(value, arg, where)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: {value!r} fits none of {hint}")
    if dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping for {hint.__name__}, got {value!r}")
        return from_dict(hint, value, where=where)
    if origin in (list, tuple):
        if isinstance(value, str):
            value = [v for v in value.split(",") if v]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise ConfigError(f"{where}: expected {len(args)} values, got {value!r}")
            return tuple(coerce(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
        item = args[0] if args else Any
        out = [coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(out) if origin is tuple else out
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        kt, vt = args if args else (Any, Any)
        return {coerce(k, kt, where): coerce(v, vt, f"{where}.{k}") for k, v in value.items()}
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(f"{where}: {value!r} is not one of {list(args)}")
        return value
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "yes", "1", "false", "no", "0"):
            return value.lower() in ("true", "yes", "1")
        raise ConfigError(f"{where}: expected true/false, got {value!r}")
    if hint in (int, float, str):
        if (isinstance(value, bool) and hint is not str) or isinstance(value, (list, tuple, dict)):
            raise ConfigError(f"{where}: expected {hint.__name__}, got {value!r}")
        try:
            coerced = hint(value)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"{where}: expected {hint.__name__}, got {value!r}") from err
        if hint is int and isinstance(value, float) and coerced != value:
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        if hint is float and not math.isfinite(coerced):  # YAML's .nan and .inf, "nan" in an override
            raise ConfigError(f"{where}: expected a finite number, got {value!r}")
        return coerced
    return value


def from_dict(cls: type[T], data: dict[str, Any], where: str = "") -> T:
    """Build dataclass ``cls`` from a mapping, checking names and coercing types; a class that reads its mapping
    its own way (a ``from_mapping`` classmethod: `avjudge.train.TrainConfig`) builds itself."""
    if hasattr(cls, "from_mapping"):
        return cls.from_mapping(data, where)
    return build_dataclass(cls, data, where)


def build_dataclass(cls: type[T], data: dict[str, Any], where: str = "") -> T:
    """Dataclass ``cls`` from a mapping of its fields, names checked and values coerced to their types."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where or cls.__name__}: unknown key(s) {unknown}; valid keys are {sorted(names)}")
    kwargs = {k: coerce(v, hints[k], f"{where}.{k}" if where else k) for k, v in data.items()}
    try:
        return cls(**kwargs)
    except ConfigError as err:  # its own checks (__post_init__), which cannot know the file: named here
        if not where:
            raise
        raise ConfigError(f"{where}: {err}") from err


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """``["a.b=1", "c=x"]`` -> nested dict; values are parsed as YAML scalars."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key=value")
        key, raw = item.split("=", 1)
        node = out
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = load_yaml(raw) if raw.strip() else ""
    return out


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_config(cls: type[T], path: str | Path | None = None, overrides: list[str] | None = None) -> T:
    """Load ``cls`` from a YAML file (optional) with ``key=value`` overrides on top."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file {p} does not exist")
        try:
            loaded = load_yaml(p.read_text()) or {}
        except yaml.YAMLError as err:
            raise ConfigError(f"{p}: not valid YAML ({err})") from err
        if not isinstance(loaded, dict):
            raise ConfigError(f"{p}: the top level must be a mapping of keys to values")
        data = loaded
    data = _merge(data, parse_overrides(overrides))
    try:
        return from_dict(cls, data, where=str(path) if path else "")
    except ConfigError:
        raise
    except TypeError as err:  # a dataclass __post_init__ rejecting a value
        raise ConfigError(f"{path or cls.__name__}: {err}") from err


def to_dict(obj: Any) -> dict[str, Any]:
    """Plain-data view of a config (tuples become lists), for YAML/JSON output."""

    def plain(v: Any) -> Any:
        if isinstance(v, tuple):
            return [plain(x) for x in v]
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return {k: plain(v) for k, v in dataclasses.asdict(obj).items()}


def dump_yaml(obj: Any) -> str:
    return yaml.safe_dump(to_dict(obj), sort_keys=False)
