"""Value readers (issue 20, items 4 and 13; docs/bindings.md, section 2):
to_pylist covers every layout the validator accepts, compared with pyarrow's
own to_pylist, and refuses lengths no buffer can back instead of reading
past memory."""
import decimal
import struct
import subprocess
import sys

import pytest

import ferry
from ferry import DeviceArray, Schema
from ferry.raw import ffi

pa = pytest.importorskip("pyarrow")


def same_as_pyarrow(data):
    with ferry.device_array(data) as arr:
        got = arr.to_pylist()
    assert got == data.to_pylist(), (data.type, got)
    return got


@pytest.mark.parametrize("type_", [pa.decimal32(7, 2), pa.decimal64(15, 3), pa.decimal128(38, 10),
                                   pa.decimal256(76, 5)])
def test_decimals(type_):
    values = [decimal.Decimal("1.25"), None, decimal.Decimal("-0.5"), decimal.Decimal("0")]
    if type_.precision > 20:
        values.append(decimal.Decimal("12345678901234567890.123"))
    got = same_as_pyarrow(pa.array(values, type_))
    assert all(v is None or isinstance(v, decimal.Decimal) for v in got)
    # exact, beyond the default context's 28 digits
    if type_.precision == 76:
        big = decimal.Decimal("9" * 70 + ".12345")
        assert same_as_pyarrow(pa.array([big, -big], type_)) == [big, -big]


def test_unions_sparse_and_dense():
    ints, strs = pa.array([1, 2, 3, 4]), pa.array(["a", "b", None, "d"])
    types = pa.array([0, 1, 1, 0], pa.int8())
    same_as_pyarrow(pa.UnionArray.from_sparse(types, [ints, strs]))
    same_as_pyarrow(pa.UnionArray.from_sparse(types, [ints, strs]).slice(1, 2))
    dense = pa.UnionArray.from_dense(pa.array([0, 1, 0, 1], pa.int8()), pa.array([0, 0, 1, 2], pa.int32()),
                                     [pa.array([10, 20]), pa.array(["x", "y", None])])
    same_as_pyarrow(dense)
    # type codes other than 0..n-1
    coded = pa.UnionArray.from_sparse(pa.array([5, 7, 5], pa.int8()),
                                      [pa.array([1.5, 2.5, 3.5]), pa.array([True, False, True])],
                                      type_codes=[5, 7])
    same_as_pyarrow(coded)


def test_lists_of_every_kind():
    rows = [[1, 2], None, [], [3, None]]
    same_as_pyarrow(pa.array(rows, pa.list_(pa.int64())))
    same_as_pyarrow(pa.array([[1, 2], None, [3, 4]], pa.list_(pa.int32(), 2)))
    same_as_pyarrow(pa.array([[1, 2], None, [3, 4]], pa.list_(pa.int32(), 2)).slice(1))
    same_as_pyarrow(pa.array(rows, pa.list_view(pa.int16())))
    same_as_pyarrow(pa.array(rows, pa.large_list_view(pa.int16())))
    same_as_pyarrow(pa.array(rows, pa.large_list(pa.int8())).slice(1, 3))
    # list views sharing and reordering their child ranges
    view = pa.ListViewArray.from_arrays(pa.array([2, 0, 1], pa.int32()), pa.array([1, 3, 2], pa.int32()),
                                        pa.array([7, 8, 9]))
    same_as_pyarrow(view)


def test_maps_run_end_encoded_and_intervals():
    same_as_pyarrow(pa.array([[("a", 1), ("b", None)], None, []], pa.map_(pa.string(), pa.int64())))
    ree = pa.RunEndEncodedArray.from_arrays(pa.array([2, 5, 6], pa.int32()), pa.array(["x", None, "z"]))
    same_as_pyarrow(ree)
    same_as_pyarrow(ree.slice(1, 4))
    same_as_pyarrow(pa.array([pa.MonthDayNano([1, 2, 3]), None, pa.MonthDayNano([-1, 0, 10 ** 15])],
                             pa.month_day_nano_interval()))
    # day_time and months: pyarrow cannot build them from Python; by hand
    day_time = DeviceArray.from_buffers(Schema.from_format("tiD"), 2, [None, struct.pack("<4i", 3, 500, -1, 0)])
    months = DeviceArray.from_buffers(Schema.from_format("tiM"), 2, [None, struct.pack("<2i", 14, -2)])
    assert day_time.to_pylist() == [(3, 500), (-1, 0)] and months.to_pylist() == [14, -2]
    day_time.close()
    months.close()


def test_float16_on_every_python():
    import numpy as np
    halves = np.array([1.5, -0.0, 65504, 6e-8, np.inf, 0.1], dtype=np.float16)
    got = same_as_pyarrow(pa.array(halves))
    assert got[:5] == [1.5, -0.0, 65504.0, float(np.float16(6e-8)), float("inf")]
    nan = DeviceArray.from_buffers(Schema.from_format("e"), 1, [None, struct.pack("<H", 0x7E00)])
    assert nan.to_pylist()[0] != nan.to_pylist()[0]  # NaN
    nan.close()


def test_the_layouts_already_read_still_match():
    for data in (pa.array([{"a": 1, "b": "x"}, None]), pa.array(["a", None, "ccc"]).dictionary_encode(),
                 pa.array(["short", "a string longer than twelve bytes", None], pa.string_view()),
                 pa.array([b"ab", b"cd"], pa.binary(2)), pa.array([True, None, False] * 5).slice(3)):
        same_as_pyarrow(data)


def _bool_array_claiming(length):
    """A bool array whose struct claims `length` elements over 64 bytes (the
    validator cannot know CPU buffer sizes, so DEFAULT passes it)."""
    data = bytearray(64)
    arr = DeviceArray.from_buffers(Schema.from_format("b"), 8, [None, data])
    arr._array_ptr().length = length
    return arr, data


def test_a_bool_array_claiming_2_62_elements_is_refused_not_read():
    """Issue 20, item 4: Python's to_pylist used to segfault here. The child
    process proves it: a crash would be its exit status."""
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import conftest, ferry, test_values as t\n"
        "arr, keep = t._bool_array_claiming(2 ** 62)\n"
        "arr.validate()  # passes: CPU buffer sizes are unknowable\n"
        "for read in (arr.to_pylist, arr.is_valid, lambda: arr.buffer(1)):\n"
        "    try:\n"
        "        read()\n"
        "    except ferry.InvalidArgumentError as e:\n"
        "        print('refused:', e.message)\n"
        "arr._array_ptr().length = 8\n"
        "arr.close()\n")
    import os
    result = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert len(lines) == 3, result.stdout
    assert "MAX_PYLIST_LENGTH" in lines[0] and "MAX_PYLIST_LENGTH" in lines[1]
    assert "more than a process can address" in lines[2]


def test_lengths_beyond_the_limit_and_bad_child_ranges_are_refused():
    arr, keep = _bool_array_claiming(ferry._array.MAX_PYLIST_LENGTH + 1)
    with pytest.raises(ferry.InvalidArgumentError, match="MAX_PYLIST_LENGTH"):
        arr.to_pylist()
    arr._array_ptr().length = 8
    assert arr.to_pylist() == [False] * 8
    arr.close()
    # a list whose offsets point past its child (DEFAULT checks only the last)
    child = ferry.array([1, 2], "int32")
    lst = DeviceArray.from_buffers(Schema.from_format("+l", children=[child.schema]), 2,
                                   [None, struct.pack("<3i", 0, 5, 2)], children=[child])
    with pytest.raises(ferry.InvalidArgumentError, match="outside the child"):
        lst.to_pylist()
    lst.close()
