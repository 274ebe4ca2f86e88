"""ferry's Python interchange against its peers, measured in one run.

Prints ns per operation (the best of several repeats of many calls each) and
the ratio ferry / peer for:
  1. importing an "arrow_device_array" capsule pair: ferry.DeviceArray.from_capsules
     vs pyarrow.Array._import_from_c_device_capsule, on the same capsules
     (each round makes fresh capsules with pyarrow's exporter, whose cost is
     measured alone and subtracted from both);
  2. from_dlpack of a NumPy array: ferry.from_dlpack vs numpy.from_dlpack;
  3. __dlpack__ of the same data: a ferry DeviceArray vs a NumPy array, with
     the keywords a from_dlpack consumer passes (max_version=(1, 1)).
Target: every ratio at most 1.0. Usage: python interchange.py [--quick]
"""
import sys
import timeit

import numpy as np
import pyarrow as pa

import ferry

QUICK = "--quick" in sys.argv
NUMBER = 20000 if QUICK else 200000
REPEAT = 3 if QUICK else 7


def best_ns(fn):
    return min(timeit.repeat(fn, number=NUMBER, repeat=REPEAT)) / NUMBER * 1e9


def main():
    values = np.arange(256, dtype=np.int32)
    source = pa.array(values)
    results = []

    export = source.__arrow_c_device_array__
    t_export = best_ns(export)
    t_pyarrow = best_ns(lambda: pa.Array._import_from_c_device_capsule(*export())) - t_export
    t_ferry = best_ns(lambda: ferry.DeviceArray.from_capsules(*export())) - t_export
    results.append(("import device array capsules (int32 x 256)", t_ferry, "pyarrow", t_pyarrow))

    t_np = best_ns(lambda: np.from_dlpack(values))
    t_fe = best_ns(lambda: ferry.from_dlpack(values))
    results.append(("from_dlpack(numpy int32 x 256)", t_fe, "numpy", t_np))

    arr = ferry.from_dlpack(values)
    version = (1, 1)
    t_np = best_ns(lambda: values.__dlpack__(max_version=version))
    t_fe = best_ns(lambda: arr.__dlpack__(max_version=version))
    results.append(("__dlpack__(max_version=(1, 1))", t_fe, "numpy", t_np))

    print(f"ferry {ferry.__version__} ({ferry.library_info().source} libferry), numpy {np.__version__}, "
          f"pyarrow {pa.__version__}; {NUMBER} calls x {REPEAT} repeats, best")
    print(f"{'operation':48} {'ferry ns':>9} {'peer':>8} {'peer ns':>9} {'ratio':>6}")
    worst = 0.0
    for name, ferry_ns, peer, peer_ns in results:
        ratio = ferry_ns / peer_ns
        worst = max(worst, ratio)
        print(f"{name:48} {ferry_ns:9.0f} {peer:>8} {peer_ns:9.0f} {ratio:6.2f}x")
    print(f"worst ratio {worst:.2f}x (target <= 1.00x)")


if __name__ == "__main__":
    main()
