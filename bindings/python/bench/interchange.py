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
NUMBER = 5000 if QUICK else 20000
REPEAT = 10 if QUICK else 50


def best_ns(*fns):
    """Best ns per call of each function, the functions measured in turns
    (round robin) so that a noisy neighbour slows all of them alike."""
    best = [float("inf")] * len(fns)
    for _ in range(REPEAT):
        for k, fn in enumerate(fns):
            best[k] = min(best[k], timeit.timeit(fn, number=NUMBER) / NUMBER * 1e9)
    return best


def main():
    values = np.arange(256, dtype=np.int32)
    source = pa.array(values)
    results = []

    export = source.__arrow_c_device_array__

    # The capsules are unpacked first: f(*pair, validate=False) would make
    # Python build a keyword dict on every call, which costs as much as
    # ferry's validation and hid it.
    def pyarrow_import():
        schema, array = export()
        return pa.Array._import_from_c_device_capsule(schema, array)

    def ferry_import():
        schema, array = export()
        return ferry.DeviceArray.from_capsules(schema, array)

    def ferry_import_trusted():
        schema, array = export()
        return ferry.DeviceArray.from_capsules(schema, array, validate=False)

    t_export, t_pyarrow, t_ferry, t_ferry_trusted = best_ns(
        export, pyarrow_import, ferry_import, ferry_import_trusted)
    results.append(("import device array capsules (int32 x 256)", t_ferry - t_export, "pyarrow",
                    t_pyarrow - t_export))
    results.append(("  the same without ferry's validation", t_ferry_trusted - t_export, "pyarrow",
                    t_pyarrow - t_export))

    t_np, t_fe = best_ns(lambda: np.from_dlpack(values), lambda: ferry.from_dlpack(values))
    results.append(("from_dlpack(numpy int32 x 256)", t_fe, "numpy", t_np))

    arr = ferry.from_dlpack(values)
    version = (1, 1)
    t_np, t_fe = best_ns(lambda: values.__dlpack__(max_version=version),
                         lambda: arr.__dlpack__(max_version=version))
    results.append(("__dlpack__(max_version=(1, 1))", t_fe, "numpy", t_np))

    print(f"ferry {ferry.__version__} ({ferry.library_info().source} libferry), numpy {np.__version__}, "
          f"pyarrow {pa.__version__}; {NUMBER} calls x {REPEAT} rounds, best; capsule imports less "
          f"pyarrow's export ({t_export:.0f} ns)")
    print(f"{'operation':48} {'ferry ns':>9} {'peer':>8} {'peer ns':>9} {'ratio':>6}")
    worst = 0.0
    for name, ferry_ns, peer, peer_ns in results:
        ratio = ferry_ns / peer_ns
        if not name.startswith(" "):
            worst = max(worst, ratio)
        print(f"{name:48} {ferry_ns:9.0f} {peer:>8} {peer_ns:9.0f} {ratio:6.2f}x")
    print(f"worst ratio {worst:.2f}x (target <= 1.00x)")


if __name__ == "__main__":
    main()
