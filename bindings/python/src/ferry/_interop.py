"""Imports from the Python protocols: Arrow PyCapsules, DLPack and the CUDA
Array Interface (their exports live on DeviceArray and DeviceArrayStream)."""
from __future__ import annotations

from typing import Any, Optional, Union

from . import _device, _errors, _native
from ._array import DeviceArray, capsule_pointer
from ._device import DeviceLike, Stream
from ._stream import DeviceArrayStream
from .raw import CONSTANTS, ffi

_DLPACK_VERSION = (CONSTANTS["DLPACK_MAJOR_VERSION"], CONSTANTS["DLPACK_MINOR_VERSION"])
_EINVAL = 22


def _device_array(obj: Any, *, validate: Union[bool, str] = True) -> DeviceArray:
    """The Python path of device_array (ferry._native.device_array, whose
    docstring is the public one): DLPack and the CUDA Array Interface. The
    capsule protocols come first and are C's (reached here only by a call
    that spells obj=...)."""
    if isinstance(obj, DeviceArray):
        return obj
    kind = type(obj)
    if hasattr(kind, "__arrow_c_device_array__") or hasattr(kind, "__arrow_c_array__"):
        return device_array(obj, validate=validate)
    if hasattr(obj, "__dlpack__"):
        return from_dlpack(obj)
    if hasattr(obj, "__cuda_array_interface__"):
        return from_cuda_array_interface(obj)
    raise TypeError(f"{kind.__name__} has none of __arrow_c_device_array__, __arrow_c_array__, "
                    "__dlpack__, __cuda_array_interface__")


def device_stream(obj: Any, *, validate: Union[bool, str] = True) -> DeviceArrayStream:
    """A DeviceArrayStream from anything with __arrow_c_device_stream__
    (batches keep their sync events, batch by batch) or __arrow_c_stream__
    (CPU batches: pyarrow, nanoarrow, Polars, DuckDB), or from such a
    PyCapsule. The stream is consumed once. Its schema and every batch are
    validated (DEFAULT) unless validate=False (the caller's promise)."""
    if isinstance(obj, DeviceArrayStream):
        return obj
    kind = type(obj)
    if hasattr(kind, "__arrow_c_device_stream__"):
        return DeviceArrayStream.from_capsule(obj.__arrow_c_device_stream__(), validate=validate)
    if hasattr(kind, "__arrow_c_stream__"):
        return DeviceArrayStream.from_capsule(obj.__arrow_c_stream__(), validate=validate)
    if type(obj).__name__ == "PyCapsule":
        return DeviceArrayStream.from_capsule(obj, validate=validate)
    raise TypeError(f"{kind.__name__} has neither __arrow_c_device_stream__ nor __arrow_c_stream__")


def _same_device(a: tuple, b: tuple) -> bool:
    return int(a[0]) == int(b[0]) and (int(a[0]) == _device.DEVICE_CPU or int(a[1]) == int(b[1]))


def _from_dlpack(x: Any, *, device: Optional[DeviceLike] = None, copy: Optional[bool] = None,
                 stream: Optional[Stream] = None) -> DeviceArray:
    """A DeviceArray from any DLPack producer (the array API standard's
    from_dlpack): one-dimensional, contiguous integers or floats.

    - Zero-copy when possible; copy=True always copies, copy=False refuses
      (ValueError) when a copy would be needed.
    - device: where the result lives (a ferry device, "cuda:0", or a DLPack
      (type, id) tuple); the producer is asked for it (dl_device), and when it
      cannot deliver, ferry copies.
    - Streams: for a device with streams, ferry passes a stream to the
      producer (`stream`, or the device's interchange stream) and records an
      event on it, which becomes the array's sync_event: the array is ordered
      after the producer's work without the host waiting.
    - Versioned capsules (DLPack 1.x) are requested; a producer that only
      knows the legacy form (a TypeError on max_version) is asked again
      without the new keywords.
    A legacy or versioned DLPack capsule itself is accepted too (it is
    consumed)."""
    if type(x).__name__ == "PyCapsule":
        return _native.import_dlpack(DeviceArray, x, None)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"{type(x).__name__} has no __dlpack__ method")
    src = tuple(x.__dlpack_device__())
    target = None if device is None else _device.device(device)
    if target is not None and not _same_device(src, target.dlpack_device()):
        return _from_dlpack_elsewhere(x, src, target, copy)
    kwargs: dict = {"max_version": _DLPACK_VERSION}
    if copy is not None:
        kwargs["copy"] = copy
    event_stream = None
    if int(src[0]) != _device.DEVICE_CPU:
        chosen = stream if stream is not None else _device.device(src).interchange_stream()
        kwargs["stream"] = chosen.handle
        event_stream = chosen.handle
    try:
        capsule = x.__dlpack__(**kwargs)
    except TypeError:
        # A producer from before the 2023.12 keywords.
        legacy = {"stream": kwargs["stream"]} if "stream" in kwargs else {}
        capsule = x.__dlpack__(**legacy)
        if copy:
            with _native.import_dlpack(DeviceArray, capsule, event_stream) as shared:
                return shared.copy_to(shared.device)
    return _native.import_dlpack(DeviceArray, capsule, event_stream)


