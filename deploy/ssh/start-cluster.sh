#!/usr/bin/env bash
# Start every task of a daskgraph ClusterSpec on its host, over SSH.
#
#   start-cluster.sh [--tls-dir DIR] [--remote-dir DIR] [--dry-run] cluster.json
#
# For each host of the spec: copy the spec (and the TLS files of `daskgraph certs DIR`: the CA's
# certificate, the worker's and the client's, and on the scheduler's host the scheduler's;
# never the CA's key) to REMOTE_DIR on that host,
# then, for each task on it, start in the background
#
#   daskgraph server --cluster-spec REMOTE_DIR/cluster.json --job-name J --task-index I \
#       [--tls-dir REMOTE_DIR/tls]
#
# writing REMOTE_DIR/J-I.log and REMOTE_DIR/J-I.pid (stop-cluster.sh kills that pid). The first
# task of the first job runs the Dask scheduler, so it is started first.
#
# Environment: SSH (default "ssh -o BatchMode=yes"), SCP (default "scp -q -o BatchMode=yes"),
# DASKGRAPH (the command on the hosts, default "daskgraph"), PYTHON (reads the JSON here,
# default python3).
set -euo pipefail

usage() {
    echo "usage: start-cluster.sh [--tls-dir DIR] [--remote-dir DIR] [--dry-run] cluster.json" >&2
    exit 2
}

tls_dir=""
remote_dir=".daskgraph"
dry_run=0
spec=""
while (($#)); do
    case "$1" in
        --tls-dir) tls_dir=${2:?--tls-dir needs a folder}; shift 2 ;;
        --remote-dir) remote_dir=${2:?--remote-dir needs a folder}; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -h | --help) usage ;;
        -*) echo "start-cluster.sh: unknown option $1" >&2; usage ;;
        *) [[ -z $spec ]] || usage; spec=$1; shift ;;
    esac
done
[[ -n $spec ]] || usage
[[ -f $spec ]] || { echo "start-cluster.sh: no such cluster spec: $spec" >&2; exit 2; }
# the TLS files each host gets: the scheduler's host its certificate too; never the CA's key
tls_files=()
scheduler_tls_files=()
if [[ -n $tls_dir ]]; then
    if [[ -f $tls_dir/node.pem && ! -f $tls_dir/worker.pem ]]; then  # an older daskgraph's folder
        tls_files=(ca.pem node.pem node-key.pem)
    else
        tls_files=(ca.pem worker.pem worker-key.pem client.pem client-key.pem)
        scheduler_tls_files=(scheduler.pem scheduler-key.pem)
    fi
    for f in "${tls_files[@]}" "${scheduler_tls_files[@]}"; do
        [[ -f $tls_dir/$f ]] || {
            echo "start-cluster.sh: $tls_dir/$f is missing; make it with: daskgraph certs $tls_dir" >&2
            exit 2
        }
    done
fi

read -ra ssh_cmd <<<"${SSH:-ssh -o BatchMode=yes}"
read -ra scp_cmd <<<"${SCP:-scp -q -o BatchMode=yes}"
daskgraph=${DASKGRAPH:-daskgraph}

# "job index host" per task, the scheduler's task (first task of the first job) first
mapfile -t tasks < <("${PYTHON:-python3}" "$(dirname "$0")/cluster_tasks.py" "$spec")
((${#tasks[@]})) || { echo "start-cluster.sh: $spec has no task" >&2; exit 2; }

run() {  # run (or, with --dry-run, print) one command
    if ((dry_run)); then
        printf '%q ' "$@"
        echo
    else
        "$@" </dev/null
    fi
}

declare -A copied=()
first=1
for line in "${tasks[@]}"; do
    read -r job index host <<<"$line"
    if [[ -z ${copied[$host]:-} ]]; then
        copied[$host]=1
        run "${ssh_cmd[@]}" "$host" "mkdir -p $(printf %q "$remote_dir")/tls && chmod 700 $(printf %q "$remote_dir")/tls"
        run "${scp_cmd[@]}" "$spec" "$host:$remote_dir/cluster.json"
        if [[ -n $tls_dir ]]; then
            files=("${tls_files[@]}")
            ((!first)) || files+=("${scheduler_tls_files[@]}")  # the scheduler's task's host
            run "${scp_cmd[@]}" "${files[@]/#/$tls_dir/}" "$host:$remote_dir/tls/"
        fi
    fi
    first=0
    server=("$daskgraph" server --cluster-spec cluster.json --job-name "$job" --task-index "$index")
    [[ -z $tls_dir ]] || server+=(--tls-dir tls)
    # only the server goes to the background (with all its output), so ssh returns at once
    remote="cd $(printf %q "$remote_dir") || exit 1; nohup $(printf '%q ' "${server[@]}")"
    remote+=">$job-$index.log 2>&1 </dev/null & echo \$! >$job-$index.pid"
    echo "starting /job:$job/task:$index on $host" >&2
    run "${ssh_cmd[@]}" "$host" "$remote"
done
