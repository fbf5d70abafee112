"""Random protobuf messages for any schema, built by walking descriptors.

Nothing here knows the zoo: every field is filled according to its
descriptor (type, cardinality, presence, oneof, map entry, extension), so
the same generator drives any .proto file. Values lean on the edges that
break codecs: varint length boundaries, integer extremes, NaN, infinities,
-0.0, subnormals, empty and non-ASCII strings, all 256 byte values, empty
sub-messages, unknown values of open enums.

Well-known types get values that have a JSON form (a Timestamp within years
1..9999, a Duration within ±10000 years, FieldMask paths that convert to
camelCase and back, finite Struct numbers, Any holding a type of the pool).

Two choices keep every generated message exactly representable in both
binary and JSON, so that any difference is a real one:
  * -0.0 is never put in a field without presence, nor in a map value:
    Google's implementations disagree on what is written (C++ and upb write
    the -0.0 bits; the pure-Python runtime drops such a field, and writes a
    map value of -0.0 as +0.0).
  * A float field never holds ±3.4028235e38 (the largest float): Python's
    JSON parser compares the shortest decimal form, which rounds above the
    maximum, with the maximum as a double and rejects it. The next float
    down (3.4028233e38) is used instead.
  * Messages packed into an Any carry no extensions: Python's JSON printer
    resolves Any contents without the pool's extensions and would drop them.
  * With `json_safe` (the default), repeated extensions are left unset:
    protobuf 4.21's json_format prints them under their plain name instead
    of `[full.name]` and cannot parse them back. Binary-only checks turn
    `json_safe` off and get them too.

Everything comes from one seeded `random.Random`, so a seed reproduces a run.
"""

from __future__ import annotations

import json
import math
import random
import struct

from google.protobuf.descriptor import Descriptor, FieldDescriptor as FD

WKT = "google.protobuf."
WRAPPERS = {
    WKT + n
    for n in (
        "DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value",
        "UInt32Value", "BoolValue", "StringValue", "BytesValue",
    )
}

TIMESTAMP_MIN_S = -62135596800  # 0001-01-01T00:00:00Z
TIMESTAMP_MAX_S = 253402300799  # 9999-12-31T23:59:59Z
DURATION_MAX_S = 315576000000  # 10000 years
NANOS = 1_000_000_000

INT_EDGES = sorted(
    {
        0, 1, 2, 63, 64, 127, 128, 255, 256, 16383, 16384, 2**21 - 1, 2**21,
        2**28 - 1, 2**28, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**35 - 1, 2**35,
        2**53, 2**53 + 1, 2**56, 2**63 - 1, 2**63, 2**64 - 1,
        -1, -2, -63, -64, -65, -128, -129, -(2**31), -(2**31) - 1, -(2**53) - 1,
        -(2**63),
    }
)

DOUBLE_EDGES = [
    0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 0.5, 1e-7, 1e21, 1e22, 123456789.125,
    2.0**53, 2.0**53 + 2, 2.0**63, 2.0**64, -(2.0**63),
    5e-324, -5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
    1.7976931348623157e308, -1.7976931348623157e308,
    3.4028234663852886e38, 3.4028235677973366e38, 1.401298464324817e-45,
    math.inf, -math.inf, math.nan,
]

FLOAT_EDGES = [
    0.0, -0.0, 1.0, -1.0, 0.5, 0.1, -0.1, 1e-7, 16777216.0, 16777218.0,
    1.401298464324817e-45, -1.401298464324817e-45, 1.1754943508222875e-38,
    3.4028234663852886e38, -3.4028234663852886e38, 1e30, 1e-30,
    math.inf, -math.inf, math.nan,
]

STRING_EDGES = [
    "", "a", "hello, world", "héllo wörld", "日本語のテキスト", "😀🎉", "\U0010ffff",
    "\x00", "\x01\x1f\x7f", '"quoted"', "back\\slash", "/slash/", "\u2028\u2029",
    "<tag>&amp;'", "\ufeff", "tab\tnew\nline\r", "\ud7ff\ue000\uffff", "é" * 70,
    "x" * 127, "y" * 128, "\u0080\u07ff\u0800",
]

