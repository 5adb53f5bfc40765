import dataclasses
from typing import Literal

import pytest

from shared.config import ConfigError, apply_overrides, from_dict, to_dict


@dataclasses.dataclass(frozen=True)
class Inner:
    lr: float = 1e-3
    layers: int = 2
    kind: Literal["a", "b"] = "a"


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


def test_inf_is_accepted_for_floats():
    assert apply_overrides(Outer(), ["inner.lr=inf"]).inner.lr == float("inf")


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
        ("inner.layers=0", ["inner.layers", ">= 1"]),
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
