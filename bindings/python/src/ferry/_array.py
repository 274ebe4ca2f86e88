"""Schema, DeviceArray and read-only views of their children.

A DeviceArray owns one ArrowDeviceArray (and its schema) through the C half
ferry._native.ArrayBase. Exports through the protocols share the data and
leave the array usable; close() (or `with`) drops this object's reference
at once, and the data is released when the last export is released too.
"""
from __future__ import annotations

import struct as _struct
import sys
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

from . import _device, _errors, _native
from ._device import Buffer, Device, DeviceLike, Stream, device
from .raw import CONSTANTS, call, ffi, lib

_EINVAL = 22
_FLAG_NULLABLE = 2

# Element formats readable as machine numbers: memoryview cast codes.
_CAST = {
    "c": "b", "s": "h", "i": "i", "l": "q", "C": "B", "S": "H", "I": "I", "L": "Q",
    "e": "e", "f": "f", "g": "d",
    "tdD": "i", "tdm": "q", "tts": "i", "ttm": "i", "ttu": "q", "ttn": "q",
    "tDs": "q", "tDm": "q", "tDu": "q", "tDn": "q",
}

if sys.byteorder != "little":  # pragma: no cover - ferry's buffers are native-endian
    raise ImportError("ferry's Python package reads buffers as little-endian")


def _pinned(ctype: str, pin: Any, address: int) -> Any:
    """A cffi pointer of `ctype` at `address` that keeps `pin` (a
    ferry._native.Pin: one reference to the structs) alive for as long as the
    pointer lives, so a reader's pointer stays valid while another thread
    closes the object it came from."""
    return ffi.gc(ffi.cast(ctype, address), lambda _raw: pin)


def _cast_code(fmt: str) -> Optional[str]:
    if fmt in _CAST:
        return _CAST[fmt]
    if fmt.startswith("ts") and len(fmt) >= 4 and fmt[3] == ":":
        return "q"  # timestamps: int64 storage
    return None


class Schema(_native.SchemaBase, _device.Closeable):
    """An Arrow schema (a field: format, name, flags, children, dictionary).

    Build one with Schema.from_format(...), import one with
    ferry.schema(obj) (anything with __arrow_c_schema__), or get an array's
    with DeviceArray.schema. Export with __arrow_c_schema__()."""

    __slots__ = ()

    @staticmethod
    def from_format(fmt: str, name: Optional[str] = None, *, nullable: bool = True,
                    children: Sequence["Schema"] = (), dictionary: Optional["Schema"] = None,
                    metadata: Optional[dict] = None) -> "Schema":
        """A schema for the C data interface format string `fmt` ("i", "u",
        "+l", "+s", ...); children and dictionary are shared, not copied."""
        raw = lib.ferry_schema_new()
        if raw == ffi.NULL:
            raise MemoryError("ferry_schema_new")
        try:
            call(lib.ferry_schema_init, raw, fmt.encode(), name.encode() if name is not None else ffi.NULL,
                 _FLAG_NULLABLE if nullable else 0, len(children))
            for i, child in enumerate(children):
                child._export_into(int(ffi.cast("uintptr_t", lib.ferry_schema_child(raw, i))))
            if dictionary is not None:
                out = ffi.new("struct ArrowSchema**")
                call(lib.ferry_schema_allocate_dictionary, raw, out)
                dictionary._export_into(int(ffi.cast("uintptr_t", out[0])))
            for key, value in (metadata or {}).items():
                call(lib.ferry_schema_add_metadata, raw, str(key).encode(), str(value).encode())
            return _native.import_schema(Schema, int(ffi.cast("uintptr_t", raw)))
        finally:
            lib.ferry_schema_free(raw)  # released by the import, or released here on failure

    @staticmethod
    def from_c(address: int) -> "Schema":
        """Takes ownership of the ArrowSchema at `address` (moved; the source
        is left released)."""
        return _native.import_schema(Schema, int(address))

    def _keeper(self) -> Tuple[Any, Any]:
        return self, self._pin()

    def _ptr(self) -> Any:
        pin = self._pin()  # ClosedError once closed
        return _pinned("struct ArrowSchema*", pin, pin._schema_address)

    @property
    def format(self) -> str:
        return ffi.string(self._ptr().format).decode()

    @property
    def name(self) -> Optional[str]:
        name = self._ptr().name
        return None if name == ffi.NULL else ffi.string(name).decode()

    @property
    def flags(self) -> int:
        return int(self._ptr().flags)

    @property
    def nullable(self) -> bool:
        return bool(self.flags & _FLAG_NULLABLE)

    @property
    def n_children(self) -> int:
        return int(self._ptr().n_children)

    def child(self, i: int) -> "SchemaView":
        if not 0 <= i < self.n_children:
            raise IndexError(f"child {i} of a schema with {self.n_children} children")
        return SchemaView(self._keeper(), self._ptr().children[i])

    @property
    def children(self) -> List["SchemaView"]:
        return [self.child(i) for i in range(self.n_children)]

    @property
    def dictionary(self) -> Optional["SchemaView"]:
        d = self._ptr().dictionary
        return None if d == ffi.NULL else SchemaView(self._keeper(), d)

    @property
    def metadata(self) -> dict:
        return _metadata(self._ptr())

    def close(self) -> None:
        """Drops this object's reference to the schema."""
        self._close()

    def __repr__(self) -> str:
        if self.closed:
            return "ferry.Schema(closed)"
        return f"ferry.Schema({_describe(self._ptr())})"


