"""Orbax checkpoints of a training state, the data-iterator state and the step.

`shared.train.loop.train_loop` opens and closes the `Checkpointer` itself; callers name only a
directory (and ask `latest_checkpoint_step` where a run would resume). A checkpoint records the
shape and dtype of every leaf: restoring onto a different model is refused with a clear
`CheckpointError`, while an unreadable newest checkpoint (a corrupted file) is reported, deleted
and replaced by the one before it."""

from __future__ import annotations

import pathlib
import sys
from typing import Any

import jax

# orbax is imported where it is used: its imports cost about a second in every process, and most
# runs (and every run without checkpoints) import this module only to ask for the latest step.

class CheckpointError(RuntimeError):
    """No usable checkpoint: another model's, or none readable; the message says what to do."""


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
        import orbax.checkpoint as ocp

        self.directory = pathlib.Path(directory).absolute()
        self._mngr = ocp.CheckpointManager(
            self.directory, options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep)
        )

    def latest_step(self) -> int | None:
        return self._mngr.latest_step()

    def save(self, step: int, state: Any, data_state: dict, meta: dict | None = None) -> None:
        import orbax.checkpoint as ocp

        if step in self._mngr.all_steps():
            return
        _check_global(state, self.directory)
        meta = {**(meta or {}), "leaves": _leaf_specs(state)}
        self._mngr.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(_flat(state)),
                data=ocp.args.JsonSave(data_state),
                meta=ocp.args.JsonSave(meta),
            ),
        )
        self._mngr.wait_until_finished()

    def restore(self, template: Any, step: int | None = None) -> tuple[int, Any, dict, dict]:
        """Returns (step, state, data_state, meta); `template` gives the tree structure.

        Without `step`: the newest readable checkpoint; unreadable newer ones are deleted (so a
        later save at their step is not skipped), each with a message on stderr."""
        steps = sorted(self._mngr.all_steps(), reverse=True) if step is None else [step]
        if not steps:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        for candidate in steps:
            try:
                meta = self._read_meta(candidate)
            except Exception as e:  # noqa: BLE001 (any read failure means "unreadable")
                self._unreadable(candidate, e, step is None)
                continue
            _check_compatible(meta, template, self.directory / str(candidate))
            try:
                return candidate, *self._read(candidate, template), meta
            except Exception as e:  # noqa: BLE001
                self._unreadable(candidate, e, step is None)
        raise CheckpointError(
            f"no readable checkpoint in {self.directory} (tried steps {steps}); delete that "
            "directory to start the phase over, or rerun with --force-new"
        )

    def _read_meta(self, step: int) -> dict:
        import orbax.checkpoint as ocp

        out = self._mngr.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))
        return out["meta"] or {}

    def _read(self, step: int, template: Any) -> tuple[Any, dict]:
        import orbax.checkpoint as ocp

        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, _flat(template))
        out = self._mngr.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(abstract), data=ocp.args.JsonRestore()
            ),
        )
        # Rebuild the template's exact structure (optax states are namedtuples) from the leaves.
        saved = out["state"]
        leaves = [saved.get(f"{i:05d}", x) for i, x in enumerate(jax.tree.leaves(template))]
        return jax.tree.unflatten(jax.tree.structure(template), leaves), out["data"]

    def _unreadable(self, step: int, error: Exception, fall_back: bool) -> None:
        """Deletes checkpoint `step` with a warning (`fall_back`), else raises CheckpointError."""
        where = self.directory / str(step)
        first_line = (str(error).splitlines() or [""])[0][:200]
        reason = f"{type(error).__name__}: {first_line}"
        if not fall_back:
            raise CheckpointError(f"checkpoint {where} is unreadable ({reason})") from error
        print(
            f"warning: checkpoint {where} is unreadable ({reason}); deleting it and falling "
            "back to the one before",
            file=sys.stderr,
            flush=True,
        )
        self._mngr.delete(step)

    def close(self) -> None:
        self._mngr.close()


def _check_global(state: Any, where: pathlib.Path) -> None:
    """With several JAX processes a checkpoint holds global arrays (on a mesh over every
    process's devices); a process-local one would be one process's copy, and orbax refuses it
    with a message that does not say what to change."""
    if jax.process_count() == 1:
        return
    local = [i for i, x in enumerate(jax.tree.leaves(state))
             if isinstance(x, jax.Array) and x.is_fully_addressable]  # fmt: skip
    if local:
        raise CheckpointError(
            f"{where}: {len(local)} arrays of the state live on this process's devices only, "
            "but this is a multi-process run: train on a mesh over every device (var_jepa: "
            "--set pretrain.data_parallel=True; scale: --set sharding=data), or run one process"
        )


def _leaf_specs(state: Any) -> list[list]:
    return [[list(x.shape), str(x.dtype)] for x in jax.tree.leaves(state)]


def _check_compatible(meta: dict, template: Any, where: pathlib.Path) -> None:
    """Refuses a checkpoint of another model (leaf count, shape or dtype differ)."""
    saved, wanted = meta.get("leaves"), _leaf_specs(template)
    if saved is None or saved == wanted:
        return  # checkpoints written before leaf specs were recorded are taken as they are
    if len(saved) != len(wanted):
        detail = f"{len(saved)} arrays saved, {len(wanted)} expected"
    else:
        i = next(i for i, (a, b) in enumerate(zip(saved, wanted)) if a != b)
        detail = f"array {i} is {saved[i][1]}{saved[i][0]} there, {wanted[i][1]}{wanted[i][0]} here"
    raise CheckpointError(
        f"checkpoint {where} holds another model ({detail}): the config changed since it was "
        "saved; use a fresh --workdir, or --force-new to start over in this one"
    )


def latest_checkpoint_step(directory: str | pathlib.Path | None) -> int | None:
    """The step a `train_loop` with this `checkpoint_dir` resumes from (None: it starts at 0).

    Reads the directory listing (finalized step folders) without creating anything and without
    a CheckpointManager: a manager's constructor is collective across JAX processes, and one
    process may look before another has made the folder."""
    if directory is None or not pathlib.Path(directory).exists():
        return None
    import orbax.checkpoint as ocp

    return max(ocp.utils.checkpoint_steps(pathlib.Path(directory).absolute()), default=None)
