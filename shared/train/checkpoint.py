"""Orbax checkpoints of a training state, the data-iterator state and the step.

`shared.train.loop.train_loop` opens and closes the `Checkpointer` itself; callers name only a
directory (and ask `latest_checkpoint_step` where a run would resume)."""

from __future__ import annotations

import pathlib
from typing import Any

import jax
import orbax.checkpoint as ocp


def _flat(state: Any) -> dict[str, Any]:
    """Leaves keyed by position. Orbax cannot store zero-size arrays (e.g. the embedding table of
    a table without categorical columns); those are rebuilt from the template on restore."""
    return {f"{i:05d}": x for i, x in enumerate(jax.tree.leaves(state)) if x.size}


class Checkpointer:
    """Saves `{state, data, meta}` at a step; restores the latest onto a template state.

    `state` is any pytree of arrays (model params, optimizer state, EMA copies, keys as raw data).
    `data` is the input iterator's JSON state, so a resumed run sees exactly the same batches.
    """

    def __init__(self, directory: str | pathlib.Path, max_to_keep: int = 2):
        self.directory = pathlib.Path(directory).absolute()
        self._mngr = ocp.CheckpointManager(
            self.directory, options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep)
        )

    def latest_step(self) -> int | None:
        return self._mngr.latest_step()

    def save(self, step: int, state: Any, data_state: dict, meta: dict | None = None) -> None:
        if step in self._mngr.all_steps():
            return
        self._mngr.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(_flat(state)),
                data=ocp.args.JsonSave(data_state),
                meta=ocp.args.JsonSave(meta or {}),
            ),
        )
        self._mngr.wait_until_finished()

    def restore(self, template: Any, step: int | None = None) -> tuple[int, Any, dict, dict]:
        """Returns (step, state, data_state, meta); `template` gives the tree structure."""
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, _flat(template))
        out = self._mngr.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(abstract),
                data=ocp.args.JsonRestore(),
                meta=ocp.args.JsonRestore(),
            ),
        )
        # Rebuild the template's exact structure (optax states are namedtuples) from the leaves.
        saved = out["state"]
        leaves = [saved.get(f"{i:05d}", x) for i, x in enumerate(jax.tree.leaves(template))]
        state = jax.tree.unflatten(jax.tree.structure(template), leaves)
        return step, state, out["data"], out["meta"] or {}

    def close(self) -> None:
        self._mngr.close()


def latest_checkpoint_step(directory: str | pathlib.Path | None) -> int | None:
    """The step a `train_loop` with this `checkpoint_dir` resumes from (None: it starts at 0).

    Reads without creating anything; `None` or a missing directory has no checkpoint."""
    if directory is None or not pathlib.Path(directory).exists():
        return None
    mngr = ocp.CheckpointManager(
        pathlib.Path(directory).absolute(), options=ocp.CheckpointManagerOptions(read_only=True)
    )
    try:
        return mngr.latest_step()
    finally:
        mngr.close()
