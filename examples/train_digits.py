"""Train a small network on scikit-learn's digits with 4 towers, synchronously and
asynchronously, then save a checkpoint and restore it into a fresh session.

The data is scikit-learn's bundled 8x8 digits (1,797 images, no download). The model is a
small convolutional network (conv 3x3 -> relu -> max-pool -> dense -> relu -> 10 logits),
trained with Adam on batches of 256 split into one shard per tower: each tower is a copy of
the model on its own (virtual) GPU, and the parameters live on the CPU
(:func:`daskgraph.training.namespace.replicate`).

- ``sync``: the towers' gradients are averaged on the CPU and applied once per step;
- ``async``: each tower applies its own update as soon as it is done, in its own thread.

Both should reach at least 95% accuracy on the held-out quarter of the data. A progress bar
shows the training, and the loss curves of both modes go to a PNG: by default in the system's
temporary folder (its path is printed), never among the repository's files; ``--plot PATH``
writes it elsewhere, and ``--docs-image`` rewrites the README's picture
(docs/images/train_digits.png) on purpose.

Run: ``python examples/train_digits.py --steps 150``
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile
import threading
import time

import dask
import numpy as np

import daskgraph as dg

# Without real GPUs, the embedded cluster gets virtual ones for the towers (see matpow.py).
TOWERS = 4
DOCS_IMAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "images" / "train_digits.png"
dask.config.set({"daskgraph.virtual-gpus": max(TOWERS, dask.config.get("daskgraph.virtual-gpus"))})


def load_digits_data(seed: int = 0) -> tuple[np.ndarray, ...]:
    """The digits as NHWC float32 images in [0, 1] and int64 labels: 3/4 train, 1/4 test."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., None]
    return tuple(
        train_test_split(
            images, digits.target.astype(np.int64), test_size=0.25, random_state=seed,
            stratify=digits.target,
        )
    )  # fmt: skip


def logits_of(images: dg.Tensor) -> dg.Tensor:
    """The network: conv 3x3 (16) -> relu -> max-pool 2x2 -> dense 64 -> relu -> 10."""
    kernel = dg.get_variable("conv/kernel", [3, 3, 1, 16])
    conv = dg.nn.relu(
        dg.nn.bias_add(
            dg.nn.conv2d(images, kernel, strides=[1, 1, 1, 1], padding="SAME"),
            dg.get_variable("conv/bias", [16], initializer=dg.zeros_initializer()),
        )
    )
    pooled = dg.nn.max_pool(conv, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
    flat = dg.reshape(pooled, [-1, 4 * 4 * 16])
    w1 = dg.get_variable("dense/kernel", [4 * 4 * 16, 64])
    b1 = dg.get_variable("dense/bias", [64], initializer=dg.zeros_initializer())
    hidden = dg.nn.relu(dg.matmul(flat, w1) + b1)
    w2 = dg.get_variable("out/kernel", [64, 10])
    b2 = dg.get_variable("out/bias", [10], initializer=dg.zeros_initializer())
    return dg.matmul(hidden, w2) + b2


def tower_loss(images: dg.Tensor, labels: dg.Tensor) -> dg.Tensor:
    """One tower's mean cross-entropy on its shard."""
    xent = dg.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits_of(images))
    return dg.reduce_mean(xent)


class Model:
    """One graph: the towers, an evaluation head on the CPU, and a Saver."""

    def __init__(self, mode: str, towers: int, batch: int, learning_rate: float) -> None:
        self.graph = dg.Graph()
        with self.graph.as_default():
            dg.set_random_seed(0)
            with dg.device("/cpu:0"):
                self.images = dg.placeholder(dg.float32, [batch, 8, 8, 1], name="images")
                self.labels = dg.placeholder(dg.int64, [batch], name="labels")
            self.step = dg.train.get_or_create_global_step()
            self.replicas = dg.train.replicate(
                tower_loss,
                [f"/gpu:{i}" for i in range(towers)],
                mode,
                parameter_device="/cpu:0",
                inputs=(self.images, self.labels),
                optimizer=dg.train.AdamOptimizer(learning_rate),
                global_step=self.step,
            )
            with dg.device("/cpu:0"), dg.variable_scope(dg.get_variable_scope(), reuse=True):
                self.test_images = dg.placeholder(dg.float32, [None, 8, 8, 1], name="test")
                self.predictions = dg.argmax(logits_of(self.test_images), axis=1)
            self.init = dg.global_variables_initializer()
            self.saver = dg.train.Saver(max_to_keep=2)

    def accuracy(self, session: dg.Session, images: np.ndarray, labels: np.ndarray) -> float:
        """The share of ``images`` classified right."""
        return float(np.mean(session.run(self.predictions, {self.test_images: images}) == labels))


def batches(x: np.ndarray, y: np.ndarray, size: int, seed: int):
    """Endless random batches of ``size`` (a fresh permutation per epoch)."""
    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(len(x))
        for start in range(0, len(x) - size + 1, size):
            pick = order[start : start + size]
            yield x[pick], y[pick]