BYTES_EDGES = [b"", b"\x00", b"\xff", bytes(range(256)), b"\x80" * 3, b"hello", b"\xfb\xff\xfe"]

# (first, last) code point ranges to draw random text from; no surrogates.
TEXT_RANGES = [
    (0x20, 0x7E), (0x20, 0x7E), (0x20, 0x7E), (0x00, 0x1F), (0xA0, 0xFF),
    (0x100, 0x7FF), (0x800, 0xD7FF), (0x4E00, 0x9FFF), (0xE000, 0xFFFF),
    (0x10000, 0x10FFFF), (0x1F300, 0x1FAFF),
]

INT_RANGES = {
    FD.TYPE_INT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FD.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FD.TYPE_INT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FD.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FD.TYPE_UINT32: (0, 2**32 - 1),
    FD.TYPE_FIXED32: (0, 2**32 - 1),
    FD.TYPE_UINT64: (0, 2**64 - 1),
    FD.TYPE_FIXED64: (0, 2**64 - 1),
}

MESSAGE_TYPES = (FD.TYPE_MESSAGE, FD.TYPE_GROUP)


def is_map(f: FD) -> bool:
    return f.type == FD.TYPE_MESSAGE and f.message_type.GetOptions().map_entry


def has_presence(f: FD, schema) -> bool:
    """Whether an unset field and a field set to its default differ on the wire."""
    if f.label == FD.LABEL_REPEATED:
        return False
    if f.type in MESSAGE_TYPES or f.containing_oneof is not None or f.is_extension:
        return True
    return f.file.syntax == "proto2"


FLOAT32_MAX = 3.4028234663852886e38
FLOAT32_BELOW_MAX = 3.4028232635611926e38


def to_float32(x: float) -> float:
    v = struct.unpack("<f", struct.pack("<f", x))[0]
    if abs(v) == FLOAT32_MAX:
        return math.copysign(FLOAT32_BELOW_MAX, v)  # see the module doc
    return v


