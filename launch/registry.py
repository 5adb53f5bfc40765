"""Finding and loading projects: shared by run.py and reproduce.py."""

from __future__ import annotations

import importlib
import pathlib
import sys
from types import ModuleType

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # works without the editable install too
    sys.path.insert(0, str(ROOT))


def all_projects() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "projects").glob("*/experiment.py"))


def resolve(path_or_name: str) -> str:
    """'projects/var_jepa', 'projects/var_jepa/' or 'var_jepa' -> 'var_jepa', else fails."""
    name = pathlib.Path(path_or_name.rstrip("/")).name
    if name not in all_projects():
        raise SystemExit(
            f"error: unknown project '{path_or_name}'; available: "
            f"{', '.join('projects/' + p for p in all_projects())}"
        )
    return name


def load_module(project: str, module: str) -> ModuleType:
    return importlib.import_module(f"projects.{project}.{module}")


def get_config(experiment: ModuleType, project: str, config_name: str):
    if config_name not in experiment.CONFIGS:
        raise SystemExit(
            f"error: project '{project}' has no config '{config_name}'; available: "
            f"{', '.join(experiment.CONFIGS)}"
        )
    return experiment.CONFIGS[config_name]


def enable_compile_cache() -> None:
    """Persistent XLA compilation cache under runs/: repeated runs (seeds of a table, resumes,
    tests) skip recompiling identical steps. JAX_COMPILATION_CACHE_DIR overrides the place."""
    import os

    import jax

    path = os.environ.get("JAX_COMPILATION_CACHE_DIR", str(ROOT / "runs" / ".jax_cache"))
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
