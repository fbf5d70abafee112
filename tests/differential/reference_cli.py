#!/usr/bin/env python3
"""A stand-in for `optimus convert` built on Google's Python protobuf.

It implements the command line the differential tests drive, so the tests
themselves can be checked without optimus:

    OPTIMUS_BIN=tests/differential/reference_cli.py .venv/bin/python -m pytest tests/differential

passes everything but `test_bad_json_is_one_line_error[bad-base64]`:
Python's base64 decoder skips characters it does not know. The tests run a
`.py` binary with their own interpreter. It is a test of the tests, not a
product: slow, and only `convert` does anything.
"""

from __future__ import annotations

import os

os.environ["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory  # noqa: E402

import msggen  # noqa: E402
from optimus_cli import encode_varint  # noqa: E402


class Failure(Exception):
    pass


def load_pool(args) -> descriptor_pool.DescriptorPool:
    if args.descriptor_set:
        try:
            data = Path(args.descriptor_set).read_bytes()
            fds = descriptor_pb2.FileDescriptorSet.FromString(data)
        except Exception as e:  # noqa: BLE001
            raise Failure(f"{args.descriptor_set}: not a descriptor set: {e}") from e
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "set.pb"
            includes = [f"-I{d}" for d in (args.include or [str(Path(args.proto).parent)])]
            p = subprocess.run(
                ["protoc", *includes, "--include_imports", f"--descriptor_set_out={out}", args.proto],
                capture_output=True, text=True,
            )
            if p.returncode != 0:
                raise Failure(f"{args.proto}: " + " ".join(p.stderr.split()))
            fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    message_factory.MessageFactory(pool).GetMessages([f.name for f in fds.file])
    return pool


def read_delimited(data: bytes):
    pos = 0
    while pos < len(data):
        n, shift = 0, 0
        while True:
            if pos >= len(data):
                raise Failure(f"truncated length at byte {pos}")
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
            if shift > 63:
                raise Failure(f"length varint too long at byte {pos}")
        if pos + n > len(data):
            raise Failure(f"message length {n} at byte {pos} runs past the end")
        yield data[pos : pos + n]
        pos += n


def convert(args) -> None:
    pool = load_pool(args)
    try:
        desc = pool.FindMessageTypeByName(args.type)
    except KeyError as e:
        raise Failure(f"unknown message type {args.type}") from e
    factory = message_factory.MessageFactory(pool)
    cls = factory.GetPrototype(desc)
    # What msggen.canonical_bytes needs to re-serialize Any contents too.
    canon = types.SimpleNamespace(pool=pool, message_class=factory.GetPrototype)
    data = sys.stdin.buffer.read()
    if args.delimited:
        if args.src == "protobuf":
            inputs = list(read_delimited(data))
        else:
            inputs = [line for line in data.split(b"\n") if line.strip()]
    else:
        inputs = [data]
    out = []
    for i, item in enumerate(inputs):
        msg = cls()
        try:
            if args.src == "protobuf":
                msg.ParseFromString(item)
            else:
                text = item.decode("utf-8")
                if not isinstance(json.loads(text), dict):
                    raise ValueError("expected a JSON object")
                json_format.Parse(text, msg, descriptor_pool=pool)
        except Exception as e:  # noqa: BLE001
            raise Failure(f"message {i}: {' '.join(str(e).split())}") from e
        try:
            if args.dst == "protobuf":
                b = msggen.canonical_bytes(msg, canon)
                out.append(encode_varint(len(b)) + b if args.delimited else b)
            else:
                text = json_format.MessageToJson(msg, indent=None, descriptor_pool=pool)
                out.append(text.encode() + b"\n")
        except Exception as e:  # noqa: BLE001
            raise Failure(f"message {i}: cannot write {args.dst}: {' '.join(str(e).split())}") from e
    sys.stdout.buffer.write(b"".join(out))
    sys.stdout.buffer.flush()


def main() -> int:
    parser = argparse.ArgumentParser(prog="optimus")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert", help="convert messages between formats")
    schema = c.add_mutually_exclusive_group(required=True)
    schema.add_argument("--proto", help=".proto file")
    schema.add_argument("--descriptor-set", help="FileDescriptorSet (protoc -o)")
    c.add_argument("-I", dest="include", action="append", help="import directory")
    c.add_argument("--type", required=True)
    c.add_argument("--from", dest="src", choices=["protobuf", "json"], required=True)
    c.add_argument("--to", dest="dst", choices=["protobuf", "json"], required=True)
    c.add_argument("--delimited", action="store_true")
    sub.add_parser("schema", help="show a schema (not implemented here)")
    args = parser.parse_args()
    if args.command != "convert":
        print("optimus: schema: not implemented by the reference", file=sys.stderr)
        return 1
    try:
        convert(args)
    except Failure as e:
        print(f"optimus: convert: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away: stop quietly, like optimus.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