class MessageGenerator:
    """Makes random messages of any type of one `pbschema.Schema`."""

    def __init__(self, schema, rng: random.Random, max_depth: int = 5, json_safe: bool = True):
        self.schema = schema
        self.json_safe = json_safe
        self.rng = rng
        self.max_depth = max_depth
        self.edge = False  # prefer edge values for the message being built
        self.density = 0.5
        self.big_left = 1
        self.extensions = True
        self.any_targets = [
            d for d in schema.messages if not _needs_unreachable_required(d)
        ]

    # ------------------------------------------------------------ messages

    def messages(self, full_name: str, count: int) -> list:
        """`count` messages of `full_name`: an empty one, a dense one, then a mix."""
        out = []
        for i in range(count):
            if i == 0:
                style = ("empty", 0.0, False)
            elif i == 1:
                style = ("dense", 1.0, False)
            elif i % 4 == 2:
                style = ("edge", 0.7, True)
            else:
                style = ("random", self.rng.choice([0.05, 0.2, 0.4, 0.6, 0.9]), False)
            _, self.density, self.edge = style
            self.big_left = 1
            msg = self.schema.new(full_name)
            self.fill(msg, 0)
            out.append(msg)
        return out

    def fill(self, msg, depth: int) -> None:
        desc: Descriptor = msg.DESCRIPTOR
        name = desc.full_name
        if name.startswith(WKT) and self._fill_wkt(msg, name, depth):
            return
        density = self.density * (0.7**depth)
        seen_oneofs = set()
        for f in desc.fields:
            oneof = f.containing_oneof
            if oneof is not None and not self.schema.is_synthetic(oneof):
                if oneof.full_name in seen_oneofs:
                    continue
                seen_oneofs.add(oneof.full_name)
                if self.rng.random() < density:
                    self.set_field(msg, self.rng.choice(oneof.fields), depth)
                continue
            if f.label == FD.LABEL_REQUIRED or self._wants(f, density, depth):
                self.set_field(msg, f, depth)
        if self.extensions and desc.extension_ranges:
            for f in self.schema.extensions_of(desc):
                if self.json_safe and f.label == FD.LABEL_REPEATED:
                    continue  # see the module doc
                if self._wants(f, density, depth):
                    self.set_field(msg, f, depth)

    def _wants(self, f: FD, density: float, depth: int) -> bool:
        if f.type in MESSAGE_TYPES and depth >= self.max_depth:
            return False
        return self.rng.random() < density

    # ------------------------------------------------------------ fields

    def set_field(self, msg, f: FD, depth: int) -> None:
        if is_map(f):
            container = _get(msg, f)
            kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            for _ in range(self._count(depth)):
                key = self.scalar(kf, presence=True)
                if vf.type in MESSAGE_TYPES:
                    sub = container[key]
                    self.fill_sub(sub, depth + 1)
                else:
                    container[key] = self.scalar(vf, presence=False)  # see the module doc
        elif f.label == FD.LABEL_REPEATED:
            container = _get(msg, f)
            n = self._count(depth)
            if f.type in MESSAGE_TYPES:
                for _ in range(n):
                    self.fill_sub(container.add(), depth + 1)
            else:
                container.extend(self.scalar(f, presence=True) for _ in range(n))
        elif f.type in MESSAGE_TYPES:
            sub = _get(msg, f)
            self.fill_sub(sub, depth + 1)
        else:
            value = self.scalar(f, presence=has_presence(f, self.schema))
            if f.is_extension:
                msg.Extensions[f] = value
            else:
                setattr(msg, f.name, value)

    def fill_sub(self, sub, depth: int) -> None:
        self.fill(sub, depth)
        sub.SetInParent()  # present even when nothing inside was set

    def _count(self, depth: int) -> int:
        """How many repeated elements or map entries: mostly few, sometimes
        many near the top, and fewer the deeper we are, so that recursive
        types stay small."""
        r = self.rng.random()
        if r < 0.15:
            return 0
        if depth >= 3:
            return 1 if r < 0.8 else 2
        if r < 0.45:
            return 1
        if r < 0.85 or depth >= 1:
            return self.rng.randint(2, 4)
        if r < 0.97 or not self._take_big():
            return self.rng.randint(5, 20)
        return self.rng.randint(50, 150)

    def _take_big(self) -> bool:
        """One large list or long string per message at most, to keep sizes sane."""
        if self.big_left <= 0:
            return False
        self.big_left -= 1
        return True

    # ------------------------------------------------------------ scalars

    def scalar(self, f: FD, presence: bool):
        t = f.type
        rng = self.rng
        edge = self.edge or rng.random() < 0.25
        if t in INT_RANGES:
            lo, hi = INT_RANGES[t]
            if edge:
                return rng.choice([v for v in INT_EDGES if lo <= v <= hi])
            bits = rng.randint(0, hi.bit_length())
            v = rng.getrandbits(bits) if bits else 0
            if lo < 0 and rng.random() < 0.3:
                v = -v
            return max(lo, min(hi, v))
        if t == FD.TYPE_DOUBLE:
            v = self._double(edge)
        elif t == FD.TYPE_FLOAT:
            v = self._float(edge)
        elif t == FD.TYPE_BOOL:
            return rng.random() < 0.5
        elif t == FD.TYPE_STRING:
            return self.text()
        elif t == FD.TYPE_BYTES:
            if edge:
                return rng.choice(BYTES_EDGES)
            return rng.randbytes(rng.choice([0, 1, 3, 8, 20, 64, 200]))
        elif t == FD.TYPE_ENUM:
            return self.enum_value(f)
        else:
            raise AssertionError(f"unhandled field type {t} of {f.full_name}")
        if not presence and v == 0.0 and math.copysign(1.0, v) < 0:
            v = 0.0  # see the module doc: -0.0 only where presence is explicit
        return v

    def _double(self, edge: bool) -> float:
        rng = self.rng
        if edge:
            return rng.choice(DOUBLE_EDGES)
        r = rng.random()
        if r < 0.4:
            v = struct.unpack("<d", rng.randbytes(8))[0]
            return math.nan if math.isnan(v) else v  # one NaN: JSON has one
        if r < 0.7:
            return round(rng.uniform(-1e6, 1e6), rng.randint(0, 6))
        return float(rng.randint(-(2**40), 2**40))

    def _float(self, edge: bool) -> float:
        rng = self.rng
        if edge:
            return to_float32(rng.choice(FLOAT_EDGES))
        r = rng.random()
        if r < 0.5:
            v = struct.unpack("<f", rng.randbytes(4))[0]
            return math.nan if math.isnan(v) else to_float32(v)
        return to_float32(round(rng.uniform(-1e4, 1e4), rng.randint(0, 4)))

    def text(self) -> str:
        rng = self.rng
        if self.edge or rng.random() < 0.25:
            return rng.choice(STRING_EDGES)
        if rng.random() < 0.03 and self._take_big():
            n = rng.randint(1000, 5000)
        else:
            n = rng.choice([0, 1, 2, 5, 10, 30, 100, 300])
        lo, hi = rng.choice(TEXT_RANGES)
        if rng.random() < 0.5:  # one script per string, or a mix
            return "".join(chr(rng.randint(lo, hi)) for _ in range(n))
        return "".join(chr(rng.randint(*rng.choice(TEXT_RANGES))) for _ in range(n))

    def enum_value(self, f: FD) -> int:
        rng = self.rng
        et = f.enum_type
        if et.full_name == WKT + "NullValue":
            return 0  # JSON writes null whatever the number: keep it exact
        known = [v.number for v in et.values]
        closed = et.file.syntax == "proto2"
        if not closed and rng.random() < 0.1:
            v = rng.choice([2, 7, 99, 1000, -3, -1000, 2**31 - 1, -(2**31), 123456])
            if v not in known:
                return v
        return rng.choice(known)

    # ------------------------------------------------------------ well-known types

    def _fill_wkt(self, msg, name: str, depth: int) -> bool:
        rng = self.rng
        if name == WKT + "Timestamp":
            msg.seconds = rng.choice(
                [0, -1, 1, TIMESTAMP_MIN_S, TIMESTAMP_MAX_S, rng.randint(TIMESTAMP_MIN_S, TIMESTAMP_MAX_S),
                 rng.randint(0, 2**32)]
            )
            msg.nanos = self._nanos(positive=True)
        elif name == WKT + "Duration":
            s = rng.choice([0, 1, -1, DURATION_MAX_S, -DURATION_MAX_S, rng.randint(-DURATION_MAX_S, DURATION_MAX_S),
                            rng.randint(-100000, 100000)])
            n = self._nanos(positive=True)
            if s < 0 or (s == 0 and rng.random() < 0.5):
                n = -n
            msg.seconds, msg.nanos = s, n
        elif name == WKT + "FieldMask":
            for _ in range(self._count(depth)):
                msg.paths.append(".".join(self._snake() for _ in range(rng.randint(1, 3))))
        elif name == WKT + "Struct":
            self._struct(msg, depth)
        elif name == WKT + "Value":
            self._value(msg, depth)
        elif name == WKT + "ListValue":
            for _ in range(self._count(depth)):
                self._value(msg.values.add(), depth + 1)
        elif name == WKT + "Any":
            self._any(msg, depth)
        elif name == WKT + "Empty":
            pass
        elif name in WRAPPERS:
            if rng.random() < 0.9:
                msg.value = self.scalar(msg.DESCRIPTOR.fields_by_name["value"], presence=False)
        else:
            return False
        return True

    def _nanos(self, positive: bool) -> int:
        rng = self.rng
        kind = rng.randint(0, 3)
        if kind == 0:
            return 0
        if kind == 1:
            return rng.randint(0, 999) * 1_000_000
        if kind == 2:
            return rng.randint(0, 999_999) * 1000
        return rng.randint(0, NANOS - 1)

    def _snake(self) -> str:
        rng = self.rng
        words = ["".join(chr(rng.randint(97, 122)) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 3))]
        return "_".join(words)

    def _struct(self, msg, depth: int) -> None:
        for _ in range(self._count(depth)):
            key = self.text() if self.rng.random() < 0.5 else self._snake()
            self._value(msg.fields[key], depth + 1)

    def _value(self, msg, depth: int) -> None:
        rng = self.rng
        kinds = ["null", "number", "string", "bool"]
        if depth < self.max_depth:
            kinds += ["struct", "list"]
        kind = rng.choice(kinds)
        if kind == "null":
            msg.null_value = 0
        elif kind == "number":
            v = self._double(self.edge or rng.random() < 0.2)
            msg.number_value = v if math.isfinite(v) else 0.5  # JSON numbers are finite
        elif kind == "string":
            msg.string_value = self.text()
        elif kind == "bool":
            msg.bool_value = rng.random() < 0.5
        elif kind == "struct":
            self._struct(msg.struct_value, depth + 1)
            msg.struct_value.SetInParent()
        else:
            for _ in range(self._count(depth)):
                self._value(msg.list_value.values.add(), depth + 1)
            msg.list_value.SetInParent()

    def _any(self, msg, depth: int) -> None:
        rng = self.rng
        if rng.random() < 0.1 or depth >= self.max_depth or not self.any_targets:
            return  # an empty Any: `{}` in JSON
        wkts = [d for d in self.any_targets if d.full_name.startswith(WKT)]
        pool = wkts if wkts and rng.random() < 0.4 else self.any_targets
        target = rng.choice(pool)
        inner = self.schema.message_class(target)()
        saved = self.extensions
        self.extensions = False
        try:
            self.fill(inner, depth + 1)
        finally:
            self.extensions = saved
        prefix = "type.googleapis.com/" if rng.random() < 0.9 else "example.com/types/"
        msg.type_url = prefix + target.full_name
        msg.value = inner.SerializeToString(deterministic=True)


