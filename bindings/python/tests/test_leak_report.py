"""The leak report at exit (issue 20, item 15; docs/bindings.md, section 6):
with FERRY_LEAK_REPORT=1, every DeviceArray and DeviceArrayStream still open
when the interpreter shuts down is named on stderr by the core's report;
closed ones (close(), `with`, moved out) are not."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
import conftest
import ferry
from ferry.raw import ffi
kept = ferry.array([1, 2, 3], "int64")          # never closed: named
closed = ferry.array([4.0], "float64")
closed.close()                                   # closed: not named
with ferry.array(["x"], "utf8"):                 # closed by `with`: not named
    pass
moved = ferry.array([7], "int16")
out = ffi.new("struct ArrowDeviceArray*")
moved.export_to_c(int(ffi.cast("uintptr_t", out)), None, move=True)  # moved out: not named
out.array.release(ffi.addressof(out, "array"))
forgotten = ferry.array([9], "int32")
del forgotten                                    # collected while running: the safety net
stream = ferry.DeviceArrayStream.from_batches(ferry.Schema.from_format("i"), [])
stream.close()                                   # closed: not named
sys.stdout.write("done\\n")
"""


def _run(env_value):
    env = dict(os.environ)
    env.pop("FERRY_LEAK_REPORT", None)
    if env_value is not None:
        env["FERRY_LEAK_REPORT"] = env_value
    return subprocess.run([sys.executable, "-c", _SCRIPT, HERE], capture_output=True, text=True,
                          env=env, timeout=120)


def test_a_leaked_device_array_is_named_and_closed_ones_are_not():
    result = _run("1")
    assert result.returncode == 0 and result.stdout == "done\n", result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("ferry: leak")]
    python_lines = [line for line in lines if line.startswith("ferry: leak: python:")]
    assert python_lines == [
        'ferry: leak: python: ferry.DeviceArray (format "l", length 3, device type 1, id -1) never closed'
    ], result.stderr
    assert lines[-1].startswith("ferry: leak report:") and "1 tracked object(s) never closed" in lines[-1]


def test_no_report_without_the_variable():
    for value in (None, "0"):
        result = _run(value)
        assert result.returncode == 0 and "ferry: leak" not in result.stderr, result.stderr
