"""Interop with PyTorch, CuPy and Numba on a real CUDA GPU.

Each test skips loudly without a GPU (or without the library): they run on a
machine with one (FERRY_PYTHON_REAL_GPU=1 selects the real driver instead of
the emulation, see conftest.py)."""
import os

import pytest

import ferry

REAL = os.environ.get("FERRY_PYTHON_REAL_GPU") == "1"


def need(module_name):
    if not REAL:
        pytest.skip("SKIPPED: GPU interop needs a real GPU: set FERRY_PYTHON_REAL_GPU=1 on a GPU machine")
    module = pytest.importorskip(module_name, reason=f"SKIPPED: {module_name} is not installed")
    return module


def torch_cuda():
    torch = need("torch")
    if not torch.cuda.is_available():
        pytest.skip("SKIPPED: torch finds no CUDA GPU")
    return torch


def test_torch_to_ferry_and_back():
    torch = torch_cuda()
    t = torch.arange(1000, dtype=torch.int32, device="cuda")
    arr = ferry.from_dlpack(t)  # ferry passes its stream and records an event
    assert arr.device.name == "cuda:0" and arr.buffer_address(1) == t.data_ptr()
    assert arr.to_pylist() == list(range(1000))
    back = torch.from_dlpack(arr)  # torch passes its current stream
    assert back.data_ptr() == t.data_ptr() and torch.equal(back, t)


def test_torch_stream_semantics():
    torch = torch_cuda()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t = torch.full((1 << 20,), 7, dtype=torch.float32, device="cuda")
        arr = ferry.from_dlpack(t, stream=None)
    assert arr.sync_event is not None  # the order travels as an event, the host did not wait
    assert set(arr.to_pylist()[:10]) == {7.0}


def test_cupy_both_ways():
    cupy = need("cupy")
    if cupy.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("SKIPPED: CuPy finds no CUDA GPU")
    x = cupy.arange(10, dtype=cupy.float64)
    arr = ferry.from_dlpack(x)
    assert arr.to_pylist() == [float(i) for i in range(10)]
    y = cupy.from_dlpack(arr)
    assert int(y.data.ptr) == int(x.data.ptr)
    z = cupy.asarray(arr)  # through __cuda_array_interface__
    assert cupy.array_equal(z, x)
    w = ferry.from_cuda_array_interface(x)
    assert w.buffer_address(1) == int(x.data.ptr)


def test_numba_both_ways():
    cuda = need("numba.cuda")
    if not cuda.is_available():
        pytest.skip("SKIPPED: Numba finds no CUDA GPU")
    import numpy as np
    d = cuda.to_device(np.arange(16, dtype=np.int64))
    arr = ferry.from_cuda_array_interface(d)
    assert arr.to_pylist() == list(range(16))
    view = cuda.as_cuda_array(arr)
    assert view.copy_to_host().tolist() == list(range(16))
