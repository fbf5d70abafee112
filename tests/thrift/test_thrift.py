"""optimus's TBinaryProtocol, TCompactProtocol and JSON against Apache Thrift (Python).

Random messages of the zoo (testdata/thrift/zoo.thrift: every type, requiredness,
defaults, a union, an exception, sparse and implicit ids, nested containers, an include)
are serialized by Apache Thrift; optimus must re-encode them byte-identically, convert each
protocol into the other exactly as Apache Thrift writes it, carry them through JSON and
protobuf and back without loss, and write bytes Apache Thrift reads back equal.
"""

from __future__ import annotations

import math
import random

import pytest
from optimus_cli import delimit, split_delimited

TESTDATA_PEERS = ("flat", "mixed", "nested")
# Top-level structs of zoo.thrift under test, with the program that declares them.
ZOO_STRUCTS = ["Everything", "Containers", "Scalars", "Defaults", "Choice", "Sparse", "Oops"]
UNIONS = {"Choice"}
# Python's generated classes are unhashable, so Apache Thrift's Python library cannot hold a
# map keyed by a struct or container: those fields are left unset here (the Rust unit tests
# cover them).
UNHASHABLE_KEYS = None  # set in _types()
# Apache Thrift's Python generator emits no thrift_spec for a struct with ids this sparse.
SPARSE_FIELDS = None


def _types():
    from thrift.Thrift import TType

    global UNHASHABLE_KEYS, SPARSE_FIELDS
    UNHASHABLE_KEYS = {TType.STRUCT, TType.LIST, TType.SET, TType.MAP}
    from zoo import ttypes as zoo

    SPARSE_FIELDS = [
        (1, TType.I32, "first", None),
        (300, TType.STRING, "middle", "UTF8"),
        (32767, TType.I64, "last", None),
        (-1, TType.I32, "implicit_id", None),
        (20, TType.STRUCT, "next", [zoo.Sparse, None]),
    ]
    return TType


def spec_fields(cls):
    """(id, ttype, name, args) of each field of a generated class."""
    if cls.__name__ == "Sparse":
        return SPARSE_FIELDS
    return [(s[0], s[1], s[2], s[3]) for s in cls.thrift_spec if s is not None]


INTS = {3: 8, 6: 16, 8: 32, 10: 64}


def rand_int(rng: random.Random, bits: int) -> int:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    r = rng.random()
    if r < 0.15:
        return rng.choice([lo, hi, 0, -1, 1])
    if r < 0.5:
        return rng.randint(max(lo, -300), min(hi, 300))
    return rng.randint(lo, hi)


def rand_value(TType, ttype, args, rng: random.Random, depth: int):
    if ttype == TType.BOOL:
        return rng.random() < 0.5
    if ttype in INTS:
        return rand_int(rng, INTS[ttype])
    if ttype == TType.DOUBLE:
        return rng.choice([0.0, -0.0, 1.5, -2.25e-300, 1e300, math.inf, -math.inf, rng.uniform(-1e6, 1e6)])
    if ttype == TType.STRING:
        if args == "BINARY":
            return bytes(rng.randrange(256) for _ in range(rng.randrange(12)))
        return "".join(rng.choice("aZ09 \"\\\n\té€😀") for _ in range(rng.randrange(10)))
    if ttype == TType.STRUCT:
        return rand_struct(TType, args[0], rng, depth + 1)
    n = rng.randrange(5) if depth <= 3 else 0
    if ttype == TType.LIST:
        return [rand_value(TType, args[0], args[1], rng, depth + 1) for _ in range(n)]
    if ttype == TType.SET:
        return {rand_value(TType, args[0], args[1], rng, depth + 1) for _ in range(n)}
    if ttype == TType.MAP:
        return {rand_value(TType, args[0], args[1], rng, depth + 1): rand_value(TType, args[2], args[3], rng, depth + 1)
                for _ in range(n)}
    raise AssertionError(f"type {ttype}")


