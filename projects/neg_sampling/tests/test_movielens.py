"""The MovieLens path: the R lazy-load reader on a small database written here in the Debian
package's format, the per-user split, and the real-data config (no oracle, nothing hidden)."""

import bz2
import dataclasses
import gzip
import lzma
import struct
import zlib

import numpy as np
import pandas as pd
import pytest

from projects.neg_sampling import data as data_lib
from projects.neg_sampling import experiment, movielens

RATINGS = pd.DataFrame(
    {
        "userId": np.array([1, 1, 2, 3, 3], np.int32),
        "movieId": np.array([10, 20, 20, 30, 10], np.int32),
        "rating": [4.0, 2.0, 5.0, 1.0, 4.5],
    }
)


def _record(raw: bytes, kind: str) -> bytes:
    """One lazy-load record as R writes it: big-endian length, then the compressed bytes
    (zlib directly; bzip2 / xz / none after a type byte '2' / '3' / '0')."""
    head = struct.pack(">I", len(raw))
    body = {
        "zlib": zlib.compress(raw),
        "bzip2": b"2" + bz2.compress(raw),
        "xz": b"3" + lzma.compress(raw),
        "none": b"0" + raw,
    }[kind]
    return head + body


def write_rdb(directory, frame: pd.DataFrame, kind: str = "zlib"):
    """Rdata.rdb/.rdx holding `frame` as the variable `movielens` after another variable, like
    dslabs' data folder (the .rdx index is a gzipped RDS list of (offset, length) pairs)."""
    from rdata.conversion import convert_python_to_r_data
    from rdata.unparser import unparse_data

    other = _record(unparse_data(convert_python_to_r_data(pd.DataFrame({"a": [1.0]}))), kind)
    ml = _record(unparse_data(convert_python_to_r_data(frame)), kind)
    (directory / "Rdata.rdb").write_bytes(other + ml)
    index = {
        "variables": {
            "other": np.array([0, len(other)], np.int32),
            "movielens": np.array([len(other), len(ml)], np.int32),
        },
        "references": {},
        "compressed": True,
    }
    (directory / "Rdata.rdx").write_bytes(
        gzip.compress(unparse_data(convert_python_to_r_data(index)))
    )
    return directory / "Rdata.rdb"


@pytest.mark.parametrize("kind", ["zlib", "bzip2", "xz", "none"])
def test_rdb_reader_on_a_database_in_the_packaged_format(tmp_path, kind):
    pytest.importorskip("rdata")
    path = write_rdb(tmp_path, RATINGS, kind)
    assert movielens.find_source(str(tmp_path)) == path
    users, items, ratings = movielens.load_ratings(str(tmp_path))
    np.testing.assert_array_equal(users, RATINGS["userId"])
    np.testing.assert_array_equal(items, RATINGS["movieId"])
    np.testing.assert_array_equal(ratings, RATINGS["rating"])
    pos = movielens.positives_matrix(users, items, ratings, 4.0)
    # users 1, 2, 3 and items 10, 20 have a positive; item 30 (rated 1.0 only) is dropped
    np.testing.assert_array_equal(pos, [[True, False], [False, True], [True, False]])


def test_per_user_split_partitions_each_users_positives():
    rng = np.random.default_rng(0)
    true_pos = rng.random((50, 80)) < 0.2
    true_pos[0] = False
    true_pos[0, 3] = True  # a user with one positive keeps it for training
    inter = data_lib.observe_and_split(true_pos, 1.0, None, (0.7, 0.1, 0.2), rng, per_user=True)
    parts = [inter.mask(p) for p in ("train", "valid", "test")]
    assert sum(m.sum() for m in parts) == true_pos.sum() and len(inter.hidden) == 0
    np.testing.assert_array_equal(parts[0] | parts[1] | parts[2], true_pos)
    n = true_pos.sum(1)
    np.testing.assert_array_equal(parts[2].sum(1), np.round(0.2 * n))
    np.testing.assert_array_equal(parts[1].sum(1), np.round(0.1 * n))
    assert parts[0][0, 3]
    # the split is seeded: another seed moves edges between parts
    other = data_lib.observe_and_split(
        true_pos, 1.0, None, (0.7, 0.1, 0.2), np.random.default_rng(1), per_user=True
    )
    assert (other.mask("test") != parts[2]).any()


def test_real_data_config_has_no_oracle_and_hides_nothing(tmp_path):
    pytest.importorskip("rdata")
    frame = pd.DataFrame(
        {
            "userId": np.repeat(np.arange(1, 21, dtype=np.int32), 10),
            "movieId": np.tile(np.arange(100, 110, dtype=np.int32), 20),
            "rating": np.where(np.arange(200) % 3 == 0, 2.0, 4.5),
        }
    )
    write_rdb(tmp_path, frame)
    cfg = dataclasses.replace(experiment.CONFIGS["movielens"], movielens_dir=str(tmp_path))
    assert "oracle" not in cfg.samplers and cfg.train.num_negatives == 4
    inter = experiment.load_data(cfg)
    assert len(inter.hidden) == 0
    assert inter.true_pos.sum() == (frame["rating"] >= 4).sum()
    assert len(inter.test) == np.round(0.2 * inter.true_pos.sum(1)).sum()
    with pytest.raises(ValueError, match="oracle"):
        dataclasses.replace(cfg, samplers=("uniform", "oracle"))
    with pytest.raises(ValueError, match="per_user"):
        dataclasses.replace(experiment.CONFIGS["cpu"], split="per_user")
