"""Differential tests: optimus's Thrift protocols against Apache Thrift's Python library.

Apache Thrift's compiler (`thrift --gen py`, Debian's thrift-compiler) generates Python
classes from the test IDLs in testdata/thrift; Apache Thrift's pure-Python TBinaryProtocol
and TCompactProtocol serialize random messages of those classes, and `optimus convert`
must decode and re-encode them byte-identically, convert between the protocols, JSON and
protobuf, and write bytes that Apache Thrift reads back equal.

Options (each also read from the environment, for scripts/test):
  --optimus PATH   the binary under test   OPTIMUS_BIN, default target/release/optimus
  --count N        messages per struct     THRIFT_COUNT, default 150
  --seed S         generator seed          THRIFT_SEED, default 1
  --idl FILE       also round-trip every struct of FILE (repeatable)
                                           THRIFT_IDLS (':'-separated), default none
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TESTDATA = REPO / "testdata" / "thrift"
OUT = REPO / "target" / "thrift"
sys.path.insert(0, str(REPO / "tests" / "differential"))

from optimus_cli import Optimus  # noqa: E402


def pytest_addoption(parser):
    g = parser.getgroup("thrift")
    g.addoption("--optimus", default=os.environ.get("OPTIMUS_BIN", str(REPO / "target/release/optimus")))
    g.addoption("--count", type=int, default=int(os.environ.get("THRIFT_COUNT", "150")))
    g.addoption("--seed", default=os.environ.get("THRIFT_SEED", "1"))
    idls = os.environ.get("THRIFT_IDLS")
    g.addoption("--idl", action="append", default=idls.split(":") if idls else None,
                help="also test every struct of this IDL (repeatable)")


@pytest.fixture(scope="session")
def optimus(pytestconfig) -> Optimus:
    binary = Path(pytestconfig.getoption("--optimus"))
    if not binary.exists():
        pytest.fail(f"no optimus binary at {binary}: cargo build --release -p optimus-cli")
    return Optimus(binary, REPO)


@pytest.fixture(scope="session")
def gen_py() -> Path:
    """Python code that Apache Thrift's compiler generates for the test IDLs."""
    compiler = shutil.which("thrift")
    if compiler is None:
        pytest.fail("Apache Thrift's compiler is missing: apt-get install thrift-compiler")
    try:
        import thrift  # noqa: F401
    except ImportError:
        pytest.fail("Apache Thrift's Python library is missing: pip install thrift")
    out = OUT / "gen-py"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for idl in ("zoo.thrift", "peers.thrift"):
        subprocess.run([compiler, "-r", "--gen", "py", "-out", str(out), "-I", str(TESTDATA), str(TESTDATA / idl)],
                       check=True, capture_output=True)
    sys.path.insert(0, str(out))
    return out


@pytest.fixture(scope="session")
def count(pytestconfig) -> int:
    return pytestconfig.getoption("--count")


@pytest.fixture(scope="session")
def seed(pytestconfig) -> str:
    return pytestconfig.getoption("--seed")
