"""Test set-up for the whole repository (tests/ and projects/*/tests/): 8 virtual CPU devices, no
progress bars, a persistent compilation cache shared with the subprocess tests, and the pretrained
models as session fixtures (each loaded at most once per session)."""

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(ROOT / "runs" / ".jax_cache_tests"))


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct in float32, loaded once per test session (about 12 s)."""
    from shared.models.pretrained.smollm2 import load_smollm2

    return load_smollm2()
