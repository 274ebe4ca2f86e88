"""DeviceArray and Schema: building, reading, devices, events, lifetime."""
import errno
import gc
import struct
import weakref

import pytest

import ferry
from ferry import DeviceArray, Schema


def test_array_from_python_values():
    arr = ferry.array([1, None, -3], "int32")
    assert (arr.format, len(arr), arr.null_count, arr.offset) == ("i", 3, 1, 0)
    assert arr.to_pylist() == [1, None, -3]
    assert arr.is_valid() == [True, False, True]
    assert ferry.array(["a", None, "ccc"], "utf8").to_pylist() == ["a", None, "ccc"]
    assert ferry.array([True, False, True], "bool").to_pylist() == [True, False, True]
    with pytest.raises(ValueError, match="unknown type"):
        ferry.array([1], "int128")


def test_from_buffers_is_zero_copy_and_keeps_the_buffer_alive():
    data = bytearray(struct.pack("<4i", 10, 20, 30, 40))
    arr = DeviceArray.from_buffers(Schema.from_format("i", "x"), 3, [None, data], offset=1)
    assert arr.to_pylist() == [20, 30, 40]
    data[8:12] = struct.pack("<i", 99)  # the array reads the caller's memory
    assert arr.to_pylist() == [20, 99, 40]
    assert arr.buffer_address(1) == ferry.raw.ffi.cast("uintptr_t", ferry.raw.ffi.from_buffer(data))
    assert ferry._native.live_refs() >= 1
    arr.close()


def test_schema_from_format_with_children_metadata_and_dictionary():
    s = Schema.from_format("+s", "row", children=[Schema.from_format("i", "a"), Schema.from_format("u", "b")],
                           metadata={"k": "v"})
    assert (s.format, s.name, s.n_children, s.nullable) == ("+s", "row", 2, True)
    assert [c.name for c in s.children] == ["a", "b"] and s.metadata == {"k": "v"}
    d = Schema.from_format("i", "codes", dictionary=Schema.from_format("u"))
    assert d.dictionary.format == "u"
    with pytest.raises(ferry.InvalidArgumentError, match="format"):
        Schema.from_format("not a format")


def test_nested_values_read_through_the_package():
    import pyarrow as pa
    assert ferry.device_array(pa.array([[1, 2], None, [], [3]])).to_pylist() == [[1, 2], None, [], [3]]
    rows = pa.array([{"a": 1, "b": "x"}, None, {"a": 3, "b": "z"}])
    assert ferry.device_array(rows).to_pylist() == [{"a": 1, "b": "x"}, None, {"a": 3, "b": "z"}]
    codes = pa.array(["x", "y", None, "x"]).dictionary_encode()
    arr = ferry.device_array(codes)
    assert arr.to_pylist() == ["x", "y", None, "x"] and arr.dictionary.to_pylist() == ["x", "y"]
    arr.close()


def test_close_is_deterministic_and_idempotent():
    arr = ferry.array([1, 2], "int64")
    refs = ferry._native.live_refs()
    arr.close()
    assert arr.closed and ferry._native.live_refs() == refs - 1
    arr.close()
    with pytest.raises(ValueError, match="closed"):
        len(arr)
    with ferry.array([1], "int8") as scoped:
        assert scoped.to_pylist() == [1]
    assert scoped.closed


def test_the_finalizer_releases_a_forgotten_array():
    refs = ferry._native.live_refs()
    arr = ferry.array([1, 2, 3], "uint16")
    assert ferry._native.live_refs() == refs + 1
    del arr
    gc.collect()
    assert ferry._native.live_refs() == refs


def test_exports_share_the_data_until_the_last_release():
    arr = ferry.array([5, 6], "int32")
    refs = ferry._native.live_refs()
    capsules = arr.__arrow_c_device_array__()
    assert arr._shared == 1
    arr.close()
    assert ferry._native.live_refs() == refs  # the capsule still holds the data
    imported = DeviceArray.from_capsules(*capsules)
    assert imported.to_pylist() == [5, 6]
    imported.close()
    del capsules
    assert ferry._native.live_refs() == refs - 1


