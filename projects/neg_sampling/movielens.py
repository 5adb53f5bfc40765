"""MovieLens ml-latest-small as implicit feedback (ratings ≥ threshold are positives).

Two sources:
- a ratings CSV with columns `userId,movieId,rating` (MovieLens' own `ratings.csv`);
- the `movielens` data frame in the Debian package `r-cran-dslabs` (`dslabs/data/Rdata.rdb`, an R
  lazy-load database; `make env` unpacks it into the checkout), read with the PyPI package
  `rdata` (imported only here, only when used).

The directory comes from `cfg.movielens_dir`, then `MOVIELENS_DIR`, then the resolver's folder of
r-cran-dslabs; when no source is present, `load_ratings` raises `MissingDataError` naming the fix.
"""

from __future__ import annotations

import os
import pathlib
import struct
import warnings
import zlib

import numpy as np

from shared.data.resolver import MissingDataError, debian_data_dir, debian_hint

DSLABS_HINT = (
    f"{debian_hint('r-cran-dslabs')}; or point MOVIELENS_DIR at a directory holding MovieLens' "
    "ratings.csv"
)


def find_source(directory: str | None) -> pathlib.Path | None:
    """ratings.csv or Rdata.rdb in `directory` (or $MOVIELENS_DIR, or r-cran-dslabs' folder)."""
    candidates = [directory, os.environ.get("MOVIELENS_DIR"), debian_data_dir("r-cran-dslabs")]
    for d in candidates:
        if not d:
            continue
        for name in ("ratings.csv", "Rdata.rdb"):
            p = pathlib.Path(d) / name
            if p.exists():
                return p
    return None


def read_ratings_csv(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(user ids, item ids, ratings) from a CSV with a header naming userId, movieId, rating."""
    with open(path) as f:
        header = f.readline().strip().split(",")
    missing = {"userId", "movieId", "rating"} - set(header)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)} (header: {header})")
    cols = [header.index(c) for c in ("userId", "movieId", "rating")]
    data = np.loadtxt(path, delimiter=",", skiprows=1, usecols=cols, ndmin=2)
    return data[:, 0].astype(np.int64), data[:, 1].astype(np.int64), data[:, 2]


def _lazyload_chunk(blob: bytes) -> bytes:
    """One record of an R lazy-load database: 4-byte big-endian length, then a compressed
    serialization (zlib, or a type byte '2' bzip2 / '3' xz / '0' none before the data)."""
    (length,) = struct.unpack(">I", blob[:4])
    kind = blob[4:5]
    if kind == b"3":
        import lzma

        return lzma.decompress(blob[5:])[:length]
    if kind == b"2":
        import bz2

        return bz2.decompress(blob[5:])[:length]
    if kind == b"0":
        return blob[5 : 5 + length]
    return zlib.decompress(blob[4:])


def read_ratings_rdb(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(user ids, item ids, ratings) of dslabs' `movielens` data frame via `rdata`."""
    try:
        import rdata
    except ImportError as e:
        raise MissingDataError(
            f"{path} is read with the package `rdata`, which is not installed: `make env` "
            "installs it (pip install rdata==1.1.0); or provide a ratings.csv instead"
        ) from e
    with warnings.catch_warnings():  # bare serializations: rdata warns "assumed RDS"
        warnings.simplefilter("ignore", UserWarning)
        # the .rdx index is a gzipped RDS file; each .rdb record is one _lazyload_chunk
        index = rdata.conversion.convert(
            rdata.parser.parse_data(path.with_suffix(".rdx").read_bytes())
        )
        offset, length = (int(v) for v in index["variables"]["movielens"])
        blob = path.read_bytes()[offset : offset + length]
        frame = rdata.conversion.convert(rdata.parser.parse_data(_lazyload_chunk(blob)))
    return (
        np.asarray(frame["userId"], np.int64),
        np.asarray(frame["movieId"], np.int64),
        np.asarray(frame["rating"], np.float64),
    )


def load_ratings(directory: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    path = find_source(directory)
    if path is None:
        raise MissingDataError(
            "MovieLens ml-latest-small is not available (no ratings.csv or dslabs Rdata.rdb "
            f"found); {DSLABS_HINT}"
        )
    return read_ratings_csv(path) if path.suffix == ".csv" else read_ratings_rdb(path)


def positives_matrix(
    users: np.ndarray, items: np.ndarray, ratings: np.ndarray, threshold: float
) -> np.ndarray:
    """[U, I] bool of rating ≥ threshold, ids re-indexed densely over users/items with a
    positive (items only ever rated below the threshold are dropped)."""
    keep = ratings >= threshold
    if not keep.any():
        raise ValueError(f"no rating reaches the positive threshold {threshold}")
    _, u = np.unique(users[keep], return_inverse=True)
    _, i = np.unique(items[keep], return_inverse=True)
    out = np.zeros((u.max() + 1, i.max() + 1), bool)
    out[u, i] = True
    return out
