"""The models a run measures, each behind a `harness.Backend`: the synthetic word-level decoder
(built and trained here), SmolLM2-135M-Instruct (offline GGUF), and the paper config's
LLaMA-layout reasoning model (orbax checkpoint + HF tokenizer.json).
"""

from __future__ import annotations

import dataclasses

import jax
from flax import nnx

from projects.conpress.harness import Backend
from shared.data.word_tokenizer import WordTokenizer
from shared.models.llama import SIZES, Llama, LlamaConfig

# DeepSeek-R1-Distill-Llama-8B's layout (Llama-3.1-8B shapes), an open 8B reasoning model the
# shared LLaMA decoder can hold. Reconstruction: the paper's models are not known here (a
# third-party summary names Qwen3-4B, whose QK-norm the shared decoder lacks), and the shared
# decoder has plain RoPE without llama3 frequency scaling (as attn_qat's Llama-3.1 layout).
R1_DISTILL_LLAMA_8B = dataclasses.replace(SIZES["llama-3.1-8b"], max_seq_len=32768 + 1024)
# The same layout shrunk for the rehearsal of the paper config (rehearsal.py).
REHEARSAL_LAYOUT = dataclasses.replace(
    R1_DISTILL_LLAMA_8B, vocab_size=384, dim=64, num_layers=2, num_heads=4, num_kv_heads=1,
    ffn_dim=224, max_seq_len=1024, dtype="float32",
)  # fmt: skip
LAYOUTS = {"r1-distill-llama-8b": R1_DISTILL_LLAMA_8B, "rehearsal": REHEARSAL_LAYOUT}


def synthetic_config(
    vocab_size: int, dim: int, layers: int, heads: int, ffn: int, max_seq_len: int
) -> LlamaConfig:
    return LlamaConfig(vocab_size, dim, layers, heads, heads, ffn, max_seq_len=max_seq_len)


def new_synthetic(cfg: LlamaConfig, seed: int) -> Llama:
    return Llama(cfg, rngs=nnx.Rngs(jax.random.key(seed)))


def word_backend(model: Llama, tok: WordTokenizer) -> Backend:
    """The synthetic model reads `bos prompt sep` and writes the response, then eos."""
    return Backend(
        model=model,
        encode_prompt=lambda p: [tok.bos_id, *tok.encode(p), tok.sep_id],
        encode_text=tok.encode,
        decode=tok.decode,
        eos_id=tok.eos_id,
        pad_id=tok.pad_id,
    )


def smollm2_backend(model: Llama | None = None) -> Backend:
    """SmolLM2-135M-Instruct: the prompt is the user turn of its ChatML template (with the
    template's default system turn); it stops on <|im_end|> (id 2, also the pad)."""
    from shared.data.tokenizers import smollm2_tokenizer
    from shared.models.pretrained.smollm2 import chat_prompt, load_smollm2

    tok = smollm2_tokenizer()
    return Backend(
        model=model if model is not None else load_smollm2(),
        encode_prompt=lambda p: tok.encode(chat_prompt(p)),
        encode_text=tok.encode,
        decode=tok.decode,
        eos_id=tok.eos_id,
        pad_id=tok.pad_id,
    )


def checkpoint_backend(layout: str, checkpoint: str, tokenizer_file: str, template: str, mesh):
    """A LLaMA-layout model restored from an orbax checkpoint of its nnx.Param state (sharded
    FSDP + tensor parallel over `mesh` when given), with a Hugging Face tokenizer.json and a
    chat template that holds "{prompt}"; eos and pad are the first of "</s>",
    "<|end_of_text|>", "<｜end▁of▁sentence｜>", "<eos>" that the tokenizer has."""
    from shared.models.pretrained.checkpoint import need_file, restore_llama, tokenizer_with_eos

    need_file("model.init_checkpoint", checkpoint)
    need_file("model.tokenizer_file", tokenizer_file)
    if "{prompt}" not in template:
        raise ValueError(f"model.chat_template must contain {{prompt}}, got {template!r}")
    names = ("</s>", "<|end_of_text|>", "<｜end▁of▁sentence｜>", "<eos>")
    tok = tokenizer_with_eos(tokenizer_file, names)
    return Backend(
        model=restore_llama(LAYOUTS[layout], checkpoint, mesh),
        encode_prompt=lambda p: tok.encode(template.replace("{prompt}", p)),
        encode_text=tok.encode,
        decode=tok.decode,
        eos_id=tok.eos_id,
        pad_id=tok.pad_id,
    )
