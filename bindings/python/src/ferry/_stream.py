"""DeviceArrayStream: an ArrowDeviceArrayStream as a Python iterator."""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Iterator, List, Optional, Union

from . import _device, _errors, _native
from ._array import DeviceArray, Schema
from ._device import DeviceLike, Stream
from .raw import call, error_message, ffi, lib


class DeviceArrayStream:
    """A stream of record batches (DeviceArrays) that one consumer reads once.

        with ferry.device_stream(obj) as stream:
            for batch in stream:          # each batch keeps its sync event
                ...

    Get one from any producer (ferry.device_stream(obj), from_c()) or make
    one from Python batches with from_batches(). Hand it on with
    __arrow_c_device_stream__ (or __arrow_c_stream__ for CPU streams), which
    moves it: this object is then closed. get_next blocks with the GIL
    released; producer failures raise FerryError with the producer's code and
    get_last_error message.
    """

    def __init__(self, raw: Any) -> None:
        self._raw = raw  # a struct ArrowDeviceArrayStream* from ferry_array_stream_new
        self._schema: Optional[Schema] = None
        self._lock = threading.Lock()

    # ---- construction -----------------------------------------------------------

    @classmethod
    def _new(cls) -> "DeviceArrayStream":
        raw = lib.ferry_array_stream_new()
        if raw == ffi.NULL:
            raise MemoryError("ferry_array_stream_new")
        return cls(raw)

    @classmethod
    def from_c(cls, address: int) -> "DeviceArrayStream":
        """Takes ownership of the ArrowDeviceArrayStream at `address` (moved
        in; the source is left released)."""
        stream = cls._new()
        src = ffi.cast("struct ArrowDeviceArrayStream*", int(address))
        if src == ffi.NULL or src.release == ffi.NULL:
            stream.close()
            raise ValueError("the stream at that address is NULL or released")
        if lib.ferry_array_stream_move(src, stream._raw) != 0:
            stream.close()
            raise ValueError("cannot move the stream")
        return stream

    @classmethod
    def from_capsule(cls, capsule: Any) -> "DeviceArrayStream":
        """Takes the stream out of an "arrow_device_array_stream" capsule, or
        of a CPU "arrow_array_stream" capsule (its batches become CPU device
        arrays)."""
        stream = cls._new()
        try:
            _native.take_stream_capsule(capsule, stream._address())
        except BaseException:
            stream.close()
            raise
        return stream

    @classmethod
    def from_batches(cls, schema: Union[Schema, Callable[[], Schema]], batches: Iterable[DeviceArray], *,
                     device: DeviceLike = "cpu") -> "DeviceArrayStream":
        """A stream produced in Python: yields `batches` (consumed lazily;
        each DeviceArray is moved out when a consumer pulls it) with `schema`
        (or the Schema a callable returns when the consumer first asks).
        Every batch must live on `device`'s type. An exception raised while
        iterating reaches the consumer as EIO (or the FerryError's code) and
        its message through get_last_error."""
        dev = _device.device(device)
        stream = cls._new()
        producer = _BatchProducer(schema, iter(batches))
        try:
            _native.export_stream(producer, dev.type, stream._address())
        except BaseException:
            stream.close()
            raise
        return stream

    # ---- reading ------------------------------------------------------------------

    def _address(self) -> int:
        if self._raw is None:
            raise ValueError("the stream is closed (released or handed on)")
        return int(ffi.cast("uintptr_t", self._raw))

    def _live(self) -> Any:
        self._address()
        return self._raw

    @property
    def device_type(self) -> int:
        """The Arrow device type of every batch."""
        return int(lib.ferry_array_stream_device_type(self._live()))

    @property
    def schema(self) -> Schema:
        """The stream's schema (get_schema is called once)."""
        with self._lock:
            if self._schema is None:
                out = lib.ferry_schema_new()
                try:
                    call(lib.ferry_array_stream_get_schema, self._live(), out)
                    self._schema = Schema.from_c(int(ffi.cast("uintptr_t", out)))
                finally:
                    lib.ferry_schema_free(out)
            return self._schema

    def next(self, consumer_stream: Optional[Stream] = None) -> Optional[DeviceArray]:
        """The next batch, or None at the end. With `consumer_stream`, that
        stream is made to wait on the batch's event (the host goes on);
        without, the batch keeps its event for whoever reads it."""
        schema = self.schema
        out = lib.ferry_device_array_new()
        try:
            if consumer_stream is None:
                call(lib.ferry_array_stream_get_next, self._live(), out)
            else:
                call(lib.ferry_array_stream_get_next_on, self._live(), out, consumer_stream._raw())
            if out.array.release == ffi.NULL:
                return None
            return _native.import_batch(DeviceArray, schema, int(ffi.cast("uintptr_t", out)), True)
        finally:
            lib.ferry_device_array_free(out)

    def __iter__(self) -> Iterator[DeviceArray]:
        return self

    def __next__(self) -> DeviceArray:
        batch = self.next()
        if batch is None:
            raise StopIteration
        return batch

    def read_all(self) -> List[DeviceArray]:
        """Every remaining batch."""
        return list(self)

    # ---- handing on ---------------------------------------------------------------

    def export_to_c(self, address: int) -> None:
        """Moves the stream into a consumer's released ArrowDeviceArrayStream
        at `address`; this object is closed afterwards."""
        with self._lock:
            if self._schema is not None:
                raise ValueError("the stream was partly read here; hand it on before reading it")
            dst = ffi.cast("struct ArrowDeviceArrayStream*", int(address))
            if lib.ferry_array_stream_move(self._live(), dst) != 0:
                raise ValueError("the destination stream must be released beforehand")
            self._free()

    def __arrow_c_device_stream__(self, requested_schema: Any = None, **kwargs: Any) -> Any:
        """Moves the stream into an "arrow_device_array_stream" PyCapsule
        (this object is closed afterwards). ferry does not cast: a requested
        schema must be None."""
        return self._capsule(True, requested_schema, kwargs)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """For CPU streams: moves the stream into an "arrow_array_stream"
        PyCapsule. A device stream is refused with BufferError."""
        return self._capsule(False, requested_schema, {})

    def _capsule(self, device: bool, requested_schema: Any, kwargs: dict) -> Any:
        unsupported = [name for name, value in kwargs.items() if value is not None]
        if unsupported:
            raise NotImplementedError(f"Received unsupported keyword argument(s): {unsupported}")
        if requested_schema is not None:
            raise NotImplementedError("ferry does not cast streams: requested_schema must be None")
        with self._lock:
            if self._schema is not None:
                raise ValueError("the stream was partly read here; hand it on before reading it")
            capsule = _native.stream_capsule(self._address(), device)
            self._free()
            return capsule

    # ---- lifetime ---------------------------------------------------------------

    def _free(self) -> None:
        raw, self._raw = self._raw, None
        if raw is not None:
            lib.ferry_array_stream_free(raw)  # releases it first when still live

    def close(self) -> None:
        """Releases the stream now (idempotent); batches already taken stay valid."""
        with self._lock:
            self._free()
            if self._schema is not None:
                self._schema.close()

    @property
    def closed(self) -> bool:
        return self._raw is None

    def __enter__(self) -> "DeviceArrayStream":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._free()
        except Exception:
            pass

    def __repr__(self) -> str:
        if self._raw is None:
            return "ferry.DeviceArrayStream(closed)"
        return f"ferry.DeviceArrayStream(device_type={_device.type_name(self.device_type)})"


class _BatchProducer:
    """The Python side of a stream made by from_batches; the C trampolines of
    ferry._native call these two methods with the GIL held."""

    def __init__(self, schema: Any, batches: Iterator[DeviceArray]) -> None:
        self._schema = schema
        self._batches = batches

    def _ferry_get_schema(self, address: int) -> None:
        schema = self._schema if isinstance(self._schema, Schema) else self._schema()
        schema._export_into(address)

    def _ferry_get_next(self, address: int) -> None:
        try:
            batch = next(self._batches)
        except StopIteration:
            return  # the struct stays released: the end of the stream
        if not isinstance(batch, DeviceArray):
            raise TypeError(f"a stream batch must be a ferry.DeviceArray, not {type(batch).__name__}")
        batch._export_into(None, address, True)
        batch.close()