class _View:
    """A borrowed part of an owner (a Schema or a DeviceArray) holding a
    ferry._native.Pin of it; `_what` names the owner in the ClosedError that
    every read raises once the owner is closed."""

    __slots__ = ("_owner", "_pin")
    _what = ""

    def __init__(self, keeper: Tuple[Any, Any]) -> None:
        self._owner, self._pin = keeper

    def _keeper(self) -> Tuple[Any, Any]:
        return self._owner, self._pin

    def _open(self, raw: Any) -> Any:
        """`raw` (a struct of the owner's) while the owner is open."""
        if self._owner.closed:
            raise _native.ClosedError(f"the {self._what} is closed")
        return raw


class SchemaView(_View):
    """A child or dictionary of a Schema (borrowed): usable until the Schema
    is closed (then ClosedError); it pins the schema's structs, so a read
    that began before another thread's close() finishes on valid memory."""

    __slots__ = ("_raw",)
    _what = "schema"

    def __init__(self, keeper: Tuple[Any, Any], raw: Any) -> None:
        super().__init__(keeper)
        self._raw = raw

    def _ptr(self) -> Any:
        return self._open(self._raw)

    format = Schema.format
    name = Schema.name
    flags = Schema.flags
    nullable = Schema.nullable
    n_children = Schema.n_children
    child = Schema.child
    children = Schema.children
    dictionary = Schema.dictionary
    metadata = Schema.metadata

    def __repr__(self) -> str:
        return f"ferry.SchemaView({_describe(self._ptr())})"


def _describe(s: Any) -> str:
    text = ffi.string(s.format).decode()
    if s.name != ffi.NULL and s.name[0] != b"\0":
        text = f"{ffi.string(s.name).decode()}: {text}"
    if s.n_children:
        text += "<" + ", ".join(_describe(s.children[i]) for i in range(s.n_children)) + ">"
    if s.dictionary != ffi.NULL:
        text += " dictionary " + _describe(s.dictionary)
    return text


def _metadata(s: Any) -> dict:
    out = {}
    length = ffi.new("int32_t*")
    for i in range(lib.ferry_schema_metadata_count(s)):
        key = lib.ferry_schema_metadata_key(s, i, length)
        key_text = ffi.unpack(key, length[0]).decode()
        value = lib.ferry_schema_metadata_value(s, i, length)
        out[key_text] = ffi.unpack(value, length[0]).decode()
    return out


def schema(obj: Any) -> Schema:
    """A Schema from anything with __arrow_c_schema__ (pyarrow, nanoarrow,
    polars types and fields) or an "arrow_schema" PyCapsule."""
    if isinstance(obj, Schema):
        return obj
    capsule = obj.__arrow_c_schema__() if hasattr(obj, "__arrow_c_schema__") else obj
    return _native.import_schema(Schema, capsule)


