"""DLPack both ways (array API standard semantics), against NumPy and ferry itself."""
import struct

import numpy as np
import pytest

import ferry
from ferry import DeviceArray, Schema
from test_capsules import capsule_name

NUMERIC = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]


@pytest.mark.parametrize("dtype", NUMERIC + ["float16"])
def test_numpy_to_ferry_zero_copy(dtype):
    x = np.arange(-3, 9).astype(dtype)[2:]
    arr = ferry.from_dlpack(x)
    assert len(arr) == 10 and arr.device.is_cpu and arr.null_count == 0
    assert arr.buffer_address(1) + arr.offset * x.itemsize == x.ctypes.data  # the same memory
    if dtype != "float16":
        assert arr.to_pylist() == x.tolist()
    arr.close()


@pytest.mark.parametrize("dtype", NUMERIC)
def test_ferry_to_numpy_zero_copy(dtype):
    source = np.arange(20).astype(dtype)
    arr = DeviceArray.from_buffers(Schema.from_format(ferry.from_dlpack(source).format), 15,
                                   [None, source.tobytes()], offset=5)
    y = np.from_dlpack(arr)
    assert y.dtype == np.dtype(dtype) and y.tolist() == source[5:].tolist()
    assert y.ctypes.data == arr.buffer_address(1) + 5 * source.itemsize
    assert not y.flags.writeable  # Arrow data is read-only (DLPACK_FLAG_BITMASK_READ_ONLY)
    del y
    arr.close()


