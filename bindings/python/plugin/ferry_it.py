"""The Python participant of ferry's cross-language tests.

Produces and checks every case of docs/cases.md (grammar and value
formula) through the ferry package's ordinary API: arrays are built with
DeviceArray.from_buffers over host bytes or device Buffers (copied on a
device stream, exported with the recorded event), streams with
DeviceArrayStream.from_batches, and checkers import with DeviceArray.from_c /
DeviceArrayStream.from_c and read values after to_host().

The C shim (ferry_it_python.c) calls the entry points below with raw struct
addresses; every failure is a FerryError (errno code + message) that the shim
turns into the return code and ferry_it_last_error. Python as the host (the
pytest matrix) calls the same functions.
"""
from __future__ import annotations

import errno
import struct
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import ferry
from ferry import DeviceArray, DeviceArrayStream, FerryError, Schema
from ferry import _native

TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
         "float64", "bool", "utf8", "binary", "list_int32", "struct_int32_utf8", "dict_int32_utf8")
FORMATS = {"int8": "c", "int16": "s", "int32": "i", "int64": "l", "uint8": "C", "uint16": "S",
           "uint32": "I", "uint64": "L", "float32": "f", "float64": "g", "bool": "b", "utf8": "u",
           "binary": "z", "list_int32": "+l", "struct_int32_utf8": "+s", "dict_int32_utf8": "i"}
PACK = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H",
        "uint32": "I", "uint64": "Q", "float32": "f", "float64": "d"}
DEVICES = ("cpu", "sim", "cuda", "rocm")
MASK32 = 0xFFFFFFFF


def invalid(message: str) -> FerryError:
    return FerryError(errno.EINVAL, message)


def mismatch(message: str) -> FerryError:
    return FerryError(errno.EIO, message)


# ---- case strings -------------------------------------------------------------------------

@dataclass
class Case:
    type: str
    length: int = 16
    nulls: int = 0
    seed: int = 1
    offset: int = 0
    device: str = "cpu"
    batches: int = 3
    fail: Optional[Tuple[str, int]] = None  # ("export"|"get_schema"|"get_next", N)

    @property
    def null_count(self) -> int:
        k = self.nulls
        return 0 if k == 0 else sum(1 for i in range(self.length) if i % k == k - 1)

    def is_null(self, i: int) -> bool:
        return self.nulls > 0 and i % self.nulls == self.nulls - 1

    def with_seed(self, seed: int) -> "Case":
        return Case(self.type, self.length, self.nulls, seed & MASK32, self.offset, self.device,
                    self.batches, self.fail)


def _number(key: str, text: str, low: int, high: int) -> int:
    if not text or not (text.isdigit() or (text[0] == "-" and text[1:].isdigit())):
        raise invalid(f"{key}={text}: not a number")
    value = int(text)
    if not low <= value <= high:
        raise invalid(f"{key}={text}: out of range ({low} to {high})")
    return value


def parse(spec: str) -> Case:
    """Parses a case string, naming the offending part when it is wrong."""
    parts = spec.split(":")
    if parts[0] not in TYPES:
        raise invalid(f"unknown type {parts[0]!r} in case {spec!r}")
    case = Case(parts[0])
    for part in parts[1:]:
        key, eq, value = part.partition("=")
        if not eq:
            raise invalid(f"{part!r} in case {spec!r} is not KEY=VALUE")
        if key == "length":
            case.length = _number(key, value, 0, 1 << 31)
        elif key == "nulls":
            case.nulls = _number(key, value, 0, 1 << 31)
        elif key == "seed":
            case.seed = _number(key, value, 0, MASK32)
        elif key == "offset":
            case.offset = _number(key, value, 0, 1 << 31)
        elif key == "batches":
            case.batches = _number(key, value, 0, 1 << 20)
        elif key == "device":
            if value not in DEVICES:
                raise invalid(f"unknown device {value!r} in case {spec!r} (cpu, sim, cuda, rocm)")
            case.device = value
        elif key == "fail":
            if value in ("export", "get_schema"):
                case.fail = (value, 0)
            elif value.startswith("get_next@"):
                case.fail = ("get_next", _number("fail=get_next@", value[9:], 1, 1 << 31))
            elif value.startswith("consumer@"):
                # async streams only: the checking consumer refuses task N; the
                # producer (and every synchronous entry point) ignores it
                _number("fail=consumer@", value[9:], 1, 1 << 62)
            else:
                raise invalid(f"unknown failure {value!r} in case {spec!r}")
        elif key in ("window", "cancel"):
            # async streams only (the checking consumer's); accepted, checked, ignored here
            _number(key, value, 1 if key == "window" else 0, 1 << 62)
        else:
            raise invalid(f"unknown key {key!r} in case {spec!r}")
    return case