class _ArrayReader:
    """Read accessors shared by DeviceArray and ArrayView (subclasses give
    _schema_ptr(), _array_ptr() and _device())."""

    __slots__ = ()

    @property
    def format(self) -> str:
        return ffi.string(self._schema_ptr().format).decode()

    @property
    def offset(self) -> int:
        return int(self._array_ptr().offset)

    @property
    def null_count(self) -> int:
        return int(self._array_ptr().null_count)

    @property
    def n_buffers(self) -> int:
        return int(self._array_ptr().n_buffers)

    @property
    def n_children(self) -> int:
        return int(self._array_ptr().n_children)

    def child(self, i: int) -> "ArrayView":
        if not 0 <= i < self.n_children:
            raise IndexError(f"child {i} of an array with {self.n_children} children")
        return ArrayView(self._keeper(), self._schema_ptr().children[i], self._array_ptr().children[i],
                         self._device())

    @property
    def children(self) -> List["ArrayView"]:
        return [self.child(i) for i in range(self.n_children)]

    @property
    def dictionary(self) -> Optional["ArrayView"]:
        d = self._array_ptr().dictionary
        if d == ffi.NULL:
            return None
        return ArrayView(self._keeper(), self._schema_ptr().dictionary, d, self._device())

    def buffer_address(self, i: int) -> int:
        """Address of buffer i (0 for a NULL buffer); device memory too."""
        a = self._array_ptr()
        if not 0 <= i < a.n_buffers:
            raise IndexError(f"buffer {i} of an array with {a.n_buffers} buffers")
        return int(ffi.cast("uintptr_t", a.buffers[i]))

    def buffer_size(self, i: int) -> int:
        """Size in bytes of buffer i, from the format, length and offset (for
        string and list layouts the last offset is read, through the device
        backend when the memory is not host memory)."""
        dev = self._device()
        out = ffi.new("int64_t*")
        call(lib.ferry_array_buffer_size, self._schema_ptr(), self._array_ptr(), dev.type, dev.id, i, out)
        return int(out[0])

    def buffer(self, i: int) -> Optional[memoryview]:
        """A read-only, zero-copy memoryview of buffer i, or None for a NULL
        buffer; the view keeps the array's data alive. Host memory only: for
        device memory use to_host() first (the sim device's memory is host
        memory, but read it only after wait()). DeviceArray's own is in C."""
        return self._keeper()[1]._buffer_of(int(ffi.cast("uintptr_t", self._schema_ptr())),
                                         int(ffi.cast("uintptr_t", self._array_ptr())), i)

    def is_valid(self) -> List[bool]:
        """Validity of each element (all True without a validity bitmap).
        Refuses more than MAX_PYLIST_LENGTH elements (see to_pylist)."""
        length = len(self)
        _check_range(self, 0, length)
        return _validity(self, self.offset, self.offset + length)

    def to_pylist(self) -> List[Any]:
        """The values as Python objects (None for nulls), as pyarrow's
        to_pylist gives them: numbers (float16 too), bool, str (utf8 and
        utf8 views), bytes (binary, binary views, fixed-size binary),
        decimal.Decimal (decimal32/64/128/256), lists (list, large_list,
        fixed_size_list, list_view, large_list_view), dicts (structs), lists
        of (key, value) tuples (maps), the member's value (sparse and dense
        unions), dictionary values, run-end encoded values expanded, and
        intervals (months: int; day_time: (days, milliseconds);
        month_day_nano: (months, days, nanoseconds)). Temporal types are
        their integer storage. Host memory only (see buffer()).

        An array (or a child range) longer than MAX_PYLIST_LENGTH elements
        is refused with InvalidArgumentError instead of being read: the C
        interface carries no CPU buffer sizes, so a length no buffer can
        back (a bool array claiming 2^62 elements over 64 bytes) would
        otherwise be read past its memory. Below that limit the reader
        trusts the sizes the layout declares, as every consumer must."""
        length = len(self)
        return _values(self, 0, length)

    def __len__(self) -> int:
        return int(self._array_ptr().length)


# The most elements a reader that materialises an array (to_pylist,
# is_valid) reads; docs/bindings.md, section 2.
MAX_PYLIST_LENGTH = 2 ** 31


def _too_long(what: str, n: int) -> _errors.FerryError:
    return _errors.InvalidArgumentError(
        _EINVAL, f"{what} of {n} elements is more than to_pylist reads (MAX_PYLIST_LENGTH = 2^31): "
                 "no buffer of a real array is that large, or read it with buffer()")


def _check_range(node: Any, start: int, stop: int) -> None:
    """Refuses a range outside [0, len(node)] or longer than the limit."""
    length, offset = len(node), node.offset
    if length < 0 or offset < 0:
        raise _errors.InvalidArgumentError(_EINVAL, f"length {length} or offset {offset} is negative")
    if not 0 <= start <= stop <= length:
        raise _errors.InvalidArgumentError(
            _EINVAL, f"elements [{start}, {stop}) of a {node.format!r} array of length {length} "
                     "(an offset, size or run end points outside the child)")
    if stop - start > MAX_PYLIST_LENGTH or offset + stop > 2 ** 62:
        raise _too_long(f"a {node.format!r} array of length {length} (offset {offset})", stop - start)


def _validity(node: Any, lo: int, hi: int) -> List[bool]:
    """Validity of physical slots [lo, hi) of `node`."""
    fmt = node.format
    if fmt == "n":
        return [False] * (hi - lo)
    if node.n_buffers == 0 or fmt.startswith("+u") or fmt == "+r":
        return [True] * (hi - lo)
    bitmap = node.buffer(0)
    if bitmap is None or hi == lo:
        return [True] * (hi - lo)
    return [bool((bitmap[i >> 3] >> (i & 7)) & 1) for i in range(lo, hi)]


def _signed(raw: bytes) -> int:
    return int.from_bytes(raw, "little", signed=True)


def _decimal(unscaled: int, scale: int) -> Any:
    """The exact decimal.Decimal of unscaled * 10^-scale (no context rounding)."""
    import decimal
    digits = tuple(int(d) for d in str(abs(unscaled)))
    return decimal.Decimal((1 if unscaled < 0 else 0, digits, -scale))


def _half_float(bits: int) -> float:
    """IEEE 754 binary16 to float by hand (memoryview cannot cast 'e'
    before CPython 3.12)."""
    sign = -1.0 if bits & 0x8000 else 1.0
    exponent = (bits >> 10) & 0x1F
    fraction = bits & 0x3FF
    if exponent == 0:
        return sign * fraction * 2.0 ** -24
    if exponent == 31:
        return sign * float("inf") if fraction == 0 else float("nan")
    return sign * (1 + fraction / 1024) * 2.0 ** (exponent - 15)


