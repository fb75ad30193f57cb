"""Print "job index host" for every task of a ClusterSpec JSON file, the scheduler's first.

Used by start-cluster.sh and stop-cluster.sh on the machine that runs them, which needs only
Python (not daskgraph). The file is ``{"job": ["host:port", ...]}`` (a dict index -> address
also works), or TF_CONFIG's form with the spec under "cluster".
"""

import json
import sys


def main(path: str) -> None:
    with open(path) as f:
        spec = json.load(f)
    spec = spec.get("cluster", spec)
    for job, tasks in spec.items():
        if isinstance(tasks, list):
            items = enumerate(tasks)
        else:
            items = sorted((int(i), a) for i, a in tasks.items())
        for index, address in items:
            host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
            print(job, index, host)


if __name__ == "__main__":
    main(sys.argv[1])
