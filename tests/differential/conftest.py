"""Differential tests: optimus against Google's protobuf for Python.

Options (each also read from the environment, for scripts/test):
  --optimus PATH       the binary under test    OPTIMUS_BIN, default target/release/optimus
  --proto-root DIR     every .proto under DIR is tested; repeatable
                                                DIFFERENTIAL_PROTO_ROOTS (':'-separated),
                                                default testdata/zoo and testdata/conformance
  --count N            messages per top-level type    DIFFERENTIAL_COUNT, default 200
  --seed S             generator seed           DIFFERENTIAL_SEED, default 1

Expected divergences go in known_failures.txt beside this file.
"""

from __future__ import annotations

import os

# The pure-Python runtime is the reference (see pbschema.py); it must be
# chosen before anything imports google.protobuf.
os.environ["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"

import fnmatch  # noqa: E402
import random  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

import msggen  # noqa: E402
import pbschema  # noqa: E402
from optimus_cli import Optimus  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "target" / "differential"
HERE = Path(__file__).resolve().parent


def pytest_addoption(parser):
    g = parser.getgroup("differential")
    g.addoption("--optimus", default=os.environ.get("OPTIMUS_BIN", str(REPO / "target/release/optimus")))
    default_roots = os.environ.get("DIFFERENTIAL_PROTO_ROOTS")
    g.addoption(
        "--proto-root",
        action="append",
        default=default_roots.split(":") if default_roots else None,
        help="import root whose .proto files are all tested (repeatable)",
    )
    g.addoption("--count", type=int, default=int(os.environ.get("DIFFERENTIAL_COUNT", "200")))
    g.addoption("--seed", default=os.environ.get("DIFFERENTIAL_SEED", "1"))


def _roots(config) -> list[Path]:
    roots = config.getoption("--proto-root") or [str(REPO / "testdata/zoo"), str(REPO / "testdata/conformance")]
    return [Path(r).resolve() for r in roots]


_SCHEMAS: dict[Path, pbschema.Schema] = {}


def schemas(config) -> list[pbschema.Schema]:
    out = []
    for root in _roots(config):
        for path in pbschema.find_proto_files(root):
            if path not in _SCHEMAS:
                _SCHEMAS[path] = pbschema.compile_schema(root, path, OUT / "schemas" / root.name)
            out.append(_SCHEMAS[path])
    return out


@dataclass(frozen=True)
class Case:
    """One top-level message type of one .proto file."""

    schema: pbschema.Schema
    type_name: str

    @property
    def id(self) -> str:
        return f"{self.schema.root.name}/{self.schema.name}:{self.type_name}"


def pytest_generate_tests(metafunc):
    if "case" in metafunc.fixturenames:
        cases = [Case(s, t) for s in schemas(metafunc.config) for t in s.top_level_types()]
        metafunc.parametrize("case", cases, ids=[c.id for c in cases])
    if "mode" in metafunc.fixturenames:
        metafunc.parametrize("mode", ["descriptor-set", "proto"])


def pytest_collection_modifyitems(config, items):
    """Mark the tests listed in known_failures.txt as expected failures."""
    path = HERE / "known_failures.txt"
    if not path.exists():
        return
    rules = []
    for line in path.read_text().splitlines():
        pattern, _, reason = line.partition("#")
        pattern = pattern.strip()
        if pattern:
            rules.append((pattern, reason.strip() or "listed in known_failures.txt"))
    for item in items:
        for pattern, reason in rules:
            if fnmatch.fnmatchcase(item.nodeid.split("::", 1)[-1], pattern):
                item.add_marker(pytest.mark.xfail(reason=reason, strict=False))


@pytest.fixture(scope="session")
def optimus(request) -> Optimus:
    binary = Path(request.config.getoption("--optimus")).resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        pytest.skip(f"no optimus binary at {binary}: build it with `cargo build --release -p optimus-cli`")
    return Optimus(binary, REPO)


_BATCHES: dict[tuple, list] = {}


@pytest.fixture(scope="session")
def batches(request):
    """`batches(case, json_safe)`: the case's generated messages, made once per session."""
    count = request.config.getoption("--count")
    seed = request.config.getoption("--seed")

    def get(case: Case, json_safe: bool = True) -> list:
        key = (case.schema.path, case.type_name, json_safe)
        if key not in _BATCHES:
            rng = random.Random(f"{seed}:{case.schema.name}:{case.type_name}:{json_safe}")
            gen = msggen.MessageGenerator(case.schema, rng, json_safe=json_safe)
            _BATCHES[key] = gen.messages(case.type_name, count)
        return _BATCHES[key]

    return get


@pytest.fixture(scope="session")
def failure_dir():
    OUT.mkdir(parents=True, exist_ok=True)
    return OUT / "failures"


@pytest.fixture(scope="session")
def zoo_schema():
    """`zoo_schema("maps.proto")`: a file of testdata/zoo, compiled."""
    root = REPO / "testdata" / "zoo"

    def get(name: str) -> pbschema.Schema:
        path = (root / name).resolve()
        if path not in _SCHEMAS:
            _SCHEMAS[path] = pbschema.compile_schema(root, path, OUT / "schemas" / root.name)
        return _SCHEMAS[path]

    return get
