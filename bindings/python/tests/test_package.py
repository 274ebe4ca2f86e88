"""The raw layer, the library loader (one libferry per process) and errors."""
import errno
import os
import subprocess
import sys
import textwrap

import pytest

import ferry
from ferry import raw
from conftest import BUILD, c_plugin_path


def test_every_generated_function_is_in_the_loaded_library():
    assert len(raw.FUNCTIONS) > 90
    missing = [name for name in raw.FUNCTIONS if not hasattr(raw.lib, name)]
    assert missing == []


def test_constants_match_the_library():
    assert raw.CONSTANTS["FERRY_ABI_VERSION"] == raw.lib.ferry_abi_version()
    assert raw.CONSTANTS["ARROW_DEVICE_EXT_DEV"] == ferry.device("sim").type == 12
    assert raw.CONSTANTS["FERRY_SIM_POISON_BYTE"] == 0xA5


def test_library_info_names_a_loaded_file():
    info = ferry.library_info()
    assert info.source in ("already loaded", "FERRY_LIBRARY", "installed", "bundled")
    assert os.path.exists(info.path) and info.version == ferry.__version__


def test_errors_carry_code_and_message():
    with pytest.raises(ferry.InvalidArgumentError) as caught:
        ferry.device("gpu")
    assert caught.value.code == errno.EINVAL and caught.value.name == "EINVAL"
    assert "gpu" in caught.value.message and isinstance(caught.value, ValueError)
    with pytest.raises(ferry.DeviceUnavailableError) as caught:
        ferry.device("rocm:0")
    assert caught.value.code in (errno.ENODEV, errno.ENOTSUP) and caught.value.message


def test_raw_call_raises_the_library_error():
    out = raw.ffi.new("ArrowDeviceType*")
    with pytest.raises(ferry.FerryError, match="nonsense"):
        raw.call(raw.lib.ferry_device_type_from_name, b"nonsense", out)


def _run(code, env=None):
    full_env = dict(os.environ, **(env or {}))
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, env=full_env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


ONE_LIBRARY = """
    import ctypes, sys
    sys.path.insert(0, {plugin_dir!r})
    {first}
    {second}
    import ferry
    from ferry.raw import ffi, lib
    # every file mapped for libferry in this process
    files = {{line.split()[5] for line in open("/proc/self/maps")
              if len(line.split()) >= 6 and "libferry.so" in line.split()[5]}}
    print(ferry.library_info().source)
    print(len(files))
    # a C producer and the Python consumer in one process, on the sim device:
    # the C plugin's event must be meaningful to the package's libferry
    schema = lib.ferry_schema_new(); array = lib.ferry_device_array_new()
    rc = plugin.ferry_it_export_array(b"int32:device=sim:nulls=3:seed=7", ctypes.c_void_p(int(ffi.cast("uintptr_t", schema))),
                                      ctypes.c_void_p(int(ffi.cast("uintptr_t", array))))
    assert rc == 0
    arr = ferry.DeviceArray.from_c(int(ffi.cast("uintptr_t", array)), int(ffi.cast("uintptr_t", schema)))
    import ferry_it
    ferry_it.check_array_object(ferry_it.parse("int32:device=sim:nulls=3:seed=7"), arr)
    print(arr.device.name, arr.sync_event is not None)
    arr.close(); lib.ferry_schema_free(schema); lib.ferry_device_array_free(array)
"""


@pytest.mark.parametrize("order", ["plugin first", "ferry first"])
def test_one_libferry_per_process_with_a_c_producer(order):
    plugin = c_plugin_path()
    assert plugin.exists(), f"{plugin} is missing: build the core (scripts/build.sh)"
    load = f"plugin = ctypes.CDLL({str(plugin)!r})"
    first, second = (load, "") if order == "plugin first" else ("import ferry", load)
    out = _run(ONE_LIBRARY.format(plugin_dir=str(BUILD.parent / "bindings/python/plugin"),
                                  first=first, second=second), env={"FERRY_LIBRARY": ""})
    source, n_files, device_line = out.split("\n")[:3]
    assert n_files == "1", out
    assert source == ("already loaded" if order == "plugin first" else "bundled"), out
    assert device_line == "sim:0 True", out


def test_ferry_library_env_var_is_used_when_nothing_is_loaded():
    lib_path = BUILD / "lib" / "libferry.so.0"
    assert lib_path.exists()
    out = _run("import ferry; i = ferry.library_info(); print(i.source); print(i.path)",
               env={"FERRY_LIBRARY": str(lib_path)})
    source, path = out.split("\n")[:2]
    assert source == "FERRY_LIBRARY" and os.path.realpath(path) == os.path.realpath(lib_path)


def test_a_bad_ferry_library_is_a_clear_import_error():
    result = subprocess.run([sys.executable, "-c", "import ferry"], capture_output=True, text=True,
                            env=dict(os.environ, FERRY_LIBRARY="/nonexistent/libferry.so"))
    assert result.returncode != 0 and "FERRY_LIBRARY=/nonexistent/libferry.so" in result.stderr


def test_devices_lists_cpu_and_sim():
    names = [d.name for d in ferry.devices()]
    assert names[:5] == ["cpu", "sim:0", "sim:1", "sim:2", "sim:3"]
    assert ferry.device("sim") is ferry.device("sim:0") is ferry.device((12, 0))
    assert dict(ferry.backends())["cpu"] is None
