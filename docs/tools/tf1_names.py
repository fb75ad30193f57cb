"""Write the snapshot of TensorFlow 1's public names that ``docs/compat.md`` is built from.

A maintenance script, run by hand where TensorFlow is installed (``pip install tensorflow-cpu``,
the ``bench`` extra); daskgraph and its tests never import TensorFlow, they read the snapshot::

    .venv/bin/python docs/tools/tf1_names.py > daskgraph/compat/tf1_api.json

It lists the public names of ``tf.compat.v1`` (the top level) and of the namespaces TF1
programs use most, each with its kind: ``module``, ``class``, ``function`` or ``constant``.
``tf.compat.v1.layers`` is Keras 2's (the ``tf_keras`` package), which newer TensorFlow no
longer brings; where it cannot be loaded, TensorFlow 1.15's documented ``tf.layers`` names
stand in for it (:data:`LAYERS_1_15`).
"""

from __future__ import annotations

import inspect
import json
import sys
import types
from typing import Any

#: The namespaces listed besides the top level, as TF1 programs spell them (``tf.nn``).
NAMESPACES = (
    "nn train errors random initializers losses layers math linalg image summary data io "
    "gfile logging dtypes test app flags config metrics"
).split()

#: ``tf.layers`` of TensorFlow 1.15 (https://github.com/tensorflow/docs/tree/r1.15, api_docs).
LAYERS_1_15 = {
    **{
        name: "class"
        for name in (
            "AveragePooling1D AveragePooling2D AveragePooling3D BatchNormalization Conv1D "
            "Conv2D Conv2DTranspose Conv3D Conv3DTranspose Dense Dropout Flatten InputSpec "
            "Layer MaxPooling1D MaxPooling2D MaxPooling3D SeparableConv1D SeparableConv2D"
        ).split()
    },
    **{
        name: "function"
        for name in (
            "average_pooling1d average_pooling2d average_pooling3d batch_normalization conv1d "
            "conv2d conv2d_transpose conv3d conv3d_transpose dense dropout flatten "
            "max_pooling1d max_pooling2d max_pooling3d separable_conv1d separable_conv2d"
        ).split()
    },
    "experimental": "module",
}


def kind(value: Any) -> str:
    """The kind of a public name's value: module, class, function or constant."""
    if isinstance(value, types.ModuleType) or type(value).__name__.endswith("LazyLoader"):
        return "module"
    if inspect.isclass(value):
        return "class"
    if callable(value):
        return "function"
    return "constant"


def public_names(module: Any) -> dict[str, str]:
    """``{name: kind}`` for a module's public names, read without loading lazy submodules."""
    names = vars(module) if not hasattr(module, "_tfmw_wrapped_module") else None
    if names is None:
        names = vars(module._tfmw_wrapped_module)
    return {
        name: kind(value)
        for name, value in sorted(names.items())
        if not name.startswith("_")
        and name not in {"absolute_import", "division", "print_function"}
    }


def snapshot() -> dict[str, Any]:
    """The snapshot: TensorFlow's version and ``{namespace: {name: kind}}`` ("" = top level)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    namespaces: dict[str, dict[str, str]] = {"": public_names(v1)}
    for name in NAMESPACES:
        try:
            namespaces[name] = public_names(getattr(v1, name))
        except Exception:  # tf.layers needs tf_keras, absent from newer installs
            if name != "layers":
                raise
            namespaces[name] = dict(sorted(LAYERS_1_15.items()))
        if not namespaces[name] and name == "layers":
            namespaces[name] = dict(sorted(LAYERS_1_15.items()))
    return {
        "source": f"tensorflow {tf.__version__}, tf.compat.v1 (docs/tools/tf1_names.py)",
        "namespaces": namespaces,
    }


if __name__ == "__main__":
    json.dump(snapshot(), sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
