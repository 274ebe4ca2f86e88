"""Arrow's PyCapsule interface, both ways, against pyarrow, nanoarrow and Polars."""
import ctypes

import nanoarrow as na
import nanoarrow.device as nad
import polars as pl
import pyarrow as pa
import pytest

import ferry
from ferry import DeviceArray, DeviceArrayStream, Schema


def capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get_name(capsule).decode()


def test_capsule_names_follow_the_spec():
    arr = ferry.array([1, 2], "int32")
    schema_capsule, array_capsule = arr.__arrow_c_device_array__()
    assert (capsule_name(schema_capsule), capsule_name(array_capsule)) == ("arrow_schema", "arrow_device_array")
    schema_capsule, array_capsule = arr.__arrow_c_array__()
    assert (capsule_name(schema_capsule), capsule_name(array_capsule)) == ("arrow_schema", "arrow_array")
    assert capsule_name(arr.schema.__arrow_c_schema__()) == "arrow_schema"
    stream = DeviceArrayStream.from_batches(arr.schema, [])
    assert capsule_name(stream.__arrow_c_device_stream__()) == "arrow_device_array_stream"
    assert stream.closed  # handed on
    assert capsule_name(DeviceArrayStream.from_batches(arr.schema, []).__arrow_c_stream__()) == "arrow_array_stream"
    arr.close()


def test_unconsumed_capsules_release_what_they_hold():
    refs = ferry._native.live_refs()
    arr = ferry.array([1, 2, 3], "int64")
    capsules = [arr.__arrow_c_device_array__(), arr.__arrow_c_array__(), arr.__dlpack__(max_version=(1, 1)),
                arr.__dlpack__()]
    arr.close()
    assert ferry._native.live_refs() == refs + 1  # the capsules keep the buffer
    del capsules
    assert ferry._native.live_refs() == refs
    stream = DeviceArrayStream.from_batches(Schema.from_format("l"), [ferry.array([1], "int64")])
    capsule = stream.__arrow_c_device_stream__()
    del capsule  # the producer (and its pending batch) is released with it
    assert ferry._native.live_refs() == refs


def test_pyarrow_to_ferry_and_back_zero_copy():
    source = pa.array([1, None, 3, 4], type=pa.int64()).slice(1)
    arr = ferry.device_array(source)
    assert (len(arr), arr.offset, arr.null_count) == (3, 1, 1)
    assert arr.to_pylist() == [None, 3, 4]
    assert arr.buffer_address(1) == source.buffers()[1].address  # the same memory
    back = pa.array(arr)  # pyarrow consumes __arrow_c_device_array__ / __arrow_c_array__
    assert back.to_pylist() == [None, 3, 4] and back.buffers()[1].address == source.buffers()[1].address
    again = pa.Array._import_from_c_device_capsule(*arr.__arrow_c_device_array__())
    assert again.equals(back)
    arr.close()


def test_pyarrow_record_batch_and_table_stream():
    batch = pa.record_batch({"a": [1, 2, 3], "b": ["x", None, "z"]})
    arr = ferry.device_array(batch)
    assert arr.format == "+s" and arr.to_pylist()[1] == {"a": 2, "b": None}
    arr.close()
    table = pa.Table.from_batches([batch, batch])
    with ferry.device_stream(table) as stream:
        assert stream.schema.format == "+s"
        batches = stream.read_all()
    assert [len(b) for b in batches] == [3, 3] and all(b.device.is_cpu for b in batches)
    assert batches[1].to_pylist()[2] == {"a": 3, "b": "z"}
    for b in batches:
        b.close()


def test_ferry_stream_to_pyarrow_reader():
    schema = Schema.from_format("+s", children=[Schema.from_format("l", "n")])
    batches = [ferry.device_array(pa.record_batch({"n": [i, i + 1]})) for i in range(3)]
    stream = DeviceArrayStream.from_batches(schema, batches)
    reader = pa.RecordBatchReader.from_stream(stream)  # __arrow_c_stream__
    assert reader.read_all().column("n").to_pylist() == [0, 1, 1, 2, 2, 3]
    assert stream.closed


def test_ferry_device_stream_to_pyarrow_device_import():
    schema = Schema.from_format("+s", children=[Schema.from_format("l", "n")])
    stream = DeviceArrayStream.from_batches(schema, [ferry.device_array(pa.record_batch({"n": [4, 5]}))])
    capsule = stream.__arrow_c_device_stream__()
    reader = pa.RecordBatchReader._import_from_c_device_capsule(capsule) if hasattr(
        pa.RecordBatchReader, "_import_from_c_device_capsule") else None
    if reader is None:
        # pyarrow without a device stream importer: consume it as ferry does
        with ferry.device_stream(capsule) as again:
            assert again.next().to_pylist() == [{"n": 4}, {"n": 5}]
    else:
        assert reader.read_all().column("n").to_pylist() == [4, 5]


