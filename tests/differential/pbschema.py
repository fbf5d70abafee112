"""Schemas for the differential tests: .proto files compiled by protoc and
loaded into Google's Python protobuf, exactly as optimus is given them.

Each .proto file under test gets its own descriptor set (`protoc
--include_imports -o`) and its own descriptor pool, so Python sees the same
types, extensions and Any targets as optimus does when it is given that file
with `--proto FILE -I ROOT` or that descriptor set with `--descriptor-set`.

The reference implementation is the pure-Python protobuf runtime (set by
conftest.py before protobuf is imported): it writes fields and extensions
together in field-number order, the canonical order of C++ and of optimus,
while the upb backend of protobuf 4.21 writes extensions after all regular
fields and cannot register extensions of a dynamically built pool.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, FileDescriptor


@dataclass
class Schema:
    """One .proto file, compiled, with everything it can see."""

    root: Path
    """Import root (the `-I` directory)."""
    path: Path
    """The .proto file; lies under `root`."""
    descriptor_set: Path
    """`protoc --include_imports --descriptor_set_out` of `path`."""
    pool: descriptor_pool.DescriptorPool
    factory: message_factory.MessageFactory
    file: FileDescriptor
    synthetic_oneofs: set[str] = field(default_factory=set)
    """Full names of the oneofs protoc made for proto3 `optional` fields."""
    messages: list[Descriptor] = field(default_factory=list)
    """Every message type visible from `path`, map entries excluded."""

    @property
    def name(self) -> str:
        """The file's import path, e.g. `sub/imported.proto`."""
        return self.file.name

    def top_level_types(self) -> list[str]:
        return [d.full_name for d in self.file.message_types_by_name.values()]

    def message_class(self, desc_or_name):
        desc = desc_or_name
        if isinstance(desc_or_name, str):
            desc = self.pool.FindMessageTypeByName(desc_or_name)
        return self.factory.GetPrototype(desc)

    def new(self, full_name: str):
        return self.message_class(full_name)()

    def extensions_of(self, desc: Descriptor) -> list[FieldDescriptor]:
        exts = self.pool.FindAllExtensions(desc)
        return sorted(exts, key=lambda f: f.number)

    def is_synthetic(self, oneof) -> bool:
        return oneof.full_name in self.synthetic_oneofs

    def schema_args(self, mode: str, cwd: Path) -> list[str]:
        """optimus arguments that load this schema: mode is `proto` or `descriptor-set`."""
        if mode == "proto":
            return ["--proto", _rel(self.path, cwd), "-I", _rel(self.root, cwd)]
        if mode == "descriptor-set":
            return ["--descriptor-set", str(self.descriptor_set)]
        raise ValueError(mode)


def _rel(p: Path, cwd: Path) -> str:
    try:
        return str(p.resolve().relative_to(cwd.resolve()))
    except ValueError:
        return str(p.resolve())


def compile_schema(root: Path, path: Path, out_dir: Path) -> Schema:
    """Compile `path` (under `root`) with protoc and load it into a fresh pool."""
    rel = path.resolve().relative_to(root.resolve())
    out_dir.mkdir(parents=True, exist_ok=True)
    ds = out_dir / (str(rel).replace("/", "__") + ".pb")
    subprocess.run(
        ["protoc", f"-I{root}", "--include_imports", f"--descriptor_set_out={ds}", str(rel)],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    fds = descriptor_pb2.FileDescriptorSet.FromString(ds.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    # protoc writes dependencies before dependents, so adding in order works.
    for fdp in fds.file:
        pool.Add(fdp)
    factory = message_factory.MessageFactory(pool)
    # Creates every class and registers every extension with its extendee.
    factory.GetMessages([fdp.name for fdp in fds.file])

    synthetic: set[str] = set()
    for fdp in fds.file:
        prefix = f"{fdp.package}." if fdp.package else ""
        for mp in fdp.message_type:
            _collect_synthetic(prefix, mp, synthetic)

    messages: list[Descriptor] = []
    for fdp in fds.file:
        fd = pool.FindFileByName(fdp.name)
        for d in fd.message_types_by_name.values():
            _collect_messages(d, messages)

    return Schema(
        root=root,
        path=path,
        descriptor_set=ds,
        pool=pool,
        factory=factory,
        file=pool.FindFileByName(str(rel)),
        synthetic_oneofs=synthetic,
        messages=messages,
    )


def _collect_synthetic(prefix: str, mp: descriptor_pb2.DescriptorProto, out: set[str]) -> None:
    full = prefix + mp.name
    for fp in mp.field:
        if fp.proto3_optional and fp.HasField("oneof_index"):
            out.add(f"{full}.{mp.oneof_decl[fp.oneof_index].name}")
    for nested in mp.nested_type:
        _collect_synthetic(full + ".", nested, out)


def _collect_messages(d: Descriptor, out: list[Descriptor]) -> None:
    if d.GetOptions().map_entry:
        return
    out.append(d)
    for n in d.nested_types:
        _collect_messages(n, out)


def find_proto_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.proto") if p.is_file())
