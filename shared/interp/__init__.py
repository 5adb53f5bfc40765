"""Looking inside and intervening on the shared LLaMA decoder (and so on SmolLM2-135M).

`trace(model, tokens, intervention=..., capture=...)` runs the decoder's own modules, returns
the logits and the captured activations; `Intervention` names what to change. Without an
intervention the logits equal `model(tokens)` bit for bit."""

from shared.interp.hooked import CAPTURABLE, trace
from shared.interp.intervention import (
    AttentionOverride,
    Intervention,
    causal_noise_probs,
    causal_uniform_probs,
    head_patch,
    steering,
)

__all__ = [
    "CAPTURABLE",
    "AttentionOverride",
    "Intervention",
    "causal_noise_probs",
    "causal_uniform_probs",
    "head_patch",
    "steering",
    "trace",
]
