"""Meshes, shardings and multi-host start-up through JAX's own distributed runtime.

On a TPU pod or GPU cluster every process calls `initialize()` first (TPU pods and SLURM fill in
the coordinator and process ids themselves), then builds the same global mesh; each process feeds
its own slice of the global batch (`host_batch_slice`). `launch/run.py --processes N` runs the
same path on one machine: N CPU processes joined through a coordinator on 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def initialize() -> None:
    """`jax.distributed.initialize` when launched multi-process; a no-op on one process.

    Multi-process is detected from the variables the launchers set:
    - the local launcher (`launch/run.py --processes N`): JAX_COORDINATOR_ADDRESS (127.0.0.1:port),
      JAX_NUM_PROCESSES and JAX_PROCESS_ID, which JAX itself does not read; CPU processes then
      exchange collectives through gloo;
    - SLURM (SLURM_NTASKS > 1) and TPU pods (TPU_WORKER_HOSTNAMES, or JAX_COORDINATOR_ADDRESS=auto
      as launch/tpu_pod.sh sets): JAX finds the coordinator and process ids itself.
    """
    if jax.distributed.is_initialized():
        return
    address = os.environ.get("JAX_COORDINATOR_ADDRESS", "")
    if address == "auto":  # a marker for "multi-process", not an address JAX could dial
        del os.environ["JAX_COORDINATOR_ADDRESS"]
    count = int(os.environ.get("JAX_NUM_PROCESSES", "1"))
    if count > 1:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            address, num_processes=count, process_id=int(os.environ["JAX_PROCESS_ID"])
        )
    elif (
        address
        or int(os.environ.get("SLURM_NTASKS", "1")) > 1
        or os.environ.get("TPU_WORKER_HOSTNAMES", "").count(",") > 0
    ):
        jax.distributed.initialize()


def process_count() -> int:
    """The JAX processes of this run: 1 unless `initialize` joined several. Asking does not
    start the backend (which would take the device in a process that only launches runs)."""
    return jax.process_count() if jax.distributed.is_initialized() else 1


def is_primary() -> bool:
    """True on process 0, the one process that writes results, tables and logs (all processes
    take part in checkpoints, which orbax writes collectively)."""
    return process_count() == 1 or jax.process_index() == 0


def data_mesh(num_devices: int | None = None, axis: str = "data") -> Mesh:
    """A 1-D mesh over all (or the first `num_devices`) devices for data parallelism."""
    devices = jax.devices()[: num_devices or len(jax.devices())]
    return Mesh(np.asarray(devices), (axis,), axis_types=(AxisType.Auto,))


def make_mesh(shape: Sequence[int], names: Sequence[str]) -> Mesh:
    """An N-D mesh (e.g. (data, model)) with Auto axes, so GSPMD propagates shardings."""
    return jax.make_mesh(tuple(shape), tuple(names), axis_types=(AxisType.Auto,) * len(shape))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def onto_mesh(tree, mesh: Mesh):
    """Leaves already laid out on `mesh` kept; every other array (an optimizer's step count made
    on one device) replicated over it. A jitted step then sees one device set, also after a
    checkpoint restore (which commits each leaf where its template leaf lives)."""

    def place(x):
        on = isinstance(getattr(x, "sharding", None), NamedSharding) and x.sharding.mesh == mesh
        return x if on else jax.device_put(x, replicated(mesh))

    return jax.tree.map(place, tree)


def batch_sharded(mesh: Mesh, axis: str = "data") -> NamedSharding:
    """Leading (batch) dimension split over `axis`, the rest replicated."""
    return NamedSharding(mesh, P(axis))


def shard_by_rules(tree, mesh: Mesh, rules: Sequence[tuple[str, P]], *, uneven: str = "error"):
    """Places every leaf of `tree` with the PartitionSpec of the first rule whose regex matches
    its '/'-joined path; unmatched leaves are replicated. Rules name mesh axes, e.g.
    `[(r".*mlp.*kernel", P(None, "model"))]`. `jax.ShapeDtypeStruct` leaves (an
    `nnx.eval_shape` model to restore a checkpoint onto) get the sharding without memory.

    A dimension that its mesh axes do not divide (e.g. LLaMA-1B's FFN width 5461 over 4
    devices) raises with `uneven="error"`; with `uneven="replicate"` that dimension is kept
    whole on every device and a warning names the parameter."""
    if uneven not in ("error", "replicate"):
        raise ValueError(f"uneven={uneven!r}: choose 'error' or 'replicate'")

    def fit(name: str, shape: tuple[int, ...], spec: P) -> P:
        entries = list(spec) + [None] * (len(shape) - len(spec))
        for dim, axes in enumerate(entries):
            size = int(np.prod([mesh.shape[a] for a in np.atleast_1d(axes)])) if axes else 1
            if shape[dim] % size:
                msg = f"{name}: dimension {dim} of shape {shape} is not divisible by {axes}={size}"
                if uneven == "error":
                    raise ValueError(msg + "; pick another mesh or pass uneven='replicate'")
                warnings.warn(msg + "; kept whole on every device", stacklevel=3)
                entries[dim] = None
        while entries and entries[-1] is None:  # P('data', None) and P('data') are one spec
            entries.pop()
        return P(*entries)

    def place(path, leaf):
        # NNX Variables add a trailing `.value` attribute key: it is not part of the name.
        keys = [k for k in path if getattr(k, "name", None) != "value"]
        name = "/".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in keys)
        spec = next((s for pattern, s in rules if re.fullmatch(pattern, name)), P())
        sharding = NamedSharding(mesh, fit(name, leaf.shape, spec))
        if isinstance(leaf, jax.ShapeDtypeStruct):  # an abstract tree (a restore target)
            return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding)
        return jax.device_put(leaf, sharding)

    return jax.tree_util.tree_map_with_path(place, tree)


def host_batch_slice(global_batch: int) -> slice:
    """The rows of a global batch that this process loads."""
    per = global_batch // jax.process_count()
    if per * jax.process_count() != global_batch:
        raise ValueError(
            f"global batch {global_batch} is not divisible by {jax.process_count()} processes"
        )
    return slice(jax.process_index() * per, (jax.process_index() + 1) * per)


def global_batch(local: dict, mesh: Mesh, axis: str = "data") -> dict:
    """This process's rows of a global batch (`host_batch_slice`) -> global arrays sharded over
    `axis`. With one process the local rows are the whole batch.

    Each device's block is cut from the host rows in NumPy and copied to it: no program is
    compiled per device and array (`make_array_from_process_local_data` compiled a slice for
    each: 80 of them in var_jepa's smoke run on 8 devices)."""
    sharding = batch_sharded(mesh, axis)

    def place(v):
        v = np.asarray(v)
        shape = (len(v) * jax.process_count(), *v.shape[1:])
        start = host_batch_slice(shape[0]).start

        def block(index: tuple[slice, ...]) -> np.ndarray:
            rows = index[0]
            lo, hi = (rows.start or 0) - start, (rows.stop or shape[0]) - start
            if lo < 0 or hi > len(v):
                raise ValueError(
                    f"mesh axis {axis!r} gives this process rows {rows.start}:{rows.stop} of the "
                    f"global batch, outside its own {start}:{start + len(v)}; order the mesh's "
                    "devices by process (jax.devices() does)"
                )
            return v[(slice(lo, hi), *index[1:])]

        return jax.make_array_from_callback(shape, sharding, block)

    return {k: place(v) for k, v in local.items()}


def data_parallel(state, step_fn, mesh: Mesh, axis: str = "data"):
    """Replicates `state` over `mesh` and wraps `step_fn(state, batch, step)` so that each batch
    (this process's rows of it, see `shared.data.pipeline.batch_iterator(process_rows=True)`)
    is sharded over `axis`; jit then runs the step SPMD (gradients all-reduced by XLA)."""
    state = jax.device_put(state, replicated(mesh))

    def sharded_step(state, batch, step):
        return step_fn(state, global_batch(batch, mesh, axis), step)

    return state, sharded_step
