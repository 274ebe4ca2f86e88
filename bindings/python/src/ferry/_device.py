"""Devices, native streams, events and device memory.

A Device is one entry of ferry's process-wide registry: the CPU, the
simulated device ("sim", ids 0-3, a GPU made of host memory whose strict mode
makes a missing wait visible), CUDA and ROCm devices when their drivers load.
Streams and events are the device's own (CUstream/CUevent, hipStream_t/
hipEvent_t, the sim's): a Stream's handle is the native handle value, the
integer that DLPack and the CUDA Array Interface exchange. Blocking calls
(synchronize) release the GIL while they wait.
"""
from __future__ import annotations

import threading
from typing import Any, Iterator, Optional, Tuple, TypeVar, Union

from . import _errors
from .raw import CONSTANTS, call, error_message, ffi, lib

DEVICE_CPU = CONSTANTS["ARROW_DEVICE_CPU"]
DEVICE_CUDA = CONSTANTS["ARROW_DEVICE_CUDA"]
DEVICE_CUDA_HOST = CONSTANTS["ARROW_DEVICE_CUDA_HOST"]
DEVICE_CUDA_MANAGED = CONSTANTS["ARROW_DEVICE_CUDA_MANAGED"]
DEVICE_ROCM = CONSTANTS["ARROW_DEVICE_ROCM"]
DEVICE_ROCM_HOST = CONSTANTS["ARROW_DEVICE_ROCM_HOST"]
DEVICE_SIM = CONSTANTS["ARROW_DEVICE_EXT_DEV"]

CUDA_TYPES = (DEVICE_CUDA, DEVICE_CUDA_HOST, DEVICE_CUDA_MANAGED)

DeviceLike = Union["Device", str, Tuple[int, int]]
_C = TypeVar("_C", bound="Closeable")


def type_name(device_type: int) -> str:
    """The lower-case name of an Arrow device type ("cpu", "cuda", "ext_dev")."""
    return ffi.string(lib.ferry_device_type_name(device_type)).decode()


class Device:
    """A device of ferry's registry. Get one with ferry.device("sim:0").

    Devices live for the whole process; equal (type, id) pairs are the same
    object. `type` is the Arrow device type value, `id` the device id (-1 for
    the CPU).
    """

    __slots__ = ("_ptr", "type", "id", "_interchange_stream", "_lock", "__weakref__")

    _cache: dict = {}
    _cache_lock = threading.Lock()

    def __init__(self, ptr: Any, device_type: int, device_id: int) -> None:
        self._ptr = ptr
        self.type = device_type
        self.id = device_id
        self._interchange_stream: Optional[Stream] = None
        self._lock = threading.Lock()

    @classmethod
    def _get(cls, device_type: int, device_id: int) -> "Device":
        if device_type == DEVICE_CPU:
            device_id = -1
        key = (device_type, device_id)
        with cls._cache_lock:
            found = cls._cache.get(key)
            if found is None:
                out = ffi.new("struct FerryDevice**")
                call(lib.ferry_device_resolve, device_type, device_id, out)
                found = cls(out[0], device_type, device_id)
                cls._cache[key] = found
            return found

    @property
    def type_name(self) -> str:
        """"cpu", "cuda", "ext_dev" (the sim device), ..."""
        return type_name(self.type)

    @property
    def name(self) -> str:
        """"cpu", "sim:0", "cuda:1": the string ferry.device() accepts."""
        if self.type == DEVICE_CPU:
            return "cpu"
        word = "sim" if self.type == DEVICE_SIM else self.type_name
        return f"{word}:{self.id}"

    @property
    def is_cpu(self) -> bool:
        return self.type == DEVICE_CPU

    @property
    def is_host_accessible(self) -> bool:
        """True when the host may read this device's memory directly (after
        waiting on its events): the CPU and the sim device."""
        return bool(lib.ferry_device_is_host_accessible(self._ptr))

    @property
    def live_allocations(self) -> int:
        """Allocations made through ferry on this device and not yet freed."""
        return int(lib.ferry_device_live_allocations(self._ptr))

    def dlpack_device(self) -> Tuple[int, int]:
        """(DLPack device type, id); DLPack's CPU id is 0."""
        return (self.type, 0 if self.type == DEVICE_CPU else self.id)

    def allocate(self, size: int) -> "Buffer":
        """Allocates `size` bytes on this device; free with Buffer.close()."""
        out = ffi.new("void**")
        call(lib.ferry_device_allocate, self._ptr, int(size), out)
        return Buffer(self, out[0], int(size))

    def create_stream(self) -> "Stream":
        """A new native stream of this device (non-blocking), owned by the caller."""
        out = ffi.new("void**")
        call(lib.ferry_device_stream_create, self._ptr, out)
        return Stream(self, out[0])

    def create_event(self) -> "Event":
        """A new native event of this device, owned by the caller."""
        out = ffi.new("void**")
        call(lib.ferry_device_event_create, self._ptr, out)
        return Event(self, out[0])

    def synchronize(self) -> None:
        """Blocks (GIL released) until all work of this device is done."""
        call(lib.ferry_device_stream_synchronize, self._ptr, ffi.NULL)

    def interchange_stream(self) -> "Stream":
        """The stream ferry itself orders interchange work on for this device
        (DLPack imports, CUDA Array Interface exports): created on first use,
        kept for the life of the process."""
        with self._lock:
            if self._interchange_stream is None:
                self._interchange_stream = self.create_stream()
            return self._interchange_stream

    def __repr__(self) -> str:
        return f"ferry.Device({self.name!r})"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and (self.type, self.id) == (other.type, other.id)

    def __hash__(self) -> int:
        return hash((self.type, self.id))


