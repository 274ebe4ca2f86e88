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
Then, against nanoarrow's Python package and pyarrow, the median of
per-round ratios (each round times ferry and the peer back to back, in
alternating order, so that a noisy neighbour slows both alike), with the
spread (lowest and highest round) and the median ns of each side:
  4. ferry.device_array(obj) vs nanoarrow.c_array(obj), obj a producer with
     only __arrow_c_array__ (both call it once; ferry validates at DEFAULT,
     nanoarrow does not, so a second line skips ferry's validation);
  5. capsule export: DeviceArray.__arrow_c_array__ vs pyarrow's, the
     capsules dropped (released) at once;
  6. a stream of 1,000 int32 x 1024 batches made from Python and read to the
     end through the C stream interface: DeviceArrayStream.from_batches vs
     nanoarrow's CArrayStream.from_c_arrays, read by nanoarrow's consumer
     (ferry's stream goes through the core's CPU adapter) and by ferry's
     (nanoarrow's through the core's reverse adapter); ferry's batches are
     fresh DeviceArrays each round (from_batches moves them out), made
     before the clock starts.
Target: every ratio at most 1.0. Usage: python interchange.py [--quick]
"""
import os
import statistics
import sys
import time
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
    print()
    peers()


ROUNDS = 7 if QUICK else 25


def median_ratio(ferry_fn, peer_fn, number, setup=None):
    """Median of per-round ratios ferry / peer, the lowest and highest
    round, and the median ns per call of each side. `setup` (optional)
    makes the argument of ferry_fn for the round, outside the clock."""
    ratios, ferry_ns, peer_ns = [], [], []
    for r in range(ROUNDS):
        arg = setup() if setup is not None else None
        run_ferry = (lambda: ferry_fn(arg)) if setup is not None else ferry_fn
        pair = [(run_ferry, ferry_ns), (peer_fn, peer_ns)]
        if r % 2:
            pair.reverse()
        times = {}
        for fn, sink in pair:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            times[id(sink)] = (time.perf_counter() - t0) / number * 1e9
            sink.append(times[id(sink)])
        ratios.append(times[id(ferry_ns)] / times[id(peer_ns)])
    return statistics.median(ratios), min(ratios), max(ratios), statistics.median(ferry_ns), \
        statistics.median(peer_ns)


def peers():
    import nanoarrow as na
    from nanoarrow.c_array import c_array
    from nanoarrow.c_array_stream import CArrayStream, c_array_stream

    values = np.arange(1024, dtype=np.int32)
    source = ferry.device_array(pa.array(values))
    pa_source = pa.array(values)

    class OnlyCArray:
        """A producer with only __arrow_c_array__ (no device protocol)."""
        __slots__ = ("inner",)

        def __init__(self, inner):
            self.inner = inner

        def __arrow_c_array__(self, requested_schema=None):
            return self.inner.__arrow_c_array__(requested_schema)

    obj = OnlyCArray(source)
    n = 2000 if QUICK else 10000
    rows = [
        ("device_array(obj) vs c_array(obj)", "nanoarrow", "ferry validates (DEFAULT)",
         median_ratio(lambda: ferry.device_array(obj), lambda: c_array(obj), n)),
        ("  the same, validate=False", "nanoarrow", "same work",
         median_ratio(lambda: ferry.device_array(obj, validate=False), lambda: c_array(obj), n)),
        ("export __arrow_c_array__ capsules", "pyarrow", "same work",
         median_ratio(source.__arrow_c_array__, pa_source.__arrow_c_array__, n)),
    ]

    batches = 1000
    schema = source.schema
    c_schema = na.c_schema(schema)
    c_batch = c_array(source)

    def fresh_batches():
        export = source.__arrow_c_device_array__
        return [ferry.DeviceArray.from_capsules(*export(), validate=False) for _ in range(batches)]

    def ferry_to_nanoarrow(batch_list):
        for _ in c_array_stream(ferry.DeviceArrayStream.from_batches(schema, batch_list)):
            pass

    def nanoarrow_to_nanoarrow():
        for _ in CArrayStream.from_c_arrays([c_batch] * batches, c_schema):
            pass

    def ferry_to_ferry(batch_list):
        with ferry.DeviceArrayStream.from_batches(schema, batch_list) as stream:
            for batch in stream:
                batch.close()

    def nanoarrow_to_ferry():
        with ferry.device_stream(CArrayStream.from_c_arrays([c_batch] * batches, c_schema)) as stream:
            for batch in stream:
                batch.close()

    for name, ferry_fn, peer_fn in [
            ("stream from_batches, read by nanoarrow", ferry_to_nanoarrow, nanoarrow_to_nanoarrow),
            ("stream from_batches, read by ferry", ferry_to_ferry, nanoarrow_to_ferry)]:
        ratio = median_ratio(ferry_fn, peer_fn, 1, setup=fresh_batches)
        # Per batch, not per stream.
        rows.append((name + " (per batch)", "nanoarrow", "same work (no validation)",
                     ratio[:3] + (ratio[3] / batches, ratio[4] / batches)))

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"peers: nanoarrow {na.__version__}, pyarrow {pa.__version__}; median of {ROUNDS} "
          f"per-round ratios (interleaved), spread = lowest..highest round; load after {load}")
    print(f"{'operation':52} {'ferry ns':>9} {'peer':>9} {'peer ns':>9} {'ratio':>6} "
          f"{'spread':>11}  work")
    worst = 0.0
    for name, peer, work, (ratio, low, high, ferry_ns, peer_ns) in rows:
        if not name.startswith(" "):
            worst = max(worst, ratio)
        print(f"{name:52} {ferry_ns:9.0f} {peer:>9} {peer_ns:9.0f} {ratio:5.2f}x "
              f"{low:5.2f}..{high:4.2f}  {work}")
    print(f"worst peer ratio {worst:.2f}x (target <= 1.00x)")


if __name__ == "__main__":
    main()
