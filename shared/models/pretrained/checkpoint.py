"""A LLaMA-layout model from an orbax checkpoint of its nnx.Param state, with a Hugging Face
tokenizer.json: how a paper config reads an open 7B-class model (weights converted offline).
"""

from __future__ import annotations

import pathlib

from flax import nnx

from shared.data.tokenizers import HFTokenizer
from shared.models.llama import Llama, LlamaConfig

EOS_NAMES = ("</s>", "<|end_of_text|>", "<|eot_id|>", "<｜end▁of▁sentence｜>", "<eos>")


def need_file(field: str, path: str) -> pathlib.Path:
    if not path or not pathlib.Path(path).exists():
        raise FileNotFoundError(f"{field}={path!r} does not exist: the paper config needs it")
    return pathlib.Path(path)


def tokenizer_with_eos(tokenizer_file: str, eos_names=EOS_NAMES) -> HFTokenizer:
    """The tokenizer; eos and pad are the first of `eos_names` that it has."""
    import tokenizers

    raw = tokenizers.Tokenizer.from_file(str(tokenizer_file))
    eos = next((i for t in eos_names if (i := raw.token_to_id(t)) is not None), None)
    if eos is None:
        raise ValueError(f"{tokenizer_file}: none of the end tokens {eos_names} is known")
    return HFTokenizer(raw, eos_id=eos, pad_id=eos, add_special_tokens=False)


def restore_llama(layout: LlamaConfig, checkpoint: str, mesh=None) -> Llama:
    """The model of `layout` with the checkpoint's parameters, sharded FSDP + tensor parallel
    over `mesh` (data, model) when one is given."""
    import orbax.checkpoint as ocp

    from shared.models.llama_sharding import shard_llama

    abstract = nnx.eval_shape(lambda: Llama(layout, rngs=nnx.Rngs(0)))
    if mesh is not None:
        shard_llama(abstract, mesh, "fsdp+tensor")
    state = nnx.state(abstract, nnx.Param)
    restored = ocp.StandardCheckpointer().restore(pathlib.Path(checkpoint).absolute(), state)
    nnx.update(abstract, restored)
    return abstract