# ---- the value formula ----------------------------------------------------------------

def u(seed: int, i: int) -> int:
    return (seed * 2654435761 + i * 40503) & MASK32


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def value(type_: str, seed: int, i: int) -> Any:
    """The value of logical element i (cases.md, "Values")."""
    x = u(seed, i)
    if type_ in ("int8", "int16", "int32"):
        return _signed(x, {"int8": 8, "int16": 16, "int32": 32}[type_])
    if type_ in ("uint8", "uint16", "uint32"):
        return x & ((1 << {"uint8": 8, "uint16": 16, "uint32": 32}[type_]) - 1)
    if type_ in ("int64", "uint64"):
        wide = (x << 32) | u(seed, i + 1)
        return _signed(wide, 64) if type_ == "int64" else wide
    if type_ == "float32":
        return float(_signed(x, 16)) / 4
    if type_ == "float64":
        return float(_signed(x, 32)) / 1024
    if type_ == "bool":
        return bool(x & 1)
    if type_ == "utf8":
        return "" if i % 5 == 0 else str(x % 100000)
    if type_ == "binary":
        return value("utf8", seed, i).encode()
    raise AssertionError(type_)


# ---- producing ------------------------------------------------------------------------

class _Builder:
    """Makes buffers on the case's device: host bytes on the CPU, otherwise
    device memory filled by copies queued on one producer stream."""

    streams: dict = {}

    def __init__(self, device_name: str) -> None:
        self.device = ferry.device(device_name)
        self.stream = None
        if not self.device.is_cpu:
            # One stream per device for the life of the process: the copies
            # stay pending until a consumer waits (the sim's strict mode).
            self.stream = _Builder.streams.get(self.device)
            if self.stream is None:
                self.stream = _Builder.streams[self.device] = self.device.create_stream()

    def buffer(self, data: bytes) -> Any:
        if self.device.is_cpu:
            return bytearray(data)
        buf = self.device.allocate(max(len(data), 1))
        buf.copy_from_host(bytes(data), stream=self.stream)
        return buf

    def array(self, schema: Schema, length: int, buffers: List[Optional[bytes]], null_count: int = 0,
              offset: int = 0, children=(), dictionary=None, top: bool = False) -> DeviceArray:
        made = [None if b is None else self.buffer(b) for b in buffers]
        return DeviceArray.from_buffers(schema, length, made, null_count=null_count, offset=offset,
                                        children=children, dictionary=dictionary, device=self.device,
                                        stream=self.stream if top else None)


