"""The fast paths of ferry._native (the speed work of bench/interchange.py)
keep the protocols' semantics: from_dlpack's memory of CPU producer types,
DLPack capsules read and deleted exactly once, schemas shared between DLPack
imports, and DeviceArray.from_capsules called straight into C."""
import ctypes
import errno
import struct

import numpy as np
import pyarrow as pa
import pytest

import ferry
from ferry import DeviceArray, Schema
from test_capsules import capsule_name


def counting_producer_type():
    """A new producer type (from_dlpack remembers types, so each test needs
    its own) that wraps any DLPack producer and records the calls."""

    class Producer:
        calls = []

        def __init__(self, inner):
            self.inner = inner

        def __dlpack_device__(self):
            Producer.calls.append(("device",))
            return self.inner.__dlpack_device__()

        def __dlpack__(self, **kwargs):
            Producer.calls.append(("dlpack", kwargs.get("stream")))
            return self.inner.__dlpack__(**kwargs)

    return Producer


def test_a_cpu_producer_type_is_asked_its_device_once():
    Producer = counting_producer_type()
    x = np.arange(5, dtype=np.int64)
    first = ferry.from_dlpack(Producer(x))
    assert Producer.calls == [("device",), ("dlpack", None)]
    Producer.calls.clear()
    second = ferry.from_dlpack(Producer(x[1:]))
    assert Producer.calls == [("dlpack", None)]  # known to make CPU arrays: no query
    assert first.to_pylist() == [0, 1, 2, 3, 4] and second.to_pylist() == [1, 2, 3, 4]
    assert second.buffer_address(1) == x.ctypes.data + 8  # zero-copy
    first.close()
    second.close()


def test_a_cpu_producer_type_that_turns_out_on_a_device_takes_the_full_path():
    """The guess is checked on the tensor itself: device data from a type
    remembered as CPU is dropped unused (its deleter runs once) and imported
    again through the full path, with ferry's stream and an event."""
    Producer = counting_producer_type()
    on_cpu = ferry.array([1, 2], "int32")
    ferry.from_dlpack(Producer(on_cpu)).close()  # the type is now known for the CPU
    Producer.calls.clear()

    sim = ferry.device("sim:0")
    on_sim = ferry.array([7, 8, 9], "int32", device=sim)
    imported = ferry.from_dlpack(Producer(on_sim))
    handle = sim.interchange_stream().handle
    assert Producer.calls == [("dlpack", None), ("device",), ("dlpack", handle)]
    assert imported.device == sim and imported.sync_event is not None
    assert imported.to_pylist() == [7, 8, 9]
    assert on_sim._shared == 1  # the dropped capsule's export was released, once
    imported.close()
    assert on_sim._shared == 0

    Producer.calls.clear()
    again = ferry.from_dlpack(Producer(on_sim))  # now asked first, for good
    assert Producer.calls == [("device",), ("dlpack", handle)]
    again.close()
    Producer.calls.clear()
    ferry.from_dlpack(Producer(on_cpu)).close()  # and for its CPU arrays too
    assert Producer.calls == [("device",), ("dlpack", None)]
    on_cpu.close()
    on_sim.close()


def test_many_producer_types_beyond_what_is_remembered():
    x = np.arange(3, dtype=np.uint16)
    for _ in range(40):  # more types than the table keeps: the rest are asked each time
        Producer = counting_producer_type()
        for _ in range(2):
            with ferry.from_dlpack(Producer(x)) as arr:
                assert arr.to_pylist() == [0, 1, 2]
        assert Producer.calls.count(("dlpack", None)) == 2


def test_ferry_arrays_know_their_device_without_a_query():
    sim = ferry.array([4, 5], "int64", device="sim:1")
    imported = ferry.from_dlpack(sim)  # full path: the sim stream and an event
    assert imported.sync_event is not None and imported.to_pylist() == [4, 5]
    cpu = ferry.array([6], "int64")
    assert ferry.from_dlpack(cpu).to_pylist() == [6]
    closed = ferry.array([1], "int64")
    closed.close()
    with pytest.raises(ValueError, match="closed"):
        ferry.from_dlpack(closed)
    for a in (imported, sim, cpu):
        a.close()


