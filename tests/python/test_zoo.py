"""bytes -> Arrow -> bytes over the differential zoo (testdata/zoo): every .proto, every
top-level type, random messages (proto2 groups, extensions, closed enums, maps, oneofs,
well-known types, recursive types cut deeper than the generator nests)."""

from __future__ import annotations

import random

import pytest

import optimus
from conftest import TESTDATA
from reference import MESSAGES, WKT, is_map

ZOO = TESTDATA / "zoo"
NS_SECONDS = 2**63 // 1_000_000_000 - 1


def fits_arrow(msg) -> bool:
    """Whether every Timestamp and Duration in `msg` fits int64 nanoseconds."""
    if msg.DESCRIPTOR.full_name in (WKT + "Timestamp", WKT + "Duration"):
        return abs(msg.seconds) < NS_SECONDS
    for f, v in msg.ListFields():
        if f.type not in MESSAGES:
            continue
        if is_map(f):
            vf = f.message_type.fields_by_name["value"]
            subs = list(v.values()) if vf.type in MESSAGES else []
        elif f.label == f.LABEL_REPEATED:
            subs = list(v)
        else:
            subs = [v]
        if not all(fits_arrow(s) for s in subs):
            return False
    return True


def zoo_cases():
    import pbschema

    return [
        (p, t)
        for p in sorted(pbschema.find_proto_files(ZOO))
        for t in _top_level(p)
    ]


def _top_level(path):
    import re

    text = path.read_text()
    pkg = re.search(r"^package\s+([\w.]+);", text, re.M)
    prefix = pkg.group(1) + "." if pkg else ""
    return [prefix + m for m in re.findall(r"^message\s+(\w+)", text, re.M)]


@pytest.mark.parametrize("path,type_name", zoo_cases(), ids=lambda x: getattr(x, "name", x))
def test_zoo_round_trip(tmp_path, path, type_name):
    import msggen
    import pbschema

    ps = pbschema.compile_schema(ZOO, path, tmp_path)
    schema = optimus.Schema.from_proto([path], include=[ZOO])
    gen = msggen.MessageGenerator(ps, random.Random(52))
    msgs = [m for m in gen.messages(type_name, 60) if fits_arrow(m)]
    assert len(msgs) > 20
    data = [msggen.canonical_bytes(m, ps) for m in msgs]
    batch = schema.decode_batch(type_name, data, recursion_depth=7)
    assert batch.num_rows == len(data)
    assert schema.encode_batch(type_name, batch) == data
