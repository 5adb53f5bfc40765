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


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """`smoke_run(project)` -> (the finished subprocess, its run directory): the project's smoke
    config through the real entry point (`launch/run.py`), run at most once per session so the
    cross-project test and the project's own assertions share it."""
    import subprocess
    import sys

    done: dict = {}

    def get(project: str):
        if project not in done:
            workdir = tmp_path_factory.mktemp(f"smoke_{project}")
            cmd = [sys.executable, "launch/run.py", f"projects/{project}", "--config", "smoke"]
            proc = subprocess.run(
                [*cmd, "--workdir", str(workdir)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=900,
            )
            done[project] = (proc, workdir)
        return done[project]

    return get
