"""Test set-up for the whole repository (tests/ and projects/*/tests/): 8 virtual CPU devices,
subprocess runs compiled for speed over run time, no progress bars, a persistent compilation cache
shared with the subprocess tests, the smoke runs shared across xdist workers, and the pretrained
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
def fast_compile_env():
    """The environment of the end-to-end runs in subprocesses (smoke runs, rehearsals). They check
    plumbing, not the last bit, and compile far more than they compute: XLA's cheap optimization
    level cuts their compile time by a fifth (the lfpm smoke run: 36.5 -> 29.3 s, cold cache;
    its metrics move by at most 4e-8). Unit tests keep the default compiler: at level 0 two
    Pallas paths differ in the last bit, and the classic CPU emitters (faster still, with
    --xla_cpu_use_fusion_emitters=false) cast to float4_e2m1fn wrongly."""
    return {**os.environ, "JAX_DISABLE_MOST_OPTIMIZATIONS": "1"}


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory, fast_compile_env):
    """`smoke_run(project)` -> (the finished subprocess, its run directory): the project's smoke
    config through the real entry point (`launch/run.py`), run at most once per test session, also
    across pytest-xdist workers (the first to ask runs it under a file lock, the others wait and
    read its record), so the cross-project test and the project's own assertions share it."""
    import fcntl
    import json
    import subprocess
    import sys

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # this session's folder, shared by its workers
    shared = base / "smoke_runs"
    shared.mkdir(exist_ok=True)

    def get(project: str):
        workdir, record = shared / project, shared / f"{project}.json"
        with open(shared / f"{project}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not record.exists():
                workdir.mkdir()
                cmd = [sys.executable, "launch/run.py", f"projects/{project}", "--config", "smoke"]
                proc = subprocess.run(
                    [*cmd, "--workdir", str(workdir)],
                    cwd=ROOT,
                    env=fast_compile_env,
                    capture_output=True,
                    text=True,
                    timeout=900,
                )
                fields = ("args", "returncode", "stdout", "stderr")
                record.write_text(json.dumps({k: getattr(proc, k) for k in fields}))
        return subprocess.CompletedProcess(**json.loads(record.read_text())), workdir

    return get