def device(spec: DeviceLike = "cpu") -> Device:
    """The Device for "cpu", "sim", "sim:2", "cuda", "cuda:1", "rocm:0", an
    (Arrow or DLPack) (device_type, device_id) tuple, or a Device.

    Raises DeviceUnavailableError with the backend's reason when the device
    cannot be used here (no driver, no GPU)."""
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, tuple):
        device_type, device_id = int(spec[0]), int(spec[1])
        return Device._get(device_type, -1 if device_type == DEVICE_CPU else device_id)
    if not isinstance(spec, str):
        raise TypeError(f"a device is a Device, a string or a (type, id) tuple, not {spec!r}")
    found = _BY_NAME.get(spec)
    if found is None:
        found = _BY_NAME[spec] = _by_name(spec)  # devices live as long as the process
    return found


_BY_NAME: dict = {}  # device(str) results: "cpu" on every from_buffers/from_batches


def _by_name(spec: str) -> Device:
    """device() for a string, uncached."""
    word, _, number = spec.partition(":")
    out = ffi.new("ArrowDeviceType*")
    call(lib.ferry_device_type_from_name, word.encode(), out)
    device_type = out[0]
    if number:
        try:
            device_id = int(number)
        except ValueError:
            raise _errors.InvalidArgumentError(22, f"device id {number!r} in {spec!r} is not an integer") from None
    else:
        device_id = -1 if device_type == DEVICE_CPU else 0
    return Device._get(device_type, device_id)


def devices() -> list:
    """Every device usable now: the CPU, the four sim devices, and each CUDA
    or ROCm device whose backend probes fine."""
    found = [device("cpu")] + [device(f"sim:{i}") for i in range(CONSTANTS["FERRY_SIM_DEVICE_COUNT"])]
    for word in ("cuda", "rocm"):
        for device_id in range(64):
            try:
                found.append(device(f"{word}:{device_id}"))
            except _errors.FerryError:
                break
    return found


def backends() -> Iterator[Tuple[str, Optional[str]]]:
    """(name, None) for each usable backend, (name, reason) for the others."""
    error = ffi.new("struct FerryError*")
    for i in range(lib.ferry_backend_count()):
        name = ffi.string(lib.ferry_backend_name(i)).decode()
        code = lib.ferry_backend_probe(i, error)
        yield name, None if code == 0 else error_message(error)


class Closeable:
    """`with obj:` closes obj when the block ends (obj.close() does the work)."""

    __slots__ = ()

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()  # type: ignore[attr-defined]


class _Owned(Closeable):
    """A native object of `device` (`_ptr`) owned until close() (or `with`), with
    __del__ as the safety net. A subclass names what it is (`_what`, for the
    "closed" error) and the ferry.h function that frees it (`_destroy`)."""

    __slots__ = ("device", "_ptr")
    _what = ""
    _destroy = ""

    def __init__(self, device: Device, ptr: Any) -> None:
        self.device = device
        self._ptr = ptr

    def _raw(self) -> Any:
        if self._ptr is None:
            raise ValueError(f"the {self._what} is closed")
        return self._ptr

    def close(self) -> None:
        ptr, self._ptr = self._ptr, None
        if ptr is not None:
            call(getattr(lib, self._destroy), self.device._ptr, ptr)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # a finalizer must not raise; the handle leaks instead
            pass


