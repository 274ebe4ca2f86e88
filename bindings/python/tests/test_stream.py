"""DeviceArrayStream: Python producers and consumers, errors, events, threads."""
import errno
import threading

import pytest

import ferry
from ferry import DeviceArrayStream, Schema


def test_iterate_a_python_stream():
    batches = [ferry.array([i, i + 1], "int32") for i in range(3)]
    with DeviceArrayStream.from_batches(Schema.from_format("i", "v"), batches) as stream:
        assert stream.schema.name == "v" and stream.device_type == 1
        assert [b.to_pylist() for b in stream] == [[0, 1], [1, 2], [2, 3]]
        assert stream.next() is None  # the end stays the end
    assert stream.closed


def test_a_producer_exception_reaches_the_consumer_with_code_and_message():
    def batches():
        yield ferry.array([1], "int8")
        raise ferry.FerryError(errno.EIO, "injected failure at get_next 2")

    stream = DeviceArrayStream.from_batches(Schema.from_format("c"), batches())
    assert stream.next().to_pylist() == [1]
    with pytest.raises(ferry.FerryError) as caught:
        stream.next()
    assert caught.value.code == errno.EIO and caught.value.message == "injected failure at get_next 2"
    stream.close()

    def broken():
        raise KeyError("boom")
        yield

    with DeviceArrayStream.from_batches(Schema.from_format("c"), broken()) as stream:
        with pytest.raises(ferry.DeviceIOError, match="KeyError: 'boom'"):
            stream.next()


def test_a_batch_of_the_wrong_kind_is_refused():
    with DeviceArrayStream.from_batches(Schema.from_format("c"), iter([42])) as stream:
        with pytest.raises(ferry.FerryError, match="must be a ferry.DeviceArray"):
            stream.next()
    sim_batch = ferry.array([1], "int8", device="sim:0")
    with DeviceArrayStream.from_batches(Schema.from_format("c"), [sim_batch], device="cpu") as stream:
        with pytest.raises(ferry.InvalidArgumentError, match="device"):
            stream.next()


def test_sim_batches_keep_their_events_or_order_a_consumer_stream():
    def batches():
        for i in range(2):
            yield ferry.array([i, 10 + i], "int64", device="sim:1")

    with DeviceArrayStream.from_batches(Schema.from_format("l"), batches(), device="sim:1") as stream:
        first = stream.next()
        assert first.device.name == "sim:1" and first.to_pylist() == [0, 10]
        consumer = ferry.device("sim:1").create_stream()
        second = stream.next(consumer)  # consumer waits on the batch's event
        consumer.synchronize()
        assert second.to_pylist() == [1, 11]
        consumer.close()
        first.close()
        second.close()


def test_consumed_from_another_thread():
    stream = DeviceArrayStream.from_batches(Schema.from_format("i"), (ferry.array([k], "int32") for k in range(50)))
    seen = []

    def consume():
        with stream:
            for batch in stream:
                seen.append(batch.to_pylist()[0])
                batch.close()

    worker = threading.Thread(target=consume)
    worker.start()
    worker.join(60)
    assert not worker.is_alive() and seen == list(range(50))


def test_capsule_hand_off_and_c_address_round_trip():
    from ferry.raw import ffi, lib
    stream = DeviceArrayStream.from_batches(Schema.from_format("i"), [ferry.array([9], "int32")])
    raw = lib.ferry_array_stream_new()
    stream.export_to_c(int(ffi.cast("uintptr_t", raw)))
    assert stream.closed and raw.release != ffi.NULL
    again = DeviceArrayStream.from_c(int(ffi.cast("uintptr_t", raw)))
    assert raw.release == ffi.NULL and [b.to_pylist() for b in again] == [[9]]
    again.close()
    lib.ferry_array_stream_free(raw)
    read = DeviceArrayStream.from_batches(Schema.from_format("i"), [])
    read.schema
    with pytest.raises(ValueError, match="partly read"):
        read.__arrow_c_device_stream__()
    read.close()