def settable(TType, ttype, args) -> bool:
    if ttype in (TType.MAP, TType.SET) and args[0] in UNHASHABLE_KEYS:
        return False
    if ttype in (TType.LIST, TType.SET, TType.MAP):
        inner = [(args[0], args[1])] if ttype != TType.MAP else [(args[0], args[1]), (args[2], args[3])]
        return all(settable(TType, t, a) for t, a in inner)
    return True


def put(obj, name, value):
    # Generated exceptions are immutable (their __setattr__ raises): set through object's.
    object.__setattr__(obj, name, value)


def rand_struct(TType, cls, rng: random.Random, depth: int = 0):
    from thrift.protocol.TProtocol import TProtocolException

    obj = cls()
    fields = [f for f in spec_fields(cls) if settable(TType, f[1], f[3])]
    if cls.__name__ in UNIONS:
        for f in fields:
            put(obj, f[2], None)
        fid, ttype, name, args = rng.choice(fields)
        put(obj, name, rand_value(TType, ttype, args, rng, depth))
        return obj
    for fid, ttype, name, args in fields:
        deep = ttype == TType.STRUCT and depth > 3
        if rng.random() < (0.3 if deep else 0.75) or getattr(obj, name) is not None and rng.random() < 0.5:
            put(obj, name, None if deep else rand_value(TType, ttype, args, rng, depth))
        elif rng.random() < 0.3:
            put(obj, name, None)  # an unset field, even one with a default
    for _ in range(len(fields)):
        try:
            obj.validate()
            break
        except TProtocolException as e:  # a required field left unset: set it
            name = str(e).split("Required field ")[1].split(" ")[0]
            fid, ttype, _, args = next(f for f in fields if f[2] == name)
            put(obj, name, rand_value(TType, ttype, args, rng, depth + 3))
    return obj


def serialize(obj, protocol: str) -> bytes:
    from thrift.protocol.TBinaryProtocol import TBinaryProtocolFactory
    from thrift.protocol.TCompactProtocol import TCompactProtocolFactory
    from thrift.TSerialization import serialize as ser

    return ser(obj, TBinaryProtocolFactory() if protocol == "thrift-binary" else TCompactProtocolFactory())


def deserialize(cls, data: bytes, protocol: str):
    from thrift.protocol.TBinaryProtocol import TBinaryProtocolFactory
    from thrift.protocol.TCompactProtocol import TCompactProtocolFactory
    from thrift.transport.TTransport import TMemoryBuffer

    factory = TBinaryProtocolFactory() if protocol == "thrift-binary" else TCompactProtocolFactory()
    prot = factory.getProtocol(TMemoryBuffer(data))
    # Immutable classes (exceptions) read through a classmethod that returns the instance.
    obj = cls()
    got = obj.read(prot)
    return obj if got is None else got


def convert(optimus, type_name, src, dst, messages):
    r = optimus.convert(["--thrift", "testdata/thrift/zoo.thrift"], type_name, src, dst,
                        b"".join(m + b"\n" for m in messages) if src == "json" else delimit(messages))
    assert r.returncode == 0, f"{r.command_line()}: {r.stderr_text}"
    if dst == "json":
        return [line for line in r.stdout.split(b"\n") if line]
    return split_delimited(r.stdout)


PROTOCOLS = ["thrift-binary", "thrift-compact"]


@pytest.fixture(scope="module")
def corpus(gen_py, count, seed):
    """Per struct: random Apache Thrift objects and their bytes in both protocols."""
    TType = _types()
    from zoo import ttypes as zoo

    out = {}
    for name in ZOO_STRUCTS:
        rng = random.Random(f"{seed}/{name}")
        objs = [rand_struct(TType, getattr(zoo, name), rng) for _ in range(count)]
        out[name] = (objs, {p: [serialize(o, p) for o in objs] for p in PROTOCOLS})
    return out


