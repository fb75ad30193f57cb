"""The ``/daskgraph`` page in a real browser: headless Chromium, driven by Playwright.

Chromium comes from the system's packages (``apt-get install chromium``; ``.ci/run`` installs
it), never downloaded by a test tool. Where it is missing the test is skipped, saying so. The
screenshot is saved as an artifact: ``$DASKGRAPH_ARTIFACTS/dashboard.png`` (by default
``build/artifacts/``), the picture the README shows.
"""

from __future__ import annotations

import os
import pathlib
import shutil

import numpy as np
import pytest
from distributed import Client

import daskgraph as dg

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM_FLAGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # the machine's network is closed: no calls home
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(
        "headless Chromium is not installed: `apt-get install chromium` (Debian, Ubuntu) or "
        "`brew install --cask chromium` (.ci/run installs it for CI)"
    )


def _artifact(name: str) -> pathlib.Path:
    folder = pathlib.Path(os.environ.get("DASKGRAPH_ARTIFACTS", ROOT / "build" / "artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def _demo_graph() -> tuple[dg.Tensor, dg.Tensor]:
    """Ops placed explicitly, automatically, colocated, and by a soft fallback."""
    with dg.device("/cpu:0"):
        x = dg.placeholder(dg.float32, [8, 8], name="x")
        scale = dg.Variable(np.float32(0.5), name="scale")
    with dg.device("/gpu:0"):
        left = dg.matmul(x, x, name="left")
    with dg.device("/gpu:1"):
        right = dg.matmul(x, dg.transpose(x, name="xt"), name="right")
    with dg.colocate_with(scale):
        scaled = dg.multiply(left + right, scale, name="scaled")
    with dg.device("/gpu:3"):  # there is no GPU:3: soft placement picks another device
        total = dg.reduce_sum(scaled, name="total")
    return x, total


def test_the_page_shows_the_run_s_ops_devices_and_reasons(dg_cluster_factory):
    chromium = _chromium()
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    cluster = dg_cluster_factory(virtual_gpus=2)
    with Client(cluster, set_as_default=False) as client, dg.Graph().as_default():
        x, total = _demo_graph()
        config = dg.SessionConfig(allow_soft_placement=True)
        with dg.Session(client, config=config) as session:
            session.run(dg.global_variables_initializer())
            feed = np.eye(8, dtype=np.float32)
            assert session.run(total, {x: feed}) == pytest.approx(8.0)
            link = session.dashboard_link
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(link)
                # the page fills in from the scheduler's board: wait for the run's plan
                page.get_by_text("scaled", exact=True).first.wait_for(timeout=30_000)
                for text in ("left", "right", "total", "MatMul", "GPU:1", "virtual"):
                    assert page.get_by_text(text, exact=True).count() >= 1, text
                for reason in ("explicit", "colocated", "soft"):
                    assert page.get_by_text(reason, exact=True).count() >= 1, reason
                assert page.get_by_text("1 runs (0 failed)", exact=False).count() == 1
                shot = _artifact("dashboard.png")
                page.screenshot(path=str(shot), full_page=True)
            finally:
                browser.close()
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
