"""The images of one seed: an unlabelled pretraining pool and a labelled evaluation set.

source "synthetic" (cpu): the five-modality generator (generator.py; the pool from seed s, the
evaluation set from seed 10,000 + s, so they never share an image) plus, optionally, random crops
of scikit-image's medical-looking images (real_crops.py) in the pool.
source "folder" (paper): images read from a local directory by modality,
    <data_dir>/pretrain/<modality>/*.png|jpg          (unlabelled pool)
    <data_dir>/eval/<modality>/<fine class>/*.png|jpg  (labelled, one folder per class)
with <modality> the five names of MODALITIES; every image is converted to RGB and resized to the
model's image size. The whole pool is held in memory: a 1.15M-image run needs a streaming loader
in place of `_read_images` (the rest of the pipeline takes arrays).
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Literal, NamedTuple

import numpy as np

from projects.m_idol.generator import MODALITIES, generate
from projects.m_idol.real_crops import REAL_SOURCES, real_crops
from shared.config import NonNegativeFloat, NonNegativeInt, PositiveInt

# The modality each real source stands in for, so that the label-supervised router (ablation)
# has a target for it too: an assumption, as the crops carry no label.
REAL_MODALITY = {"retina": "fundus", "microaneurysms": "fundus",
                 "immunohistochemistry": "pathology", "cell": "pathology",
                 "shepp_logan_phantom": "xray"}  # fmt: skip
EVAL_SEED_OFFSET = 10_000
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


@dataclasses.dataclass(frozen=True)
class DataConfig:
    source: Literal["synthetic", "folder"] = "synthetic"
    data_dir: str = ""  # source "folder": the directory laid out as in the module docstring
    pretrain_per_modality: PositiveInt = 1000  # synthetic: unlabelled images per modality
    real_per_image: NonNegativeInt = 0  # synthetic: scikit-image crops per source in the pool
    eval_per_modality: PositiveInt = 400  # synthetic: labelled evaluation images per modality
    noise: NonNegativeFloat = 0.05  # synthetic: Gaussian pixel noise (generator default)


class Pool(NamedTuple):
    x: np.ndarray  # [n, s, s, 3] float32 in [0, 1]
    modality: np.ndarray  # [n] int32 (read only by the label-supervised router)


class Labelled(NamedTuple):
    x: np.ndarray  # [n, s, s, 3] float32 in [0, 1]
    modality: np.ndarray  # [n] int32, index into MODALITIES
    fine: np.ndarray  # [n] int32, the class within the modality
    classes: tuple[tuple[str, ...], ...]  # fine class names per modality


def load(cfg: DataConfig, seed: int, image_size: int) -> tuple[Pool, Labelled]:
    if cfg.source == "folder":
        return _folder(pathlib.Path(cfg.data_dir), image_size)
    if image_size != 32:
        raise ValueError(f"the synthetic images are 32 x 32; model.image_size={image_size}")
    from projects.m_idol.generator import FINE_CLASSES

    pool = generate(cfg.pretrain_per_modality, seed, noise=cfg.noise)
    x, modality = pool.x, pool.modality
    if cfg.real_per_image:
        real = real_crops(cfg.real_per_image, seed, size=image_size)
        ids = np.array([MODALITIES.index(REAL_MODALITY[s]) for s in REAL_SOURCES], np.int32)
        x, modality = np.concatenate([x, real.x]), np.concatenate([modality, ids[real.source]])
    ev = generate(cfg.eval_per_modality, EVAL_SEED_OFFSET + seed, noise=cfg.noise)
    classes = tuple(FINE_CLASSES[m] for m in MODALITIES)
    return Pool(x, modality), Labelled(ev.x, ev.modality, ev.fine, classes)


def _files(directory: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in directory.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)


def _read_images(paths: list[pathlib.Path], size: int) -> np.ndarray:
    from PIL import Image

    out = np.empty((len(paths), size, size, 3), np.float32)
    for i, p in enumerate(paths):
        with Image.open(p) as img:
            img = img.convert("RGB").resize((size, size), Image.Resampling.BILINEAR)
            out[i] = np.asarray(img, np.float32) / 255.0
    return out


def _need(directory: pathlib.Path, what: str) -> None:
    if not directory.is_dir():
        raise FileNotFoundError(
            f"{directory} is missing: data.source='folder' reads {what} there (layout in "
            "projects/m_idol/data.py); point data.data_dir at the dataset"
        )


def _folder(root: pathlib.Path, size: int) -> tuple[Pool, Labelled]:
    xs, mods, ex, em, ef, classes = [], [], [], [], [], []
    for m, name in enumerate(MODALITIES):
        pre = root / "pretrain" / name
        _need(pre, f"the unlabelled {name} images")
        files = _files(pre)
        if not files:
            raise FileNotFoundError(f"{pre} holds no .png/.jpg image")
        xs.append(_read_images(files, size))
        mods.append(np.full(len(files), m, np.int32))
        ev = root / "eval" / name
        _need(ev, f"the labelled {name} images, one folder per class")
        names = tuple(sorted(p.name for p in ev.iterdir() if p.is_dir()))
        if len(names) < 2:
            raise FileNotFoundError(f"{ev} needs at least two class folders, found {names}")
        for c, cname in enumerate(names):
            files = _files(ev / cname)
            ex.append(_read_images(files, size))
            em.append(np.full(len(files), m, np.int32))
            ef.append(np.full(len(files), c, np.int32))
        classes.append(names)
    pool = Pool(np.concatenate(xs), np.concatenate(mods))
    return pool, Labelled(np.concatenate(ex), np.concatenate(em), np.concatenate(ef),
                          tuple(classes))  # fmt: skip