class Stream(_Owned):
    """A native stream (CUstream, hipStream_t, the sim's), owned until close().

    int(stream) is the native handle value, what DLPack's `stream=` and the
    CUDA Array Interface's "stream" carry."""

    __slots__ = ()
    _what = "stream"
    _destroy = "ferry_device_stream_destroy"  # queued work still completes

    @property
    def handle(self) -> int:
        return int(ffi.cast("uintptr_t", self._raw()))

    def __index__(self) -> int:
        return self.handle

    def __int__(self) -> int:
        return self.handle

    def synchronize(self) -> None:
        """Blocks (GIL released) until the work queued on the stream is done."""
        call(lib.ferry_device_stream_synchronize, self.device._ptr, self._raw())

    def wait_event(self, event: "Event") -> None:
        """Makes the stream wait for `event` without blocking the host."""
        call(lib.ferry_device_stream_wait_event, self.device._ptr, self._raw(), event._raw())

    def __repr__(self) -> str:
        state = "closed" if self._ptr is None else hex(self.handle)
        return f"ferry.Stream({self.device.name}, {state})"


class Event(_Owned):
    """A native event, owned until close(). `address` is the sync_event value
    (a pointer to the native handle) that ArrowDeviceArray carries."""

    __slots__ = ()
    _what = "event"
    _destroy = "ferry_device_event_destroy"

    @property
    def address(self) -> int:
        return int(ffi.cast("uintptr_t", self._raw()))

    def record(self, stream: Optional[Stream] = None) -> None:
        """Records the event at the current end of `stream` (None: the
        synchronous NULL stream)."""
        call(lib.ferry_device_event_record, self.device._ptr, self._raw(),
             stream._raw() if stream is not None else ffi.NULL)

    def synchronize(self) -> None:
        """Blocks (GIL released) until the event has completed."""
        call(lib.ferry_device_event_synchronize, self.device._ptr, self._raw())



class Buffer(_Owned):
    """`size` bytes of device memory allocated through ferry, freed by close().

    Host memory (the CPU) supports memoryview(buffer); device memory is
    reached with copy_from_host() and to_bytes()."""

    __slots__ = ("size", "_pending")
    _what = "buffer"
    _destroy = "ferry_device_deallocate"

    def __init__(self, device: Device, ptr: Any, size: int) -> None:
        super().__init__(device, ptr)
        self.size = size
        self._pending: Any = None  # the source of the last queued copy

    @property
    def address(self) -> int:
        return int(ffi.cast("uintptr_t", self._raw()))

    def copy_from_host(self, data: Any, offset: int = 0, stream: Optional[Stream] = None) -> None:
        """Copies a bytes-like object into the buffer at `offset`: complete on
        return without a stream, else ordered on `stream` (the buffer keeps
        `data` alive until it is closed, so the queued copy can read it)."""
        source = ffi.from_buffer(data)
        size = len(source)
        if offset < 0 or offset + size > self.size:
            raise ValueError(f"{size} bytes at offset {offset} do not fit a {self.size}-byte buffer")
        cpu = device("cpu")
        dst = ffi.cast("char*", self._raw()) + offset
        call(lib.ferry_device_memcpy, self.device._ptr, dst, cpu._ptr, source, size,
             stream._raw() if stream is not None else ffi.NULL)
        if stream is not None:
            self._pending = (data, source)

    def to_bytes(self) -> bytes:
        """A host copy of the whole buffer (synchronous)."""
        host = ffi.new("char[]", max(self.size, 1))
        call(lib.ferry_device_memcpy, device("cpu")._ptr, host, self.device._ptr, self._raw(),
             self.size, ffi.NULL)
        return ffi.buffer(host, self.size)[:]

    def __buffer__(self, flags: int) -> memoryview:  # Python 3.12+
        return self._memoryview()

    def _memoryview(self) -> memoryview:
        if not self.device.is_cpu:
            raise BufferError(f"{self.device.name} memory is not host memory: use to_bytes()")
        return memoryview(ffi.buffer(ffi.cast("char*", self._raw()), self.size))

    def close(self) -> None:
        super().close()
        self._pending = None

    def _detach(self) -> "_Allocation":
        """Moves the memory out (into an array that will own it): this Buffer
        is closed, the returned object frees the memory when it goes away."""
        allocation = _Allocation(self.device, self._raw(), self._pending)
        self._ptr = None
        self._pending = None
        return allocation

    def __repr__(self) -> str:
        return f"ferry.Buffer({self.device.name}, {self.size} bytes)"


class _Allocation:
    """Device memory owned by an array's release hook (see Buffer._detach):
    freed when the hook drops it, i.e. when the array and every export of it
    are released."""

    __slots__ = ("device", "ptr", "pending")

    def __init__(self, device: Device, ptr: Any, pending: Any) -> None:
        self.device, self.ptr, self.pending = device, ptr, pending

    def __del__(self) -> None:
        try:
            lib.ferry_device_deallocate(self.device._ptr, self.ptr, ffi.NULL)
        except Exception:  # interpreter shutdown: the process frees everything
            pass
