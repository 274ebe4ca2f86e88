"""The CUDA Array Interface, both ways, through ferry's CUDA driver emulation
(conftest.py): device memory is host memory, so values can be checked, and
gates hold stream work pending."""
import ctypes
import struct

import pytest

import ferry
from ferry import DeviceArray, Schema


def cuda_array(values, fmt="i", pack="i", device=None, stream=None):
    dev = device or ferry.device("cuda:0")
    data = struct.pack(f"<{len(values)}{pack}", *values)
    buf = dev.allocate(max(len(data), 1))
    buf.copy_from_host(data, stream=stream)
    arr = DeviceArray.from_buffers(Schema.from_format(fmt), len(values), [None, buf], device=dev, stream=stream)
    buf.close()
    return arr


def test_export_version_3(cuda):
    arr = cuda_array([1, 2, 3, 4])
    cai = arr.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (4,) and cai["typestr"] == "<i4"
    assert cai["data"] == (arr.buffer_address(1), True) and cai["strides"] is None
    assert cai["stream"] is None and cai["mask"] is None  # no pending event: nothing to order
    floats = cuda_array([1.5], "g", "d")
    assert floats.__cuda_array_interface__["typestr"] == "<f8"
    arr.close()
    floats.close()


def test_only_cuda_arrays_without_nulls_have_the_attribute(cuda):
    assert not hasattr(ferry.array([1], "int32"), "__cuda_array_interface__")
    assert not hasattr(ferry.array([1], "int32", device="sim:0"), "__cuda_array_interface__")
    with_nulls = ferry.array([1, None], "int32", device="cuda:0")
    assert not hasattr(with_nulls, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="cannot express this array: .*nulls"):
        with_nulls.__cuda_array_interface__
    strings = ferry.array(["a"], "utf8", device="cuda:0")
    with pytest.raises(AttributeError, match="cannot express"):
        strings.__cuda_array_interface__
    with_nulls.close()
    strings.close()


def test_export_with_a_pending_event_names_a_ready_stream(cuda, emu):
    producer = cuda.create_stream()
    emu.cuda_emu_gate_close(producer.handle)  # the producer's copy stays pending
    arr = cuda_array([5, 6], stream=producer)
    assert arr.sync_event is not None
    cai = arr.__cuda_array_interface__
    ready = cai["stream"]
    assert ready == cuda.interchange_stream().handle  # a stream made to wait on the event
    assert emu.cuda_emu_stream_pending(ready) > 0  # its wait is queued
    emu.cuda_emu_gates_open()
    cuda.interchange_stream().synchronize()
    assert arr.to_pylist() == [5, 6]
    arr.close()
    producer.close()


class Producer:
    """A foreign producer exposing ferry-allocated CUDA memory through the
    interface (version 2 or 3)."""

    def __init__(self, buf, n, typestr, version, stream=None):
        self.buf = buf
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": typestr, "data": (buf.address, False),
                                         "version": version, "strides": None}
        if version == 3:
            self.__cuda_array_interface__["stream"] = stream


@pytest.mark.parametrize("version", [2, 3])
def test_import_versions_2_and_3(cuda, version):
    buf = cuda.allocate(24)
    buf.copy_from_host(struct.pack("<3q", -1, 0, 1))
    producer = Producer(buf, 3, "<i8", version)
    arr = ferry.from_cuda_array_interface(producer)
    assert arr.device.name == "cuda:0" and arr.format == "l" and arr.buffer_address(1) == buf.address
    assert arr.to_pylist() == [-1, 0, 1] and arr.sync_event is None
    del producer
    assert arr.to_pylist() == [-1, 0, 1]  # the array keeps the producer (and its memory) alive
    arr.close()
    buf.close()


def test_import_orders_after_the_producer_stream(cuda, emu):
    stream = cuda.create_stream()
    buf = cuda.allocate(8)
    buf.copy_from_host(struct.pack("<2i", 0, 0))
    emu.cuda_emu_gate_close(stream.handle)
    buf.copy_from_host(struct.pack("<2i", 41, 42), stream=stream)  # pending behind the gate
    arr = ferry.device_array(Producer(buf, 2, "<i4", 3, stream=stream.handle))
    assert arr.sync_event is not None  # an event recorded on the producer's stream
    emu.cuda_emu_gates_open()
    assert arr.to_pylist() == [41, 42]  # the copy to the host waited on that event
    arr.close()
    buf.close()
    stream.close()


def test_import_refuses_what_arrow_cannot_hold(cuda):
    buf = cuda.allocate(16)
    bad = Producer(buf, 4, "<i4", 3)
    bad.__cuda_array_interface__["shape"] = (2, 2)
    with pytest.raises(ValueError, match="one-dimensional"):
        ferry.from_cuda_array_interface(bad)
    bad = Producer(buf, 2, "<i4", 3)
    bad.__cuda_array_interface__["strides"] = (8,)
    with pytest.raises(ValueError, match="contiguous"):
        ferry.from_cuda_array_interface(bad)
    bad = Producer(buf, 2, ">i4", 3)
    with pytest.raises(ValueError, match="little-endian"):
        ferry.from_cuda_array_interface(bad)
    bad = Producer(buf, 2, "<i4", 3, stream=0)
    with pytest.raises(ValueError, match="stream 0"):
        ferry.from_cuda_array_interface(bad)
    bad = Producer(buf, 2, "<i4", 3)
    bad.__cuda_array_interface__["mask"] = object()
    with pytest.raises(ValueError, match="mask"):
        ferry.from_cuda_array_interface(bad)
    buf.close()


def test_round_trip_through_the_interface_and_dlpack(cuda):
    arr = cuda_array([9, 8, 7])
    again = ferry.from_cuda_array_interface(arr)
    assert again.to_pylist() == [9, 8, 7] and again.buffer_address(1) == arr.buffer_address(1)
    stream = cuda.create_stream()
    capsule = arr.__dlpack__(stream=stream.handle, max_version=(1, 1))
    via_dlpack = ferry.from_dlpack(capsule)
    assert via_dlpack.device.name == "cuda:0" and via_dlpack.to_pylist() == [9, 8, 7]
    with pytest.raises(ValueError, match="stream 0 is ambiguous"):
        arr.__dlpack__(stream=0)
    for a in (arr, again, via_dlpack):
        a.close()
    stream.close()


def test_blocking_waits_release_the_gil(cuda, emu):
    """A thread blocked in wait() must not hold the GIL: this thread keeps
    running Python (it spins on the emulation's call counter) until it lets
    the producer's work through."""
    import threading
    emu.cuda_emu_calls.argtypes = [ctypes.c_char_p]
    emu.cuda_emu_calls.restype = ctypes.c_int64
    stream = cuda.create_stream()
    emu.cuda_emu_gate_close(stream.handle)
    arr = cuda_array([3], stream=stream)  # its event is pending behind the gate
    entered = emu.cuda_emu_calls(b"cuEventSynchronize")
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (arr.wait(), done.set()))
    waiter.start()
    spins = 0
    while emu.cuda_emu_calls(b"cuEventSynchronize") == entered:  # Python runs meanwhile
        spins += 1
        assert spins < 50_000_000, "the waiting thread never reached cuEventSynchronize"
    assert not done.is_set()  # still blocked: the gate is closed
    emu.cuda_emu_gates_open()
    waiter.join(60)
    assert done.is_set() and arr.to_pylist() == [3]
    arr.close()
    stream.close()
