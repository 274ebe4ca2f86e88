"""The binding contract (docs/bindings.md; issue 20, items 8-10): validation
on import by default with a named opt-out (arrays and streams), the same
error after a stream error, and the array before the schema."""
import errno
import struct

import pytest

import ferry
from ferry import DeviceArray, DeviceArrayStream, Schema
from ferry.raw import ffi, lib


def address(cdata):
    return int(ffi.cast("uintptr_t", cdata))


# ---- 9. after a stream error, the same error, and never get_next again -----------


class FailsThenYields:
    """A producer that yields a batch, fails, and would yield another batch
    if it were asked again (as Python, Lua and Java used to ask)."""

    def __init__(self):
        self.calls = 0

    def __iter__(self):
        return self

    def __next__(self):
        self.calls += 1
        if self.calls == 2:
            raise ferry.FerryError(errno.EPROTO, "injected failure at get_next 2")
        return ferry.array([self.calls], "int32")


def test_after_a_stream_error_every_read_raises_the_same_error():
    producer = FailsThenYields()
    stream = DeviceArrayStream.from_batches(Schema.from_format("i"), producer)
    first = stream.next()
    assert first.to_pylist() == [1]
    first.close()
    for read in (stream.next, lambda: next(iter(stream)), stream.read_all, stream.next):
        with pytest.raises(ferry.FerryError) as caught:
            read()
        assert caught.value.code == errno.EPROTO
        assert caught.value.message == "injected failure at get_next 2"
    assert producer.calls == 2  # the producer was never asked again
    stream.close()


def test_after_a_stream_error_through_c_the_same_error():
    """The same through a C hand-off (the core's stream, then from_c)."""
    producer = FailsThenYields()
    raw = lib.ferry_array_stream_new()
    DeviceArrayStream.from_batches(Schema.from_format("i"), producer).export_to_c(address(raw))
    with DeviceArrayStream.from_c(address(raw)) as stream:
        assert [b.to_pylist() for b in [stream.next()]] == [[1]]
        messages = set()
        for _ in range(3):
            with pytest.raises(ferry.FerryError) as caught:
                list(stream)
            messages.add((caught.value.code, caught.value.message))
        assert messages == {(errno.EPROTO, "injected failure at get_next 2")}
        assert producer.calls == 2
    lib.ferry_array_stream_free(raw)


def test_a_failed_get_schema_is_kept():
    calls = []

    def make_schema():
        calls.append(1)
        raise ferry.FerryError(errno.EIO, "no schema today")

    with DeviceArrayStream.from_batches(make_schema, []) as stream:
        for read in (lambda: stream.schema, stream.next, lambda: stream.schema):
            with pytest.raises(ferry.FerryError, match="no schema today") as caught:
                read()
            assert caught.value.code == errno.EIO
        assert len(calls) == 1


def test_the_end_stays_the_end_without_asking_the_producer():
    producer = FailsThenYields()
    producer.calls = 10  # past the failure: yields forever
    limited = iter([ferry.array([5], "int32")])

    class Counting:
        calls = 0

        def __iter__(self):
            return self

        def __next__(self):
            Counting.calls += 1
            return next(limited)

    with DeviceArrayStream.from_batches(Schema.from_format("i"), Counting()) as stream:
        assert [b.to_pylist() for b in stream] == [[5]]
        assert stream.next() is None and list(stream) == []
        assert Counting.calls == 2  # one batch, one end: never asked again


# ---- 8. validation by default, named opt-outs -------------------------------------


def _broken_int32():
    """An int32 array whose struct claims one buffer (validation refuses it)."""
    arr = ferry.array([1, 2, 3], "int32")
    arr._array_ptr().n_buffers = 1
    return arr


def _mend(arr):
    arr._array_ptr().n_buffers = 2


def test_arrays_validate_by_default_and_opt_out_by_name():
    schema, out = lib.ferry_schema_new(), lib.ferry_device_array_new()
    broken = _broken_int32()
    broken.export_to_c(address(out), address(schema))
    with pytest.raises(ferry.InvalidArgumentError, match="buffers"):
        DeviceArray.from_c(address(out), address(schema))  # refused (and released)
    broken.export_to_c(address(out), address(schema))
    trusted = DeviceArray.from_c(address(out), address(schema), validate=False)
    assert len(trusted) == 3
    _mend(trusted)
    trusted.close()
    _mend(broken)
    broken.close()
    lib.ferry_schema_free(schema)
    lib.ferry_device_array_free(out)


