"""How the optimus CLI behaves around conversions: help, errors, exit codes.

Bad input of any kind must end with exit status 1 and exactly one line on
stderr starting `error:` or `optimus:`; a panic (exit 101) or a signal is
always a bug. Usage errors exit 2 (clap's convention). Random and mutated
inputs must never crash the converter.
"""

from __future__ import annotations

import random
import subprocess
import threading

import pytest
from google.protobuf import json_format

from optimus_cli import delimit

import msggen

ZOO = "testdata/zoo"
SCALARS = ["--proto", f"{ZOO}/scalars.proto", "-I", ZOO]
SINGULAR = "zoo.scalars.Singular"


def assert_one_line_error(res, what: str):
    err = res.stderr_text
    assert res.returncode == 1, f"{what}: exit {res.returncode}, want 1; stderr: {err[:800]}\n{res.command_line()}"
    lines = err.rstrip("\n").split("\n")
    assert len(lines) == 1 and lines[0].strip(), f"{what}: want exactly one line on stderr, got {len(lines)}:\n{err[:800]}"
    assert lines[0].startswith(("error:", "optimus:")), f"{what}: stderr must start with 'error:' or 'optimus:': {lines[0]}"


def assert_no_crash(res, what: str):
    assert res.returncode in (0, 1), (
        f"{what}: exit {res.returncode} (101 is a panic, negative a signal); stderr: {res.stderr_text[:800]}\n"
        + res.command_line()
    )
    if res.returncode == 1:
        assert_one_line_error(res, what)


# ---------------------------------------------------------------- help


def test_top_level_help(optimus):
    res = optimus.run(["--help"])
    assert res.returncode == 0, res.stderr_text
    out = res.stdout.decode()
    assert "convert" in out and "schema" in out, out


@pytest.mark.parametrize("sub", ["convert", "schema"])
def test_subcommand_help(optimus, sub):
    res = optimus.run([sub, "--help"])
    assert res.returncode == 0, res.stderr_text
    out = res.stdout.decode()
    assert out.strip(), "empty help"
    if sub == "convert":
        for flag in ("--proto", "--descriptor-set", "--type", "--from", "--to", "--delimited", "-I"):
            assert flag in out, f"`convert --help` does not mention {flag}:\n{out}"


# ---------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["convert"],
        ["convert", *SCALARS, "--type", SINGULAR, "--from", "yaml", "--to", "json"],
        ["convert", *SCALARS, "--type", SINGULAR, "--from", "json", "--to", "json", "--no-such-flag"],
        ["no-such-command"],
    ],
    ids=["nothing", "convert-nothing", "bad-format", "bad-flag", "bad-command"],
)
def test_usage_errors_exit_2(optimus, args):
    res = optimus.run(args)
    assert res.returncode == 2, f"exit {res.returncode}, want 2 (usage error); stderr: {res.stderr_text[:500]}"


# ---------------------------------------------------------------- bad input


BAD_BINARY = {
    "truncated-string": bytes([14 << 3 | 2, 5]) + b"ab",
    "truncated-varint": bytes([1 << 3 | 0, 0x80]),
    "overlong-varint": bytes([1 << 3 | 0]) + b"\xff" * 10 + b"\x01",
    "wire-type-7": bytes([1 << 3 | 7, 0]),
    "wire-type-6": bytes([1 << 3 | 6, 0]),
    "field-number-0": b"\x00\x01",
    "bad-utf8-string": bytes([14 << 3 | 2, 2]) + b"\xc3\x28",
    "truncated-fixed64": bytes([8 << 3 | 1]) + b"\x01\x02\x03",
    "end-group-without-start": bytes([2 << 3 | 4]),
    "length-over-4gb": bytes([15 << 3 | 2]) + b"\xff\xff\xff\xff\x1f",
}

BAD_JSON = {
    "unclosed": b"{",
    "array-top-level": b"[]",
    "string-for-int": b'{"i32": "x"}',
    "fraction-for-int": b'{"i32": 1.5}',
    "int32-overflow": b'{"i32": 2147483648}',
    "uint-negative": b'{"u32": -1}',
    "unknown-field": b'{"noSuchField": 1}',
    "bad-base64": b'{"byt": "!!!"}',
    "trailing-garbage": b'{} x',
    "bool-as-string": b'{"b": "yes"}',
    "duplicate-field": b'{"i32": 1, "i32": 2}',
    "not-utf8": b'{"str": "\xff"}',
}


@pytest.mark.parametrize("name", sorted(BAD_BINARY))
def test_bad_binary_is_one_line_error(optimus, name):
    res = optimus.convert(SCALARS, SINGULAR, "protobuf", "json", BAD_BINARY[name], delimited=False)
    assert_one_line_error(res, name)


@pytest.mark.parametrize("name", sorted(BAD_JSON))
def test_bad_json_is_one_line_error(optimus, name):
    res = optimus.convert(SCALARS, SINGULAR, "json", "protobuf", BAD_JSON[name], delimited=False)
    assert_one_line_error(res, name)


def test_bad_delimited_framing_is_one_line_error(optimus):
    # A length of 5 with only 2 bytes after it.
    res = optimus.convert(SCALARS, SINGULAR, "protobuf", "protobuf", b"\x05ab")
    assert_one_line_error(res, "delimited length past the end")


