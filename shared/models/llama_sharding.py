"""Parameter sharding of the `Llama` decoder over a named mesh (data / FSDP / tensor parallel).

Tensor parallelism is Megatron's split: q/k/v, gate and up are column-parallel (output features
over `model`), o_proj and down_proj row-parallel (input features over `model`), so each block
needs one all-reduce after attention and one after the MLP; the vocabulary is split over `model`
in the embedding and the head. FSDP additionally splits the other dimension of every matrix over
`data`; XLA all-gathers it before use. Norm gains are small and replicated.
"""

from __future__ import annotations

from flax import nnx
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from shared.distributed import shard_by_rules

MODES = ("data", "fsdp", "tensor", "fsdp+tensor")


def llama_rules(mode: str, data_axis: str = "data", model_axis: str = "model"):
    """(regex over 'layers/3/self_attn/q_proj/kernel'-style paths, PartitionSpec) pairs."""
    if mode not in MODES:
        raise ValueError(f"unknown sharding mode {mode!r}; choose one of {MODES}")
    fsdp = data_axis if "fsdp" in mode else None
    tp = model_axis if "tensor" in mode else None
    if fsdp is None and tp is None:
        return []  # pure data parallelism: every parameter replicated
    return [
        (r".*(q_proj|k_proj|v_proj|gate_proj|up_proj)/kernel", P(fsdp, tp)),
        (r".*(o_proj|down_proj)/kernel", P(tp, fsdp)),
        (r"embed_tokens/embedding", P(tp, fsdp)),
        (r"lm_head/kernel", P(fsdp, tp)),
    ]


def shard_llama(
    model: nnx.Module, mesh: Mesh, mode: str, *, uneven: str = "replicate", **axes
) -> nnx.Module:
    """Places the model's parameters on `mesh` by `llama_rules(mode)` (in place; returns it).

    A dimension its mesh axis does not divide (the 1B config's FFN width 5461, SmolLM2's 9
    heads over 4 devices) is kept whole, with a warning naming it (`uneven="error"` raises)."""
    params = nnx.state(model, nnx.Param)
    nnx.update(model, shard_by_rules(params, mesh, llama_rules(mode, **axes), uneven=uneven))
    return model