@pytest.mark.parametrize("name", ZOO_STRUCTS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_round_trip_byte_identical(optimus, corpus, name, protocol):
    objs, data = corpus[name]
    back = convert(optimus, name, protocol, protocol, data[protocol])
    assert len(back) == len(objs)
    for i, (want, got) in enumerate(zip(data[protocol], back)):
        assert got == want, f"{name} #{i} {protocol}: {objs[i]!r}\nwant {want.hex()}\ngot  {got.hex()}"


@pytest.mark.parametrize("name", ZOO_STRUCTS)
@pytest.mark.parametrize("src,dst", [("thrift-binary", "thrift-compact"), ("thrift-compact", "thrift-binary")])
def test_protocols_convert_as_apache_writes_them(optimus, corpus, name, src, dst):
    objs, data = corpus[name]
    back = convert(optimus, name, src, dst, data[src])
    for i, (want, got) in enumerate(zip(data[dst], back)):
        assert got == want, f"{name} #{i} {src} -> {dst}: {objs[i]!r}\nwant {want.hex()}\ngot  {got.hex()}"


@pytest.mark.parametrize("name", ZOO_STRUCTS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_apache_reads_back_what_optimus_writes(optimus, corpus, gen_py, name, protocol):
    """optimus writes from JSON (its own reader and writer); Apache Thrift reads it equal."""
    from zoo import ttypes as zoo

    objs, data = corpus[name]
    other = PROTOCOLS[1 - PROTOCOLS.index(protocol)]
    text = convert(optimus, name, other, "json", data[other])
    written = convert(optimus, name, "json", protocol, text)
    cls = getattr(zoo, name)
    for i, got in enumerate(written):
        # Apache Thrift's reader fills declared defaults, so compare with its own round trip.
        want = deserialize(cls, data[protocol][i], protocol)
        assert deserialize(cls, got, protocol) == want, f"{name} #{i}: {text[i]!r}"
        assert got == data[protocol][i], f"{name} #{i} json -> {protocol}"


@pytest.mark.parametrize("name", ZOO_STRUCTS)
def test_through_protobuf(optimus, corpus, gen_py, name):
    """The same schema's protobuf form carries every message: Apache Thrift reads it back equal,
    but for what protobuf cannot say: an empty list, set or map is no field at all there (so
    it comes back unset), and map entries come back in key order."""
    from zoo import ttypes as zoo

    objs, data = corpus[name]
    cls = getattr(zoo, name)
    pb = convert(optimus, name, "thrift-compact", "protobuf", data["thrift-compact"])
    back = convert(optimus, name, "protobuf", "thrift-binary", pb)
    for i, got in enumerate(back):
        want = without_empty_containers(deserialize(cls, data["thrift-binary"][i], "thrift-binary"))
        assert without_empty_containers(deserialize(cls, got, "thrift-binary")) == want, f"{name} #{i}"


def without_empty_containers(v):
    """`v` with every empty list, set and map field unset (recursively)."""
    if isinstance(v, (list, tuple)):
        return [without_empty_containers(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return v
    if isinstance(v, dict):
        return {k: without_empty_containers(x) for k, x in v.items()}
    if hasattr(v, "thrift_spec") or type(v).__name__ == "Sparse":
        for name, x in list(vars(v).items()):
            x = None if isinstance(x, (list, set, dict)) and not x else without_empty_containers(x)
            object.__setattr__(v, name, x)
    return v


@pytest.mark.parametrize("name", TESTDATA_PEERS)
def test_peer_files(optimus, gen_py, name):
    """The Optimus Prime classes as Apache Thrift wrote them (testdata/thrift/*.tbin, .tcompact)."""
    from tbench import ttypes as peers  # peers.thrift: namespace py tbench

    from conftest import TESTDATA

    cls = name.capitalize()
    tbin = (TESTDATA / f"{name}.tbin").read_bytes()
    tcompact = (TESTDATA / f"{name}.tcompact").read_bytes()
    assert serialize(deserialize(getattr(peers, cls), tbin, "thrift-binary"), "thrift-compact") == tcompact
    for src, dst, want in [("thrift-binary", "thrift-binary", tbin), ("thrift-binary", "thrift-compact", tcompact),
                           ("thrift-compact", "thrift-binary", tbin), ("thrift-compact", "thrift-compact", tcompact)]:
        r = optimus.convert(["--thrift", "testdata/thrift/peers.thrift"], cls, src, dst,
                            tbin if src == "thrift-binary" else tcompact, delimited=False)
        assert r.returncode == 0, r.stderr_text
        assert r.stdout == want, f"{name} {src} -> {dst}"


def test_bad_input_is_one_line_with_path_and_offset(optimus, corpus):
    objs, data = corpus["Everything"]
    good = max(data["thrift-binary"], key=len)
    for cut in (1, len(good) // 2, len(good) - 1):
        r = optimus.convert(["--thrift", "testdata/thrift/zoo.thrift"], "Everything", "thrift-binary", "json",
                            good[:cut], delimited=False)
        assert r.returncode == 1
        lines = r.stderr_text.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: zoo.Everything"), lines
        assert " at byte " in lines[0], lines


# ---------------------------------------------------------------- any IDL


def idl_cases(config):
    """(idl, module, struct name) for every struct of the IDLs given by --idl / THRIFT_IDLS."""
    import re
    from pathlib import Path

    out = []
    for idl in config.getoption("--idl") or []:
        path = Path(idl).resolve()
        text = path.read_text()
        m = re.search(r"^\s*namespace\s+py\s+([\w.]+)", text, re.M)
        module = m.group(1) if m else path.stem
        names = re.findall(r"^\s*(?:struct|union|exception)\s+(\w+)", text, re.M)
        out += [(str(path), module, n) for n in names]
    return out


def pytest_generate_tests(metafunc):
    if "idl_case" in metafunc.fixturenames:
        cases = idl_cases(metafunc.config)
        metafunc.parametrize("idl_case", cases, ids=[f"{c[0].rsplit('/', 1)[-1]}:{c[2]}" for c in cases])


def test_any_idl(optimus, idl_case, count, seed):
    """Round trips and binary<->compact for every struct of an IDL given on the command line
    (`--idl FILE`, repeatable; THRIFT_IDLS=a.thrift:b.thrift): Apache Thrift's bytes must come
    back byte-identical and convert as Apache Thrift writes them."""
    import importlib
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from conftest import OUT

    idl, module, name = idl_case
    out = OUT / "idl" / Path(idl).stem
    if not out.exists():
        out.mkdir(parents=True)
        subprocess.run(["thrift", "-r", "--gen", "py", "-out", str(out), "-I", str(Path(idl).parent), idl],
                       check=True, capture_output=True)
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    TType = _types()
    cls = getattr(importlib.import_module(f"{module}.ttypes"), name)
    if not cls.thrift_spec:
        pytest.skip(f"{name}: Apache Thrift's Python generator wrote no thrift_spec (ids too sparse)")
    rng = random.Random(f"{seed}/{idl}/{name}")
    try:
        objs = [rand_struct(TType, cls, rng) for _ in range(count)]
    except StopIteration:
        pytest.skip(f"{name}: a required field Apache Thrift's Python classes cannot hold")
    data = {p: [serialize(o, p) for o in objs] for p in PROTOCOLS}
    schema = ["--thrift", idl]
    for src in PROTOCOLS:
        for dst in PROTOCOLS:
            r = optimus.convert(schema, name, src, dst, delimit(data[src]))
            assert r.returncode == 0, f"{r.command_line()}: {r.stderr_text}"
            for i, (want, got) in enumerate(zip(data[dst], split_delimited(r.stdout))):
                assert got == want, f"{name} #{i} {src} -> {dst}: {objs[i]!r}\nwant {want.hex()}\ngot  {got.hex()}"
