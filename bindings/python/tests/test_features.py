"""The Python column of docs/features.md: one test per capability, named
test_feature_<id>, calling the API the table names for real (on the CPU and
on the simulated device, whose strict mode makes a missed wait visible).
scripts/check_features.sh checks that every "yes" cell of the Python column
has its test here and that no "no" cell has one."""
import struct

import numpy as np
import pyarrow as pa
import pytest

import ferry
from ferry.raw import ffi, lib

POISON = 0xA5


def int32(values):
    return struct.pack(f"<{len(values)}i", *values)


def address(ptr):
    return int(ffi.cast("uintptr_t", ptr))


def sim_array(values, stream):
    """int32 `values` on sim:0, copied there on `stream` and exported with
    the event recorded on it (pending until waited on: keep `stream` open)."""
    ferry.set_sim_strict(True)
    sim = ferry.device("sim:0")
    buffer = sim.allocate(4 * len(values))
    buffer.copy_from_host(int32(values), stream=stream)
    return ferry.DeviceArray.from_buffers(ferry.Schema.from_format("i", "v"), len(values),
                                          [None, buffer], device=sim, stream=stream)


def first_byte(arr):
    return arr.buffer(1)[0]


def test_feature_export_array():
    values = np.arange(1, 5, dtype=np.int32)
    refs = ferry._native.live_refs()
    arr = ferry.DeviceArray.from_buffers(ferry.Schema.from_format("i"), 4, [None, values])
    schema, out = lib.ferry_schema_new(), lib.ferry_device_array_new()
    try:
        arr.export_to_c(address(out), address(schema))
        arr.close()
        assert address(out.array.buffers[1]) == values.ctypes.data  # zero-copy
        assert ferry._native.live_refs() > refs  # the export holds the NumPy memory
        lib.ferry_device_array_release(out)  # a foreign consumer's release
        lib.ferry_schema_release(schema)
        assert ferry._native.live_refs() == refs  # the release reached Python
    finally:
        lib.ferry_device_array_free(out)
        lib.ferry_schema_free(schema)


def test_feature_import_array():
    stream = ferry.device("sim:0").create_stream()
    with sim_array([7, 8, 9], stream) as produced:
        schema, out = lib.ferry_schema_new(), lib.ferry_device_array_new()
        try:
            produced.export_to_c(address(out), address(schema))
            with ferry.DeviceArray.from_c(address(out), address(schema)) as arr:  # validated
                assert out.array.release == ffi.NULL  # moved in
                assert arr.sync_event is not None
                assert first_byte(arr) == POISON  # not waited on yet
                arr.wait()
                assert arr.to_pylist() == [7, 8, 9]
        finally:
            lib.ferry_device_array_free(out)
            lib.ferry_schema_free(schema)
    stream.close()


def three_batches():
    schema = ferry.Schema.from_format("i", "v")
    return ferry.DeviceArrayStream.from_batches(
        schema, (ferry.array(range(1, n + 1), "int32") for n in (1, 2, 3)))


def test_feature_export_stream():
    raw = lib.ferry_array_stream_new()
    batch = lib.ferry_device_array_new()
    try:
        three_batches().export_to_c(address(raw))
        assert raw.release != ffi.NULL
        assert lib.ferry_array_stream_get_next(raw, batch, ffi.NULL) == 0
        assert batch.array.length == 1
        lib.ferry_device_array_release(batch)
        lib.ferry_array_stream_release(raw)
        assert raw.release == ffi.NULL
    finally:
        lib.ferry_device_array_free(batch)
        lib.ferry_array_stream_free(raw)


def test_feature_import_stream():
    raw = lib.ferry_array_stream_new()
    try:
        three_batches().export_to_c(address(raw))
        with ferry.DeviceArrayStream.from_c(address(raw)) as stream:
            assert stream.schema.format == "i"
            sums = []
            for batch in stream:
                with batch:
                    sums.append(sum(batch.to_pylist()))
        assert sums == [1, 3, 6]
    finally:
        lib.ferry_array_stream_free(raw)


def test_feature_import_c_stream():
    # A plain ArrowArrayStream (pyarrow's CPU stream capsule) in: its batches
    # become CPU device arrays, validated by default.
    table = pa.table({"n": pa.array([1, 2, 3], pa.int32())})
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=2))
    with ferry.DeviceArrayStream.from_capsule(reader.__arrow_c_stream__()) as stream:
        assert stream.schema.format == "+s"
        lengths = []
        for batch in stream:
            with batch:
                assert batch.device.is_cpu
                lengths.append(len(batch))
    assert lengths == [2, 1]


