"""optimus convert against Google's Python protobuf, on generated messages.

For every top-level message type of every schema (see conftest.py), and with
the schema given both as `--descriptor-set` and as `--proto FILE -I ROOT`:

  binary -> binary   byte-identical to SerializeToString(deterministic=True)
  binary -> JSON     json_format.Parse of each output line equals the original
                     (through msggen.parse_json, which keeps `-0` as -0.0)
  JSON   -> binary   from MessageToJson, with JSON names and with proto
                     names, equals the deterministic serialization
  single messages    the same without --delimited, with pretty-printed,
                     key-sorted JSON

Messages are compared through their deterministic serialization (with Any
contents normalised), which is exact for NaN, -0.0 and map order alike.
A failure names the first differing message and leaves a reproduction in
target/differential/failures/.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex

import pytest
from google.protobuf import json_format, text_format

import msggen
from optimus_cli import delimit, split_delimited

MAX_REPORTED = 3
SINGLE_MESSAGES = 6


def det(msg) -> bytes:
    return msg.SerializeToString(deterministic=True)


_JSON_CACHE: dict = {}


def batch_json(case, msgs, names: bool) -> list[bytes]:
    """MessageToJson of a whole batch, one line each, computed once."""
    key = (id(msgs), names)
    if key not in _JSON_CACHE:
        _JSON_CACHE[key] = (msgs, [to_json(case, m, names=names).encode() for m in msgs])
    return _JSON_CACHE[key][1]


def to_json(case, msg, names: bool, indent=None, sort_keys=False) -> str:
    return json_format.MessageToJson(
        msg, preserving_proto_field_name=names, indent=indent, sort_keys=sort_keys,
        descriptor_pool=case.schema.pool,
    )


def explain_bytes(case, want: bytes, got: bytes) -> str:
    """Where two serializations first differ, and what that means as fields."""
    n = min(len(want), len(got))
    at = next((i for i in range(n) if want[i] != got[i]), n)
    lo = max(0, at - 24)
    lines = [
        f"  {len(want)} bytes wanted, {len(got)} got; first difference at byte {at}",
        f"  want [{lo}:] {want[lo:at + 24].hex()}",
        f"  got  [{lo}:] {got[lo:at + 24].hex()}",
    ]
    parsed = case.schema.new(case.type_name)
    try:
        parsed.ParseFromString(got)
    except Exception as e:  # noqa: BLE001
        lines.append(f"  Python cannot parse the output: {e}")
        return "\n".join(lines)
    wanted = case.schema.new(case.type_name)
    wanted.ParseFromString(want)
    a = text_format.MessageToString(wanted, as_utf8=True, descriptor_pool=case.schema.pool, float_format=".17g")
    b = text_format.MessageToString(parsed, as_utf8=True, descriptor_pool=case.schema.pool, float_format=".17g")
    if a == b:
        lines.append("  the output parses to the same fields: the encoding differs (order, packing, -0.0 or NaN bits)")
    else:
        diff = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "want", "got", lineterm="", n=1))
        lines += ["  " + d[:300] for d in diff[:40]]
    return "\n".join(lines)


def describe(case, msg) -> str:
    text = text_format.MessageToString(msg, as_utf8=True, descriptor_pool=case.schema.pool)
    return text if len(text) < 1500 else text[:1500] + f"... ({len(text)} chars)"


class Repro:
    """Writes one failing message and the command that reproduces it."""

    def __init__(self, request, failure_dir, optimus, case, mode):
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
        self.dir = failure_dir / name
        self.optimus, self.case, self.mode = optimus, case, mode

    def write(self, index, msg, src, dst, stdin: bytes, expected: bytes | None, actual: bytes | None) -> str:
        self.dir.mkdir(parents=True, exist_ok=True)
        ext = {"protobuf": "bin", "json": "json"}
        inp = self.dir / f"msg{index}.in.{ext[src]}"
        inp.write_bytes(stdin)
        (self.dir / f"msg{index}.txtpb").write_text(describe(self.case, msg))
        if expected is not None:
            (self.dir / f"msg{index}.expected.{ext[dst]}").write_bytes(expected)
        if actual is not None:
            (self.dir / f"msg{index}.actual.{ext[dst]}").write_bytes(actual)
        args = ["convert", *self.case.schema.schema_args(self.mode, self.optimus.cwd), "--type",
                self.case.type_name, "--from", src, "--to", dst]
        cmd = f"cd {shlex.quote(str(self.optimus.cwd))} && {shlex.quote(str(self.optimus.binary))} " \
              f"{shlex.join(args)} < {shlex.quote(str(inp))}"
        (self.dir / f"msg{index}.sh").write_text(cmd + "\n")
        return f"reproduce: {cmd}\n  (files in {self.dir})"


@pytest.fixture
def repro(request, failure_dir, optimus, case, mode):
    return Repro(request, failure_dir, optimus, case, mode)


def run_batch(optimus, case, mode, src, dst, inputs: list[bytes], msgs, repro):
    """Convert `inputs` in one delimited call; on failure find the first
    message that fails alone and report it."""
    framed = delimit(inputs) if src == "protobuf" else b"".join(i + b"\n" for i in inputs)
    res = optimus.convert(case.schema.schema_args(mode, optimus.cwd), case.type_name, src, dst, framed)
    if res.returncode == 0:
        return res
    detail = f"batch of {len(inputs)} failed: exit {res.returncode}: {res.stderr_text.strip()[:500]}"
    for i, (data, msg) in enumerate(zip(inputs, msgs)):
        one = optimus.convert(case.schema.schema_args(mode, optimus.cwd), case.type_name, src, dst,
                              data, delimited=False)
        if one.returncode != 0:
            pytest.fail(
                f"{detail}\nfirst failing message alone: #{i}, exit {one.returncode}: "
                f"{one.stderr_text.strip()[:500]}\n{describe(case, msg)}\n"
                + repro.write(i, msg, src, dst, data, None, None)
            )
    pytest.fail(f"{detail}\n(every message converts alone: the delimited framing fails)\n" + res.command_line())


def test_binary_to_binary(optimus, case, mode, batches, repro):
    msgs = batches(case, json_safe=False)
    inputs = [det(m) for m in msgs]
    res = run_batch(optimus, case, mode, "protobuf", "protobuf", inputs, msgs, repro)
    if res.stdout == delimit(inputs):
        return
    try:
        outputs = split_delimited(res.stdout)
    except ValueError as e:
        pytest.fail(f"output is not a delimited stream: {e}")
    problems = []
    if len(outputs) != len(inputs):
        problems.append(f"{len(outputs)} messages out for {len(inputs)} in")
    for i, (want, got) in enumerate(zip(inputs, outputs)):
        if want != got and len(problems) < MAX_REPORTED:
            problems.append(
                f"message #{i}: bytes differ\n{explain_bytes(case, want, got)}\n" + repro.write(i, msgs[i], "protobuf", "protobuf", want, want, got)
            )
    pytest.fail("\n".join(problems))


def test_binary_to_json(optimus, case, mode, batches, repro):
    msgs = batches(case)
    inputs = [det(m) for m in msgs]
    res = run_batch(optimus, case, mode, "protobuf", "json", inputs, msgs, repro)
    lines = res.stdout.decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    assert len(lines) == len(msgs), f"{len(lines)} JSON lines out for {len(msgs)} messages in"
    problems = []
    for i, (line, msg) in enumerate(zip(lines, msgs)):
        try:
            json.loads(line)
            parsed = msggen.parse_json(line, case.schema.new(case.type_name), case.schema.pool)
        except Exception as e:  # noqa: BLE001 - any parse failure is the finding
            why = f"Python cannot parse it: {type(e).__name__}: {e}"
        else:
            if msggen.canonical_bytes(parsed, case.schema) == msggen.canonical_bytes(msg, case.schema):
                continue
            why = "it parses to a different message:\n" + describe(case, parsed)
        if len(problems) < MAX_REPORTED:
            want = batch_json(case, msgs, False)[i]
            problems.append(
                f"message #{i}: {why}\n  got  {line[:600]}\n  want {want[:600].decode()} (Python's form)\n"
                + repro.write(i, msg, "protobuf", "json", inputs[i], want, line.encode())
            )
        else:
            break
    if problems:
        pytest.fail("\n".join(problems))


@pytest.mark.parametrize("names", ["json_names", "proto_names"])
def test_json_to_binary(optimus, case, mode, batches, repro, names):
    msgs = batches(case)
    texts = batch_json(case, msgs, names == "proto_names")
    want = [det(m) for m in msgs]
    res = run_batch(optimus, case, mode, "json", "protobuf", texts, msgs, repro)
    if res.stdout == delimit(want):
        return
    try:
        outputs = split_delimited(res.stdout)
    except ValueError as e:
        pytest.fail(f"output is not a delimited stream: {e}")
    problems = []
    if len(outputs) != len(want):
        problems.append(f"{len(outputs)} messages out for {len(want)} JSON documents in")
    for i, (w, got) in enumerate(zip(want, outputs)):
        if w != got and len(problems) < MAX_REPORTED:
            problems.append(
                f"message #{i}: bytes differ\n  json {texts[i][:600].decode()}\n{explain_bytes(case, w, got)}\n"
                + repro.write(i, msgs[i], "json", "protobuf", texts[i], w, got)
            )
    pytest.fail("\n".join(problems))


def test_single_messages(optimus, case, mode, batches, repro):
    """Without --delimited: one message in, one out; JSON pretty-printed and key-sorted."""
    args = case.schema.schema_args(mode, optimus.cwd)
    for i, msg in enumerate(batches(case)[:SINGLE_MESSAGES]):
        data = det(msg)
        res = optimus.convert(args, case.type_name, "protobuf", "protobuf", data, delimited=False)
        assert res.returncode == 0, f"#{i} protobuf->protobuf: {res.stderr_text}\n" + repro.write(
            i, msg, "protobuf", "protobuf", data, data, None)
        assert res.stdout == data, f"#{i} protobuf->protobuf differs\n{explain_bytes(case, data, res.stdout)}\n" + repro.write(
            i, msg, "protobuf", "protobuf", data, data, res.stdout)

        res = optimus.convert(args, case.type_name, "protobuf", "json", data, delimited=False)
        assert res.returncode == 0, f"#{i} protobuf->json: {res.stderr_text}\n" + repro.write(
            i, msg, "protobuf", "json", data, None, None)
        parsed = msggen.parse_json(res.stdout, case.schema.new(case.type_name), case.schema.pool)
        assert msggen.canonical_bytes(parsed, case.schema) == msggen.canonical_bytes(msg, case.schema), (
            f"#{i} protobuf->json parses to a different message\n" + repro.write(
                i, msg, "protobuf", "json", data, None, res.stdout))

        pretty = to_json(case, msg, names=bool(i % 2), indent=2, sort_keys=True).encode()
        res = optimus.convert(args, case.type_name, "json", "protobuf", pretty, delimited=False)
        assert res.returncode == 0, f"#{i} pretty json->protobuf: {res.stderr_text}\n" + repro.write(
            i, msg, "json", "protobuf", pretty, data, None)
        assert res.stdout == data, f"#{i} pretty json->protobuf differs\n{explain_bytes(case, data, res.stdout)}\n" + repro.write(
            i, msg, "json", "protobuf", pretty, data, res.stdout)