def train(model: Model, session: dg.Session, data: tuple, steps: int, progress) -> list[float]:
    """Train ``steps`` steps (per tower when async); the losses in the order they came."""
    x_train, _, y_train, _ = data
    replicas, batch = model.replicas, model.images.shape[0]
    if replicas.mode == "sync":
        losses, source = [], batches(x_train, y_train, batch, seed=1)
        for _ in range(steps):
            xb, yb = next(source)
            _, loss = session.run(
                [replicas.train_op, replicas.loss], {model.images: xb, model.labels: yb}
            )
            losses.append(float(loss))
            progress(loss)
        return losses
    sources = [batches(x_train, y_train, batch, seed=10 + i) for i in range(len(replicas.devices))]
    losses, lock = [], threading.Lock()

    def feed(tower: int, _step: int) -> dict:
        xb, yb = next(sources[tower])
        return {model.images: xb, model.labels: yb}

    def heard(_tower: int, _step: int, loss: float) -> None:
        with lock:
            losses.append(loss)
            progress(loss)

    replicas.run_async(session, steps, feed_fn=feed, on_step=heard)
    return losses


def run_mode(mode: str, args: argparse.Namespace, data: tuple, folder: pathlib.Path) -> dict:
    """Train one mode, evaluate, save, restore into a fresh session and evaluate again."""
    from tqdm import tqdm

    model = Model(mode, args.towers, args.batch, args.learning_rate)
    config = dg.SessionConfig(allow_soft_placement=True)
    total = args.steps * (args.towers if mode == "async" else 1)
    with dg.Session(graph=model.graph, config=config) as session:
        session.run(model.init)
        started = time.perf_counter()
        with tqdm(total=total, desc=f"{mode:>5} ({args.towers} towers)", unit="step") as bar:

            def progress(loss: float) -> None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.3f}", refresh=False)

            losses = train(model, session, data, args.steps, progress)
        seconds = time.perf_counter() - started
        accuracy = model.accuracy(session, data[1], data[3])
        step = int(session.run(model.step))
        (folder / mode).mkdir(parents=True, exist_ok=True)
        path = model.saver.save(session, str(folder / mode / "model"), global_step=step)
    with dg.Session(graph=model.graph, config=config) as fresh:
        model.saver.restore(fresh, dg.train.latest_checkpoint(str(folder / mode)))
        restored = model.accuracy(fresh, data[1], data[3])
        restored_step = int(fresh.run(model.step))
    print(
        f"{mode}: {len(losses)} tower steps in {seconds:.1f} s, global step {step}, "
        f"test accuracy {accuracy:.3f}; checkpoint {path} restored in a fresh session: "
        f"accuracy {restored:.3f}, global step {restored_step}"
    )
    if restored != accuracy or restored_step != step:
        raise SystemExit(f"{mode}: the restored model differs from the saved one")
    per_update = args.batch if mode == "sync" else args.batch // args.towers
    return {"losses": losses, "accuracy": accuracy, "seconds": seconds, "step": step,
            "examples_per_update": per_update}  # fmt: skip


def plot(results: dict[str, dict], path: pathlib.Path) -> None:
    """Both modes' loss curves, against tower steps, in one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for mode, result in results.items():
        losses = np.asarray(result["losses"])
        window = max(1, len(losses) // 50)
        smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
        seen = (np.arange(len(smooth)) + window) * result["examples_per_update"] / 1000
        ax.plot(seen, smooth, label=f"{mode} (test accuracy {result['accuracy']:.1%})")
    ax.set_xlabel("training examples seen (thousands)")
    ax.set_ylabel("training loss (moving average)")
    ax.set_yscale("log")
    ax.set_title("digits, 4 towers on virtual GPUs, parameters on the CPU")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    print(f"loss curves: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150, help="steps (per tower when async)")
    parser.add_argument("--towers", type=int, default=TOWERS)
    parser.add_argument("--batch", type=int, default=256, help="a multiple of --towers")
    parser.add_argument("--learning-rate", type=float, default=0.005)
    parser.add_argument("--modes", nargs="+", default=["sync", "async"])
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--plot",
        type=pathlib.Path,
        default=pathlib.Path(tempfile.gettempdir()) / "daskgraph-examples" / "train_digits.png",
        help="where the loss curves go (default: %(default)s)",
    )
    where.add_argument(
        "--docs-image",
        action="store_const",
        dest="plot",
        const=DOCS_IMAGE,
        help="rewrite the README's picture, docs/images/train_digits.png",
    )
    parser.add_argument("--min-accuracy", type=float, default=0.95)
    args = parser.parse_args()
    data = load_digits_data()
    with tempfile.TemporaryDirectory() as folder:
        results = {m: run_mode(m, args, data, pathlib.Path(folder)) for m in args.modes}
    plot(results, args.plot)
    short = [m for m, r in results.items() if r["accuracy"] < args.min_accuracy]
    if short:
        raise SystemExit(f"below {args.min_accuracy:.0%} test accuracy: {', '.join(short)}")
    print("OK: every mode reached", f"{args.min_accuracy:.0%}", "test accuracy")


if __name__ == "__main__":
    main()
