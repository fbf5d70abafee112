"""The generator against Python itself: every message it makes must survive
Python's own binary and JSON round trips unchanged. Otherwise a difference
found by test_convert.py could be the generator's, not optimus's. Needs no
optimus binary."""

from __future__ import annotations

from google.protobuf import json_format

import msggen


def test_python_round_trips_every_generated_message(case, batches):
    schema = case.schema
    for json_safe in (True, False):
        for i, msg in enumerate(batches(case, json_safe)):
            data = msg.SerializeToString(deterministic=True)
            again = schema.new(case.type_name)
            again.ParseFromString(data)
            assert again.SerializeToString(deterministic=True) == data, f"message #{i}: binary round trip"
            if not json_safe:
                continue
            want = msggen.canonical_bytes(msg, schema)
            for names in (False, True):
                text = json_format.MessageToJson(
                    msg, preserving_proto_field_name=names, indent=None, descriptor_pool=schema.pool
                )
                parsed = json_format.Parse(text, schema.new(case.type_name), descriptor_pool=schema.pool)
                assert msggen.canonical_bytes(parsed, schema) == want, f"message #{i}: JSON round trip: {text[:500]}"


def test_generation_is_deterministic(case):
    import random

    a = msggen.MessageGenerator(case.schema, random.Random("x")).messages(case.type_name, 5)
    b = msggen.MessageGenerator(case.schema, random.Random("x")).messages(case.type_name, 5)
    assert [m.SerializeToString(deterministic=True) for m in a] == [m.SerializeToString(deterministic=True) for m in b]