@pytest.mark.parametrize("max_version,name", [((1, 1), "dltensor_versioned"), (None, "dltensor")])
def test_unconsumed_capsules_release_the_array_once(max_version, name):
    arr = ferry.array([1, 2, 3], "int32")
    capsule = arr.__dlpack__(max_version=max_version)
    assert capsule_name(capsule) == name and arr._shared == 1
    del capsule  # never consumed: its destructor deletes the tensor
    assert arr._shared == 0
    consumed = np.from_dlpack(_Once(arr.__dlpack__(max_version=max_version)))
    assert arr._shared == 1  # NumPy took the tensor (renamed the capsule)
    del consumed  # NumPy deletes it; the capsule's destructor must not again
    assert arr._shared == 0
    arr.close()


class _Once:
    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def _capsule(name):
    """A PyCapsule with an arbitrary name over a dummy pointer."""
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    keep = ctypes.c_int64(0)
    name_bytes = ctypes.create_string_buffer(name.encode())
    _capsule.keep.append((keep, name_bytes))  # the capsule borrows both
    return new(ctypes.addressof(keep), name_bytes, None)


_capsule.keep = []


@pytest.mark.parametrize("name", ["used_dltensor_versioned", "used_dltensor", "dltensor_v",
                                  "dltenso", "arrow_schema", ""])
def test_capsules_that_are_not_unused_dlpack_ones_are_refused(name):
    with pytest.raises(TypeError, match="unused DLPack capsule"):
        ferry.from_dlpack(_capsule(name))


def test_imports_of_one_type_share_a_schema_that_closing_leaves_usable():
    a = ferry.from_dlpack(np.arange(3, dtype=np.float32))
    b = ferry.from_dlpack(np.arange(2, dtype=np.float32))
    c = ferry.from_dlpack(np.arange(2, dtype=np.float64))
    assert a.schema._address == b.schema._address != c.schema._address
    assert (a.format, c.format) == ("f", "g")
    assert not a.schema.nullable and a.schema.name is None and a.schema.metadata == {}
    schema = a.schema
    schema.close()
    a.close()
    assert b.schema.format == "f" and b.to_pylist() == [0.0, 1.0]
    exported = pa.Array._import_from_c_device_capsule(*b.__arrow_c_device_array__())
    assert exported.type == pa.float32() and exported.to_pylist() == [0.0, 1.0]
    del exported
    b.close()
    c.close()


def test_arrays_outliving_their_exports_and_exports_outliving_their_arrays():
    """Holder blocks are reused after a DeviceArray is dropped, and freed when
    an export's release drops the last reference instead."""
    x = np.arange(6, dtype=np.int32)
    capsules = []
    for i in range(20):
        arr = ferry.from_dlpack(x[i % 6:])
        if i % 2:
            capsules.append(arr.__dlpack__(max_version=(1, 1)))  # the export outlives arr
        assert arr.to_pylist() == list(range(i % 6, 6))
        del arr
    views = [np.from_dlpack(_Once(c)) for c in capsules]
    del capsules
    assert [v.tolist() for v in views] == [list(range(i % 6, 6)) for i in range(1, 20, 2)]
    del views
    fresh = [ferry.from_dlpack(x) for _ in range(12)]
    assert all(f.to_pylist() == list(range(6)) for f in fresh)


