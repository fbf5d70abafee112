"""Tests of the optimus Python package (crates/optimus-py) against Google's Python protobuf.

The package must be installed in the interpreter running pytest (scripts/test's python
step builds it into .venv with maturin). Reference classes come from protoc at test time:
`protoc --python_out` for testdata/peers.proto and kitchen.proto (beside this file), and the
differential suite's descriptor-driven pools and random message generator
(tests/differential/pbschema.py, msggen.py) for random messages of any type.
"""

from __future__ import annotations

import os

# The pure-Python runtime is the reference, as in tests/differential: upb's deterministic
# serialization orders int64 map keys above 2^31 before smaller ones.
os.environ["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"

import importlib  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TESTDATA = REPO / "testdata"
sys.path.insert(0, str(REPO / "tests" / "differential"))
sys.path.insert(0, str(HERE))

import optimus  # noqa: E402

WORKLOADS = [("bench.Flat", "flat.bin"), ("bench.Mixed", "mixed.bin"), ("bench.Nested", "nested.bin")]


@pytest.fixture(scope="session")
def pb_out(tmp_path_factory) -> Path:
    """protoc --python_out of peers.proto and kitchen.proto, importable."""
    out = tmp_path_factory.mktemp("pb2")
    subprocess.run(
        ["protoc", f"-I{TESTDATA}", f"--python_out={out}", "peers.proto"], check=True
    )
    subprocess.run(["protoc", f"-I{HERE}", f"--python_out={out}", "kitchen.proto"], check=True)
    sys.path.insert(0, str(out))
    return out


@pytest.fixture(scope="session")
def peers_pb2(pb_out):
    return importlib.import_module("peers_pb2")


@pytest.fixture(scope="session")
def kitchen_pb2(pb_out):
    return importlib.import_module("kitchen_pb2")


@pytest.fixture(scope="session")
def peers() -> optimus.Schema:
    return optimus.Schema.from_proto([TESTDATA / "peers.proto"], include=[TESTDATA])


@pytest.fixture(scope="session")
def kitchen() -> optimus.Schema:
    return optimus.Schema.from_proto([HERE / "kitchen.proto"], include=[HERE])


@pytest.fixture(scope="session")
def pools(tmp_path_factory):
    """Descriptor-driven pools (pbschema) for random messages: name -> pbschema.Schema."""
    import pbschema

    out = tmp_path_factory.mktemp("pools")
    return {
        "peers": pbschema.compile_schema(TESTDATA, TESTDATA / "peers.proto", out),
        "kitchen": pbschema.compile_schema(HERE, HERE / "kitchen.proto", out),
    }


def workload(name: str) -> bytes:
    return (TESTDATA / name).read_bytes()