def test_nanoarrow_both_ways():
    # nanoarrow -> ferry: its device array (CPU) and its plain array
    na_array = na.c_array([1, 2, 3], na.int32())
    device_array = nad.c_device_array(na_array)
    arr = ferry.device_array(device_array)
    assert arr.to_pylist() == [1, 2, 3] and arr.device.is_cpu
    # ferry -> nanoarrow: device array capsule, and the CPU protocol
    view = nad.c_device_array(arr)
    assert view.device_type_id == 1 and view.array.length == 3
    assert na.Array(arr).to_pylist() == [1, 2, 3]
    arr.close()
    # streams: nanoarrow's ArrayStream (CPU protocol) both ways
    stream = ferry.device_stream(na.ArrayStream([4, 5, 6], na.int32()))
    got = [b.to_pylist() for b in stream]
    assert got == [[4, 5, 6]]
    out = DeviceArrayStream.from_batches(Schema.from_format("i"), [ferry.array([7, 8], "int32")])
    assert na.ArrayStream(out).read_all().to_pylist() == [7, 8]


def test_polars_stream_capsule_both_ways():
    df = pl.DataFrame({"a": [1, 2, 3], "s": ["p", None, "r"]})
    with ferry.device_stream(df) as stream:
        rows = [row for batch in stream for row in batch.to_pylist()]
    assert rows == [{"a": 1, "s": "p"}, {"a": 2, "s": None}, {"a": 3, "s": "r"}]
    schema = Schema.from_format("+s", children=[Schema.from_format("l", "a")])
    batch = ferry.device_array(pa.record_batch({"a": [10, 20]}))
    back = pl.DataFrame(DeviceArrayStream.from_batches(schema, [batch]))
    assert back["a"].to_list() == [10, 20]


def test_device_data_refuses_the_cpu_protocols():
    sim = ferry.array([1, 2], "int32", device="sim:0")
    with pytest.raises(BufferError, match="not on the CPU"):
        sim.__arrow_c_array__()
    schema, device_array = sim.__arrow_c_device_array__()  # the device protocol works
    imported = DeviceArray.from_capsules(schema, device_array)
    assert imported.device.name == "sim:0" and imported.to_pylist() == [1, 2]
    stream = DeviceArrayStream.from_batches(sim.schema, [imported], device="sim:0")
    with pytest.raises(BufferError, match="not on the CPU"):
        stream.__arrow_c_stream__()
    stream.close()
    sim.close()


def test_requested_schema_and_future_keywords():
    arr = ferry.array([1], "int32")
    same = pa.int32().__arrow_c_schema__()
    assert DeviceArray.from_capsules(*arr.__arrow_c_device_array__(requested_schema=same)).to_pylist() == [1]
    with pytest.raises(NotImplementedError, match="does not cast"):
        arr.__arrow_c_device_array__(pa.int64().__arrow_c_schema__())
    with pytest.raises(NotImplementedError, match="future_keyword"):
        arr.__arrow_c_device_array__(future_keyword=True)
    assert len(arr.__arrow_c_device_array__(future_keyword=None)) == 2  # None is the default
    arr.close()


def test_requested_schema_is_honoured_where_the_data_answers_it_unchanged():
    ints = ferry.device_array(pa.array([1, 2, None], pa.int64()))
    # int64 read as timestamp (any zone), date64 or duration: the same bytes.
    for wanted in [pa.timestamp("ms", "UTC"), pa.date64(), pa.duration("us")]:
        got = pa.Array._import_from_c_capsule(*ints.__arrow_c_array__(wanted.__arrow_c_schema__()))
        assert got.type == wanted
        assert got.cast(pa.int64()).to_pylist() == [1, 2, None]
    assert pa.array(ints, type=pa.timestamp("s")).to_pylist()[2] is None  # pyarrow asks this way
    # The answer carries the requested names and outlives the request.
    request = pa.field("when", pa.date64()).__arrow_c_schema__()
    schema, array = ints.__arrow_c_device_array__(requested_schema=request)
    del request
    with DeviceArray.from_capsules(schema, array) as back:
        assert back.schema.name == "when" and back.schema.format == "tdm"
    texts = ferry.device_array(pa.array(["a", "é"]))
    as_binary = pa.Array._import_from_c_capsule(*texts.__arrow_c_array__(pa.binary().__arrow_c_schema__()))
    assert as_binary.to_pylist() == [b"a", "é".encode()]
    nested = ferry.device_array(pa.array([{"a": 1, "b": "x"}], pa.struct([("a", pa.int64()), ("b", pa.string())])))
    wanted = pa.struct([("p", pa.timestamp("s")), ("q", pa.binary())])
    got = pa.Array._import_from_c_capsule(*nested.__arrow_c_array__(wanted.__arrow_c_schema__()))
    assert got.type == wanted
    for arr in (ints, texts, nested):
        arr.close()


