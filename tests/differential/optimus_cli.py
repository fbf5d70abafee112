"""Running `optimus convert` and framing its input and output.

Batches use `--delimited`: binary messages are each preceded by their length
as a varint; JSON documents are one per line. One process then converts a
few hundred messages, which keeps the suite fast.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TIMEOUT_S = 120


def encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def delimit(messages: list[bytes]) -> bytes:
    return b"".join(encode_varint(len(m)) + m for m in messages)


def split_delimited(data: bytes) -> list[bytes]:
    """Inverse of `delimit`; raises ValueError on a malformed stream."""
    out, pos = [], 0
    while pos < len(data):
        n, shift = 0, 0
        while True:
            if pos >= len(data):
                raise ValueError(f"truncated length varint at byte {pos}")
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
            if shift > 63:
                raise ValueError(f"length varint too long at byte {pos}")
        if pos + n > len(data):
            raise ValueError(f"message of {n} bytes at byte {pos} runs past the end ({len(data) - pos} left)")
        out.append(data[pos : pos + n])
        pos += n
    return out


@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    cwd: Path

    def command_line(self, stdin_file: str | None = None) -> str:
        cmd = shlex.join(self.args)
        return f"(cd {shlex.quote(str(self.cwd))} && {cmd}{' < ' + shlex.quote(stdin_file) if stdin_file else ''})"

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")


class Optimus:
    """The `optimus` binary, run from the repository root."""

    def __init__(self, binary: Path, cwd: Path):
        self.binary = binary
        self.cwd = cwd
        # A Python stand-in (reference_cli.py) runs under this interpreter.
        self.prefix = [sys.executable] if binary.suffix == ".py" else []

    def run(self, args: list[str], stdin: bytes = b"", timeout: float = TIMEOUT_S) -> Result:
        cmd = [*self.prefix, str(self.binary), *args]
        env = dict(os.environ, RUST_BACKTRACE="0")
        p = subprocess.run(cmd, input=stdin, capture_output=True, cwd=self.cwd, timeout=timeout, env=env)
        return Result(cmd, p.returncode, p.stdout, p.stderr, self.cwd)

    def convert(self, schema_args: list[str], type_name: str, src: str, dst: str, stdin: bytes,
                delimited: bool = True) -> Result:
        args = ["convert", *schema_args, "--type", type_name, "--from", src, "--to", dst]
        if delimited:
            args.append("--delimited")
        return self.run(args, stdin)
