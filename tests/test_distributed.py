import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from shared import distributed


def test_meshes_and_rule_based_parameter_sharding():
    mesh = distributed.make_mesh((2, 4), ("data", "model"))
    params = {"mlp": {"kernel": jnp.ones((8, 16)), "bias": jnp.ones(16)}, "emb": jnp.ones((4, 8))}
    placed = distributed.shard_by_rules(params, mesh, [(r"mlp/kernel", P(None, "model"))])
    kernel = placed["mlp"]["kernel"]
    assert kernel.sharding.spec == P(None, "model")
    assert kernel.addressable_shards[0].data.shape == (8, 4)  # 16 columns over 4 devices
    assert placed["mlp"]["bias"].sharding.spec == P()  # unmatched leaves are replicated
    np.testing.assert_array_equal(np.asarray(kernel), np.ones((8, 16)))
    assert distributed.data_mesh().shape == {"data": jax.device_count()}
    assert distributed.host_batch_slice(16) == slice(0, 16)  # one process holds every row


def test_abstract_leaves_get_the_sharding_without_memory():
    """A restore target (nnx.eval_shape) is placed abstractly: orbax then restores each array
    straight onto its devices (attn_qat's paper model, 70B parameters)."""
    mesh = distributed.make_mesh((2, 4), ("data", "model"))
    abstract = {"kernel": jax.ShapeDtypeStruct((8, 16), jnp.bfloat16), "gain": jnp.ones(3)}
    placed = distributed.shard_by_rules(abstract, mesh, [(r"kernel", P("data", "model"))])
    assert isinstance(placed["kernel"], jax.ShapeDtypeStruct)
    assert placed["kernel"].sharding.spec == P("data", "model")
    assert placed["kernel"].dtype == jnp.bfloat16
    assert placed["gain"].sharding.spec == P()  # concrete leaves are still placed


def test_global_batch_is_sharded_over_the_data_axis():
    mesh = distributed.data_mesh()
    batch = distributed.global_batch({"x": np.arange(32.0).reshape(16, 2)}, mesh)
    assert batch["x"].shape == (16, 2) and len(batch["x"].addressable_shards) == 8
    np.testing.assert_array_equal(np.asarray(batch["x"]), np.arange(32.0).reshape(16, 2))