def _values(node: _ArrayReader, start: int, stop: int) -> List[Any]:
    """Values of logical elements [start, stop) of `node`."""
    _check_range(node, start, stop)
    fmt = node.format
    offset = node.offset
    lo, hi = start + offset, stop + offset
    n = stop - start
    if fmt == "n":
        return [None] * n
    if n == 0:
        return []
    valid = _validity(node, lo, hi) if node.null_count != 0 else None
    code = _cast_code(fmt)
    if node.dictionary is not None:
        indices = node.buffer(1).cast(code)[lo:hi].tolist()
        dictionary = node.dictionary
        size = len(dictionary)
        for k, ok in zip(indices, valid or [True] * n):
            if ok and not 0 <= k < size:  # a null's index may be anything
                raise _errors.InvalidArgumentError(
                    _EINVAL, f"dictionary index {k} is outside the dictionary of length {size}")
        words = _values(dictionary, 0, size)
        values = [words[k] if 0 <= k < size else None for k in indices]
    elif fmt == "e":
        raw = node.buffer(1)
        values = [_half_float(h) for h in raw[lo * 2:hi * 2].cast("H").tolist()]
    elif code is not None:
        values = node.buffer(1).cast(code)[lo:hi].tolist()
    elif fmt == "b":
        data = node.buffer(1)
        values = [bool((data[i >> 3] >> (i & 7)) & 1) for i in range(lo, hi)]
    elif fmt in ("u", "z", "U", "Z"):
        offsets = node.buffer(1).cast("i" if fmt in ("u", "z") else "q")
        data = node.buffer(2)
        raw = [bytes(data[offsets[i]:offsets[i + 1]]) for i in range(lo, hi)]
        values = [r.decode("utf-8") for r in raw] if fmt in ("u", "U") else raw
    elif fmt in ("vu", "vz"):
        # 16-byte views: length, then the bytes inline (up to 12) or a
        # prefix, the variadic buffer index and the offset in it.
        views = node.buffer(1)
        raw = []
        for i in range(lo, hi):
            length, = _struct.unpack_from("<i", views, i * 16)
            if length <= 12:
                raw.append(bytes(views[i * 16 + 4:i * 16 + 4 + length]))
            else:
                index, begin = _struct.unpack_from("<ii", views, i * 16 + 8)
                if not 0 <= index < node.n_buffers - 3:
                    raise _errors.InvalidArgumentError(
                        _EINVAL, f"view {i} names variadic buffer {index} of {node.n_buffers - 3}")
                part = node.buffer(2 + index)
                if begin < 0 or begin + length > len(part):
                    raise _errors.InvalidArgumentError(
                        _EINVAL, f"view {i} reads bytes [{begin}, {begin + length}) of a "
                                 f"{len(part)}-byte buffer")
                raw.append(bytes(part[begin:begin + length]))
        values = [r.decode("utf-8") for r in raw] if fmt == "vu" else raw
    elif fmt.startswith("w:"):
        width = int(fmt[2:])
        data = node.buffer(1)
        values = [bytes(data[i * width:(i + 1) * width]) for i in range(lo, hi)]
    elif fmt.startswith("d:"):
        parts = fmt[2:].split(",")
        scale = int(parts[1])
        width = int(parts[2]) // 8 if len(parts) > 2 else 16
        data = node.buffer(1)
        values = [_decimal(_signed(bytes(data[i * width:(i + 1) * width])), scale) for i in range(lo, hi)]
    elif fmt in ("tiM",):
        values = node.buffer(1).cast("i")[lo:hi].tolist()
    elif fmt == "tiD":
        pairs = node.buffer(1).cast("i")[2 * lo:2 * hi].tolist()
        values = [(pairs[2 * k], pairs[2 * k + 1]) for k in range(n)]
    elif fmt == "tin":
        data = node.buffer(1)
        values = [_struct.unpack_from("<iiq", data, 16 * i) for i in range(lo, hi)]
    elif fmt in ("+l", "+L", "+m"):
        offsets = node.buffer(1).cast("i" if fmt != "+L" else "q")
        child = node.child(0)
        values = [_values(child, offsets[i], offsets[i + 1]) for i in range(lo, hi)]
        if fmt == "+m":  # entries: struct<key, value>, as pyarrow's (key, value) tuples
            values = [[tuple(entry.values()) for entry in row] for row in values]
    elif fmt in ("+vl", "+vL"):
        cast = "i" if fmt == "+vl" else "q"
        offsets, sizes = node.buffer(1).cast(cast), node.buffer(2).cast(cast)
        child = node.child(0)
        values = []
        for i in range(lo, hi):
            if sizes[i] < 0:
                raise _errors.InvalidArgumentError(_EINVAL, f"list view {i} has size {sizes[i]}")
            values.append(_values(child, offsets[i], offsets[i] + sizes[i]))
    elif fmt.startswith("+w:"):
        size = int(fmt[3:])
        child = node.child(0)
        flat = _values(child, lo * size, hi * size)
        values = [flat[k * size:(k + 1) * size] for k in range(n)]
    elif fmt == "+s":
        children_schemas = node._schema_ptr().children
        names = [str(k) if children_schemas[k].name == ffi.NULL else ffi.string(children_schemas[k].name).decode()
                 for k in range(node.n_children)]
        columns = [_values(c, lo, hi) for c in node.children]
        values = [dict(zip(names, row)) for row in zip(*columns)] if columns else [{}] * n
    elif fmt.startswith("+us:") or fmt.startswith("+ud:"):
        type_codes = [int(c) for c in fmt[4:].split(",")] if len(fmt) > 4 else []
        children = node.children
        type_ids = node.buffer(0).cast("b")[lo:hi].tolist()
        dense = fmt.startswith("+ud:")
        member_offsets = node.buffer(1).cast("i")[lo:hi].tolist() if dense else None
        values = []
        for k, type_id in enumerate(type_ids):
            if type_id not in type_codes:
                raise _errors.InvalidArgumentError(
                    _EINVAL, f"union slot {lo + k} has type id {type_id}, not one of {type_codes}")
            child = children[type_codes.index(type_id)]
            j = member_offsets[k] if dense else lo + k
            values.append(_values(child, j, j + 1)[0])
    elif fmt == "+r":
        run_ends_node, values_node = node.child(0), node.child(1)
        run_ends = _values(run_ends_node, 0, len(run_ends_node))
        import bisect
        runs = [bisect.bisect_right(run_ends, i) for i in range(lo, hi)]
        if runs[-1] >= min(len(run_ends), len(values_node)):
            raise _errors.InvalidArgumentError(
                _EINVAL, f"slot {hi - 1} is past the last run end {run_ends[-1] if run_ends else 0}")
        first = runs[0]
        run_values = _values(values_node, first, runs[-1] + 1)
        values = [run_values[j - first] for j in runs]
    else:
        raise NotImplementedError(f"to_pylist does not read format {fmt!r} yet")
    if valid is not None:
        values = [v if ok else None for v, ok in zip(values, valid)]
    return values


