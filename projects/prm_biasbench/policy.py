"""The tier-3 policy: a small LLaMA decoder pretrained on correct solutions (spec §5).

Prompt = `<pad>... <bos> question <sep>`, left-padded with the pad token to one length
`prompt_len` so that every batch is a plain [B, P] array; response = the PRM-format solution, then
`<eos>`. The pads are ordinary tokens the policy sees in pretraining, sampling and RL alike, so no
attention mask is needed (Reconstruction: the shared policy-gradient code takes unpadded
equal-length prompts; alternative considered: masked left padding, which its log-probabilities do
not support yet). The vocabulary is the PRM's word vocabulary, so the policy can write every style
phrase of tier 1 (but is never shown one).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from flax import nnx

from shared import rng
from shared.config import PositiveInt
from shared.data.arithmetic_trace_text import render_prm, render_question
from shared.data.word_tokenizer import WordTokenizer
from shared.models.llama import Llama, LlamaConfig
from shared.train.sft import SFTConfig, pack_pairs, train_sft


@dataclasses.dataclass(frozen=True)
class PolicyConfig:
    dim: PositiveInt = 128  # width (spec: a 4-layer GPT)
    num_layers: PositiveInt = 4
    num_heads: PositiveInt = 4
    ffn_dim: PositiveInt = 344
    prompt_len: PositiveInt = 32  # prompts are left-padded to this many tokens
    max_new_tokens: PositiveInt = 64  # response bound (a 6-step solution is 59 tokens + eos)
    sft_size: PositiveInt = 4000  # correct solutions of pretraining (disjoint from the PRM's)
    sft: SFTConfig = SFTConfig(steps=600, batch_size=32, lr=3e-3)


def llama_config(cfg: PolicyConfig, vocab_size: int) -> LlamaConfig:
    return LlamaConfig(
        vocab_size, cfg.dim, cfg.num_layers, cfg.num_heads, cfg.num_heads, cfg.ffn_dim,
        max_seq_len=cfg.prompt_len + cfg.max_new_tokens,
    )  # fmt: skip


def prompt_ids(tok: WordTokenizer, question: str, prompt_len: int) -> list[int]:
    ids = [tok.bos_id, *tok.encode(question), tok.sep_id]
    if len(ids) > prompt_len:
        raise ValueError(
            f"the prompt has {len(ids)} tokens, more than prompt_len={prompt_len} (the policy's "
            "prompt context); raise policy.prompt_len"
        )
    return [tok.pad_id] * (prompt_len - len(ids)) + ids


def prompts(tok: WordTokenizer, questions: list[str], prompt_len: int) -> np.ndarray:
    return np.array([prompt_ids(tok, q, prompt_len) for q in questions], np.int32)


def question_of(tok: WordTokenizer, prompt: np.ndarray) -> str:
    """The question text of one encoded prompt (pads, bos, sep dropped)."""
    return tok.decode(prompt)


def response_text(tok: WordTokenizer, response: np.ndarray) -> str:
    """A sampled response up to (not including) its first eos, as canonical text."""
    ids = list(np.asarray(response))
    if tok.eos_id in ids:
        ids = ids[: ids.index(tok.eos_id)]
    return tok.decode(ids)


def pretrain(
    cfg: PolicyConfig,
    tok: WordTokenizer,
    traces: list,
    seed: int,
    workdir,
) -> Llama:
    """A fresh policy trained on the correct solutions of `traces` (response-only loss)."""
    model = Llama(
        llama_config(cfg, tok.vocab_size), rngs=nnx.Rngs(params=rng.stream(seed, "policy_init"))
    )
    pairs = [
        (prompt_ids(tok, render_question(t.problem), cfg.prompt_len), tok.encode(render_prm(t)))
        for t in traces
    ]
    packed = pack_pairs(
        pairs, cfg.prompt_len + cfg.max_new_tokens - 1, eos_id=tok.eos_id, pad_id=tok.pad_id
    )
    sft = dataclasses.replace(cfg.sft, seed=seed)
    return train_sft(model, packed, sft, workdir=workdir, phase="policy_sft")
