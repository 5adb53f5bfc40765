"""Test set-up for the whole repository (tests/ and projects/*/tests/): 8 virtual CPU devices,
LLVM's optimization level 1, subprocess runs compiled for speed over run time, no progress bars,
a persistent compilation cache shared with the subprocess tests, the smoke runs shared across
xdist workers, and the pretrained models as session fixtures (each loaded at most once per
session)."""

import contextlib
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent
# Level 1 instead of LLVM's default: at the default a random draw of a 4-D shape (every conv
# kernel's initialization) takes seconds to compile (jax.random.normal of (3, 3, 8, 16): 6.0 s;
# at level 1: 0.3 s); the numerics-sensitive tests (FP4 formats and kernels, column norm) pass
# unchanged at level 1.
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "")
    + " --xla_force_host_platform_device_count=8 --xla_backend_optimization_level=1"
).strip()
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(ROOT / "runs" / ".jax_cache_tests"))


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct in float32, loaded once per test session (about 12 s)."""
    from shared.models.pretrained.smollm2 import load_smollm2

    return load_smollm2()


# Projects whose programs cast to float4_e2m1fn: the classic CPU emitters round those casts
# wrongly (tests/test_fp4.py fails under them), so their end-to-end runs keep the fusion emitters.
# tests/test_projects.py checks that every project mentioning FP4 is listed.
FLOAT4_PROJECTS = ("attn_qat",)
FUSION_EMITTERS = "xla_cpu_use_fusion_emitters"  # the XLA option; false: the classic emitters


@pytest.fixture(scope="session")
def fast_compile_env():
    """The environment of the end-to-end runs in subprocesses (smoke runs, rehearsals). They check
    plumbing, not the last bit, and compile far more than they compute: XLA's cheap optimization
    level cuts their compile time by a fifth (the lfpm smoke run: 36.5 -> 29.3 s, cold cache;
    its metrics move by at most 4e-8), and the classic CPU emitters by a further third or more
    (the var_sr rehearsal: 76 -> 46 s). Unit tests compile at LLVM level 1 (above), not at XLA's
    level 0, where two Pallas paths differ in the last bit; projects that cast to float4 run
    with `project_env`'s flags."""
    flags = f"{os.environ['XLA_FLAGS']} --{FUSION_EMITTERS}=false"
    return {**os.environ, "JAX_DISABLE_MOST_OPTIMIZATIONS": "1", "XLA_FLAGS": flags}


@pytest.fixture(scope="session")
def project_env(fast_compile_env):
    """`project_env(project)` -> the environment of that project's end-to-end runs: the fast one,
    with the fusion emitters kept for the projects that cast to float4."""

    def env(project: str) -> dict:
        if project in FLOAT4_PROJECTS:
            return {**fast_compile_env, "XLA_FLAGS": os.environ["XLA_FLAGS"]}
        return fast_compile_env

    return env


# Projects whose unit tests check shapes, identities to tolerances and falling losses on tiny
# models, compiling far more than they run: their test modules compile like the end-to-end runs,
# at XLA's cheap level and with the classic emitters (var_sr's and m_idol's unit tests, cold
# cache: 51.6 s as other tests compile, 30.2 s so). Not for exact, kernel or FP4 tests.
CHEAP_COMPILATION_PROJECTS = ("hypcl", "lfpm", "m_idol", "var_sr")
assert not set(CHEAP_COMPILATION_PROJECTS) & set(FLOAT4_PROJECTS), "FP4 needs the fusion emitters"


@contextlib.contextmanager
def _cheap_compilation():
    import jax
    from jax._src import compiler  # private: XLA_FLAGS are read once, this is the per-program hook

    default_options = compiler.get_compile_options

    def classic_emitters(*args, env_options_overrides=None, **kwargs):
        overrides = {FUSION_EMITTERS: False, **(env_options_overrides or {})}
        return default_options(*args, env_options_overrides=overrides, **kwargs)

    before = jax.config.read("jax_disable_most_optimizations")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiler, "get_compile_options", classic_emitters)
        jax.config.update("jax_disable_most_optimizations", True)
        try:
            yield
        finally:
            jax.config.update("jax_disable_most_optimizations", before)
            # jax's in-memory caches key neither option: later modules compile their own programs
            jax.clear_caches()


@pytest.fixture(scope="session")
def cheap_compilation():
    """The context of CHEAP_COMPILATION_PROJECTS' test modules (for the test that checks it)."""
    return _cheap_compilation


@pytest.fixture(scope="module", autouse=True)
def _cheap_compilation_for_listed_projects(request):
    parts = request.path.resolve().relative_to(ROOT).parts
    if parts[:1] != ("projects",) or parts[1] not in CHEAP_COMPILATION_PROJECTS:
        yield
        return
    with _cheap_compilation():
        yield


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory, project_env):
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
                    env=project_env(project),
                    capture_output=True,
                    text=True,
                    timeout=900,
                )
                fields = ("args", "returncode", "stdout", "stderr")
                record.write_text(json.dumps({k: getattr(proc, k) for k in fields}))
        return subprocess.CompletedProcess(**json.loads(record.read_text())), workdir

    return get
