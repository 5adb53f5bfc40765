"""Every project's `paper` config rehearsed (shared/rehearsal.py): a few steps with the model
shrunk, on the 8 CPU devices of the root conftest with the paper's sharding, reading tiny files
in the paper's data layout through the real loaders, through `shared.executor.execute`.

Each in its own process (sharing the persistent compilation cache), compiled cheaply like the
smoke runs (root conftest)."""

import subprocess
import sys

import jax
import pytest

from shared import executor, rehearsal


def test_every_project_declares_a_rehearsal():
    for project in executor.all_projects():
        spec = rehearsal.load(project)
        assert spec.shrink, f"{project}: a rehearsal shrinks the paper config"
        assert spec.data, f"{project}: say what the paper config reads"


@pytest.mark.parametrize("project", executor.all_projects())
def test_paper_config_rehearsal(project, tmp_path, project_env):
    """Through launch/rehearse.py in a subprocess: the cheap compilation of the root conftest's
    end-to-end runs, and no jax option a run sets (a matmul precision) leaks into other tests."""
    cmd = [sys.executable, "launch/rehearse.py", f"projects/{project}", "--workdir", str(tmp_path)]
    env = project_env(project)
    proc = subprocess.run(
        cmd, cwd=executor.ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "passed in" in proc.stdout


def test_a_checkpoint_on_another_mesh_is_reported(tmp_path):
    """The sharding check reads orbax's metadata: a state saved replicated over (data, model) is
    not the FSDP + tensor layout a rehearsal may expect."""
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from shared.distributed import make_mesh
    from shared.train.checkpoint import Checkpointer

    mesh = make_mesh((2, 4), ("data", "model"))
    state = {"w": jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P()))}
    ckpt = Checkpointer(tmp_path / "checkpoints" / "lm")
    ckpt.save(1, state, {})
    ckpt.close()
    ok = rehearsal.Rehearsal(shrink=("x=1",), mesh={"data": 2, "model": 4})
    assert rehearsal._check_shardings(tmp_path, {"lm": 1}, ok)[1] == []
    split = rehearsal.Rehearsal(
        shrink=("x=1",), mesh={"data": 2, "model": 4}, sharded_axes=("model",)
    )
    assert (
        "split over mesh axes ['model']"
        in rehearsal._check_shardings(tmp_path, {"lm": 1}, split)[1][0]
    )
    other = rehearsal.Rehearsal(shrink=("x=1",), mesh={"data": 8})
    assert "not {'data': 8}" in rehearsal._check_shardings(tmp_path, {"lm": 1}, other)[1][0]