class ArrayView(_View, _ArrayReader):
    """A child or dictionary of a DeviceArray: borrowed and read-only, usable
    until the DeviceArray is closed (then ClosedError). It pins the array's
    structs and data (one reference), so a read that began before another
    thread's close() finishes on valid memory."""

    __slots__ = ("_schema", "_array", "_dev")
    _what = "array"

    def __init__(self, keeper: Tuple[Any, Any], schema_raw: Any, array_raw: Any, dev: Device) -> None:
        super().__init__(keeper)
        self._schema = schema_raw
        self._array = array_raw
        self._dev = dev

    def _schema_ptr(self) -> Any:
        return self._open(self._schema)

    def _array_ptr(self) -> Any:
        return self._open(self._array)

    def buffer(self, i: int) -> Optional[memoryview]:
        a = self._array_ptr()  # ClosedError once the array is closed
        return self._pin._buffer_of(int(ffi.cast("uintptr_t", self._schema)),
                                    int(ffi.cast("uintptr_t", a)), i)

    def _device(self) -> Device:
        return self._dev

    def __repr__(self) -> str:
        return f"ferry.ArrayView({self.format!r}, length={len(self)})"


BufferLike = Union[None, Buffer, bytes, bytearray, memoryview, Any]


class DeviceArray(_native.ArrayBase, _ArrayReader):
    """An Arrow array on a device (the CPU, the sim device, a GPU), owning an
    ArrowDeviceArray and its schema.

    Get one from any producer: ferry.device_array(obj) (Arrow PyCapsules,
    DLPack, CUDA Array Interface), ferry.from_dlpack(x), DeviceArray.from_c()
    for raw structs, or build one with DeviceArray.from_buffers(). Hand it to
    any consumer through __arrow_c_device_array__, __arrow_c_array__ (CPU
    data), __dlpack__ or __cuda_array_interface__ (CUDA data). Close it with
    close() or `with`; the finalizer is only the safety net.

    The sync event travels with the array: nothing here waits on it except
    what must read the data (to_host, copy_to, to_pylist on the CPU after a
    move, DLPack exports, wait()).
    """

    __slots__ = ()

    # ---- construction -----------------------------------------------------------

    # from_c(array_address, schema_address, *, validate=True): takes
    # ownership of an ArrowDeviceArray and an ArrowSchema at two addresses
    # (moved in; the sources are left released), the array first as in
    # pyarrow's Array._import_from_c(array_ptr, schema_ptr). With validate
    # (the default), the structure is checked first
    # (ferry_validate_device_array at FERRY_VALIDATE_DEFAULT); validate=False
    # is the caller's promise. In C, like from_capsules: the everyday
    # consumer's first call.
    from_c = staticmethod(_native.from_c)

    # from_capsules(schema_capsule, array_capsule, *, validate=True): takes
    # the structs out of an "arrow_schema" capsule and an "arrow_device_array"
    # (or CPU "arrow_array") capsule: the order of the pair that
    # __arrow_c_device_array__ returns and of pyarrow's
    # Array._import_from_c_device_capsule(schema_capsule, array_capsule).
    # In C: the whole call is a few hundred instructions, and a Python frame
    # around it would be a third of them.
    from_capsules = staticmethod(_native.from_capsules)

    # from_buffers(schema, length, buffers, *, null_count=0, offset=0,
    # children=(), dictionary=None, device="cpu", stream=None): builds an
    # array over existing memory without copying it (see _from_buffers
    # below). The everyday producer's case, host bytes on the CPU, is built
    # in C; ferry._native hands every other case to _from_buffers.
    from_buffers = staticmethod(_native.from_buffers)

    # ---- C-level access ---------------------------------------------------------

    # Every reader of the structs holds a pin (ferry._native.Pin, one
    # reference) while it uses their addresses: close() in another thread
    # then only drops this object's reference, and the reader finishes on
    # memory that stays valid; a reader that starts after close() gets
    # ferry.ClosedError.

    def _keeper(self) -> Tuple[Any, Any]:
        return self, self._pin()

    def _root(self) -> ArrayView:
        """A view of the whole array that pins it (readers use one view)."""
        pin = self._pin()
        return ArrayView((self, pin), ffi.cast("struct ArrowSchema*", pin._schema_address),
                         ffi.cast("struct ArrowArray*", pin._array_address), self.device)

    def _schema_ptr(self) -> Any:
        pin = self._pin()
        return _pinned("struct ArrowSchema*", pin, pin._schema_address)

    def _array_ptr(self) -> Any:
        pin = self._pin()
        return _pinned("struct ArrowArray*", pin, pin._array_address)

    def _device_array_ptr(self) -> Any:
        pin = self._pin()
        return _pinned("struct ArrowDeviceArray*", pin, pin._array_address)

    def _device(self) -> Device:
        return self.device

    def is_valid(self) -> List[bool]:
        return self._root().is_valid()

    # export_to_c(array_address, schema_address=None, *, move=False): in C
    # (ArrayBase), the array first as in pyarrow's _export_to_c.

    # ---- properties -------------------------------------------------------------

    @property
    def schema(self) -> Schema:
        """The array's schema (shared, not copied)."""
        return self._schema_object(Schema)

    @property
    def device(self) -> Device:
        return _device.device((self._device_type, self._device_id))

    @property
    def sync_event(self) -> Optional[int]:
        """The address of the producer's event (a pointer to the native
        handle), or None when the data may be read now."""
        event = self._device_array_ptr().sync_event
        return None if event == ffi.NULL else int(ffi.cast("uintptr_t", event))

    # ---- synchronization and moving between devices -----------------------------

    def wait(self, stream: Optional[Stream] = None) -> None:
        """Honours the sync event: with `stream`, that stream (of the array's
        device) waits on it and the host goes on; without, the host blocks
        (GIL released) until the producer's work is done."""
        call(lib.ferry_device_array_wait, self._device_array_ptr(),
             stream._raw() if stream is not None else ffi.NULL)

    def copy_to(self, target: DeviceLike) -> "DeviceArray":
        """A deep copy on `target` (after waiting on the event); this array
        is untouched."""
        dev = _device.device(target)
        out = lib.ferry_device_array_new()
        schema_raw = lib.ferry_schema_new()
        try:
            call(lib.ferry_device_array_copy, self._schema_ptr(), self._device_array_ptr(), dev.type,
                 dev.id, out)
            self.schema._export_into(int(ffi.cast("uintptr_t", schema_raw)))
            return _native.import_raw(DeviceArray, int(ffi.cast("uintptr_t", schema_raw)),
                                      int(ffi.cast("uintptr_t", out)), False)
        finally:
            lib.ferry_schema_free(schema_raw)
            lib.ferry_device_array_free(out)

    def move_to(self, target: DeviceLike) -> "DeviceArray":
        """Moves the array to `target` and closes this one: without copying
        where `target` can reach the memory (the same device; pinned or
        managed memory to the CPU), else by a deep copy. When exports still
        share the data it cannot be handed over, and a copy is made."""
        dev = _device.device(target)
        if self._shared:
            result = self.copy_to(dev)
            self.close()
            return result
        src = lib.ferry_device_array_new()
        out = lib.ferry_device_array_new()
        schema_raw = lib.ferry_schema_new()
        try:
            self.schema._export_into(int(ffi.cast("uintptr_t", schema_raw)))
            self._export_into(None, int(ffi.cast("uintptr_t", src)), True)
            try:
                call(lib.ferry_device_array_move_to_device, schema_raw, src, dev.type, dev.id, out)
            except BaseException:
                lib.ferry_device_array_release(src)  # it was moved out of this array: release it
                raise
            return _native.import_raw(DeviceArray, int(ffi.cast("uintptr_t", schema_raw)),
                                      int(ffi.cast("uintptr_t", out)), False)
        finally:
            lib.ferry_schema_free(schema_raw)
            lib.ferry_device_array_free(src)
            lib.ferry_device_array_free(out)

    def to_host(self) -> "DeviceArray":
        """The array in host memory, ready to read: this array itself when it
        is on the CPU, else a copy (this array is untouched). Use
        move_to("cpu") to avoid the copy where the memory is reachable."""
        if self._device_type == _device.DEVICE_CPU:
            return self
        return self.copy_to("cpu")

    def to_pylist(self) -> List[Any]:
        """The values as Python objects (see _ArrayReader.to_pylist); device
        data is copied to the host first."""
        if self._device_type != _device.DEVICE_CPU:
            with self.copy_to("cpu") as host:
                return host.to_pylist()
        root = self._root()
        return _values(root, 0, len(root))

    def validate(self, *, full: bool = False) -> None:
        """Checks the array against its schema (structure; with full, also
        offsets, UTF-8 and null counts). Raises InvalidArgumentError naming
        the first finding."""
        level = CONSTANTS["FERRY_VALIDATE_FULL"] if full else CONSTANTS["FERRY_VALIDATE_DEFAULT"]
        call(lib.ferry_validate_device_array, self._schema_ptr(), self._device_array_ptr(), level,
             ffi.NULL, ffi.NULL)

    # ---- lifetime -----------------------------------------------------------------
    # close(), __enter__ and __exit__ are ArrayBase's (C): every consumer calls them.

    # ---- protocols implemented in Python (the hot ones are in C) ----------------------

    def _dlpack_copy(self, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
        """__dlpack__'s copy path: a copy on dl_device (or here), exported
        with the IS_COPIED flag."""
        if copy is False:
            raise BufferError(f"dl_device {dl_device} differs from the array's device "
                              f"{self.__dlpack_device__()} and copy=False forbids the copy")
        target = self.device if dl_device is None else _device.device(tuple(dl_device))
        # ferry's copy is complete when copy_to returns (the host waited for
        # the source's event first), so it is ordered before any stream.
        try:
            copied = self.copy_to(target)
        except _errors.FerryError as exc:
            raise _errors.ExportError(exc.code, f"cannot copy to {target.name}: {exc.message}") from exc
        with copied:
            capsule = copied.__dlpack__(max_version=max_version, stream=None if target.is_cpu else stream)
        _mark_copied(capsule)
        return capsule

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface version 3, for arrays in CUDA memory (cuda,
        cuda_host, cuda_managed) of numbers without nulls. Other arrays have
        no such attribute (hasattr is False); CUDA arrays the interface cannot
        express raise AttributeError naming why."""
        from ._interop import cuda_array_interface
        return cuda_array_interface(self)

    def __repr__(self) -> str:
        if self.closed:
            return "ferry.DeviceArray(closed)"
        event = "" if self.sync_event is None else ", pending event"
        return (f"ferry.DeviceArray({_describe(self._schema_ptr())}, length={len(self)}, "
                f"device={self.device.name}{event})")


def _from_buffers(schema: Schema, length: int, buffers: Sequence[BufferLike], *,
                  null_count: int = 0, offset: int = 0,
                  children: Sequence["DeviceArray"] = (),
                  dictionary: Optional["DeviceArray"] = None,
                  device: DeviceLike = "cpu", stream: Optional[Stream] = None) -> "DeviceArray":
    """DeviceArray.from_buffers: builds an array over existing memory without
    copying it (ferry._native builds host bytes on the CPU itself, with the
    same results, and calls this for every other case).

    `buffers` holds, per Arrow buffer, None (a NULL buffer), a
    ferry.Buffer (device memory, moved in: the array frees it and the
    Buffer object is closed), or a bytes-like object (host memory, for
    the CPU, kept alive). Everything is held until the array and all its
    exports are released. `children` and `dictionary` are moved in
    (they are closed afterwards) and must have no pending event. For a
    device array produced on `stream`, an event is recorded on it and
    travels as the array's sync_event (ferry_device_array_init_async)."""
    dev = _device.device(device)
    keep: list = []
    moved: list = []  # ferry Buffers: the array takes them over
    pointers = []
    for b in buffers:
        if b is None:
            pointers.append(ffi.NULL)
        elif isinstance(b, Buffer):
            if b.device != dev:
                raise ValueError(f"a buffer lives on {b.device.name}, the array on {dev.name}")
            pointers.append(b._raw())
            moved.append(b)
        else:
            if not dev.is_cpu:
                raise ValueError(f"host bytes cannot be buffers of a {dev.name} array: "
                                 "allocate with device.allocate() and copy_from_host()")
            view = ffi.from_buffer(b)
            keep.append(view)
            keep.append(b)
            pointers.append(view)
    raw = lib.ferry_device_array_new()
    schema_raw = lib.ferry_schema_new()
    ref = None
    try:
        if raw == ffi.NULL or schema_raw == ffi.NULL:
            raise MemoryError("ferry_device_array_new")
        inner = ffi.addressof(raw, "array")
        keep.extend(b._detach() for b in moved)
        ref = _native.new_ref(tuple(keep))
        hook = ffi.cast("FerryReleaseHook", _native.release_hook_address())
        buffer_array = ffi.new("const void*[]", pointers) if pointers else ffi.NULL
        try:
            call(lib.ferry_array_init, inner, int(length), int(null_count), int(offset),
                 len(pointers), buffer_array, len(children), hook, ffi.cast("void*", ref))
        except BaseException:
            _native.drop_ref(ref)  # the hook never runs when init fails
            raise
        for i, child in enumerate(children):
            _move_plain_into(child, lib.ferry_array_child(inner, i))
        if dictionary is not None:
            out = ffi.new("struct ArrowArray**")
            call(lib.ferry_array_allocate_dictionary, inner, out)
            _move_plain_into(dictionary, out[0])
        if dev.is_cpu or stream is None:
            call(lib.ferry_device_array_init, raw, inner, dev.type, dev.id, ffi.NULL, ffi.NULL, ffi.NULL)
        else:
            call(lib.ferry_device_array_init_async, raw, inner, dev._ptr, stream._raw(),
                 CONSTANTS["FERRY_SYNC_RECORD_EVENT"])
        schema._export_into(int(ffi.cast("uintptr_t", schema_raw)))
        return _native.import_raw(DeviceArray, int(ffi.cast("uintptr_t", schema_raw)),
                                  int(ffi.cast("uintptr_t", raw)), True)
    finally:
        lib.ferry_schema_free(schema_raw)      # released already unless something failed
        lib.ferry_device_array_free(raw)


_native.bind_from_buffers(_from_buffers, Buffer)


def _move_plain_into(child: DeviceArray, destination: Any) -> None:
    """Moves a child array's ArrowArray into a parent's child slot."""
    if child.sync_event is not None:
        raise ValueError("a child array has a pending event: wait() on it before assembling")
    tmp = lib.ferry_device_array_new()
    try:
        child._export_into(None, int(ffi.cast("uintptr_t", tmp)), True)
        ffi.memmove(destination, ffi.addressof(tmp, "array"), ffi.sizeof("struct ArrowArray"))
        tmp.array.release = ffi.NULL  # moved: the parent owns it now
        child.close()
    finally:
        lib.ferry_device_array_free(tmp)


def capsule_pointer(capsule: Any, ctype: str) -> Any:
    """The pointer inside an unconsumed PyCapsule, cast to `ctype` (cffi)."""
    import ctypes
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return ffi.cast(ctype, get_pointer(capsule, get_name(capsule)))


def _mark_copied(capsule: Any) -> None:
    """Sets DLPACK_FLAG_BITMASK_IS_COPIED on a versioned DLPack capsule (the
    legacy struct has no flags)."""
    if "dltensor_versioned" in repr(capsule):
        tensor = capsule_pointer(capsule, "DLManagedTensorVersioned*")
        tensor.flags |= CONSTANTS["DLPACK_FLAG_BITMASK_IS_COPIED"]


def array(values: Iterable[Any], type: str, *, device: DeviceLike = "cpu") -> DeviceArray:
    """A new array from Python values (None for nulls) of a simple type:
    int8 ... uint64, float32, float64, bool, utf8, binary. Built on the CPU,
    then copied to `device` when it is another one."""
    values = list(values)
    formats = {"int8": "c", "int16": "s", "int32": "i", "int64": "l", "uint8": "C", "uint16": "S",
               "uint32": "I", "uint64": "L", "float32": "f", "float64": "g", "bool": "b",
               "utf8": "u", "binary": "z"}
    if type not in formats:
        raise ValueError(f"unknown type {type!r}; one of {', '.join(formats)}")
    fmt = formats[type]
    n = len(values)
    nulls = sum(v is None for v in values)
    validity = None
    if nulls:
        validity = bytearray((n + 7) // 8)
        for i, v in enumerate(values):
            if v is not None:
                validity[i >> 3] |= 1 << (i & 7)
    if fmt == "b":
        data = bytearray((n + 7) // 8)
        for i, v in enumerate(values):
            if v:
                data[i >> 3] |= 1 << (i & 7)
        buffers = [validity, data]
    elif fmt in ("u", "z"):
        blobs = [b"" if v is None else (v.encode() if fmt == "u" else bytes(v)) for v in values]
        offsets = [0]
        for blob in blobs:
            offsets.append(offsets[-1] + len(blob))
        buffers = [validity, _struct.pack(f"<{n + 1}i", *offsets), b"".join(blobs) or b"\0"]
    else:
        data = _struct.pack(f"<{n}{_CAST[fmt]}", *[0 if v is None else v for v in values])
        buffers = [validity, bytearray(data)]
    host = DeviceArray.from_buffers(Schema.from_format(fmt), n, buffers, null_count=nulls)
    dev = _device.device(device)
    if dev.is_cpu:
        return host
    with host:
        return host.copy_to(dev)
