"""These tests check shapes, identities to 1e-5 and that losses fall, on tiny multi-scale models
whose programs take far longer to compile than to run: they compile at XLA's cheap optimization
level, like the end-to-end runs (the root conftest), and restore the default after this package."""

import jax
import pytest


@pytest.fixture(scope="package", autouse=True)
def cheap_compilation():
    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", True)
    yield
    jax.config.update("jax_disable_most_optimizations", before)
