"""Device arrays, streams and events on ferry's simulated device, whose
strict mode makes a missing wait visible: queued work runs only when
someone waits, until then the memory reads as 0xA5. Run: python sim_device.py"""
import struct

import numpy as np

import ferry
from ferry import DeviceArray, Schema

sim = ferry.device("sim:0")
stream = sim.create_stream()

buf = sim.allocate(4 * 4)
buf.copy_from_host(struct.pack("<4i", 10, 20, 30, 40), stream=stream)  # queued
arr = DeviceArray.from_buffers(Schema.from_format("i", "x"), 4, [None, buf], device=sim, stream=stream)
print(arr)                                   # ... device=sim:0, pending event
print("before waiting:", bytes(arr.buffer(1))[:4].hex())   # a5a5a5a5

consumer = sim.create_stream()
arr.wait(consumer)                           # the consumer's stream waits, the host does not
consumer.synchronize()                       # blocks (GIL released) until it ran
print("after waiting:", arr.buffer(1).cast("i").tolist())  # [10, 20, 30, 40]

# DLPack hands the data over without an event: with stream=, that stream is
# ordered first (the array API standard's protocol); ferry to ferry keeps
# the order as an event on the imported array.
again = ferry.from_dlpack(arr)
print("imported over DLPack:", again.device, again.to_pylist())

# Bringing it to NumPy means bringing it to the CPU: explicit, and a copy.
with arr.to_host() as host:
    print("numpy:", np.from_dlpack(host))

for x in (again, arr, stream, consumer):
    x.close()
