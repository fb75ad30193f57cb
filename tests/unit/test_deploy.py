"""The deploy/ recipes carry what daskgraph needs (static checks; nothing is deployed).

* Kubernetes: the dask-kubernetes operator's manifests parse, have a GPU worker group asking for
  ``nvidia.com/gpu``, start every worker through ``daskgraph-worker.sh`` (which names it by its
  device) with the right ``--resources``, and mount the TLS Secret everywhere.
* SSH: the scripts are valid bash, the example spec is a ClusterSpec, and ``--dry-run`` shows
  one ``daskgraph server`` per task.
* SLURM: the dask-jobqueue job script starts one worker per device, named by it.

Live runs of the same recipes are in ``tests/integration/test_deploy_live.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from daskgraph.cluster.server import ClusterSpec
from daskgraph.cluster.tls import make_certificates
from daskgraph.cluster.topology import devices_from_workers
from daskgraph.framework.device import DeviceSpec

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S, SSH, SLURM = DEPLOY / "kubernetes", DEPLOY / "ssh", DEPLOY / "slurm"
BASH = shutil.which("bash")
DEVICE_NAME = re.compile(r"/job:[A-Za-z][\w-]*/replica:0/task:\d+/device:(CPU|GPU):\d+\Z")

needs_bash = pytest.mark.skipif(BASH is None, reason="needs bash")


@pytest.mark.parametrize("recipe", ["ssh", "kubernetes", "slurm"])
def test_every_recipe_has_a_readme(recipe):
    readme = DEPLOY / recipe / "README.md"
    assert readme.is_file()
    text = readme.read_text()
    assert "Session" in text  # how to use the cluster, not only how to start it
    assert "TLS" in text


# -- Kubernetes ----------------------------------------------------------------------------------
def _manifests() -> dict[str, dict]:
    docs = [d for d in yaml.safe_load_all((K8S / "daskcluster.yaml").read_text()) if d]
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs), "one resource of each kind expected"
    return by_kind


def _worker_groups() -> dict[str, dict]:
    """'cpu': the DaskCluster's own worker spec; 'gpu': the DaskWorkerGroup's."""
    kinds = _manifests()
    return {
        "cpu": kinds["DaskCluster"]["spec"]["worker"],
        "gpu": kinds["DaskWorkerGroup"]["spec"]["worker"],
    }


def _container(pod_spec: dict) -> dict:
    (container,) = pod_spec["containers"]
    return container


def _env(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def _mounts(pod_spec: dict, container: dict) -> dict[str, tuple[str, dict]]:
    """mount path -> (kind of volume, its source) for the container."""
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    out = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        kind = next(k for k in ("configMap", "secret", "emptyDir", "hostPath") if k in volume)
        out[mount["mountPath"]] = (kind, volume[kind])
    return out


def _flag_values(args: list[str], flag: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == flag]


def test_manifests_are_the_operators_custom_resources():
    kinds = _manifests()
    assert set(kinds) == {"DaskCluster", "DaskWorkerGroup"}
    for doc in kinds.values():
        assert doc["apiVersion"] == "kubernetes.dask.org/v1"
    cluster, group = kinds["DaskCluster"], kinds["DaskWorkerGroup"]
    assert group["spec"]["cluster"] == cluster["metadata"]["name"]
    assert set(cluster["spec"]) >= {"scheduler", "worker"}
    for worker in _worker_groups().values():
        assert worker["replicas"] >= 1


def test_scheduler_service_and_tls():
    scheduler = _manifests()["DaskCluster"]["spec"]["scheduler"]
    container = _container(scheduler["spec"])
    args = container["args"]
    assert args[:2] == ["dask", "scheduler"]
    assert _flag_values(args, "--protocol") == ["tls"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["tcp-comm"] == 8786
    service_ports = {p["name"]: p for p in scheduler["service"]["ports"]}
    assert service_ports["tcp-comm"]["port"] == 8786
    assert scheduler["service"]["selector"]["dask.org/component"] == "scheduler"
    mounts = _mounts(scheduler["spec"], container)
    (tls_dir,) = [path for path, (kind, _) in mounts.items() if kind == "secret"]
    assert mounts[tls_dir][1]["secretName"] == "daskgraph-tls"
    for flag, name in [
        ("--tls-ca-file", "ca.pem"),
        ("--tls-cert", "scheduler.pem"),
        ("--tls-key", "scheduler-key.pem"),
    ]:
        assert _flag_values(args, flag) == [f"{tls_dir}/{name}"]


@pytest.mark.parametrize("group", ["cpu", "gpu"])
def test_workers_are_started_by_the_daskgraph_script_with_their_resource(group):
    worker = _worker_groups()[group]
    container = _container(worker["spec"])
    device = group.upper()
    command = container["command"] + container["args"]
    assert command[:2] == ["bash", "/opt/daskgraph/daskgraph-worker.sh"]
    assert command[2] == device  # the device type the script names the worker by
    assert _flag_values(command, "--resources") == [f"{device}=1"]
    if group == "gpu":
        assert _flag_values(command, "--nthreads") == ["1"]
        assert _flag_values(command, "--preload") == ["daskgraph.cluster.gpu_worker"]
    mounts = _mounts(worker["spec"], container)
    script_dir = str(pathlib.PurePosixPath(command[1]).parent)
    assert mounts[script_dir] == ("configMap", mounts[script_dir][1])
    assert mounts[script_dir][1]["name"] == "daskgraph-worker"
    env = _env(container)
    assert env["DASKGRAPH_JOB"] == "worker"
    assert mounts[env["DASKGRAPH_TLS_DIR"]][0] == "secret"
    assert mounts[env["DASKGRAPH_TLS_DIR"]][1]["secretName"] == "daskgraph-tls"


def test_the_gpu_group_asks_for_one_gpu_per_pod_and_the_cpu_group_none():
    groups = _worker_groups()
    gpu = _container(groups["gpu"]["spec"])["resources"]
    assert gpu["limits"]["nvidia.com/gpu"] == 1
    assert gpu["requests"]["nvidia.com/gpu"] == 1
    cpu = _container(groups["cpu"]["spec"])["resources"]
    assert "nvidia.com/gpu" not in cpu.get("limits", {})


def test_kustomization_makes_the_configmap_and_the_secret():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert kustomization["resources"] == ["daskcluster.yaml"]
    assert kustomization["generatorOptions"]["disableNameSuffixHash"] is True
    (configmap,) = kustomization["configMapGenerator"]
    assert configmap == {"name": "daskgraph-worker", "files": ["daskgraph-worker.sh"]}
    assert (K8S / "daskgraph-worker.sh").is_file()
    (secret,) = kustomization["secretGenerator"]
    assert secret["name"] == "daskgraph-tls"
    assert sorted(pathlib.PurePosixPath(f).name for f in secret["files"]) == [
        "ca.pem",
        "client-key.pem",
        "client.pem",
        "scheduler-key.pem",
        "scheduler.pem",
        "worker-key.pem",
        "worker.pem",
    ]  # not the CA's key
    # the certificates are made by `daskgraph certs deploy/kubernetes/certs`, never committed
    assert "certs/" in (K8S / ".gitignore").read_text().split()


def worker_script(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DASK", "POD_NAME"))}
    base.update({"DASKGRAPH_DRY_RUN": "1", "DASKGRAPH_TLS_DIR": "/nonexistent"})
    base.update(env)
    return subprocess.run(
        [BASH, str(K8S / "daskgraph-worker.sh"), *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=base,
    )


def _named(out: str) -> str:
    args = out.split()
    (name,) = _flag_values(args, "--name")
    return name


@needs_bash
def test_worker_script_is_valid_bash():
    subprocess.run([BASH, "-n", str(K8S / "daskgraph-worker.sh")], check=True, timeout=30)


@needs_bash
@pytest.mark.parametrize("device", ["CPU", "GPU"])
def test_worker_script_names_the_worker_by_its_device_from_the_pods_name(device):
    scheduler = "tcp://daskgraph-scheduler.default.svc.cluster.local:8786"
    pod = "daskgraph-gpu-worker-1a2b3c4d5e"
    done = worker_script(
        device, "--resources", f"{device}=1", DASK_SCHEDULER_ADDRESS=scheduler, DASK_WORKER_NAME=pod
    )
    assert done.returncode == 0, done.stderr
    args = done.stdout.split()
    assert args[:3] == ["dask", "worker", scheduler]
    name = _named(done.stdout)
    assert DEVICE_NAME.match(name), name
    cksum = subprocess.run(["cksum"], input=pod, capture_output=True, text=True, check=True)
    task = int(cksum.stdout.split()[0])
    assert name == f"/job:worker/replica:0/task:{task}/device:{device}:0"
    assert _flag_values(args, "--resources") == [f"{device}=1"]  # passed through
    assert "--tls-cert" not in args
    # daskgraph maps it to that device
    (dev,) = devices_from_workers({"tcp://10.0.0.1:1": {"name": name, "resources": {device: 1}}})
    assert dev.name == name and dev.kind == device.lower()
    assert DeviceSpec.from_string(name).task == task


@needs_bash
def test_worker_script_task_index_is_stable_and_differs_between_pods():
    env = {"DASK_SCHEDULER_ADDRESS": "tcp://s:8786"}
    names = [
        _named(worker_script("CPU", DASK_WORKER_NAME=pod, **env).stdout)
        for pod in ("dg-default-worker-aaaaaaaaaa", "dg-default-worker-bbbbbbbbbb")
    ]
    assert names[0] != names[1]
    again = _named(
        worker_script("CPU", DASK_WORKER_NAME="dg-default-worker-aaaaaaaaaa", **env).stdout
    )
    assert again == names[0]
    # without DASK_WORKER_NAME: the pod's name
    from_pod = _named(worker_script("CPU", POD_NAME="dg-default-worker-aaaaaaaaaa", **env).stdout)
    assert from_pod == names[0]


@needs_bash
def test_worker_script_ordinal_and_explicit_task_index():
    env = {"DASK_SCHEDULER_ADDRESS": "tcp://s:8786"}
    ordinal = worker_script(
        "GPU", POD_NAME="daskgraph-gpu-07", DASKGRAPH_TASK_FROM="ordinal", **env
    )
    assert _named(ordinal.stdout) == "/job:worker/replica:0/task:7/device:GPU:0"
    explicit = worker_script("CPU", DASKGRAPH_TASK_INDEX="3", DASKGRAPH_JOB="ps", **env)
    assert _named(explicit.stdout) == "/job:ps/replica:0/task:3/device:CPU:0"
    no_ordinal = worker_script("CPU", POD_NAME="no-ordinal", DASKGRAPH_TASK_FROM="ordinal", **env)
    assert no_ordinal.returncode == 2 and "ordinal" in no_ordinal.stderr


@needs_bash
def test_worker_script_speaks_tls_where_the_secret_is_mounted(tmp_path):
    make_certificates(tmp_path)
    done = worker_script(
        "GPU",
        DASK_SCHEDULER_ADDRESS="tcp://daskgraph-scheduler.default.svc.cluster.local:8786",
        DASK_WORKER_NAME="w",
        DASKGRAPH_TLS_DIR=str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    args = done.stdout.split()
    assert args[2] == "tls://daskgraph-scheduler.default.svc.cluster.local:8786"
    assert _flag_values(args, "--protocol") == ["tls"]
    assert _flag_values(args, "--tls-ca-file") == [str(tmp_path / "ca.pem")]
    assert _flag_values(args, "--tls-cert") == [str(tmp_path / "worker.pem")]
    assert _flag_values(args, "--tls-key") == [str(tmp_path / "worker-key.pem")]


@needs_bash
@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {"DASK_SCHEDULER_ADDRESS": "tcp://s:1"}, "CPU|GPU"),
        (["TPU"], {"DASK_SCHEDULER_ADDRESS": "tcp://s:1"}, "CPU or GPU"),
        (["CPU"], {}, "DASK_SCHEDULER_ADDRESS"),
        (["CPU"], {"DASK_SCHEDULER_ADDRESS": "tcp://s:1", "DASKGRAPH_TASK_INDEX": "x"}, "'x'"),
    ],
    ids=["no-type", "bad-type", "no-scheduler", "bad-index"],
)
def test_worker_script_errors(args, env, message):
    done = worker_script(*args, **env)
    assert done.returncode != 0
    assert message in done.stderr, done.stderr


# -- SSH -----------------------------------------------------------------------------------------
@needs_bash
@pytest.mark.parametrize("script", ["start-cluster.sh", "stop-cluster.sh"])
def test_ssh_scripts_are_valid_bash(script):
    subprocess.run([BASH, "-n", str(SSH / script)], check=True, timeout=30)


def test_ssh_example_cluster_json_is_a_cluster_spec():
    raw = json.loads((SSH / "cluster.json").read_text())
    spec = ClusterSpec(raw.get("cluster", raw))
    assert spec.jobs == ["worker", "ps"]
    assert spec.num_tasks("worker") == 2
    assert spec.scheduler_address() == "tcp://node0.example.org:2222"


def ssh_script(script: str, *args: str, cwd: pathlib.Path = SSH) -> subprocess.CompletedProcess:
    return subprocess.run(
        [BASH, str(SSH / script), *args],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=cwd,
        env={**os.environ, "PYTHON": sys.executable},
    )


def _servers(out: str) -> list[tuple[str, str, list[str]]]:
    """(host, job-task, args of `daskgraph server`) per task the dry run would start."""
    found = []
    for line in out.splitlines():
        words = line.split()
        if words[:1] == ["ssh"] and "daskgraph\\ server" in line:
            host = next(w for w in words[1:] if not w.startswith("-") and w != "BatchMode=yes")
            remote = line.split(host, 1)[1].replace("\\ ", " ").replace("\\", "")
            server = remote.split("nohup", 1)[1].split(">", 1)[0].split()
            job = _flag_values(server, "--job-name")[0]
            task = _flag_values(server, "--task-index")[0]
            found.append((host, f"{job}-{task}", server))
    return found


@needs_bash
def test_ssh_dry_run_starts_one_server_per_task_scheduler_first():
    done = ssh_script("start-cluster.sh", "--dry-run", "cluster.json")
    assert done.returncode == 0, done.stderr
    servers = _servers(done.stdout)
    assert [(h, t) for h, t, _ in servers] == [
        ("node0.example.org", "worker-0"),
        ("node1.example.org", "worker-1"),
        ("node2.example.org", "ps-0"),
    ]
    for _, _, args in servers:
        assert args[:4] == ["daskgraph", "server", "--cluster-spec", "cluster.json"]
        assert "--tls-dir" not in args
    # the spec is copied to each host once
    copies = [line for line in done.stdout.splitlines() if line.startswith("scp")]
    assert len(copies) == 3 and all("cluster.json" in line for line in copies)
    assert "starting /job:worker/task:0 on node0.example.org" in done.stderr


@needs_bash
def test_ssh_dry_run_with_tls_copies_the_certificates(tmp_path):
    make_certificates(tmp_path / "certs")
    done = ssh_script(
        "start-cluster.sh", "--dry-run", "--tls-dir", str(tmp_path / "certs"), "cluster.json"
    )
    assert done.returncode == 0, done.stderr
    for _, _, args in _servers(done.stdout):
        assert _flag_values(args, "--tls-dir") == ["tls"]
    tls_copies = [
        line
        for line in done.stdout.splitlines()
        if line.startswith("scp") and "worker-key.pem" in line
    ]
    assert len(tls_copies) == 3
    # the scheduler's key goes to the scheduler's host only, the CA's key nowhere
    assert [line for line in tls_copies if "scheduler-key.pem" in line] == tls_copies[:1]
    assert "node0.example.org:" in tls_copies[0]
    assert "ca-key.pem" not in done.stdout


@needs_bash
def test_ssh_dry_run_of_a_sparse_spec(tmp_path):
    spec = tmp_path / "sparse.json"
    spec.write_text(json.dumps({"cluster": {"worker": {"0": "a:1", "3": "b:1"}}}))
    done = ssh_script("start-cluster.sh", "--dry-run", str(spec))
    assert done.returncode == 0, done.stderr
    assert [t for _, t, _ in _servers(done.stdout)] == ["worker-0", "worker-3"]


@needs_bash
def test_ssh_stop_dry_run_stops_the_scheduler_last():
    done = ssh_script("stop-cluster.sh", "--dry-run", "cluster.json")
    assert done.returncode == 0, done.stderr
    hosts = [line.split()[3] for line in done.stdout.splitlines() if line.startswith("ssh")]
    assert hosts == ["node2.example.org", "node1.example.org", "node0.example.org"]
    assert "kill\\ -TERM" in done.stdout


@needs_bash
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "usage"),
        (["missing.json"], "no such cluster spec"),
        (["--tls-dir", "/nonexistent", "cluster.json"], "daskgraph certs /nonexistent"),
        (["--frobnicate", "cluster.json"], "unknown option --frobnicate"),
    ],
    ids=["no-spec", "missing-spec", "missing-certs", "bad-option"],
)
def test_ssh_start_errors(args, message):
    done = ssh_script("start-cluster.sh", *args)
    assert done.returncode == 2
    assert message in done.stderr.lower() or message in done.stderr, done.stderr


# -- SLURM ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def slurm():
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is not installed")
    spec = importlib.util.spec_from_file_location(
        "daskgraph_slurm_recipe", SLURM / "slurm_cluster.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NAME_IN_SCRIPT = re.compile(r'--name "(/job:[^"]+)"')


def _worker_lines(script: str) -> list[str]:
    return [line for line in script.splitlines() if "distributed.cli.dask_worker" in line]


def test_slurm_job_script_starts_one_worker_per_device(slurm):
    script = slurm.render_job_script(
        "tcp://login0:8786", task_index=5, gpus=2, cores=8, memory="32GB"
    )
    assert "#SBATCH --gres=gpu:2" in script
    assert 'TASK="${DASKGRAPH_TASK_INDEX:-5}"' in script
    lines = _worker_lines(script)
    names = [NAME_IN_SCRIPT.search(line).group(1) for line in lines]
    assert names == [
        "/job:worker/replica:0/task:${TASK}/device:CPU:0",
        "/job:worker/replica:0/task:${TASK}/device:GPU:0",
        "/job:worker/replica:0/task:${TASK}/device:GPU:1",
    ]
    for name in names:
        assert DEVICE_NAME.match(name.replace("${TASK}", "5")), name
    cpu, *gpus = lines
    assert (
        "--resources CPU=1" in cpu and "--nthreads 6" in cpu and "CUDA_VISIBLE_DEVICES" not in cpu
    )
    for i, line in enumerate(gpus):
        assert "--resources GPU=1" in line and "--nthreads 1" in line
        assert "--preload daskgraph.cluster.gpu_worker" in line
        assert line.startswith(f'CUDA_VISIBLE_DEVICES="$(rotate {i})" ')
    for line in lines:
        assert " tcp://login0:8786 " in line
        assert line.count("--name") == 1 and line.count("--memory-limit") == 1
        assert line.rstrip().endswith("&")
    assert script.rstrip().endswith("wait")


@needs_bash
def test_slurm_job_script_is_valid_bash_and_rotates_the_gpus(slurm, tmp_path):
    script = slurm.render_job_script(gpus=3)
    path = tmp_path / "job.sh"
    path.write_text(script)
    subprocess.run([BASH, "-n", str(path)], check=True, timeout=30)
    # the rotate() of the script, on the GPUs SLURM gave the job
    prelude = script.split("trap ", 1)[0]
    probe = prelude + 'for i in 0 1 2; do rotate "$i"; done\n'
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "4,6,7"}
    done = subprocess.run([BASH, "-c", probe], capture_output=True, text=True, env=env, timeout=30)
    assert done.stdout.split() == ["4,6,7", "6,7,4", "7,4,6"]
    done = subprocess.run(
        [BASH, "-c", prelude + 'rotate 1; echo "$TASK"'],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"},
        timeout=30,
    )
    assert done.stdout.split() == ["1,2,0", "0"]


def test_slurm_cpu_only_job(slurm):
    script = slurm.render_job_script(gpus=0, cores=4)
    assert "--gres" not in script
    (line,) = _worker_lines(script)
    assert "--resources CPU=1" in line and "--nthreads 4" in line
    assert "/device:CPU:0" in line


def test_slurm_keeps_a_given_gres_directive(slurm):
    script = slurm.render_job_script(gpus=2, job_extra_directives=["--gres=gpu:a100:2"])
    assert "#SBATCH --gres=gpu:a100:2" in script
    assert "--gres=gpu:2" not in script


def test_slurm_with_tls(slurm, tmp_path):
    make_certificates(tmp_path)
    script = slurm.render_job_script("tcp://login0:8786", gpus=1, tls_dir=tmp_path)
    for line in _worker_lines(script):
        assert " tls://login0:8786 " in line
        assert "--protocol tls" in line
        assert f"--tls-ca-file {tmp_path / 'ca.pem'}" in line
        assert f"--tls-cert {tmp_path / 'worker.pem'}" in line
        assert f"--tls-key {tmp_path / 'worker-key.pem'}" in line


def test_slurm_rejects_bad_options(slurm):
    with pytest.raises(ValueError, match="processes must be 1"):
        slurm.render_job_script(processes=2)
    with pytest.raises(ValueError, match="gpus"):
        slurm.render_job_script(gpus=-1)
    with pytest.raises(ValueError, match="daskgraph_job"):
        slurm.render_job_script(daskgraph_job="bad job")


def test_slurm_cluster_uses_the_daskgraph_job_script(slurm):
    cluster = slurm.slurm_cluster(
        gpus_per_job=2,
        cores=8,
        memory="32GB",
        queue="gpu",
        scheduler_options={"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"},
    )
    try:
        assert isinstance(cluster, slurm.DaskgraphSLURMCluster)
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        script = cluster.job_script()
        assert "#SBATCH -p gpu" in script and "#SBATCH --gres=gpu:2" in script
        names = NAME_IN_SCRIPT.findall(script)
        assert [n.rsplit("/", 1)[1] for n in names] == [
            "device:CPU:0",
            "device:GPU:0",
            "device:GPU:1",
        ]
        assert f" {cluster.scheduler_address} " in _worker_lines(script)[0]
        # the n-th job of the cluster is task n
        job = cluster.job_cls(
            cluster.scheduler_address, name=cluster._new_worker_name(4), **cluster._job_kwargs
        )
        assert job.task_index == 4
    finally:
        cluster.close()
