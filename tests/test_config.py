import dataclasses
from typing import Annotated, Literal

import pytest

from shared.config import (
    ConfigError,
    Fraction,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Range,
    apply_overrides,
    from_dict,
    to_dict,
)


@dataclasses.dataclass(frozen=True)
class Inner:
    lr: PositiveFloat = 1e-3
    layers: int = 2
    kind: Literal["a", "b"] = "a"
    steps: PositiveInt = 10
    every: NonNegativeInt = 0
    dropout: Fraction = 0.1
    beta: Annotated[float, Range(0.0, 1.0, high_open=True)] = 0.9
    widths: tuple[PositiveInt, ...] = (4,)


@dataclasses.dataclass(frozen=True)
class Outer:
    seed: int = 0
    name: str = "x"
    sizes: tuple[int, ...] = (1, 2)
    inner: Inner = Inner()

    def __post_init__(self):
        if self.inner.layers < 1:
            raise ValueError("inner.layers must be >= 1")


def test_overrides_parse_literals_and_nested_keys():
    cfg = apply_overrides(
        Outer(),
        ["seed=3", "inner.lr=0.5", "inner.kind='b'", "name=adult", "sizes=(4, 5, 6)", "inner.lr=2"],
    )
    assert cfg.seed == 3 and cfg.name == "adult" and cfg.sizes == (4, 5, 6)
    assert cfg.inner == Inner(lr=2.0, layers=2, kind="b")
    assert isinstance(cfg.inner.lr, float)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400"])
def test_non_finite_floats_are_refused(value):
    with pytest.raises(ConfigError, match="inner.lr=.* must be a finite number"):
        apply_overrides(Outer(), [f"inner.lr={value}"])


@pytest.mark.parametrize(
    "override, ok",
    [
        ("inner.steps=1", True),
        ("inner.steps=0", False),
        ("inner.every=0", True),
        ("inner.every=-1", False),
        ("inner.lr=1e-9", True),
        ("inner.lr=0", False),
        ("inner.dropout=0", True),
        ("inner.dropout=1", True),
        ("inner.dropout=1.0001", False),
        ("inner.dropout=-0.0001", False),
        ("inner.beta=0", True),
        ("inner.beta=0.999", True),
        ("inner.beta=1", False),
        ("inner.widths=(1, 2)", True),
        ("inner.widths=(1, 0)", False),
    ],
)
def test_ranges_hold_at_their_edges(override, ok):
    if ok:
        apply_overrides(Outer(), [override])
        return
    key = override.split("=")[0]
    key = key + "[1]" if "widths" in key else key
    with pytest.raises(ConfigError, match=rf"^{key.replace('[', '.').replace(']', '.')}=.*out of "):
        apply_overrides(Outer(), [override])


@pytest.mark.parametrize(
    "override, words",
    [
        ("inner.depth=3", ["unknown config key 'inner.depth'", "lr", "layers"]),
        ("sed=1", ["unknown config key 'sed'", "seed"]),
        ("seed=1.5", ["seed", "integer"]),
        ("inner.lr='fast'", ["inner.lr", "number"]),
        ("inner.kind='c'", ["inner.kind", "'a'", "'b'"]),
        ("sizes=3", ["sizes", "tuple"]),
        ("seed", ["key=value"]),
        ("inner=3", ["inner", "group"]),
        ("inner.layers=0", ["inner.layers=0 is invalid", ">= 1"]),  # from __post_init__
    ],
)
def test_bad_overrides_name_the_key_and_the_fix(override, words):
    with pytest.raises(ConfigError) as e:
        apply_overrides(Outer(), [override])
    for w in words:
        assert w in str(e.value)


def test_dict_round_trip():
    cfg = apply_overrides(Outer(), ["inner.kind='b'"])
    assert from_dict(Outer, to_dict(cfg)) == cfg
    with pytest.raises(ConfigError, match="unknown config keys"):
        from_dict(Outer, {"seed": 1, "bogus": 2})
