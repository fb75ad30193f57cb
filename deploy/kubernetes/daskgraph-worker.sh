#!/usr/bin/env bash
# Start one Dask worker that stands for one daskgraph device, in a pod of the dask-kubernetes
# operator (mounted from the daskgraph-worker ConfigMap).
#
#   daskgraph-worker.sh CPU|GPU [dask worker options...]
#
# The worker is named /job:$DASKGRAPH_JOB/replica:0/task:$TASK/device:$TYPE:0, the name
# daskgraph maps to a device; the other options (--resources CPU=1 or GPU=1, --nthreads, ...)
# are passed on to `dask worker`. One pod is one task of the job, so the task index must be
# distinct per pod and stable across restarts of the pod:
#
#   DASKGRAPH_TASK_INDEX set      that index;
#   DASKGRAPH_TASK_FROM=ordinal   the pod's StatefulSet ordinal (name-0, name-1, ...);
#   otherwise (hash, default)     the CRC (cksum) of the worker's name: the operator names each
#                                 worker Deployment <cluster>-<group>-worker-<random>, and gives
#                                 the name in DASK_WORKER_NAME; it stays the same when the pod
#                                 is restarted.
#
# The scheduler is $DASK_SCHEDULER_ADDRESS (set by the operator). Where $DASKGRAPH_TLS_DIR
# (default /etc/daskgraph/tls) holds ca.pem, worker.pem and worker-key.pem (`daskgraph certs`;
# node.pem and node-key.pem of an older daskgraph's folder do too), the worker speaks TLS
# (tls://) with that certificate. DASKGRAPH_DRY_RUN=1 prints the
# command instead of running it.
set -euo pipefail

type=${1:?usage: daskgraph-worker.sh CPU|GPU [dask worker options...]}
shift
case "$type" in
    CPU | GPU) ;;
    *) echo "daskgraph-worker.sh: device type must be CPU or GPU, not '$type'" >&2; exit 2 ;;
esac

job=${DASKGRAPH_JOB:-worker}
name=${DASK_WORKER_NAME:-${POD_NAME:-$(hostname)}}
scheduler=${DASK_SCHEDULER_ADDRESS:?DASK_SCHEDULER_ADDRESS is not set (the operator sets it)}

if [[ -n ${DASKGRAPH_TASK_INDEX:-} ]]; then
    task=$DASKGRAPH_TASK_INDEX
elif [[ ${DASKGRAPH_TASK_FROM:-hash} == ordinal ]]; then
    if [[ $name =~ -([0-9]+)$ ]]; then
        task=$((10#${BASH_REMATCH[1]}))
    else
        echo "daskgraph-worker.sh: '$name' has no StatefulSet ordinal (name-N)" >&2
        exit 2
    fi
else
    task=$(printf '%s' "$name" | cksum | cut -d' ' -f1)
fi
[[ $task =~ ^[0-9]+$ ]] || { echo "daskgraph-worker.sh: task index '$task' is not a number" >&2; exit 2; }

args=(worker --name "/job:$job/replica:0/task:$task/device:$type:0")

tls_dir=${DASKGRAPH_TLS_DIR:-/etc/daskgraph/tls}
if [[ -f $tls_dir/ca.pem ]]; then
    scheduler="tls://${scheduler#*://}"
    role=worker
    [[ -f $tls_dir/worker.pem || ! -f $tls_dir/node.pem ]] || role=node  # an older folder
    args+=(--protocol tls --tls-ca-file "$tls_dir/ca.pem" --tls-cert "$tls_dir/$role.pem"
        --tls-key "$tls_dir/$role-key.pem")
fi
args=("${args[0]}" "$scheduler" "${args[@]:1}" "$@")

if [[ -n ${DASKGRAPH_DRY_RUN:-} ]]; then
    printf '%q ' "${DASK:-dask}" "${args[@]}"
    echo
    exit 0
fi
exec "${DASK:-dask}" "${args[@]}"
