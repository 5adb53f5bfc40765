"""SSR at CPU scale: single-stage sparse multi-vector retrieval (TopK SAE codes on neuron-level
inverted lists) against exhaustive MaxSim, a PLAID-like K-means index, single-vector search and
BM25, on real text with the real MiniLM-L6 token encoder.

    python launch/run.py projects/ssr                           # cpu: Wikipedia known-item
    python launch/run.py projects/ssr --set collection=bbc --set data.doc_max_tokens=64  # BBC
    python launch/run.py projects/ssr --config smoke            # seconds, for tests
    python launch/reproduce.py projects/ssr                     # every table

One run encodes the collection once (frozen MiniLM), then for each of `num_seeds` training seeds
(seed, seed + 1, ...) trains the
128-d projection and the SAEs and builds and queries every index (pipeline.py).
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Literal

from shared.config import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt


@dataclasses.dataclass(frozen=True)
class DataConfig:
    # sized so that 3 seeds of every system fit the 15-minute table budget on 2 cores
    max_docs: PositiveInt = 2000  # collection size (relevant documents of kept queries first)
    test_queries: PositiveInt = 300
    validation_queries: PositiveInt = 200  # SSR-CLS weight is chosen on these
    train_queries: PositiveInt = 1000  # (query, document) pairs training the projection
    doc_max_tokens: PositiveInt = 128  # MiniLM word pieces per document, [CLS]/[SEP] included
    query_max_tokens: PositiveInt = 32
    beir_dir: str = ""  # collection="beir": a BEIR dataset folder
    beir_split: str = "test"


@dataclasses.dataclass(frozen=True)
class ProjectionConfig:
    dim: PositiveInt = 128  # ColBERT's token dimension
    steps: PositiveInt = 300
    batch_size: PositiveInt = 32  # pairs per step (in-batch negatives)
    lr: PositiveFloat = 1e-3


@dataclasses.dataclass(frozen=True)
class SAEConfig:
    width: PositiveInt = 4096  # latents (spec: 4,096)
    ks: tuple[PositiveInt, ...] = (8, 16, 32)  # active latents per token (the k sweep)
    steps: PositiveInt = 400
    batch_size: PositiveInt = 1024  # token vectors per step
    lr: PositiveFloat = 1e-3
    aux_k: PositiveInt = 64
    aux_weight: NonNegativeFloat = 1 / 32
    dead_after: PositiveInt = 100_000  # tokens without firing -> dead
    contrastive_k: NonNegativeInt = 16  # k of the L_rec + λ·InfoNCE variant (0: none)
    contrastive_weight: NonNegativeFloat = 1.0  # λ (spec: 1)
    contrastive_pairs: PositiveInt = 8  # (query, document) pairs per step for the InfoNCE


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    prune: tuple[PositiveInt, ...] = (100, 500)  # C: documents kept by the upper bound
    cls_weights: tuple[NonNegativeFloat, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)  # w, tuned on val
    kmeans: tuple[PositiveInt, ...] = (256, 1024)  # PLAID-like centroid counts
    kmeans_iters: PositiveInt = 10  # Lloyd iterations at most
    nprobe: PositiveInt = 2  # centroids probed per query token
    rerank: PositiveInt = 256  # candidates scored exactly after centroid interaction
    residual_bits: PositiveInt = 2  # PLAID's residual compression
    depth: PositiveInt = 100  # documents retrieved per query (Recall@100)


@dataclasses.dataclass(frozen=True)
class Config:
    collection: Literal["wikipedia", "bbc", "bbc_graded", "beir"] = "wikipedia"
    seed: NonNegativeInt = 0  # the first training seed
    num_seeds: PositiveInt = 3  # projection and SAE training seeds seed, seed + 1, ...
    data: DataConfig = DataConfig()
    projection: ProjectionConfig = ProjectionConfig()
    sae: SAEConfig = SAEConfig()
    search: SearchConfig = SearchConfig()

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.seed, self.seed + self.num_seeds))

    def __post_init__(self):
        if self.collection == "beir" and not self.data.beir_dir:
            raise ValueError("collection='beir' reads a local BEIR folder: set data.beir_dir")
        if self.sae.contrastive_k and self.sae.contrastive_k not in self.sae.ks:
            raise ValueError(f"sae.contrastive_k={self.sae.contrastive_k} must be one of "
                             f"sae.ks={self.sae.ks}")  # fmt: skip
        if max(self.sae.ks) > self.sae.width:
            raise ValueError(f"sae.ks={self.sae.ks} exceed sae.width={self.sae.width}")


CONFIGS: dict[str, Config] = {
    "smoke": Config(
        num_seeds=1,
        data=DataConfig(
            max_docs=120,
            test_queries=20,
            validation_queries=10,
            train_queries=40,
            doc_max_tokens=24,
            query_max_tokens=12,
        ),  # fmt: skip
        projection=ProjectionConfig(dim=16, steps=3, batch_size=8),
        sae=SAEConfig(
            width=64, ks=(4, 8), steps=3, batch_size=128, contrastive_k=4, contrastive_pairs=4
        ),  # fmt: skip
        search=SearchConfig(
            prune=(10,), cls_weights=(0.5, 1.0), kmeans=(8,), rerank=16, depth=20
        ),  # fmt: skip
    ),
    "cpu": Config(),
    # The paper's setting as far as it is known: a BEIR dataset from a local folder, the paper's
    # SAE widths (8,192-32,768) and k = 16-64, every query.
    "paper": Config(
        collection="beir",
        data=DataConfig(
            max_docs=10**9,
            test_queries=10**9,
            validation_queries=1,
            train_queries=1,
            doc_max_tokens=180,
            beir_dir="data/beir/scifact",
        ),  # fmt: skip
        sae=SAEConfig(
            width=16384, ks=(16, 32, 64), steps=20000, batch_size=8192, contrastive_k=32
        ),  # fmt: skip
        search=SearchConfig(kmeans=(4096, 16384)),
    ),
}


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    from projects.ssr.pipeline import run_pipeline

    return run_pipeline(cfg, workdir)
