"""Record what TensorFlow prints for each program of the compatibility suite (tests/compat_suite).

A maintenance script, run by hand where TensorFlow is installed::

    .venv/bin/python docs/tools/record_compat_suite.py [NAME ...]

Each program runs in its own process under ``tensorflow.compat.v1`` (graph mode): its
``import daskgraph.compat.v1 as tf`` line becomes ``import tensorflow.compat.v1 as tf``. What it
prints on stdout (less TensorFlow's placement log), and the name of the exception it raises if
any (``raised: NAME``), goes to
``tests/compat_suite/expected/NAME.out``, which tests/integration/test_compat_suite.py compares
with what daskgraph prints.

TensorFlow here has no GPU, while the suite runs daskgraph with the virtual GPUs a program's
``# Virtual GPUs: N`` header asks for. So ``tf.device`` is wrapped to stand a CPU in for each of
those N GPUs (``/gpu:k`` with ``k < N`` becomes ``/cpu:0``); a GPU beyond them stays as written,
and TensorFlow refuses it, or soft placement moves it, as on a machine with N GPUs. Values are
what is compared, not placements. Programs run together (``# Run: with ...``) are not recorded.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

SUITE = pathlib.Path(__file__).resolve().parents[2] / "tests" / "compat_suite"
IMPORT = "import daskgraph.compat.v1 as tf"

PRELUDE = """\
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
_device = tf.device

def _gpus_as_cpu(spec, _n={n}):
    if isinstance(spec, str):
        parsed = tf.DeviceSpec.from_string(spec)
        if (parsed.device_type or "").upper() == "GPU" and (parsed.device_index or 0) < _n:
            spec = parsed.replace(device_type="CPU", device_index=0).to_string()
    return _device(spec)

tf.device = _gpus_as_cpu
"""

RUNNER = """\
import sys
source = open(sys.argv[1], encoding="utf-8").read()
try:
    exec(compile(source, sys.argv[1], "exec"), {{"__name__": "__main__"}})
except Exception as error:
    print(f"raised: {{type(error).__name__}}")
"""


def header(source: str, field: str) -> str | None:
    """The value of a program's ``# FIELD: value`` header line, or None."""
    match = re.search(rf"^# {field}: (.*)$", source, re.MULTILINE)
    return match.group(1).strip() if match else None


#: TensorFlow's placement log, which it prints on stdout (daskgraph, on stderr): not compared.
PLACEMENT_LOG = re.compile(r"^(\S+: \(\w+\): /job:.*|Device mapping:.*|/job:\S+ -> .*)\n", re.M)


def record(path: pathlib.Path) -> str:
    """Run one program under TensorFlow; its stdout with the raised exception's name."""
    source = path.read_text(encoding="utf-8")
    gpus = int(header(source, "Virtual GPUs") or 0)
    translated = source.replace(IMPORT, PRELUDE.format(n=gpus), 1)
    scratch = path.with_suffix(".tf.py.tmp")
    scratch.write_text(translated, encoding="utf-8")
    try:
        done = subprocess.run(
            [sys.executable, "-c", RUNNER.format(), str(scratch)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        scratch.unlink()
    return PLACEMENT_LOG.sub("", done.stdout)


def main(names: list[str]) -> None:
    """Record the named programs (all of them when none is named)."""
    paths = [SUITE / f"{name}.py" for name in names] or sorted(SUITE.glob("[!_]*.py"))
    for path in paths:
        if path.name == "conftest.py" or header(path.read_text(encoding="utf-8"), "Run"):
            continue
        out = record(path)
        (SUITE / "expected" / f"{path.stem}.out").write_text(out, encoding="utf-8")
        print(f"{path.stem}: {out!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
