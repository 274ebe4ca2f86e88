"""pyarrow and ferry, both ways, zero-copy. Run: python pyarrow_interop.py"""
import pyarrow as pa

import ferry

source = pa.array(["apple", None, "cherry"])
arr = ferry.device_array(source)               # __arrow_c_device_array__
assert arr.buffer_address(2) == source.buffers()[2].address  # the same memory
print("ferry sees:", arr.to_pylist())

back = pa.array(arr)                           # pyarrow consumes ferry's capsules
assert back.buffers()[2].address == source.buffers()[2].address
print("pyarrow sees:", back.to_pylist())

batch = pa.record_batch({"id": [1, 2], "name": ["a", "b"]})
with ferry.device_array(batch) as rows:
    print("a record batch is a struct array:", rows.to_pylist())

reader = pa.RecordBatchReader.from_batches(batch.schema, [batch, batch])
with ferry.device_stream(reader) as stream:     # __arrow_c_stream__
    print("batches:", [len(b) for b in stream])
arr.close()
