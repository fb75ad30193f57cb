#!/usr/bin/env bash
# Stop the tasks that start-cluster.sh started: SIGTERM to the pid it wrote for each task.
#
#   stop-cluster.sh [--remote-dir DIR] [--dry-run] cluster.json
#
# The task running the scheduler is stopped last. Each server stops its workers cleanly and
# prints "stopped" to REMOTE_DIR/J-I.log. Same environment as start-cluster.sh.
set -euo pipefail

remote_dir=".daskgraph"
dry_run=0
spec=""
while (($#)); do
    case "$1" in
        --remote-dir) remote_dir=${2:?--remote-dir needs a folder}; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -*) echo "usage: stop-cluster.sh [--remote-dir DIR] [--dry-run] cluster.json" >&2; exit 2 ;;
        *) spec=$1; shift ;;
    esac
done
[[ -f $spec ]] || { echo "usage: stop-cluster.sh [--remote-dir DIR] [--dry-run] cluster.json" >&2; exit 2; }

read -ra ssh_cmd <<<"${SSH:-ssh -o BatchMode=yes}"
mapfile -t tasks < <("${PYTHON:-python3}" "$(dirname "$0")/cluster_tasks.py" "$spec")

for ((i = ${#tasks[@]} - 1; i >= 0; i--)); do  # the scheduler's task last
    read -r job index host <<<"${tasks[$i]}"
    pidfile="$job-$index.pid"
    # SIGTERM, then wait (at most 30 s) for the server to finish stopping
    remote="cd $(printf %q "$remote_dir") && if [ -f $pidfile ]; then pid=\$(cat $pidfile);"
    remote+=" kill -TERM \$pid 2>/dev/null; for _ in \$(seq 150); do kill -0 \$pid 2>/dev/null"
    remote+=" || break; sleep 0.2; done; rm -f $pidfile; fi"
    echo "stopping /job:$job/task:$index on $host" >&2
    if ((dry_run)); then
        printf '%q ' "${ssh_cmd[@]}" "$host" "$remote"
        echo
    else
        "${ssh_cmd[@]}" "$host" "$remote" </dev/null
    fi
done