def test_bad_json_line_in_delimited_batch(optimus):
    res = optimus.convert(SCALARS, SINGULAR, "json", "protobuf", b'{"i32": 1}\n{"i32": \n')
    assert_one_line_error(res, "second JSON line broken")


@pytest.mark.parametrize(
    "args",
    [
        ["--proto", f"{ZOO}/no_such_file.proto", "-I", ZOO, "--type", SINGULAR],
        [*SCALARS, "--type", "zoo.scalars.NoSuchType"],
        ["--descriptor-set", "testdata/zoo/scalars.proto", "--type", SINGULAR],
        ["--descriptor-set", "/nonexistent/set.pb", "--type", SINGULAR],
    ],
    ids=["missing-proto", "unknown-type", "descriptor-set-not-a-set", "missing-descriptor-set"],
)
def test_schema_errors_are_one_line_errors(optimus, args):
    res = optimus.run(["convert", *args, "--from", "protobuf", "--to", "json"])
    assert_one_line_error(res, " ".join(args))


def test_proto_syntax_error_is_one_line_error(optimus, tmp_path):
    bad = tmp_path / "bad.proto"
    bad.write_text('syntax = "proto3";\nmessage M { int32 x = ; }\n')
    res = optimus.run(["convert", "--proto", str(bad), "-I", str(tmp_path), "--type", "M",
                       "--from", "protobuf", "--to", "json"])
    assert_one_line_error(res, "syntax error in .proto")


# ---------------------------------------------------------------- edges of the framing


def test_empty_input(optimus):
    res = optimus.convert(SCALARS, SINGULAR, "protobuf", "json", b"", delimited=False)
    assert res.returncode == 0, res.stderr_text
    assert res.stdout.strip() == b"{}", res.stdout
    res = optimus.convert(SCALARS, SINGULAR, "protobuf", "protobuf", b"", delimited=False)
    assert res.returncode == 0 and res.stdout == b"", (res.returncode, res.stdout, res.stderr_text)
    for src in ("protobuf", "json"):
        res = optimus.convert(SCALARS, SINGULAR, src, "protobuf", b"")
        assert res.returncode == 0 and res.stdout == b"", (src, res.returncode, res.stdout, res.stderr_text)


def test_delimited_empty_messages(optimus):
    res = optimus.convert(SCALARS, SINGULAR, "protobuf", "json", b"\x00\x00\x00")
    assert res.returncode == 0, res.stderr_text
    assert res.stdout.decode().split() == ["{}", "{}", "{}"], res.stdout


def test_closed_stdout_is_quiet(optimus):
    """A reader that goes away (`| head`) ends optimus quietly with status 0."""
    payload = delimit([b"\x72\x10" + b"x" * 16] * 200_000)
    p = subprocess.Popen(
        [*optimus.prefix, str(optimus.binary), "convert", *SCALARS, "--type", SINGULAR, "--from", "protobuf", "--to", "json",
         "--delimited"],
        cwd=optimus.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )

    def feed():
        try:
            p.stdin.write(payload)
            p.stdin.close()
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    first = p.stdout.read(100)
    p.stdout.close()
    err = p.stderr.read()
    rc = p.wait(timeout=60)
    writer.join(timeout=60)
    assert first, "no output before the pipe closed"
    assert rc == 0 and not err, f"exit {rc}, stderr {err[:300]!r}"


# ---------------------------------------------------------------- never crash


ROBUSTNESS_TYPES = [
    ("maps.proto", "zoo.maps.Values"),
    ("proto2.proto", "zoo.p2.Proto2All"),
    ("wkt.proto", "zoo.wkt.Wkt"),
    ("oneofs.proto", "zoo.oneofs.Choice"),
]


def _mutations(rng: random.Random, data: bytes, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        b = bytearray(data)
        op = rng.randint(0, 3)
        if op == 0 and b:
            b = b[: rng.randrange(len(b))]
        elif op == 1 and b:
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 2:
            pos = rng.randint(0, len(b))
            b[pos:pos] = rng.randbytes(rng.randint(1, 8))
        else:
            b = bytearray(rng.randbytes(rng.randint(0, 64)))
        out.append(bytes(b))
    return out


@pytest.mark.parametrize("file,type_name", ROBUSTNESS_TYPES, ids=[t for _, t in ROBUSTNESS_TYPES])
def test_mutated_input_never_crashes(optimus, zoo_schema, file, type_name):
    schema = zoo_schema(file)
    rng = random.Random(f"mutate:{type_name}")
    gen = msggen.MessageGenerator(schema, rng)
    msgs = gen.messages(type_name, 12)[1:]
    args = ["--descriptor-set", str(schema.descriptor_set)]
    for msg in msgs:
        data = msg.SerializeToString(deterministic=True)
        for bad in _mutations(rng, data, 6):
            res = optimus.convert(args, type_name, "protobuf", "json", bad, delimited=False)
            assert_no_crash(res, f"mutated binary {bad.hex()[:200]}")
        text = json_format.MessageToJson(msg, indent=None, descriptor_pool=schema.pool).encode()
        for bad in _mutations(rng, text, 6):
            res = optimus.convert(args, type_name, "json", "protobuf", bad, delimited=False)
            assert_no_crash(res, f"mutated JSON {bad[:200]!r}")