def test_from_capsules_keywords():
    source = pa.array([1, None, 3], type=pa.int16())
    for validate in (True, False):
        schema, array = source.__arrow_c_device_array__()
        with DeviceArray.from_capsules(schema, array, validate=validate) as arr:
            assert arr.to_pylist() == [1, None, 3]
        assert capsule_name(array) == "arrow_device_array"
    with pytest.raises(TypeError, match="unexpected keyword argument 'check'"):
        DeviceArray.from_capsules(*source.__arrow_c_device_array__(), check=False)
    with pytest.raises(TypeError, match="2 positional arguments"):
        DeviceArray.from_capsules(source.__arrow_c_device_array__()[0])
    with pytest.raises(TypeError, match="arrow_schema"):
        DeviceArray.from_capsules(*reversed(source.__arrow_c_device_array__()))


def test_validation_is_what_validate_false_skips():
    """A struct that validation refuses imports without it (the caller's
    promise), which is what makes the trusted import the cheaper one."""
    array = ferry.array([1, 2, 3], "int64")
    utf8 = ferry.Schema.from_format("u")  # 3 buffers; the int64 array has 2
    _, a_capsule = array.__arrow_c_device_array__()
    with pytest.raises(ferry.InvalidArgumentError, match="buffers"):
        DeviceArray.from_capsules(utf8.__arrow_c_schema__(), a_capsule)
    _, a_capsule = array.__arrow_c_device_array__()
    trusted = DeviceArray.from_capsules(utf8.__arrow_c_schema__(), a_capsule, validate=False)
    assert trusted.format == "u" and trusted.n_buffers == 2  # taken as given
    with pytest.raises(ferry.InvalidArgumentError):
        trusted.validate()
    for x in (trusted, utf8, array):
        x.close()


# ---- the everyday producer and consumer paths in C (issue 14) ----------------------


def c_export(array, move=False):
    """Exports `array` into fresh C structs (schema, device array); returns
    their integer addresses (array first, as from_c takes them) and the cffi
    owners that keep them."""
    ffi = ferry.raw.ffi
    schema, device_array = ffi.new("struct ArrowSchema*"), ffi.new("struct ArrowDeviceArray*")
    array.export_to_c(int(ffi.cast("uintptr_t", device_array)), int(ffi.cast("uintptr_t", schema)), move=move)
    return (int(ffi.cast("uintptr_t", device_array)), int(ffi.cast("uintptr_t", schema))), (schema, device_array)


def test_from_c_and_export_to_c_round_trip_and_keywords():
    source = ferry.array([5, None, 7], "int32")
    addresses, keep = c_export(source, move=True)
    assert source.closed  # sole owner: the original structs were handed over
    with DeviceArray.from_c(*addresses) as arr:
        assert arr.to_pylist() == [5, None, 7] and len(arr) == 3
    assert keep[1].array.release == ferry.raw.ffi.NULL  # moved in, so left released
    with pytest.raises(TypeError, match="unexpected keyword argument 'check'"):
        DeviceArray.from_c(*addresses, check=False)
    with pytest.raises(TypeError, match="needs array_address and schema_address"):
        DeviceArray.from_c(addresses[0])
    with pytest.raises(ValueError, match="released"):
        DeviceArray.from_c(*addresses)  # already moved out
    other = ferry.array([1], "int8")
    with pytest.raises(TypeError, match="unexpected keyword argument 'copy'"):
        other.export_to_c(*addresses, copy=True)
    shared, keep2 = c_export(other)  # move=False: shares, the array stays usable
    assert not other.closed and other._shared == 1
    DeviceArray.from_c(*shared).close()
    assert other._shared == 0
    other.close()


def test_a_buffer_view_keeps_the_data_alive_after_close():
    """buffer(i) is a view the array's data outlives close() for, like an
    export: the bytes it reads stay valid and are given back exactly once,
    when the last view goes."""
    refs = ferry._native.live_refs()
    data = bytearray(struct.pack("<3i", 1, 2, 3))
    arr = DeviceArray.from_buffers(Schema.from_format("i"), 3, [None, data])
    assert ferry._native.live_refs() == refs + 1  # the host buffers, held for the array
    view = arr.buffer(1)
    child_view = view  # a second name: still one view
    assert view.readonly and view.cast("i").tolist() == [1, 2, 3]
    arr.close()
    assert ferry._native.live_refs() == refs + 1  # the view holds the data
    assert child_view.cast("i")[2] == 3
    with pytest.raises(BufferError):
        data.extend(b"x")  # still exported: the memory cannot move
    del view, child_view
    assert ferry._native.live_refs() == refs  # given back once, now
    data.extend(b"x")
    with pytest.raises(ValueError, match="closed"):
        arr.buffer(1)