def test_feature_export_c_stream():
    # A ferry CPU stream out as a plain ArrowArrayStream, read by pyarrow.
    schema = ferry.Schema.from_format("+s", children=[ferry.Schema.from_format("l", "n")])
    batches = [ferry.device_array(pa.record_batch({"n": list(range(k))})) for k in (1, 2, 3)]
    stream = ferry.DeviceArrayStream.from_batches(schema, batches)
    reader = pa.RecordBatchReader.from_stream(stream)  # __arrow_c_stream__
    assert [len(b) for b in reader] == [1, 2, 3]
    assert stream.closed


def test_feature_to_host():
    stream = ferry.device("sim:0").create_stream()
    with sim_array([4, 5], stream) as arr, arr.to_host() as host:
        assert host.device.name == "cpu"
        assert host.sync_event is None
        assert host.to_pylist() == [4, 5]
    stream.close()


def test_feature_copy_to_device():
    with ferry.array([1, 2, 3], "int32") as arr, arr.copy_to("sim:2") as on_sim:
        assert on_sim.device.name == "sim:2"
        assert on_sim.buffer_address(1) != arr.buffer_address(1)  # a copy
        with on_sim.copy_to("cpu") as back:
            assert back.to_pylist() == [1, 2, 3]
        assert arr.to_pylist() == [1, 2, 3]  # the source stays


def test_feature_move_to_device():
    arr = ferry.array([9, 8], "int64")
    same_address = arr.buffer_address(1)
    same = arr.move_to("cpu")
    assert same.buffer_address(1) == same_address  # the same device: no copy
    with pytest.raises(ValueError):
        arr.buffer_address(1)  # the source is closed
    on_sim = same.move_to("sim:1")
    assert on_sim.device.name == "sim:1"
    with on_sim.move_to("cpu") as back:
        assert back.to_pylist() == [9, 8]


def test_feature_consumer_stream_array():
    sim = ferry.device("sim:0")
    producer, consumer = sim.create_stream(), sim.create_stream()
    with sim_array([3, 2, 1], producer) as arr:
        assert first_byte(arr) == POISON
        arr.wait(consumer)  # the consumer's stream waits; the host goes on
        consumer.synchronize()
        assert first_byte(arr) == 3
    producer.close()
    consumer.close()


def test_feature_consumer_stream_batch():
    sim = ferry.device("sim:0")
    producer, consumer = sim.create_stream(), sim.create_stream()
    batches = [sim_array([6, 7], producer)]
    with ferry.DeviceArrayStream.from_batches(ferry.Schema.from_format("i", "v"), batches,
                                              device="sim:0") as stream:
        with stream.next(consumer) as batch:
            consumer.synchronize()
            assert first_byte(batch) == 6
        assert stream.next(consumer) is None
    producer.close()
    consumer.close()


def test_feature_wrap_native_stream():
    users_stream = ferry.device("sim:0").create_stream()  # the producer's own stream
    with sim_array([42], users_stream) as arr:
        assert arr.sync_event is not None  # recorded on the user's stream
        assert first_byte(arr) == POISON
        arr.wait()
        assert first_byte(arr) == 42
    users_stream.close()


def test_feature_dlpack_export():
    with ferry.array([1.5, 2.5], "float64") as arr:
        out = np.from_dlpack(arr)
        assert out.ctypes.data == arr.buffer_address(1)  # zero-copy
        assert out.tolist() == [1.5, 2.5]
        assert not out.flags.writeable  # Arrow data is immutable
        del out


def test_feature_dlpack_import():
    values = np.array([3, 4, 5], dtype=np.int32)
    with ferry.from_dlpack(values) as arr:
        assert arr.format == "i"
        assert arr.buffer_address(1) == values.ctypes.data  # zero-copy
        assert arr.to_pylist() == [3, 4, 5]


def test_feature_arrow_array_interop():
    source = pa.array([1, None, 3], type=pa.int32())
    with ferry.device_array(source) as arr:  # Arrow PyCapsules in
        assert arr.buffer_address(1) == source.buffers()[1].address  # zero-copy
        back = pa.array(arr)  # and out
        assert back.to_pylist() == [1, None, 3]
        del back


