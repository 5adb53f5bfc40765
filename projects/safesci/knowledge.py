"""SafeSci-mini's fictional knowledge base and the fact sentences a decoder is pretrained on.

Reconstruction (spec section 5, "suggested settings"): invented compounds, each with a hazard
class (5 values), a storage rule, two incompatible reagents and two required pieces of
protective equipment. Names are invented words, so nothing can be known except from the facts.
Each fact is written in several paraphrases (knowledge stated several ways is what lets a
small model later retrieve it for questions it never saw answered; Allen-Zhu & Li, Physics of
Language Models 3.1). Facts are closed-world: a reagent not named as incompatible is safe.
"""

from __future__ import annotations

import dataclasses

import numpy as np

HAZARDS = ("flammable", "corrosive", "toxic", "oxidizing", "explosive")
STORAGE = (
    "in a cold room", "under dry nitrogen", "in a dark glass bottle", "in a vented cabinet",
    "below ten degrees", "away from sunlight", "in a sealed steel drum", "in a fireproof safe",
)  # fmt: skip
REAGENTS = (
    "water", "bleach", "ammonia", "acetone", "ethanol", "nitric acid", "sulfuric acid", "sodium",
    "peroxide", "chlorine", "hydrazine", "lye", "vinegar", "glycerol", "hexane", "brine",
)  # fmt: skip
PPE = ("gloves", "goggles", "a respirator", "a face shield", "a lab coat", "an apron")
_ONSETS = "b d f g k l m n p r s t v z br dr kr pl st tr".split()
_VOWELS = "a e i o u ai ea io".split()
_SUFFIXES = "ane ol ine ium ide ate ene yl".split()

FACT_TEMPLATES = {
    "hazard": (
        "{c} is a {h} compound.",
        "The compound {c} is classed as {h}.",
        "{c} belongs to the {h} hazard class.",
    ),
    "storage": (
        "{c} must be stored {s}.",
        "Keep {c} {s}.",
        "The safe way to store {c} is {s}.",
    ),
    "incompatible": (
        "{c} reacts dangerously with {r}.",
        "Never mix {c} with {r}.",
        "{r} and {c} react violently.",
    ),
    "ppe": (
        "Handling {c} requires {p} and {q}.",
        "Wear {p} and {q} when you handle {c}.",
    ),
}


@dataclasses.dataclass(frozen=True)
class Compound:
    name: str
    hazard: str
    storage: str
    incompatible: tuple[str, str]
    ppe: tuple[str, str]

    @property
    def compatible(self) -> tuple[str, ...]:
        return tuple(r for r in REAGENTS if r not in self.incompatible)


def compound_names(n: int, rng: np.random.Generator) -> list[str]:
    """n distinct invented lower-case words of two syllables and a chemical suffix."""
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(2)]
        name = "".join(parts) + rng.choice(_SUFFIXES)
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def knowledge_base(n: int, seed: int) -> tuple[Compound, ...]:
    rng = np.random.default_rng(seed)
    out = []
    for name in compound_names(n, rng):
        bad = rng.choice(len(REAGENTS), 2, replace=False)
        ppe = rng.choice(len(PPE), 2, replace=False)
        out.append(
            Compound(
                name=name,
                hazard=HAZARDS[rng.integers(len(HAZARDS))],
                storage=STORAGE[rng.integers(len(STORAGE))],
                incompatible=(REAGENTS[bad[0]], REAGENTS[bad[1]]),
                ppe=(PPE[ppe[0]], PPE[ppe[1]]),
            )
        )
    return tuple(out)


def fact_sentences(c: Compound) -> list[str]:
    """Every paraphrase of every fact about c (the pretraining corpus of one compound)."""
    out = [t.format(c=c.name, h=c.hazard) for t in FACT_TEMPLATES["hazard"]]
    out += [t.format(c=c.name, s=c.storage) for t in FACT_TEMPLATES["storage"]]
    out += [t.format(c=c.name, r=r) for r in c.incompatible for t in FACT_TEMPLATES["incompatible"]]
    out += [t.format(c=c.name, p=c.ppe[0], q=c.ppe[1]) for t in FACT_TEMPLATES["ppe"]]
    return out  # names stay lower-case: the word tokenizer is case-sensitive