def _get(msg, f: FD):
    return msg.Extensions[f] if f.is_extension else getattr(msg, f.name)


def _needs_unreachable_required(d: Descriptor, seen=None) -> bool:
    """True if a message of `d` cannot be completed within the depth budget
    (a required field cycle); such types are never packed into an Any."""
    seen = set() if seen is None else seen
    if d.full_name in seen:
        return True
    seen = seen | {d.full_name}
    for f in d.fields:
        if f.label == FD.LABEL_REQUIRED and f.type in MESSAGE_TYPES:
            if _needs_unreachable_required(f.message_type, seen):
                return True
    return False


# ---------------------------------------------------------------- comparing


def _int_or_negative_zero(text: str):
    # `-0` is how C++ (and optimus) write -0.0; Python's json reads it as the
    # integer 0 and would lose the sign.
    return -0.0 if text == "-0" else int(text)


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate JSON key {k!r}")
        out[k] = v
    return out


def parse_json(text, msg, pool):
    """`json_format.Parse`, except that `-0` stays -0.0 in float fields."""
    from google.protobuf import json_format

    if isinstance(text, bytes):
        text = text.decode("utf-8")
    js = json.loads(text, parse_int=_int_or_negative_zero, object_pairs_hook=_no_duplicates)
    return json_format.ParseDict(js, msg, descriptor_pool=pool)


