#!/usr/bin/env bash
# Run one experiment on every worker of a Cloud TPU VM pod slice.
#
#   TPU_NAME=my-pod ZONE=us-central2-b ./launch/tpu_pod.sh projects/var_jepa --config paper
#
# The same command starts on all workers (gcloud --worker=all). JAX_COORDINATOR_ADDRESS=auto
# marks each as one of several processes: shared/distributed.py then calls
# jax.distributed.initialize() without arguments, which on TPU VMs discovers the coordinator and
# process ids by itself; jax.devices() then spans the whole slice. The local rehearsal of this
# path: python launch/run.py projects/<name> --processes 2 --local-devices 4 (WORKSPACE.md).
set -euo pipefail
: "${TPU_NAME:?set TPU_NAME}" "${ZONE:?set ZONE}"
REPO_DIR=${REPO_DIR:-icml26-repro}
ARGS=$(printf '%q ' "$@")
gcloud compute tpus tpu-vm ssh "$TPU_NAME" --zone "$ZONE" --worker=all --command \
  "cd $REPO_DIR && JAX_COORDINATOR_ADDRESS=auto .venv/bin/python launch/run.py $ARGS --workdir runs/pod"