def _validity(case: Case) -> Optional[bytes]:
    if case.nulls == 0:
        return None
    bits = bytearray((case.length + case.offset + 7) // 8)
    for i in range(case.length):
        if not case.is_null(i):
            slot = i + case.offset
            bits[slot >> 3] |= 1 << (slot & 7)
    return bytes(bits)


def _strings(values: List[bytes]) -> Tuple[bytes, bytes]:
    offsets = [0]
    for v in values:
        offsets.append(offsets[-1] + len(v))
    return struct.pack(f"<{len(offsets)}i", *offsets), b"".join(values)


def _schema(case: Case) -> Schema:
    t = case.type
    if t == "list_int32":
        return Schema.from_format("+l", t, children=[Schema.from_format("i", "item")])
    if t == "struct_int32_utf8":
        return Schema.from_format("+s", t, children=[Schema.from_format("i", "a"),
                                                    Schema.from_format("u", "b")])
    if t == "dict_int32_utf8":
        return Schema.from_format("i", t, dictionary=Schema.from_format("u", None))
    return Schema.from_format(FORMATS[t], t)


def _flat(builder: _Builder, schema: Any, type_: str, seed: int, length: int, offset: int = 0,
          shift: int = 0, validity: Optional[bytes] = None, null_count: int = 0,
          top: bool = False) -> DeviceArray:
    """A primitive, bool or string array of `length` elements at `offset`;
    physical slot p holds the value of element p - shift (zeros or empty
    strings before that): shift is the top-level offset, for struct children
    too, whose own offset stays 0."""
    slots = length + offset
    if type_ in PACK:
        values = [0 if p < shift else value(type_, seed, p - shift) for p in range(slots)]
        data = struct.pack(f"<{slots}{PACK[type_]}", *values)
        return builder.array(schema, length, [validity, data], null_count, offset, top=top)
    if type_ == "bool":
        bits = bytearray((slots + 7) // 8)
        for p in range(shift, slots):
            if value("bool", seed, p - shift):
                bits[p >> 3] |= 1 << (p & 7)
        return builder.array(schema, length, [validity, bytes(bits)], null_count, offset, top=top)
    blobs = [b"" if p < shift else value("binary", seed, p - shift) for p in range(slots)]
    offsets, data = _strings(blobs)
    return builder.array(schema, length, [validity, offsets, data or b"\0"], null_count, offset, top=top)


def make_array(case: Case) -> DeviceArray:
    """The case's array on its device, with the producer's event when the
    device has streams."""
    builder = _Builder(case.device)
    schema = _schema(case)
    t, n, o, seed = case.type, case.length, case.offset, case.seed
    validity, nc = _validity(case), case.null_count
    if t == "list_int32":
        sizes = [0] * o + [u(seed, i) % 4 for i in range(n)]
        offsets = [0]
        for s in sizes:
            offsets.append(offsets[-1] + s)
        child = _flat(builder, Schema.from_format("i", "item"), "int32", seed, offsets[-1])
        return builder.array(schema, n, [validity, struct.pack(f"<{len(offsets)}i", *offsets)], nc, o,
                             children=[child], top=True)
    if t == "struct_int32_utf8":
        a = _flat(builder, Schema.from_format("i", "a"), "int32", seed, n + o, 0, o)
        b = _flat(builder, Schema.from_format("u", "b"), "utf8", (seed + 1) & MASK32, n + o, 0, o)
        return builder.array(schema, n, [validity], nc, o, children=[a, b], top=True)
    if t == "dict_int32_utf8":
        words = [f"d{k}".encode() for k in range(7)]
        offsets, data = _strings(words)
        dictionary = builder.array(Schema.from_format("u"), 7, [None, offsets, data])
        indices = [0] * o + [u(seed, i) % 7 for i in range(n)]
        return builder.array(schema, n, [validity, struct.pack(f"<{len(indices)}i", *indices)], nc, o,
                             dictionary=dictionary, top=True)
    return _flat(builder, schema, t, seed, n, o, o, validity, nc, top=True)


# ---- checking -------------------------------------------------------------------------

def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise mismatch(message)


def _device_type(case: Case) -> int:
    return ferry.device("sim:0").type if case.device == "sim" else ferry.device(case.device).type


def check_array_object(case: Case, arr: DeviceArray, where: str = "array") -> None:
    """Checks every property and value of `arr` against the case; the array is
    read on the host after waiting on its event (to_host copies)."""
    _expect(arr.device.type == _device_type(case),
            f"{where}: device {arr.device.name}, expected {case.device}")
    fmt = FORMATS[case.type]
    _expect(arr.format == fmt, f"{where}: format {arr.format!r}, expected {fmt!r}")
    _expect(len(arr) == case.length, f"{where}: length {len(arr)}, expected {case.length}")
    _expect(arr.offset == case.offset, f"{where}: offset {arr.offset}, expected {case.offset}")
    _expect(arr.null_count == case.null_count,
            f"{where}: null_count {arr.null_count}, expected {case.null_count}")
    host = arr.to_host()
    try:
        _check_values(case, host, where)
    finally:
        if host is not arr:
            host.close()


def _check_values(case: Case, host: DeviceArray, where: str) -> None:
    valid = host.is_valid()
    for i in range(case.length):
        _expect(valid[i] == (not case.is_null(i)),
                f"{where}: element {i} is {'valid' if valid[i] else 'null'}, expected the opposite")
    t, seed = case.type, case.seed
    if t == "list_int32":
        child = host.child(0)
        _expect(child.format == "i", f"{where}: list child format {child.format!r}")
        offsets = host.buffer(1).cast("i")
        child_values = child.to_pylist()
        for i in range(case.length):
            if case.is_null(i):
                continue
            start, end = offsets[host.offset + i], offsets[host.offset + i + 1]
            _expect(end - start == u(seed, i) % 4, f"{where}: list {i} has {end - start} elements")
            for j in range(start, end):
                _expect(child_values[j] == value("int32", seed, j),
                        f"{where}: list {i} child position {j} is {child_values[j]}")
        return
    actual = host.to_pylist()
    for i in range(case.length):
        if case.is_null(i):
            continue
        if t == "struct_int32_utf8":
            want = {"a": value("int32", seed, i), "b": value("utf8", (seed + 1) & MASK32, i)}
        elif t == "dict_int32_utf8":
            want = f"d{u(seed, i) % 7}"
        else:
            want = value(t, seed, i)
        _expect(actual[i] == want, f"{where}: element {i} is {actual[i]!r}, expected {want!r}")


# ---- entry points (raw struct addresses; FerryError on failure) --------------------------------

def export_array(spec: str, schema_address: int, array_address: int) -> None:
    case = parse(spec)
    if case.fail is not None and case.fail[0] == "export":
        raise FerryError(errno.EIO, "injected failure at export")
    arr = make_array(case)
    arr.export_to_c(array_address, schema_address, move=True)
    arr.close()


def check_array(spec: str, schema_address: int, array_address: int) -> None:
    arr = DeviceArray.from_c(array_address, schema_address)  # owns them from here on
    with arr:
        check_array_object(parse(spec), arr)


class _CaseStream:
    """A stream producer for a case, failing where the case says."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.calls = 0
        self.schema = _schema(case)

    def get_schema(self) -> Schema:
        if self.case.fail == ("get_schema", 0):
            raise FerryError(errno.EIO, "injected failure at get_schema")
        return self.schema

    def batches(self):
        while True:
            self.calls += 1
            if self.case.fail is not None and self.case.fail == ("get_next", self.calls):
                raise FerryError(errno.EIO, f"injected failure at get_next {self.calls}")
            if self.calls > self.case.batches:
                return
            yield make_array(self.case.with_seed(self.case.seed + self.calls - 1))


def make_stream(case: Case) -> DeviceArrayStream:
    producer = _CaseStream(case)
    device = "sim:0" if case.device == "sim" else case.device
    return DeviceArrayStream.from_batches(producer.get_schema, producer.batches(), device=device)


def export_stream(spec: str, address: int) -> None:
    case = parse(spec)
    if case.fail is not None and case.fail[0] == "export":
        raise FerryError(errno.EIO, "injected failure at export")
    ferry.device("sim:0" if case.device == "sim" else case.device)  # refuse unavailable devices now
    make_stream(case).export_to_c(address)


def check_stream(spec: str, address: int) -> None:
    stream = DeviceArrayStream.from_c(address)
    with stream:
        check_stream_object(parse(spec), stream)


def check_stream_object(case: Case, stream: DeviceArrayStream) -> None:
    """Reads the stream to its end, or to the injected failure the case names."""
    try:
        schema = stream.schema
    except FerryError as exc:
        expected = "injected failure at get_schema"
        if case.fail == ("get_schema", 0) and expected in exc.message:
            return
        raise
    _expect(case.fail != ("get_schema", 0), "get_schema succeeded, expected the injected failure")
    _expect(schema.format == FORMATS[case.type], f"stream schema format {schema.format!r}")
    _expect(schema.name == case.type, f"stream schema name {schema.name!r}, expected {case.type!r}")
    calls = 0
    while True:
        calls += 1
        try:
            batch = stream.next()
        except FerryError as exc:
            expected = f"injected failure at get_next {calls}"
            if case.fail == ("get_next", calls) and expected in exc.message:
                return
            raise
        if case.fail == ("get_next", calls):
            raise mismatch(f"get_next call {calls} succeeded, expected the injected failure")
        if batch is None:
            break
        with batch:
            check_array_object(case.with_seed(case.seed + calls - 1), batch, f"batch {calls - 1}")
    _expect(calls - 1 == case.batches, f"the stream gave {calls - 1} batches, expected {case.batches}")


def live_allocations() -> int:
    """Python objects that C still holds for this runtime's exports (buffers
    kept alive by release hooks, stream producers)."""
    return _native.live_refs()


# ---- benchmark entry points (ferry_it_bench.h) ------------------------------------------

_BENCH_CACHE: dict = {}
BENCH_MAX_LENGTH = 1 << 28  # FERRY_IT_BENCH_MAX_LENGTH: 1 GiB of int32
# One schema for every export: made by bench_prepare, which the C shim calls
# once before the first benchmark call (ferry_it_python.c says why there).
_BENCH_SCHEMA: Optional[Schema] = None


def bench_prepare() -> None:
    global _BENCH_SCHEMA
    _BENCH_SCHEMA = Schema.from_format("i", "int32")


def bench_noop(x: int) -> int:
    return x + 1


def _bench_buffer(length: int) -> bytearray:
    """The cached buffer of `length` elements; FerryError(EINVAL) for a bad length."""
    if not 0 <= length <= BENCH_MAX_LENGTH:
        raise invalid(f"bench: length {length} is outside 0..{BENCH_MAX_LENGTH}")
    data = _BENCH_CACHE.get(length)
    if data is None:
        # Allocated once per length; every element holds the length (which
        # fits in an int32 here), so a consumer can check element 0.
        data = _BENCH_CACHE[length] = bytearray(struct.pack("=i", length)) * length
    return data


def _bench_array(length: int) -> DeviceArray:
    return DeviceArray.from_buffers(_BENCH_SCHEMA, length, [None, _bench_buffer(length)])


def _bench_check_first(arr: DeviceArray) -> None:
    """Reads the length and, when not empty, element 0 (it must equal the length)."""
    n = len(arr)
    if n == 0:
        return
    data = arr.buffer(1)
    if data is None:
        raise invalid("bench: NULL data buffer")
    first = data.cast("i")[0]
    if first != n:
        raise invalid(f"bench: element 0 is {first}, expected the length {n}")


def bench_export_array(length: int, schema_address: int, array_address: int) -> None:
    _bench_array(length).export_to_c(array_address, schema_address, move=True)


def bench_consume_array(schema_address: int, array_address: int) -> None:
    with DeviceArray.from_c(array_address, schema_address) as arr:
        _bench_check_first(arr)


def bench_export_stream(length: int, batches: int, address: int) -> None:
    if batches < 0:
        raise invalid(f"bench: {batches} batches (must be >= 0)")
    _bench_buffer(length)  # refuses a bad length before anything is exported
    DeviceArrayStream.from_batches(_BENCH_SCHEMA, (_bench_array(length) for _ in range(batches))).export_to_c(address)


def bench_consume_stream(address: int) -> None:
    with DeviceArrayStream.from_c(address) as stream:
        for batch in stream:
            with batch:
                _bench_check_first(batch)
