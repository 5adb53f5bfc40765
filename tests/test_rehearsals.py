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
