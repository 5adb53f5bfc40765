"""The next-scale transformer: sequence layout, block causality, scale-by-scale generation."""

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.var_sr.quantizer import MultiScaleRQ
from projects.var_sr.transformer import (
    NextScaleTransformer,
    flatten_codes,
    generate,
    scale_slices,
)

PATCH_NUMS = (1, 2, 4)


def _models():
    rq = MultiScaleRQ(4, 16, PATCH_NUMS, rngs=nnx.Rngs(0))
    tf = NextScaleTransformer(PATCH_NUMS, 16, 4, dim=16, depth=2, heads=2, rngs=nnx.Rngs(1))
    return rq, tf


def test_logits_of_a_scale_ignore_finer_scales_inputs():
    @nnx.jit  # one compilation (eagerly, every operation compiles on its own)
    def run(rq, tf, f):
        _, codes, _, _ = rq(f)
        inputs = rq.teacher_inputs(codes, 4)
        changed = [inputs[0], inputs[1] + 5.0]  # the input of the finest scale (scale 2) changes
        return tf(inputs), tf(changed)

    logits, other = run(*_models(), jax.random.normal(jax.random.key(0), (2, 4, 4, 4)))
    assert logits.shape == (2, 21, 16)
    s = scale_slices(PATCH_NUMS)
    np.testing.assert_allclose(other[:, : s[2].start], logits[:, : s[2].start], atol=1e-5)
    assert not np.allclose(other[:, s[2]], logits[:, s[2]])


def test_generation_keeps_the_prefix_and_fills_every_scale():
    @nnx.jit
    def run(rq, tf, prefix):
        codes = generate(tf, rq, prefix, 4)
        sampled = generate(tf, rq, prefix, 4, key=jax.random.key(0))
        return codes, tf(rq.teacher_inputs(codes, 4)), sampled

    prefix = [jnp.zeros((3, 1, 1), jnp.int32), jnp.ones((3, 2, 2), jnp.int32)]
    codes, logits, sampled = run(*_models(), prefix)
    assert [c.shape for c in codes] == [(3, 1, 1), (3, 2, 2), (3, 4, 4)]
    np.testing.assert_array_equal(codes[1], prefix[1])
    # greedy generation equals the argmax of the teacher-forced logits at the generated tokens
    s = scale_slices(PATCH_NUMS)[2]
    np.testing.assert_array_equal(jnp.argmax(logits[:, s], -1), flatten_codes(codes)[:, s])
    assert sampled[2].shape == (3, 4, 4) and sampled[2].dtype == jnp.int32
