"""Draw the placement plan of the README's main demo (``examples/matpow.py``) as an SVG.

Plans A^10 + B^10 for 1000 x 1000 matrices, as ``make demo`` runs it, without running it;
prints the plan as a table and writes ``docs/images/matpow-placement.svg``. Needs the ``viz``
extra and Graphviz's ``dot``. Run from the repository root::

    DASK_DASKGRAPH__VIRTUAL_GPUS=2 .venv/bin/python docs/images/make_matpow_placement.py
"""

import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

from matpow import build  # noqa: E402 - the demo's own graph (and its 2 virtual GPUs)

import daskgraph as dg  # noqa: E402

SIZE, N = 1000, 10


def main() -> None:
    a, b, total = build(SIZE, N)
    feeds = {t: np.zeros((SIZE, SIZE), np.float32) for t in (a, b)}
    with dg.Session() as sess:
        plan = sess.placement(total, feeds)
        print(plan)
        dg.visualize(plan, ROOT / "docs" / "images" / "matpow-placement.svg")


if __name__ == "__main__":
    main()
