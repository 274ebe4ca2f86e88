#!/usr/bin/env python3
"""Times ferry's validation against nanoarrow 0.9.0 and pyarrow in one process.

Loads validate_bench.c built as a shared library (with nanoarrow compiled in,
see scripts/bench_validate.sh): ferry's and nanoarrow's paths are timed by
loops in C; pyarrow's import + validate(full=True) by a loop here, over
structs the library exported beforehand (so no ctypes call is timed).
Rounds are interleaved (every path of every workload once per round); each
ratio is computed per round, and the table gives its median and its
interquartile range over the rounds.

  validate_bench.py --library PATH [--rounds N]
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import pyarrow as pa

FERRY_DEFAULT, FERRY_FULL, PREPARED_DEFAULT, PREPARED_FULL = 0, 1, 2, 3
NANOARROW, NANOARROW_REUSED, NANOARROW_FULL = 4, 5, 6
TARGET_NS = 2e6  # each timed loop runs about 2 ms

SCHEMA_BYTES = 72  # sizeof(struct ArrowSchema)
DEVICE_ARRAY_BYTES = 128  # sizeof(struct ArrowDeviceArray)


def load(path):
    lib = ctypes.CDLL(path)
    lib.vb_setup.restype = ctypes.c_int
    lib.vb_name.restype = ctypes.c_char_p
    lib.vb_name.argtypes = [ctypes.c_int]
    lib.vb_scan_bytes.restype = ctypes.c_int64
    lib.vb_scan_bytes.argtypes = [ctypes.c_int]
    lib.vb_time.restype = ctypes.c_double
    lib.vb_time.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64]
    lib.vb_export.restype = None
    lib.vb_export.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
    lib.vb_memcpy_ns.restype = ctypes.c_double
    lib.vb_memcpy_ns.argtypes = [ctypes.c_int64, ctypes.c_int64]
    lib.vb_has_nanoarrow.restype = ctypes.c_int
    return lib


class PyarrowPath:
    """pa.Array._import_from_c_device + validate(full=True) on exported copies.

    With `reuse_type`, the schema is imported once and the DataType passed
    instead (pyarrow's equivalent of a prepared schema)."""

    def __init__(self, lib, workload, reuse_type):
        self.lib = lib
        self.workload = workload
        self.capacity = 0
        self.type = None
        if reuse_type:
            schemas, arrays = self._exported(1)
            self.type = pa.DataType._import_from_c(ctypes.addressof(schemas))

    def _exported(self, n):
        schemas = (ctypes.c_byte * (SCHEMA_BYTES * n))()
        arrays = (ctypes.c_byte * (DEVICE_ARRAY_BYTES * n))()
        self.lib.vb_export(self.workload, n, schemas, arrays)
        return schemas, arrays

    def time(self, n):
        schemas, arrays = self._exported(n)
        schema_base = ctypes.addressof(schemas)
        array_base = ctypes.addressof(arrays)
        importer = pa.Array._import_from_c_device
        start = time.perf_counter_ns()
        if self.type is None:
            for i in range(n):
                importer(array_base + i * DEVICE_ARRAY_BYTES,
                         schema_base + i * SCHEMA_BYTES).validate(full=True)
        else:
            for i in range(n):
                importer(array_base + i * DEVICE_ARRAY_BYTES, self.type).validate(full=True)
        return (time.perf_counter_ns() - start) / n


def calibrate(run):
    n = 1
    while True:
        ns = run(n) * n
        if ns > TARGET_NS or n >= 1 << 22:
            return n
        n *= 4


def quartiles(values):
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def ratio_cell(ratios):
    low, mid, high = quartiles(ratios)
    return f"{mid:5.2f}x [{low:.2f}, {high:.2f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True)
    parser.add_argument("--rounds", type=int, default=41)
    args = parser.parse_args()
    lib = load(args.library)
    if not lib.vb_has_nanoarrow():
        sys.exit("validate_bench.py: the library was built without nanoarrow")
    n_workloads = lib.vb_setup()
    names = [lib.vb_name(w).decode() for w in range(n_workloads)]

    # Paths: name -> function(n) giving ns per operation.
    paths = {}
    for w in range(n_workloads):
        for mode, label in [(FERRY_DEFAULT, "ferry_default"), (NANOARROW, "nanoarrow"),
                            (FERRY_FULL, "ferry_full"),
                            (PREPARED_DEFAULT, "prepared_default"),
                            (NANOARROW_REUSED, "nanoarrow_reused"),
                            (PREPARED_FULL, "prepared_full"),
                            (NANOARROW_FULL, "nanoarrow_full")]:
            paths[(w, label)] = (lambda w=w, mode=mode: lambda n: lib.vb_time(w, mode, n))()
        paths[(w, "pyarrow")] = PyarrowPath(lib, w, False).time
        paths[(w, "pyarrow_type")] = PyarrowPath(lib, w, True).time
        paths[(w, "memcpy")] = (
            lambda b=lib.vb_scan_bytes(w): lambda n: lib.vb_memcpy_ns(b, n))()
    iterations = {key: calibrate(run) for key, run in paths.items()}
    for key, run in paths.items():  # a warm-up round, discarded
        run(iterations[key])

    load_before = os.getloadavg()
    samples = {key: [] for key in paths}
    for _ in range(args.rounds):
        for key, run in paths.items():
            ns = run(iterations[key])
            if ns < 0:
                sys.exit(f"validate_bench.py: {key} failed to validate")
            samples[key].append(ns)

    def per_round(w, a, b):
        return [x / y for x, y in zip(samples[(w, a)], samples[(w, b)])]

    def med(w, label):
        return statistics.median(samples[(w, label)])

    print(f"validate_bench: {args.rounds} interleaved rounds, one process; "
          f"ratio = median of per-round ratios [25th, 75th percentile]; "
          f"ns = median per operation")
    print(f"pyarrow {pa.__version__}, nanoarrow 0.9.0 (C, built with ferry's flags), "
          f"CPU arrays; load average {load_before[0]:.2f}")
    print()
    print("DEFAULT: ferry_validate_device_array(DEFAULT) against nanoarrow's "
          "ArrowArrayViewInitFromSchema + ArrowArrayViewSetArray (+ Reset); target <= 1.0x")
    print(f"{'workload':<26} {'ferry ns':>12} {'nanoarrow ns':>13}  ratio")
    for w in range(n_workloads):
        print(f"{names[w]:<26} {med(w, 'ferry_default'):12.1f} {med(w, 'nanoarrow'):13.1f}  "
              f"{ratio_cell(per_round(w, 'ferry_default', 'nanoarrow'))}")
    print()
    print("FULL: ferry_validate_device_array(FULL) against pyarrow's "
          "Array._import_from_c_device(array, schema) + validate(full=True); target <= 1.0x")
    print("GB/s: the bytes FULL scans (bitmaps, offsets, string data, indices) per second, "
          "next to memcpy of as many bytes, same run")
    print(f"{'workload':<26} {'ferry ns':>12} {'pyarrow ns':>13}  {'ratio':<22} "
          f"{'ferry GB/s':>10} {'memcpy GB/s':>11}")
    for w in range(n_workloads):
        scanned = lib.vb_scan_bytes(w)
        if scanned:
            gbps = f"{scanned / med(w, 'ferry_full'):10.1f} {scanned / med(w, 'memcpy'):11.1f}"
        else:
            gbps = f"{'-':>10} {'-':>11}"  # nothing to scan: no bitmap, no offsets
        print(f"{names[w]:<26} {med(w, 'ferry_full'):12.1f} {med(w, 'pyarrow'):13.1f}  "
              f"{ratio_cell(per_round(w, 'ferry_full', 'pyarrow')):<22} {gbps}")
    print()
    print("FULL against nanoarrow's FULL (ArrowArrayViewValidate FULL) plus a re-count of "
          "each node's nulls, which ferry's FULL checks and nanoarrow's does not; nanoarrow "
          "does not check UTF-8; target <= 3.0x")
    print(f"{'workload':<26} {'ferry ns':>12} {'nanoarrow ns':>13}  ratio")
    worst = 0.0
    for w in range(n_workloads):
        ratios = per_round(w, 'ferry_full', 'nanoarrow_full')
        worst = max(worst, statistics.median(ratios))
        print(f"{names[w]:<26} {med(w, 'ferry_full'):12.1f} {med(w, 'nanoarrow_full'):13.1f}  "
              f"{ratio_cell(ratios)}")
    print(f"worst FULL ratio against nanoarrow {worst:.2f}x (target <= 3.0x): "
          f"{'PASS' if worst <= 3.0 else 'MISS'}")
    print()
    print("Prepared schema (ferry_validate_prepared; the schema prepared once) against "
          "nanoarrow's reused ArrowArrayView (SetArray only) and pyarrow importing "
          "with a DataType imported once")
    print(f"{'workload':<26} {'DEFAULT ns':>12} {'nanoarrow ns':>13}  {'ratio':<22} "
          f"{'FULL ns':>12} {'pyarrow ns':>12}  ratio")
    for w in range(n_workloads):
        print(f"{names[w]:<26} {med(w, 'prepared_default'):12.1f} "
              f"{med(w, 'nanoarrow_reused'):13.1f}  "
              f"{ratio_cell(per_round(w, 'prepared_default', 'nanoarrow_reused')):<22} "
              f"{med(w, 'prepared_full'):12.1f} {med(w, 'pyarrow_type'):12.1f}  "
              f"{ratio_cell(per_round(w, 'prepared_full', 'pyarrow_type'))}")
    load_after = os.getloadavg()
    print()
    print(f"load average before/after: {load_before[0]:.2f} / {load_after[0]:.2f}")


if __name__ == "__main__":
    main()
