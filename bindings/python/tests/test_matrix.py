"""Python as the host of the cross-language matrix: every ordered pair
(producer, consumer) among the Python participant (plugin/ferry_it.py, in
this process) and the plugins found in build/plugins, for arrays and
streams, over tests/integration/cases.txt, in one process.

Plugins: FERRY_PY_MATRIX_PLUGINS (default "c"; e.g. "c rust lua") names the
runtimes loaded from build/plugins/libferry_it_<name>.so; a named plugin
that is missing fails the test. The JVM and Go plugins need the load order
of tests/integration (JVM before Go), which this host does not manage yet.
Each handoff asserts the consumer's verdict, that every struct was released,
and that every runtime's live allocations, ferry_live_exports() and the sim
devices' allocations are back at their baseline.
"""
import ctypes
import os

import pytest

import ferry
import ferry_it
from conftest import BUILD, ROOT
from ferry.raw import ffi, lib

CASES_FILE = ROOT / "tests" / "integration" / "cases.txt"


def read_cases():
    cases = []
    for line in CASES_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            cases.append(line)
    return cases


class Python:
    """The in-process participant, with the plugin entry points' contract."""

    name = "python"

    def _call(self, fn, *args):
        try:
            fn(*args)
            return 0, ""
        except ferry.FerryError as exc:
            return exc.code, exc.message

    def export_array(self, spec, schema, array):
        return self._call(ferry_it.export_array, spec, schema, array)

    def check_array(self, spec, schema, array):
        return self._call(ferry_it.check_array, spec, schema, array)

    def export_stream(self, spec, stream):
        return self._call(ferry_it.export_stream, spec, stream)

    def check_stream(self, spec, stream):
        return self._call(ferry_it.check_stream, spec, stream)

    def live(self):
        return ferry_it.live_allocations()


class Plugin:
    """A runtime's test plugin loaded with ctypes (ctypes releases the GIL)."""

    def __init__(self, name):
        self.name = name
        path = BUILD / "plugins" / f"libferry_it_{name}.so"
        assert path.exists(), f"{path} is not built"
        self.lib = ctypes.CDLL(str(path))
        for fn in ("export_array", "check_array"):
            getattr(self.lib, f"ferry_it_{fn}").argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]
        for fn in ("export_stream", "check_stream"):
            getattr(self.lib, f"ferry_it_{fn}").argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        self.lib.ferry_it_last_error.restype = ctypes.c_char_p
        self.lib.ferry_it_live_allocations.restype = ctypes.c_int64

    def _result(self, code):
        return code, "" if code == 0 else self.lib.ferry_it_last_error().decode()

    def export_array(self, spec, schema, array):
        return self._result(self.lib.ferry_it_export_array(spec.encode(), schema, array))

    def check_array(self, spec, schema, array):
        return self._result(self.lib.ferry_it_check_array(spec.encode(), schema, array))

    def export_stream(self, spec, stream):
        return self._result(self.lib.ferry_it_export_stream(spec.encode(), stream))

    def check_stream(self, spec, stream):
        return self._result(self.lib.ferry_it_check_stream(spec.encode(), stream))

    def live(self):
        return self.lib.ferry_it_live_allocations()


def runtimes():
    found = [Python()]
    for name in os.environ.get("FERRY_PY_MATRIX_PLUGINS", "c").split():
        found.append(Plugin(name))
    return found


RUNTIMES = runtimes()
PAIRS = [(p, c) for p in RUNTIMES for c in RUNTIMES]


def address(ptr):
    return int(ffi.cast("uintptr_t", ptr))


def baseline():
    return ([r.live() for r in RUNTIMES], ferry.live_exports(),
            [ferry.device(f"sim:{i}").live_allocations for i in range(4)])


def handoff(producer, consumer, spec, stream):
    """One handoff; returns a failure message or None."""
    reject = None
    if spec.startswith("reject "):
        _, reject, spec = spec.split(" ", 2)
    fail_export = ":fail=export" in spec
    if stream:
        out = lib.ferry_array_stream_new()
        try:
            code, message = producer.export_stream(spec, address(out))
            if reject or fail_export:
                expected = reject or "injected failure at export"
                if code == 0 or expected not in message or out.release != ffi.NULL:
                    return f"export should fail with {expected!r}: {code} {message!r}"
                return None
            if code != 0:
                return f"export failed: {code} {message}"
            code, message = consumer.check_stream(spec, address(out))
            if code != 0:
                return f"check failed: {code} {message}"
            if out.release != ffi.NULL:
                return "the consumer did not release the stream"
        finally:
            lib.ferry_array_stream_free(out)
        return None
    schema, array = lib.ferry_schema_new(), lib.ferry_device_array_new()
    try:
        code, message = producer.export_array(spec, address(schema), address(array))
        if reject or fail_export:
            expected = reject or "injected failure at export"
            if code == 0 or expected not in message or schema.release != ffi.NULL or array.array.release != ffi.NULL:
                return f"export should fail with {expected!r}: {code} {message!r}"
            return None
        if code != 0:
            return f"export failed: {code} {message}"
        code, message = consumer.check_array(spec, address(schema), address(array))
        if code != 0:
            return f"check failed: {code} {message}"
        if schema.release != ffi.NULL or array.array.release != ffi.NULL:
            return "the consumer did not release the schema and array"
    finally:
        lib.ferry_schema_free(schema)
        lib.ferry_device_array_free(array)
    return None


@pytest.mark.parametrize("producer,consumer", PAIRS, ids=[f"{p.name}->{c.name}" for p, c in PAIRS])
@pytest.mark.parametrize("kind", ["array", "stream"])
def test_pair(producer, consumer, kind):
    failures = []
    before = baseline()
    for spec in read_cases():
        problem = handoff(producer, consumer, spec, kind == "stream")
        if problem is None:
            now = baseline()
            if now != before:
                problem = f"leak: (live per runtime, exports, sim allocations) {before} -> {now}"
                before = now
        if problem:
            failures.append(f"{producer.name}->{consumer.name} {kind} {spec}: {problem}")
    assert not failures, "\n".join(failures)


def test_checkers_catch_wrong_values():
    """The tamper witness: a byte flipped in the producer's memory after
    export must make the Python checker fail (it reads the real data)."""
    schema, array = lib.ferry_schema_new(), lib.ferry_device_array_new()
    ferry_it.export_array("int32:seed=5", address(schema), address(array))
    data = ffi.cast("unsigned char*", array.array.buffers[1])
    data[0] ^= 0xFF
    with pytest.raises(ferry.FerryError, match="element 0"):
        ferry_it.check_array("int32:seed=5", address(schema), address(array))
    assert array.array.release == ffi.NULL  # released on failure too
    lib.ferry_schema_free(schema)
    lib.ferry_device_array_free(array)


def test_a_checker_that_skipped_the_wait_would_read_poison():
    """The sim witness: the Python producer's sim data is still pending at
    handover (strict mode), so only a consumer that waits reads values."""
    schema, array = lib.ferry_schema_new(), lib.ferry_device_array_new()
    ferry_it.export_array("int64:device=sim", address(schema), address(array))
    assert array.sync_event != ffi.NULL
    assert ffi.cast("unsigned char*", array.array.buffers[1])[0] == 0xA5
    ferry_it.check_array("int64:device=sim", address(schema), address(array))
    lib.ferry_schema_free(schema)
    lib.ferry_device_array_free(array)