def canonical_bytes(msg, schema) -> bytes:
    """Deterministic bytes of `msg` with every Any's contents re-serialized
    deterministically too, so two messages that mean the same compare equal
    whatever order map entries had inside an Any."""
    copy = type(msg)()
    copy.CopyFrom(msg)
    _canonicalize_any(copy, schema)
    return copy.SerializeToString(deterministic=True)


def _canonicalize_any(msg, schema) -> None:
    desc = msg.DESCRIPTOR
    if desc.full_name == WKT + "Any" and msg.type_url:
        try:
            target = schema.pool.FindMessageTypeByName(msg.type_url.rsplit("/", 1)[-1])
        except KeyError:
            return
        inner = schema.message_class(target)()
        inner.ParseFromString(msg.value)
        _canonicalize_any(inner, schema)
        msg.value = inner.SerializeToString(deterministic=True)
        return
    for f, value in msg.ListFields():
        if f.type not in MESSAGE_TYPES:
            continue
        if is_map(f):
            if f.message_type.fields_by_name["value"].type in MESSAGE_TYPES:
                for k in value:
                    _canonicalize_any(value[k], schema)
        elif f.label == FD.LABEL_REPEATED:
            for item in value:
                _canonicalize_any(item, schema)
        else:
            _canonicalize_any(value, schema)
