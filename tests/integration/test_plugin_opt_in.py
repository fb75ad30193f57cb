"""daskgraph's pytest plugin is opt-in: a project installed beside daskgraph runs its tests
without importing daskgraph (or Dask), and a project that asks for the plugin gets it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dask
from distributed import Client

UNRELATED = """
import sys

def test_nothing_of_daskgraph_or_dask_was_imported():
    assert not [m for m in sys.modules if m.split(".")[0] in ("daskgraph", "distributed")]
"""

OPTED_IN = """
import daskgraph as dg

def test_the_fixture_runs_a_graph(dg_session):
    assert dg_session.run(dg.constant(2.0) * 3.0) == 6.0
"""


def _pytest(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_an_unrelated_project_does_not_load_daskgraph(tmp_path):
    (tmp_path / "test_unrelated.py").write_text(UNRELATED)
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_project_that_asks_for_the_plugin_gets_its_fixtures(tmp_path):
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["daskgraph.testing"]\n')
    (tmp_path / "test_graph.py").write_text(OPTED_IN)
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_process_workers_make_their_folders_in_the_tests_scratch_space(dg_cluster_factory):
    """The nannies hand this process's Dask config (``temporary-directory``, set per test by
    the plugin) to their workers: no worker folder lands in the machine's shared one."""
    scratch = Path(dask.config.get("temporary-directory")).resolve()
    cluster = dg_cluster_factory(virtual_gpus=1, processes=True)
    with Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(2, timeout=120)
        folders = client.run(lambda dask_worker: dask_worker.local_directory)
    assert len(folders) == 2
    assert all(Path(f).resolve().is_relative_to(scratch) for f in folders.values()), folders
