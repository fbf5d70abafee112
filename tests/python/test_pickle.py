"""A Schema's descriptor set, and pickling through it (how Spark and Ray ship a Schema)."""

from __future__ import annotations

import pickle

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool

import optimus
from conftest import WORKLOADS, workload


def test_pickle_round_trip(peers):
    again = pickle.loads(pickle.dumps(peers))
    assert isinstance(again, optimus.Schema)
    assert again.message_types() == peers.message_types()
    assert again.descriptor_set() == peers.descriptor_set()
    for type_name, file in WORKLOADS:
        data = workload(file)
        assert again.decode(type_name, data) == peers.decode(type_name, data)
        assert again.decode_batch(type_name, [data]).equals(peers.decode_batch(type_name, [data]))


def test_descriptor_set_is_a_file_descriptor_set(peers, kitchen):
    for schema, name in ((peers, "bench.Mixed"), (kitchen, "kitchen.Sink")):
        fds = descriptor_pb2.FileDescriptorSet.FromString(schema.descriptor_set())
        pool = descriptor_pool.DescriptorPool()
        for f in fds.file:
            pool.Add(f)
        assert pool.FindMessageTypeByName(name).full_name == name
        loaded = optimus.Schema.from_descriptor_set(schema.descriptor_set())
        assert loaded.arrow_schema(name, enums="string") == schema.arrow_schema(name, enums="string")


def test_from_source_and_from_descriptor_set_pickle():
    s = optimus.Schema.from_source('syntax = "proto3"; package p; message M { int32 a = 1; }')
    assert pickle.loads(pickle.dumps(s)).decode("p.M", b"\x08\x05") == {"a": 5}
    d = optimus.Schema.from_descriptor_set(s.descriptor_set())
    assert d.descriptor_set() == s.descriptor_set()
    assert pickle.loads(pickle.dumps(d)).message_types() == s.message_types()  # WKTs too


def test_bad_descriptor_set():
    with pytest.raises(optimus.SchemaError):
        optimus.Schema.from_descriptor_set(b"\xff\xff")
