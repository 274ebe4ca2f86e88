"""ferry: Arrow device arrays and streams between runtimes and devices,
without copying.

The package speaks every Python protocol for Arrow and tensor data, in both
directions: Arrow's PyCapsules (__arrow_c_device_array__,
__arrow_c_device_stream__, __arrow_c_array__, __arrow_c_stream__), DLPack
(__dlpack__, __dlpack_device__, from_dlpack) and the CUDA Array Interface
(__cuda_array_interface__, from_cuda_array_interface). Sync events are kept
and honoured on the way.

    import ferry
    arr = ferry.device_array(pyarrow_array)      # zero-copy import
    host = arr.to_host()                         # explicit: copy to the CPU
    ferry.from_dlpack(numpy_array)               # DLPack in
    numpy.from_dlpack(arr)                       # DLPack out

The raw C API is in ferry.raw (cffi, generated from ferry.h). Which libferry
the process uses, and why: ferry.library_info().
"""
from __future__ import annotations

from . import _loader
from ._async import AsyncDeviceStream, export_async, export_async_from
from ._array import ArrayView, DeviceArray, Schema, SchemaView, array, schema
from ._device import Buffer, Device, Event, Stream, backends, device, devices
from ._errors import (
    ClosedError,
    DeviceIOError,
    DeviceUnavailableError,
    ExportError,
    FerryError,
    InvalidArgumentError,
    OutOfMemoryError,
)
from ._interop import device_array, device_stream, from_cuda_array_interface, from_dlpack
from ._stream import DeviceArrayStream
from .raw import lib as _lib

__version__ = "0.1.0"

__all__ = [
    "ArrayView", "AsyncDeviceStream", "Buffer", "ClosedError", "Device", "DeviceArray", "DeviceArrayStream", "DeviceIOError",
    "DeviceUnavailableError", "Event", "ExportError", "FerryError", "InvalidArgumentError",
    "OutOfMemoryError", "Schema", "SchemaView", "Stream", "array", "backends", "device",
    "device_array", "device_stream", "devices", "export_async", "export_async_from", "from_cuda_array_interface", "from_dlpack",
    "library_info", "live_exports", "schema", "set_sim_strict", "sim_is_strict",
]


def library_info() -> _loader.LibraryInfo:
    """Which libferry this process uses (path, how it was found, version)."""
    return _loader.INFO


def live_exports() -> int:
    """Schemas, arrays and streams made by ferry's producer helpers (any
    runtime in the process) and not released yet."""
    return int(_lib.ferry_live_exports())


def set_sim_strict(strict: bool) -> None:
    """Strict mode of the sim device (process-wide; on by default): queued
    work runs only when something waits, so reading before waiting on the
    sync event reads poison (0xA5) every time."""
    _lib.ferry_sim_set_strict(1 if strict else 0)


def sim_is_strict() -> bool:
    return bool(_lib.ferry_sim_is_strict())
