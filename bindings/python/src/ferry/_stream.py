"""DeviceArrayStream: an ArrowDeviceArrayStream as a Python iterator."""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, List, Optional, Union

from . import _device, _native
from ._array import DeviceArray, Schema
from ._device import DeviceLike, Stream


class DeviceArrayStream(_native.StreamBase, _device.Closeable):
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

    Validation: the schema and every batch are checked (DEFAULT) unless the
    stream was opened with validate=False (the caller's promise).

    After an error (a failed get_schema or get_next, or a batch refused by
    validation) the producer is never called again: every later read raises
    the same error, with the same code and message. After the end, next()
    returns None without calling the producer.

    Threads: one call into the stream at a time. A second thread that reads,
    iterates, closes or hands the stream on while a call is in flight waits
    (GIL released) until it is done; close() thus waits for an in-flight
    get_next and then releases the stream, exactly once, and a reader that
    was waiting behind it gets ferry.ClosedError. A call from inside the
    stream's own producer on the same thread would wait for itself and is
    refused with FerryError EDEADLK.

    The struct itself lives in the C half (ferry._native.StreamBase: closed,
    device_type, and the calls into the stream, each with the GIL released);
    an object nobody closed releases its stream when it goes away.
    """

    __slots__ = ("_lock",)  # _schema is StreamBase's

    def __init__(self) -> None:
        self._lock = threading.Lock()

    # ---- construction -----------------------------------------------------------

    @classmethod
    def from_c(cls, address: int, *, validate: Union[bool, str] = True) -> "DeviceArrayStream":
        """Takes ownership of the ArrowDeviceArrayStream at `address` (moved
        in; the source is left released). The schema and every batch are
        validated at DEFAULT; validate="full" checks every offset and UTF-8
        byte too, validate=False skips the checks (the caller's promise)."""
        stream = cls()
        stream._validate = _native.validate_level(validate)
        stream._take(int(address))
        return stream

    @classmethod
    def from_capsule(cls, capsule: Any, *, validate: Union[bool, str] = True) -> "DeviceArrayStream":
        """Takes the stream out of an "arrow_device_array_stream" capsule, or
        of a CPU "arrow_array_stream" capsule (its batches become CPU device
        arrays). validate=False: see from_c."""
        stream = cls()
        stream._validate = _native.validate_level(validate)
        _native.take_stream_capsule(capsule, stream._address)
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
        stream = cls()
        _native.export_stream(_SchemaSource(schema), iter(batches), dev.type, stream._address)
        return stream

    # ---- reading ------------------------------------------------------------------

    @property
    def schema(self) -> Schema:
        """The stream's schema (get_schema is called once)."""
        with self._lock:
            if self._schema is None:
                self._schema = self._get_schema(Schema)
            return self._schema

    def next(self, consumer_stream: Optional[Stream] = None) -> Optional[DeviceArray]:
        """The next batch, or None at the end. With `consumer_stream`, that
        stream is made to wait on the batch's event (the host goes on);
        without, the batch keeps its event for whoever reads it."""
        schema = self._schema
        if schema is None:
            schema = self.schema
        return self._next_batch(DeviceArray, schema,
                                None if consumer_stream is None else consumer_stream.handle)

    # __iter__ and __next__ are StreamBase's: `for batch in stream` is
    # next() without a consumer stream, each batch straight from C.

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
            self._hand_to(int(address))

    def __arrow_c_device_stream__(self, requested_schema: Any = None, **kwargs: Any) -> Any:
        """Moves the stream into an "arrow_device_array_stream" PyCapsule
        (this object is closed afterwards). ferry does not cast: a
        requested_schema is honoured where the stream's data answers it
        unchanged (as DeviceArray's; a field requested non-nullable must be
        non-nullable in the stream's schema), else NotImplementedError names
        the difference and the stream stays here, unread."""
        return self._to_capsule(True, requested_schema, kwargs)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """For CPU streams: moves the stream into an "arrow_array_stream"
        PyCapsule. A device stream is refused with BufferError.
        requested_schema: as for __arrow_c_device_stream__."""
        return self._to_capsule(False, requested_schema, {})

    def _to_capsule(self, device: bool, requested_schema: Any, kwargs: dict) -> Any:
        unsupported = [name for name, value in kwargs.items() if value is not None]
        if unsupported:
            raise NotImplementedError(f"Received unsupported keyword argument(s): {unsupported}")
        with self._lock:
            if self._schema is not None:
                raise ValueError("the stream was partly read here; hand it on before reading it")
            if requested_schema is not None:
                return self._capsule_as(device, requested_schema)
            return self._capsule(device)

    # ---- lifetime ---------------------------------------------------------------

    def close(self) -> None:
        """Releases the stream now (idempotent; after a get_next in flight on
        another thread); batches already taken stay valid."""
        with self._lock:
            self._free()
            if self._schema is not None:
                self._schema.close()

    def __repr__(self) -> str:
        if self.closed:
            return "ferry.DeviceArrayStream(closed)"
        return f"ferry.DeviceArrayStream(device_type={_device.type_name(self.device_type)})"


class _SchemaSource:
    """The schema of a stream made by from_batches: a Schema, or the callable
    that makes it when the consumer first asks. ferry._native's get_schema
    calls _ferry_get_schema with the GIL held; its get_next takes the batches
    from the iterator itself."""

    __slots__ = ("_schema",)

    def __init__(self, schema: Any) -> None:
        self._schema = schema

    def _ferry_get_schema(self, address: int) -> None:
        schema = self._schema if isinstance(self._schema, Schema) else self._schema()
        schema._export_into(address)