def _from_dlpack_elsewhere(x: Any, src: tuple, target: _device.Device, copy: Optional[bool]) -> DeviceArray:
    """from_dlpack onto another device: the producer first (dl_device), else
    ferry copies."""
    if copy is False:
        raise ValueError(f"the data is on DLPack device {src}, {target.name} was asked for, "
                         "and copy=False forbids the copy")
    try:
        capsule = x.__dlpack__(max_version=_DLPACK_VERSION, dl_device=target.dlpack_device(), copy=copy)
        return _native.import_dlpack(DeviceArray, capsule, None)
    except (BufferError, NotImplementedError, TypeError, ValueError):
        pass  # the producer cannot deliver there: copy through ferry
    with _from_dlpack(x) as here:
        return here.copy_to(target)


# ---- CUDA Array Interface -----------------------------------------------------------

# numpy typestr kinds/sizes <-> DLPack (code, bits); the core maps these to
# Arrow formats (and refuses what has no zero-copy Arrow type).
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BOOL = 0, 1, 2, 6
_TYPESTR_KIND = {"i": _DL_INT, "u": _DL_UINT, "f": _DL_FLOAT, "b": _DL_BOOL}
_KIND_TYPESTR = {v: k for k, v in _TYPESTR_KIND.items()}


def cuda_array_interface(arr: DeviceArray) -> dict:
    """The __cuda_array_interface__ (version 3) of a DeviceArray in CUDA
    memory; AttributeError for everything else (so hasattr() is False)."""
    if arr.closed:
        raise AttributeError("__cuda_array_interface__: the array is closed")
    if arr._device_type not in _device.CUDA_TYPES:
        raise AttributeError(f"__cuda_array_interface__: the array lives on {arr.device.name}, "
                             "not in CUDA memory")
    dev = arr.device
    # The DLPack export decides what the interface can express (numbers
    # without nulls) with the core's own type mapping; no sync (-1): the
    # "stream" entry carries the ordering instead.
    try:
        capsule = arr.__dlpack__(stream=-1, max_version=_DLPACK_VERSION)
    except BufferError as exc:
        raise AttributeError(f"__cuda_array_interface__: the CUDA Array Interface cannot express "
                             f"this array: {exc}") from None
    tensor = capsule_pointer(capsule, "DLManagedTensorVersioned*")
    t = tensor.dl_tensor
    code, itemsize = int(t.dtype.code), int(t.dtype.bits) // 8
    data = int(ffi.cast("uintptr_t", t.data)) + int(t.byte_offset) if len(arr) else 0
    del capsule, tensor, t  # the capsule's destructor deletes the tensor
    stream = None
    if arr.sync_event is not None:
        # "stream": a stream on which the data is ready: ferry's interchange
        # stream of that device, made to wait on the array's event.
        ready = dev.interchange_stream()
        arr.wait(ready)
        stream = ready.handle
    return {
        "shape": (len(arr),),
        "typestr": f"{'|' if itemsize == 1 else '<'}{_KIND_TYPESTR[code]}{itemsize}",
        "data": (data, True),
        "strides": None,
        "descr": [("", f"{'|' if itemsize == 1 else '<'}{_KIND_TYPESTR[code]}{itemsize}")],
        "mask": None,
        "stream": stream,
        "version": 3,
    }


def from_cuda_array_interface(obj: Any, *, device_id: Optional[int] = None) -> DeviceArray:
    """A DeviceArray (cuda) over the memory of any object with
    __cuda_array_interface__ (version 2 or 3), without copying; the array
    keeps `obj` alive until it is released.

    One-dimensional and contiguous only, no mask. Version 3's "stream": an
    event is recorded on that stream and becomes the array's sync_event, so
    every consumer is ordered after the producer's work (None: nothing is
    pending). The interface does not name the device: `device_id`, else the
    object's __dlpack_device__, else 0."""
    cai = obj.__cuda_array_interface__
    version = int(cai.get("version", 0))
    if version < 2 or version > 3:
        raise ValueError(f"CUDA Array Interface version {version}: ferry reads versions 2 and 3")
    shape = tuple(cai["shape"])
    if len(shape) != 1:
        raise ValueError(f"shape {shape}: only one-dimensional arrays become Arrow arrays")
    if cai.get("mask") is not None:
        raise ValueError("a masked CUDA array (mask is not None) has no zero-copy Arrow form")
    typestr = cai["typestr"]
    if len(typestr) < 3 or typestr[0] not in "<|=" or typestr[1] not in _TYPESTR_KIND:
        raise ValueError(f"typestr {typestr!r}: ferry reads little-endian integers and floats")
    code, itemsize = _TYPESTR_KIND[typestr[1]], int(typestr[2:])
    strides = cai.get("strides")
    if strides is not None and shape[0] > 1 and tuple(strides) != (itemsize,):
        raise ValueError(f"strides {tuple(strides)}: Arrow needs contiguous values")
    address = int(cai["data"][0])
    if device_id is None:
        device_id = int(obj.__dlpack_device__()[1]) if hasattr(obj, "__dlpack_device__") else 0
    event_stream = None
    if version >= 3 and cai.get("stream") is not None:
        stream = int(cai["stream"])
        if stream == 0:
            raise ValueError("CUDA Array Interface stream 0 is disallowed (ambiguous)")
        event_stream = stream
    return _native.import_memory(DeviceArray, obj, address, shape[0], code, itemsize * 8,
                                 _device.DEVICE_CUDA, device_id, event_stream)


_native.bind_classes(DeviceArray, _from_dlpack)
from_dlpack = _native.from_dlpack  # the zero-copy CPU path in C, the rest in _from_dlpack
_native.bind_device_array(_device_array)
device_array = _native.device_array  # the capsule protocols in C, the rest in _device_array
