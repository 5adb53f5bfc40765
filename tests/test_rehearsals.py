"""Every project's `paper` config rehearsed (shared/rehearsal.py): a few steps with the model
shrunk, on the 8 CPU devices of the root conftest with the paper's sharding, reading tiny files
in the paper's data layout through the real loaders, through `shared.executor.execute`.

In-process, so the projects share one jax import and the compilation cache."""

import jax
import pytest

from shared import executor, rehearsal


@pytest.fixture(autouse=True)
def _jax_config_restored():
    """A run may set process-wide jax options (scale_continuous_gnn: matmul precision)."""
    precision = jax.config.jax_default_matmul_precision
    yield
    jax.config.update("jax_default_matmul_precision", precision)


def test_every_project_declares_a_rehearsal():
    for project in executor.all_projects():
        spec = rehearsal.load(project)
        assert spec.shrink, f"{project}: a rehearsal shrinks the paper config"
        assert spec.data, f"{project}: say what the paper config reads"


@pytest.mark.parametrize("project", executor.all_projects())
def test_paper_config_rehearsal(project, tmp_path):
    report = rehearsal.rehearse(project, tmp_path)
    print(report.summary())
    assert not report.problems, report.summary()


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
