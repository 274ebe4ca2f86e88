"""Shared fixtures of ferry's Python tests.

Paths come from FERRY_BUILD_DIR (default: <repo>/build). Unless
FERRY_PYTHON_REAL_GPU=1, CUDA is ferry's driver emulation
(build/test-emu/libcuda_emu.so, a test fixture: device memory is host
memory, streams run on threads, gates hold work pending), so the CUDA Array
Interface and CUDA DLPack paths run without a GPU. It must be chosen before
libferry probes its backends, hence here, before ferry is imported.
"""
import ctypes
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BUILD = Path(os.environ.get("FERRY_BUILD_DIR", ROOT / "build"))
EMU = BUILD / "test-emu" / "libcuda_emu.so"
PLUGIN_DIR = HERE.parent / "plugin"

if os.environ.get("FERRY_PYTHON_REAL_GPU") != "1" and EMU.exists():
    os.environ.setdefault("FERRY_CUDA_LIBRARY", str(EMU))
sys.path.insert(0, str(PLUGIN_DIR))  # ferry_it, the Python participant

import ferry  # noqa: E402  (after the environment is set)


def emulated_cuda():
    """The emulation's test controls (ctypes), or None without it."""
    path = os.environ.get("FERRY_CUDA_LIBRARY")
    if not path or "emu" not in path:
        return None
    emu = ctypes.CDLL(path)
    emu.cuda_emu_gate_close.argtypes = [ctypes.c_void_p]
    emu.cuda_emu_stream_pending.argtypes = [ctypes.c_void_p]
    emu.cuda_emu_stream_pending.restype = ctypes.c_int64
    return emu


@pytest.fixture
def cuda():
    """cuda:0 through the emulation; skipped loudly when it is not built."""
    if emulated_cuda() is None:
        pytest.skip(f"SKIPPED: no CUDA emulation at {EMU} (scripts/build.sh builds it) and "
                    "FERRY_PYTHON_REAL_GPU is not set")
    return ferry.device("cuda:0")


@pytest.fixture
def emu():
    lib = emulated_cuda()
    if lib is None:
        pytest.skip(f"SKIPPED: the CUDA emulation {EMU} is not loaded")
    yield lib
    lib.cuda_emu_gates_open()


@pytest.fixture(autouse=True)
def no_leaks():
    """Every test must give back what ferry's exports and Python references
    held: the live counters return to where they were."""
    before = (ferry.live_exports(), ferry._native.live_refs(),
              [d.live_allocations for d in ferry.devices()[1:5]])
    yield
    import gc
    gc.collect()
    after = (ferry.live_exports(), ferry._native.live_refs(),
             [d.live_allocations for d in ferry.devices()[1:5]])
    assert after == before, f"leak: (exports, python refs, sim allocations) {before} -> {after}"


def c_plugin_path():
    return BUILD / "plugins" / "libferry_it_c.so"


def pytest_sessionfinish(session, exitstatus):
    session.config.ferry_exitstatus = int(exitstatus)


def pytest_unconfigure(config):
    """A process that loaded the JVM or Go (test_matrix.py; runtimes.def's
    QUICK_EXIT) ends with _exit once pytest has reported: their threads must
    not meet the interpreter's finalization or the C exit handlers."""
    matrix = sys.modules.get("test_matrix")
    if matrix is not None and matrix.needs_quick_exit():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(getattr(config, "ferry_exitstatus", 1))
