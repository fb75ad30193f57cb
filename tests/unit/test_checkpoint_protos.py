"""The checkpoint protos' generated module (daskgraph/kernels/protos/tensor_bundle_pb2.py) is what
protoc makes of the committed .proto (grpcio-tools, pinned in constraints.txt; skipped where
it is not installed), and the installed protobuf runtime accepts it."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest
from google.protobuf import runtime_version

from daskgraph.kernels.protos import tensor_bundle_pb2 as pb

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROTO = "daskgraph/kernels/protos/tensor_bundle.proto"
COMMITTED = ROOT / "daskgraph/kernels/protos/tensor_bundle_pb2.py"


def _gencode_version(source: str) -> tuple[int, ...]:
    found = re.search(r"^# Protobuf Python Version: (\d+)\.(\d+)\.(\d+)", source, re.M)
    assert found, "the generated module names the protobuf version it was made for"
    return tuple(int(part) for part in found.groups())


@pytest.mark.skipif(
    importlib.util.find_spec("grpc_tools") is None, reason="grpcio-tools is not installed"
)
def test_the_generated_module_is_protocs_output_of_the_proto(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{ROOT}", f"--python_out={tmp_path}", PROTO],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    made = (tmp_path / PROTO.replace(".proto", "_pb2.py")).read_text()
    committed = COMMITTED.read_text()
    if _gencode_version(made) != _gencode_version(committed):
        pytest.skip(
            f"grpcio-tools makes protobuf {_gencode_version(made)} code; the committed module "
            f"is {_gencode_version(committed)}'s (install the grpcio-tools of constraints.txt)"
        )
    assert made == committed, (
        f"regenerate it: python -m grpc_tools.protoc -I. --python_out=. {PROTO}"
    )


def test_the_runtime_is_no_older_than_the_generated_code():
    runtime = (runtime_version.MAJOR, runtime_version.MINOR, runtime_version.PATCH)
    gencode = _gencode_version(COMMITTED.read_text())
    assert runtime[0] == gencode[0] and runtime >= gencode
    assert pb.DESCRIPTOR.package == "daskgraph.checkpoint"  # (never TensorFlow's own)
    assert (
        pb.DT_BFLOAT16 == 14 and pb.BundleEntryProto.DESCRIPTOR.fields_by_name["crc32c"].number == 6
    )