def test_requested_schema_without_a_zero_copy_answer_is_refused_by_name():
    ints = ferry.device_array(pa.array([1, None], pa.int64()))
    with pytest.raises(NotImplementedError, match='does not cast.*"l" cannot be read as "i"'):
        ints.__arrow_c_array__(pa.int32().__arrow_c_schema__())
    with pytest.raises(NotImplementedError, match='"l" cannot be read as "L"'):
        ints.__arrow_c_device_array__(pa.uint64().__arrow_c_schema__())
    with pytest.raises(NotImplementedError, match='"x" is not nullable, but the array.s "l" has nulls'):
        ints.__arrow_c_array__(pa.field("x", pa.int64(), nullable=False).__arrow_c_schema__())
    with pytest.raises(NotImplementedError, match='"tss:" cannot be read as "tsm:"'):
        ferry.device_array(pa.array([1], pa.timestamp("s"))).__arrow_c_array__(
            pa.timestamp("ms").__arrow_c_schema__())
    binary = ferry.device_array(pa.array([b"\xff"]))
    with pytest.raises(NotImplementedError, match='"z" cannot be read as "u"'):  # UTF-8 needs a check
        binary.__arrow_c_array__(pa.string().__arrow_c_schema__())
    with pytest.raises(TypeError, match="requested_schema must be"):
        ints.__arrow_c_array__(42)
    for arr in (ints, binary):
        arr.close()


def _int64_stream(nullable=True):
    values = pa.array([1, 2], pa.int64())
    schema = ferry.schema(pa.field("n", pa.int64(), nullable=nullable))
    return ferry.DeviceArrayStream.from_batches(schema, [ferry.device_array(values) for _ in range(2)])


def test_stream_requested_schema_is_honoured_where_the_data_answers_it_unchanged():
    stream = _int64_stream()
    capsule = stream.__arrow_c_stream__(pa.field("when", pa.timestamp("s")).__arrow_c_schema__())
    assert stream.closed
    with ferry.device_stream(capsule) as back:
        assert (back.schema.format, back.schema.name) == ("tss:", "when")
        assert [b.to_pylist() for b in back] == [[1, 2], [1, 2]]
    # pyarrow asks through requested_schema, on a stream of record batches.
    batch = pa.record_batch({"a": pa.array([5, 6], pa.int64())})
    records = ferry.DeviceArrayStream.from_batches(ferry.schema(batch.schema), [ferry.device_array(batch)])
    wanted = pa.schema([("t", pa.timestamp("ms", "UTC"))])
    table = pa.RecordBatchReader.from_stream(records, schema=wanted).read_all()
    assert table.schema == wanted
    assert table.column(0).cast(pa.int64()).to_pylist() == [5, 6]


def test_stream_requested_schema_without_an_answer_is_refused_and_the_stream_stays():
    stream = _int64_stream()
    with pytest.raises(NotImplementedError, match='does not cast.*"l" cannot be read as "i"'):
        stream.__arrow_c_device_stream__(pa.int32().__arrow_c_schema__())
    with pytest.raises(NotImplementedError, match='"n" is not nullable, but the stream.s "l" is'):
        stream.__arrow_c_stream__(pa.field("n", pa.int64(), nullable=False).__arrow_c_schema__())
    with pytest.raises(TypeError, match="requested_schema must be"):
        stream.__arrow_c_stream__(42)
    assert not stream.closed
    assert [b.to_pylist() for b in stream] == [[1, 2], [1, 2]]  # still readable, unchanged
    strict = _int64_stream(nullable=False)
    capsule = strict.__arrow_c_stream__(pa.field("n", pa.int64(), nullable=False).__arrow_c_schema__())
    with ferry.device_stream(capsule) as back:
        assert back.read_all()[0].to_pylist() == [1, 2]


def test_a_consumed_capsule_cannot_be_imported_twice():
    arr = ferry.array([1], "int32")
    capsules = arr.__arrow_c_device_array__()
    DeviceArray.from_capsules(*capsules).close()
    with pytest.raises(ValueError, match="already consumed"):
        DeviceArray.from_capsules(*capsules)
    arr.close()


def test_schema_protocol_round_trip():
    s = ferry.schema(pa.field("x", pa.list_(pa.int32())))
    assert (s.format, s.name, s.child(0).format) == ("+l", "x", "i")
    assert pa.field(s).type == pa.list_(pa.int32())
    s.close()