def test_validate_full_checks_utf8():
    offsets = struct.pack("<2i", 0, 1)
    bad = DeviceArray.from_buffers(Schema.from_format("u"), 1, [None, offsets, bytearray(b"\xff")])
    schema, out = lib.ferry_schema_new(), lib.ferry_device_array_new()
    for level, ok in (("default", True), (True, True), ("full", False), ("none", True), (False, True)):
        bad.export_to_c(address(out), address(schema))
        if ok:
            DeviceArray.from_c(address(out), address(schema), validate=level).close()
        else:
            with pytest.raises(ferry.InvalidArgumentError, match="UTF-8|utf-8|utf8"):
                DeviceArray.from_c(address(out), address(schema), validate=level)
    with pytest.raises(ValueError, match="validate must be"):
        DeviceArray.from_c(address(out), address(schema), validate="strict")
    bad.close()
    lib.ferry_schema_free(schema)
    lib.ferry_device_array_free(out)


def test_stream_batches_validate_by_default_and_opt_out_per_stream():
    for validate in (True, False):
        broken = _broken_int32()
        raw = lib.ferry_array_stream_new()
        DeviceArrayStream.from_batches(Schema.from_format("i"), [broken]).export_to_c(address(raw))
        with DeviceArrayStream.from_c(address(raw), validate=validate) as stream:
            if validate:
                with pytest.raises(ferry.InvalidArgumentError, match="buffers") as caught:
                    stream.next()
                with pytest.raises(ferry.InvalidArgumentError) as again:  # kept, as any error
                    stream.next()
                assert again.value.message == caught.value.message
            else:
                batch = stream.next()
                assert len(batch) == 3
                _mend(batch)
                batch.close()
        lib.ferry_array_stream_free(raw)


def test_device_stream_takes_the_opt_out_too():
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"x": [1, 2, 3]})
    with ferry.device_stream(table, validate=False) as stream:
        assert [b.to_pylist() for b in stream] == [[{"x": 1}, {"x": 2}, {"x": 3}]]
    with ferry.device_stream(table.to_reader(), validate="full") as stream:
        assert len(stream.read_all()) == 1


# ---- 10. the array first, then the schema --------------------------------------------


def test_from_c_and_export_to_c_take_the_array_first():
    source = ferry.array([4, 5], "int16")
    schema, out = ffi.new("struct ArrowSchema*"), ffi.new("struct ArrowDeviceArray*")
    source.export_to_c(address(out), address(schema))  # as pyarrow's _export_to_c(array, schema)
    with DeviceArray.from_c(address(out), address(schema)) as arr:  # _import_from_c(array, schema)
        assert arr.to_pylist() == [4, 5]
    # Keywords name each address, in any order.
    source.export_to_c(schema_address=address(schema), array_address=address(out))
    with DeviceArray.from_c(schema_address=address(schema), array_address=address(out)) as arr:
        assert arr.to_pylist() == [4, 5]
    # Only the array: the schema is optional on export.
    source.export_to_c(address(out))
    assert schema.release == ffi.NULL and out.array.release != ffi.NULL
    out.array.release(ffi.addressof(out, "array"))
    with pytest.raises(TypeError, match="multiple values"):
        DeviceArray.from_c(address(out), array_address=address(out))
    source.close()


def test_pyarrow_round_trip_in_its_own_argument_order():
    pa = pytest.importorskip("pyarrow")
    schema, out = ffi.new("struct ArrowSchema*"), ffi.new("struct ArrowArray*")
    data = pa.array([1, None, 3], pa.int64())
    data._export_to_c(address(out), address(schema))  # pyarrow: array first
    device = lib.ferry_device_array_new()
    lib.ferry_device_array_init(device, out, 1, -1, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL)
    with DeviceArray.from_c(address(device), address(schema)) as arr:
        assert arr.to_pylist() == [1, None, 3]
    lib.ferry_device_array_free(device)