def test_feature_arrow_stream_bridge():
    schema = pa.schema([("a", pa.int32())])
    batches = [pa.record_batch([pa.array([b, b + 1], pa.int32())], schema=schema) for b in range(2)]
    reader = pa.RecordBatchReader.from_batches(schema, batches)
    with ferry.device_stream(reader) as stream:  # a pyarrow reader in
        back = pa.RecordBatchReader.from_stream(stream)  # and out as a pyarrow reader
        assert back.schema == schema
        assert back.read_all().to_pydict() == {"a": [0, 1, 1, 2]}


def test_feature_validate():
    offsets = struct.pack("<3i", 0, 3, 1)  # backwards: only FULL reads them
    with ferry.DeviceArray.from_buffers(ferry.Schema.from_format("u"), 2, [None, offsets, b"abc"]) as arr:
        arr.validate()
        with pytest.raises(ferry.InvalidArgumentError, match="offset"):
            arr.validate(full=True)


def test_feature_devices():
    names = [d.name for d in ferry.devices()]
    assert "cpu" in names and "sim:3" in names
    for backend, problem in ferry.backends():
        assert backend in ("cpu", "sim", "cuda", "rocm")
        assert problem is None or problem  # unavailable ones say why
    sim = ferry.device("sim:3")
    before = sim.live_allocations
    buffer = sim.allocate(256)
    assert sim.live_allocations == before + 1
    buffer.close()
    assert sim.live_allocations == before


def test_feature_export_async():
    """A Python stream pushed to the core's async consumer (C), from a thread
    ferry starts, and an async generator pushed from the event loop."""
    import asyncio

    def c_consumer():
        handler = lib.ferry_async_handler_new()
        out = ffi.new("struct FerryAsyncConsumer**")
        assert lib.ferry_async_consumer_create(2, 0, handler, out, ffi.NULL) == 0
        return handler, out[0]

    def drain(consumer):
        sums = []
        while True:
            batch = lib.ferry_device_array_new()
            assert lib.ferry_async_consumer_next(consumer, batch, 10000, ffi.NULL) == 0
            if batch.array.release == ffi.NULL:
                lib.ferry_device_array_free(batch)
                return sums
            values = ffi.cast("int32_t*", batch.array.buffers[1])
            sums.append(sum(values[i] for i in range(batch.array.length)))
            lib.ferry_device_array_free(batch)  # releases it

    def finish(handler, consumer):
        assert lib.ferry_async_consumer_wait_released(consumer, 10000) == 0
        lib.ferry_async_consumer_free(consumer)
        lib.ferry_async_handler_free(handler)

    handler, consumer = c_consumer()
    ferry.export_async(three_batches(), address(handler))
    assert drain(consumer) == [1, 3, 6]
    finish(handler, consumer)

    async def batches():
        for k in (1, 2, 3):
            yield ferry.array(list(range(1, k + 1)), "int32")

    handler, consumer = c_consumer()

    async def produce_and_read():
        task = asyncio.create_task(ferry.export_async_from(ferry.Schema.from_format("i"), batches(),
                                                           address(handler)))
        sums = await asyncio.get_running_loop().run_in_executor(None, drain, consumer)
        await task
        return sums

    assert asyncio.run(produce_and_read()) == [1, 3, 6]
    finish(handler, consumer)


def test_feature_import_async():
    """The core's async producer (C, pushing a stream from its own thread)
    read with `async for` on asyncio and with plain iteration."""
    import asyncio

    def push(consumer):
        raw = lib.ferry_array_stream_new()
        three_batches().export_to_c(address(raw))
        assert lib.ferry_async_export_stream(raw, ffi.cast("struct ArrowAsyncDeviceStreamHandler*",
                                                           consumer.handler_address), 0, ffi.NULL) == 0
        lib.ferry_array_stream_free(raw)

    async def read():
        async with ferry.AsyncDeviceStream(window=2) as consumer:
            push(consumer)
            return [sum(batch.to_pylist()) async for batch in consumer]

    assert asyncio.run(read()) == [1, 3, 6]
    with ferry.AsyncDeviceStream(window=1) as consumer:
        push(consumer)
        assert [sum(batch.to_pylist()) for batch in consumer] == [1, 3, 6]
