"""Test set-up for the whole repository (tests/ and projects/*/tests/): 8 virtual CPU devices for
progress bars, and a persistent compilation cache shared with the subprocess tests."""

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(ROOT / "runs" / ".jax_cache_tests"))
