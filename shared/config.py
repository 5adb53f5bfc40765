"""Frozen dataclass configs and `--set a.b.c=value` overrides.

Values are parsed as Python literals (`3`, `1e-3`, `'adult'`, `(1, 2)`, `True`). An unknown key,
a value of the wrong type, a value outside a field's declared choices or range, or a non-finite
float (`nan`, `inf`: never a valid setting) fails with a message naming the full key and what is
allowed. Ranges are declared with the field's type, where the field is declared:

    steps: PositiveInt = 300        # >= 1
    eval_every: NonNegativeInt = 0  # >= 0 (0: off)
    lr: PositiveFloat = 3e-3        # > 0
    dropout: Fraction = 0.1         # in [0, 1]
    beta: Annotated[float, Range(0.0, 1.0, high_open=True)] = 0.9
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import types
import typing
from typing import Annotated, Any, Literal

__all__ = [
    "ConfigError",
    "Fraction",
    "NonNegativeFloat",
    "NonNegativeInt",
    "PositiveFloat",
    "PositiveInt",
    "Range",
    "apply_overrides",
    "dumps",
    "from_dict",
    "override",
    "to_dict",
]


class ConfigError(ValueError):
    """A configuration key or value is invalid; the message says which and how to fix it."""


@dataclasses.dataclass(frozen=True)
class Range:
    """The allowed interval of a numeric field (bounds inclusive unless `*_open`)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def describe(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        return " and ".join(parts)

    def check(self, key: str, value: float) -> None:
        low_bad = self.low is not None and (
            value <= self.low if self.low_open else value < self.low
        )
        high_bad = self.high is not None and (
            value >= self.high if self.high_open else value > self.high
        )
        if low_bad or high_bad:
            raise ConfigError(f"{key}={value!r} is out of range: it must be {self.describe()}")


PositiveInt = Annotated[int, Range(1)]  # sizes, steps, counts
NonNegativeInt = Annotated[int, Range(0)]  # intervals and counts where 0 means "none" or "off"
PositiveFloat = Annotated[float, Range(0.0, low_open=True)]  # learning rates, scales
NonNegativeFloat = Annotated[float, Range(0.0)]  # decays, penalties where 0 means "off"
Fraction = Annotated[float, Range(0.0, 1.0)]  # probabilities, shares, dropout rates


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def _parse_literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        lowered = text.strip().lower()
        if lowered in ("inf", "+inf", "-inf", "nan"):
            return float(lowered)
        return text  # a bare word is taken as a string: --set data.name=adult


def _coerce(key: str, value: Any, tp: Any) -> Any:
    """Checks `value` against the annotation `tp`, converting where lossless (int -> float)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin is Annotated:
        base, *constraints = typing.get_args(tp)
        value = _coerce(key, value, base)
        for constraint in constraints:
            if isinstance(constraint, Range):
                constraint.check(key, value)
        return value
    if origin is Literal:
        choices = typing.get_args(tp)
        if value not in choices:
            raise ConfigError(f"{key}={value!r} is not allowed; choose one of {list(choices)}")
        return value
    if origin in (typing.Union, types.UnionType):
        errors = []
        for arg in typing.get_args(tp):
            if arg is type(None):
                if value is None:
                    return None
                continue
            try:
                return _coerce(key, value, arg)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(f"{key}={value!r} matches none of {tp}: " + "; ".join(errors))
    if origin is tuple:
        if not isinstance(value, (tuple, list)):
            raise ConfigError(f"{key}={value!r} must be a tuple, e.g. {key}=(1, 2)")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(f"{key}[{i}]", v, args[0]) for i, v in enumerate(value))
        if len(args) != len(value):
            raise ConfigError(f"{key} must have {len(args)} entries, got {len(value)}")
        return tuple(_coerce(f"{key}[{i}]", v, a) for i, (v, a) in enumerate(zip(value, args)))
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}={value!r} must be a number (float)")
        if not math.isfinite(value):
            raise ConfigError(f"{key}={value!r} must be a finite number")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}={value!r} must be an integer")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}={value!r} must be True or False")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}={value!r} must be a string")
        return value
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if isinstance(value, dict):
            return from_dict(tp, value, prefix=key + ".")
        raise ConfigError(f"{key} is a group of settings; set its fields, e.g. {key}.<field>=...")
    return value


def override(cfg: Any, key: str, value: Any, *, _prefix: str = "") -> Any:
    """Returns a copy of the frozen dataclass `cfg` with the dotted `key` set to `value`.

    Errors name the whole dotted key, also when a group's `__post_init__` rejects the value."""
    head, _, rest = key.partition(".")
    names = [f.name for f in dataclasses.fields(cfg)]
    full = _prefix + head
    if head not in names:
        raise ConfigError(f"unknown config key '{full}'; valid keys here: {names}")
    types_ = _field_types(type(cfg))
    current = getattr(cfg, head)
    if rest:
        if not dataclasses.is_dataclass(current):
            raise ConfigError(f"'{full}' is a plain value, not a group: use --set {full}=...")
        new = override(current, rest, value, _prefix=full + ".")
    else:
        new = _coerce(full, value, types_[head])
    try:  # a config's __post_init__ may check fields together
        return dataclasses.replace(cfg, **{head: new})
    except ConfigError:
        raise
    except ValueError as e:
        raise ConfigError(f"{_prefix}{key}={value!r} is invalid: {e}") from e


def apply_overrides(cfg: Any, assignments: list[str] | tuple[str, ...]) -> Any:
    """Applies `["a.b=1", "c='x'"]` in order; each must have the form key=value."""
    for item in assignments:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"override '{item}' must have the form key=value, e.g. train.steps=100"
            )
        cfg = override(cfg, key.strip(), _parse_literal(text.strip()))
    return cfg


def to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def from_dict(cls: type, data: dict[str, Any], *, prefix: str = "") -> Any:
    """Builds `cls` from a (possibly nested) dict, with the same checks as overrides."""
    types_ = _field_types(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = set(data) - set(names)
    if unknown:
        raise ConfigError(
            f"unknown config keys {sorted(prefix + k for k in unknown)}; valid: {names}"
        )
    kwargs = {k: _coerce(prefix + k, v, types_[k]) for k, v in data.items()}
    return cls(**kwargs)


def dumps(cfg: Any) -> str:
    def default(o: Any) -> Any:
        if isinstance(o, float) and not math.isfinite(o):
            return str(o)
        raise TypeError(type(o))

    return json.dumps(to_dict(cfg), indent=2, default=default)