def test_dlpack_device_and_versions():
    arr = ferry.array([1, 2, 3], "int32")
    assert arr.__dlpack_device__() == (1, 0)
    assert capsule_name(arr.__dlpack__(max_version=(1, 1))) == "dltensor_versioned"
    assert capsule_name(arr.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert capsule_name(arr.__dlpack__()) == "dltensor"  # legacy when the consumer names no version
    assert capsule_name(arr.__dlpack__(max_version=(0, 8))) == "dltensor"
    legacy = arr.__dlpack__()
    assert ferry.from_dlpack(legacy).to_pylist() == [1, 2, 3]  # a legacy capsule imports too
    assert capsule_name(legacy) == "used_dltensor"
    with pytest.raises(TypeError, match="unexpected keyword"):
        arr.__dlpack__(strem=None)
    arr.close()


def test_numpy_legacy_capsule_import():
    x = np.arange(4, dtype=np.int16)
    capsule = x.__dlpack__()
    assert capsule_name(capsule) == "dltensor"
    arr = ferry.from_dlpack(capsule)
    assert arr.to_pylist() == [0, 1, 2, 3] and capsule_name(capsule) == "used_dltensor"
    arr.close()


def test_what_dlpack_cannot_express_is_a_buffer_error():
    with pytest.raises(BufferError, match="nulls") as caught:
        ferry.array([1, None], "int32").__dlpack__()
    assert isinstance(caught.value, ferry.FerryError)
    with pytest.raises(BufferError, match="bit-packed|DLPack can"):
        ferry.array([True], "bool").__dlpack__()
    with pytest.raises(BufferError, match="strided"):
        ferry.from_dlpack(np.arange(10, dtype=np.int32)[::2])
    with pytest.raises(BufferError, match="dimensions"):
        ferry.from_dlpack(np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(BufferError, match="booleans"):
        ferry.from_dlpack(np.array([True, False]))


def test_stream_values_follow_the_standard():
    arr = ferry.array([1, 2], "int32")
    with pytest.raises(ValueError, match="CPU: stream must be None"):
        arr.__dlpack__(stream=5)
    assert capsule_name(arr.__dlpack__(stream=-1)) == "dltensor"  # -1: no synchronization
    with pytest.raises(ValueError, match=">= -1"):
        arr.__dlpack__(stream=-2)
    with pytest.raises(TypeError, match="stream must be None or an integer"):
        arr.__dlpack__(stream="default")
    arr.close()


def test_copy_keyword():
    x = np.arange(5, dtype=np.int64)
    copied = ferry.from_dlpack(x, copy=True)
    assert copied.to_pylist() == x.tolist() and copied.buffer_address(1) != x.ctypes.data
    shared = ferry.from_dlpack(x, copy=False)
    assert shared.buffer_address(1) == x.ctypes.data
    arr = ferry.array([4, 5], "int64")
    capsule = arr.__dlpack__(max_version=(1, 1), copy=True)
    from ferry._array import capsule_pointer
    flags = capsule_pointer(capsule, "DLManagedTensorVersioned*").flags
    assert flags & ferry.raw.CONSTANTS["DLPACK_FLAG_BITMASK_IS_COPIED"]
    out = np.from_dlpack(arr, copy=True)
    assert out.tolist() == [4, 5]
    for a in (copied, shared, arr):
        a.close()
    del capsule


def test_sim_stream_is_made_to_wait_on_the_event():
    """__dlpack__(stream=s): s waits on the array's event, the host does not.
    In strict mode the data reads as poison until s has run."""
    sim = ferry.device("sim:3")
    producer = sim.create_stream()
    consumer = sim.create_stream()
    buf = sim.allocate(12)
    buf.copy_from_host(struct.pack("<3i", 7, 8, 9), stream=producer)
    arr = DeviceArray.from_buffers(Schema.from_format("i"), 3, [None, buf], device=sim, stream=producer)
    buf.close()
    capsule = arr.__dlpack__(stream=consumer.handle, max_version=(1, 1))
    from ferry._array import capsule_pointer
    t = capsule_pointer(capsule, "DLManagedTensorVersioned*").dl_tensor
    data = ferry.raw.ffi.buffer(ferry.raw.ffi.cast("char*", t.data) + t.byte_offset, 12)
    assert data[:] == b"\xa5" * 12  # not waited on by the host
    consumer.synchronize()  # the consumer's stream ran after the producer's copy
    assert struct.unpack("<3i", data[:]) == (7, 8, 9)
    del capsule, data, t
    arr.close()
    producer.close()
    consumer.close()


def test_ferry_to_ferry_on_sim_keeps_the_order_with_an_event():
    source = ferry.array([3, 1, 4], "int32", device="sim:0")
    imported = ferry.from_dlpack(source)  # ferry passes its interchange stream, records an event
    assert imported.device.name == "sim:0" and imported.sync_event is not None
    assert imported.to_pylist() == [3, 1, 4]
    imported.close()
    source.close()


def test_dl_device_asks_for_a_copy_across_devices():
    sim = ferry.array([5, 6, 7], "int16", device="sim:1")
    capsule = sim.__dlpack__(max_version=(1, 1), dl_device=(1, 0))
    host = np.from_dlpack(_Holder(capsule, (1, 0)))
    assert host.tolist() == [5, 6, 7]
    with pytest.raises(BufferError, match="copy=False"):
        sim.__dlpack__(max_version=(1, 1), dl_device=(1, 0), copy=False)
    on_cpu = ferry.from_dlpack(sim, device="cpu")
    assert on_cpu.device.is_cpu and on_cpu.to_pylist() == [5, 6, 7]
    with pytest.raises(ValueError, match="copy=False"):
        ferry.from_dlpack(sim, device="cpu", copy=False)
    to_sim = ferry.from_dlpack(np.arange(3, dtype=np.int32), device="sim:2")
    assert to_sim.device.name == "sim:2" and to_sim.to_pylist() == [0, 1, 2]
    for a in (sim, on_cpu, to_sim):
        a.close()
    del host


class _Holder:
    """Hands out one prepared capsule (to feed np.from_dlpack)."""

    def __init__(self, capsule, device):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def test_producer_without_the_new_keywords():
    class Old:
        def __init__(self, x):
            self.x = x

        def __dlpack__(self, stream=None):
            return self.x.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.x.__dlpack_device__()

    x = np.arange(3, dtype=np.float64)
    arr = ferry.from_dlpack(Old(x))
    assert arr.to_pylist() == [0.0, 1.0, 2.0]
    arr.close()
    assert ferry.device_array(x).to_pylist() == [0.0, 1.0, 2.0]


def test_copy_true_on_a_device_with_a_consumer_stream():
    sim = ferry.array([1, 2], "int32", device="sim:0")
    consumer = ferry.device("sim:0").create_stream()
    capsule = sim.__dlpack__(stream=consumer.handle, max_version=(1, 1), copy=True)
    from ferry._array import capsule_pointer
    assert capsule_pointer(capsule, "DLManagedTensorVersioned*").flags & 2  # IS_COPIED
    copied = ferry.from_dlpack(capsule)
    assert copied.to_pylist() == [1, 2] and copied.buffer_address(1) != sim.buffer_address(1)
    for x in (copied, sim, consumer):
        x.close()


def test_type_hints_ship_with_the_package():
    import importlib.resources
    files = importlib.resources.files("ferry")
    assert files.joinpath("py.typed").is_file() and files.joinpath("_native.pyi").is_file()
