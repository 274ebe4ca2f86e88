"""ferry in Python: the README's example. Run: python quickstart.py"""
import numpy as np
import pyarrow as pa

import ferry

# Any Arrow producer in, without copying (pyarrow, nanoarrow, Polars, cuDF...).
arr = ferry.device_array(pa.array([1, 2, None, 4]))
print(arr, arr.to_pylist())                    # ... [1, 2, None, 4]

# A device: here the simulated one (a GPU made of host memory, ids 0-3).
# Bringing data back to the host is explicit: to_host() copies (waiting on
# the producer's event first), move_to("cpu") hands over where it can.
on_sim = arr.copy_to("sim:0")
with on_sim.to_host() as host:
    print(on_sim.device, host.to_pylist())     # sim:0 [1, 2, None, 4]

# DLPack both ways with NumPy (numbers without nulls).
x = ferry.from_dlpack(np.arange(5, dtype=np.float32))
print(np.from_dlpack(x))                       # [0. 1. 2. 3. 4.]

# Out again through Arrow's PyCapsule interface.
print(pa.array(arr).to_pylist())               # [1, 2, None, 4]

for a in (arr, on_sim, x):
    a.close()                                  # or `with`; a finalizer is the safety net