def test_buffer_of_children_and_bad_indices():
    child = ferry.array(["ab", None, "c"], "utf8")
    schema = Schema.from_format("+s", children=[child.schema])
    parent = DeviceArray.from_buffers(schema, 3, [None], children=[child])
    view = parent.child(0)
    assert bytes(view.buffer(2)) == b"abc" and view.buffer(1).cast("i").tolist() == [0, 2, 2, 3]
    assert parent.buffer(0) is None  # a NULL validity buffer
    with pytest.raises(IndexError, match="buffer 1 of an array with 1 buffers"):
        parent.buffer(1)
    with pytest.raises(IndexError, match="buffer 3 of an array with 3 buffers"):
        view.buffer(3)
    parent.close()
    with pytest.raises(ValueError, match="closed"):
        view.buffer(1)


def test_from_buffers_host_path_matches_the_general_path():
    """Host bytes on the CPU are built in C; a Device object (or anything
    else) takes the Python path. Same arrays, same refusals."""
    cpu = ferry.device("cpu")
    data = struct.pack("<4q", 9, 8, 7, 6)
    validity = bytes([0b1101])
    made = [DeviceArray.from_buffers(Schema.from_format("l"), 3, (validity, data), null_count=1, offset=1,
                                     **extra) for extra in ({}, {"device": cpu})]
    assert [a.to_pylist() for a in made] == [[None, 7, 6]] * 2
    assert made[0].buffer_address(1) == made[1].buffer_address(1)  # both zero-copy
    assert [(a.offset, a.null_count) for a in made] == [(1, 1)] * 2
    for extra in ({}, {"device": cpu}):
        with pytest.raises(ferry.InvalidArgumentError, match="buffers") as refused:
            DeviceArray.from_buffers(Schema.from_format("u"), 1, [None, data], **extra)
        assert refused.value.code == errno.EINVAL
    with pytest.raises(TypeError):
        DeviceArray.from_buffers(Schema.from_format("l"), 1, [None, 12345])  # not bytes-like
    with pytest.raises(BufferError):
        DeviceArray.from_buffers(Schema.from_format("c"), 2, [None, memoryview(b"abcd")[::2]])
    for a in made:
        a.close()


def test_a_stream_nobody_closes_is_released_once_by_its_finalizer():
    batches = [ferry.array([i], "int32") for i in range(3)]
    stream = ferry.DeviceArrayStream.from_batches(Schema.from_format("i"), iter(batches))
    consumer = ferry.DeviceArrayStream.from_c(stream._address)  # moved: `stream` is empty now
    first = next(consumer)
    assert first.to_pylist() == [0] and consumer.schema.format == "i"
    refs = ferry._native.live_refs()
    del consumer, stream  # no close(): the object's finalizer releases the producer
    import gc
    gc.collect()
    assert ferry._native.live_refs() == refs - 1  # the producer's references, dropped once
    assert batches[1].closed is False  # never pulled: still the caller's
    first.close()
    for b in batches:
        b.close()


def test_addresses_may_be_any_integer_type():
    """from_c and export_to_c take what int() took before they moved into C
    (a NumPy integer), and refuse what is no integer at all."""
    source = ferry.array([3, 4], "int16")
    (array, schema), keep = c_export(source)
    with DeviceArray.from_c(np.uint64(array), np.int64(schema)) as arr:
        assert arr.to_pylist() == [3, 4]
    with pytest.raises(TypeError):
        DeviceArray.from_c(float(array), schema)
    source.close()