def test_sim_device_array_keeps_its_event_and_reads_poison_before_waiting():
    assert ferry.sim_is_strict()
    sim = ferry.device("sim:1")
    stream = sim.create_stream()
    buf = sim.allocate(16)
    buf.copy_from_host(struct.pack("<4i", 1, 2, 3, 4), stream=stream)
    arr = DeviceArray.from_buffers(Schema.from_format("i"), 4, [None, buf], device=sim, stream=stream)
    buf.close()  # the array keeps the memory
    assert arr.device == sim and arr.sync_event is not None
    # Strict mode: the copy is still queued, the memory reads as poison.
    assert bytes(arr.buffer(1))[:4] == b"\xa5" * 4
    arr.wait()
    assert arr.buffer(1).cast("i").tolist() == [1, 2, 3, 4]
    arr.close()
    stream.close()


def test_to_host_copies_and_move_to_hands_over():
    sim_arr = ferry.array([1, None, 3], "int64", device="sim:0")
    assert sim_arr.device.name == "sim:0"
    with pytest.raises(BufferError, match="to_host"):
        sim_arr.__arrow_c_array__()
    host = sim_arr.to_host()
    assert host.device.is_cpu and host.to_pylist() == [1, None, 3] and not sim_arr.closed
    host.close()
    moved = sim_arr.move_to("cpu")
    assert sim_arr.closed and moved.to_pylist() == [1, None, 3]
    cpu = ferry.array([7], "int8")
    assert cpu.to_host() is cpu
    same = cpu.move_to("cpu")  # reachable: no copy, the same buffer
    assert cpu.closed and same.to_pylist() == [7]
    same.close()
    moved.close()


def test_validate_reports_a_broken_array():
    arr = ferry.array([1, 2, 3], "int32")
    arr.validate(full=True)
    ptr = arr._array_ptr()
    ptr.n_buffers = 1  # break it in place
    with pytest.raises(ferry.InvalidArgumentError, match="n_buffers|buffers"):
        arr.validate()
    ptr.n_buffers = 2
    arr.close()


def test_import_refuses_released_or_broken_structs():
    from ferry.raw import ffi, lib
    schema, array = lib.ferry_schema_new(), lib.ferry_device_array_new()
    with pytest.raises(ValueError, match="released"):
        DeviceArray.from_c(int(ffi.cast("uintptr_t", array)), int(ffi.cast("uintptr_t", schema)))
    good = ferry.array([1, 2], "int32")
    good.export_to_c(int(ffi.cast("uintptr_t", array)), int(ffi.cast("uintptr_t", schema)))
    schema.format = ffi.new("char[]", b"u")  # a utf8 array needs 3 buffers
    keep = schema.format
    with pytest.raises(ferry.InvalidArgumentError) as caught:
        DeviceArray.from_c(int(ffi.cast("uintptr_t", array)), int(ffi.cast("uintptr_t", schema)))
    assert caught.value.code == errno.EINVAL and "buffer" in caught.value.message
    del keep
    good.close()
    lib.ferry_schema_free(schema)
    lib.ferry_device_array_free(array)


def test_devices_streams_events_and_buffers():
    sim = ferry.device("sim:2")
    with sim.create_stream() as stream, sim.create_event() as event:
        buf = sim.allocate(8)
        buf.copy_from_host(b"abcdefgh", stream=stream)
        event.record(stream)
        event.synchronize()  # the GIL is released while it blocks (cffi)
        assert buf.to_bytes() == b"abcdefgh"
        assert int(stream) == stream.handle != 0
        buf.close()
    assert stream._ptr is None and event._ptr is None
    with pytest.raises(ValueError, match="closed"):
        stream.synchronize()
