"""Async device streams (issue 22): ferry.AsyncDeviceStream (a consumer:
`async for` on asyncio, woken through the readiness descriptor, and plain
blocking iteration with the GIL released) and the producers export_async
(a DeviceArrayStream pushed from a thread ferry starts) and
export_async_from (an async generator pushed from the event loop), within
Python and against the C runtime's plugin in both directions."""
import asyncio
import ctypes
import errno
import threading

import pytest

import ferry
import ferry_it  # the Python participant of the matrix (plugin/ferry_it.py)
from conftest import c_plugin_path
from ferry import AsyncDeviceStream, DeviceArrayStream, Schema


def int_batches(n, width=3):
    return (ferry.array([k * 10 + j for j in range(width)], "int32") for k in range(n))


def expected(n, width=3):
    return [[k * 10 + j for j in range(width)] for k in range(n)]


def test_an_iterator_pushed_from_a_ferry_thread_read_by_blocking_iteration():
    for window in (1, 4):
        with AsyncDeviceStream(window=window) as consumer:
            stream = DeviceArrayStream.from_batches(Schema.from_format("i"), int_batches(6))
            ferry.export_async(stream, consumer.handler_address)
            assert stream.closed  # moved into ferry's producer thread
            assert consumer.schema().format == "i"
            got = []
            for batch in consumer:
                got.append(batch.to_pylist())
                batch.close()
            assert got == expected(6)
            assert consumer.next() is None  # the end stays the end
            assert consumer.wait_released(10) and consumer.violations == 0


def test_an_async_generator_read_with_async_for():
    async def main(window):
        produced = []

        async def batches():
            for k in range(5):
                produced.append(k)
                yield ferry.array([k], "int64")

        async with AsyncDeviceStream(window=window) as consumer:
            task = asyncio.create_task(
                ferry.export_async_from(Schema.from_format("l"), batches(), consumer.handler_address))
            got = []
            async for batch in consumer:
                # back-pressure: never more than `window` batches ahead of the reader
                assert len(produced) <= len(got) + 1 + window
                got.append(batch.to_pylist()[0])
                batch.close()
            await task
            assert got == list(range(5))

    for window in (1, 3):
        asyncio.run(main(window))


def test_the_gil_is_released_while_a_reader_blocks():
    """A thread blocked in next() must not hold the GIL the event loop's
    producer needs (else this deadlocks)."""
    consumer = AsyncDeviceStream(window=1)
    got = []
    reader = threading.Thread(target=lambda: got.extend(b.to_pylist()[0] for b in consumer))
    reader.start()

    async def batches():
        for k in range(3):
            yield ferry.array([k], "int8")

    asyncio.run(ferry.export_async_from(Schema.from_format("c"), batches(), consumer.handler_address))
    reader.join(60)
    assert not reader.is_alive() and got == [0, 1, 2]
    consumer.close()


def test_a_producer_error_reaches_every_later_read():
    def failing():
        yield ferry.array([1], "int32")
        raise ferry.FerryError(errno.EPROTO, "injected failure at get_next 2")

    with AsyncDeviceStream(window=2) as consumer:
        ferry.export_async(DeviceArrayStream.from_batches(Schema.from_format("i"), failing()),
                           consumer.handler_address)
        first = consumer.next()
        assert first.to_pylist() == [1]
        first.close()
        for _ in range(2):
            with pytest.raises(ferry.FerryError) as caught:
                consumer.next()
            assert caught.value.code == errno.EPROTO
            assert caught.value.message == "injected failure at get_next 2"

    async def broken():
        yield ferry.array([1], "int32")
        raise KeyError("boom")

    async def main():
        async with AsyncDeviceStream() as consumer:
            task = asyncio.create_task(ferry.export_async_from(Schema.from_format("i"), broken(),
                                                               consumer.handler_address))
            seen = []
            with pytest.raises(ferry.DeviceIOError, match="KeyError: 'boom'"):
                async for batch in consumer:
                    seen.append(batch.to_pylist())
                    batch.close()
            await task
            assert seen == [[1]]

    asyncio.run(main())


def test_cancel_stops_the_producer_and_closes_the_generator():
    async def main():
        closed = asyncio.Event()

        async def endless():
            try:
                k = 0
                while True:
                    yield ferry.array([k], "int32")
                    k += 1
            finally:
                closed.set()

        consumer = AsyncDeviceStream(window=2)
        task = asyncio.create_task(ferry.export_async_from(Schema.from_format("i"), endless(),
                                                           consumer.handler_address))
        first = await consumer.anext()
        assert first.to_pylist() == [0]
        first.close()
        consumer.cancel()
        with pytest.raises(ferry.FerryError) as caught:
            await consumer.anext()
        assert caught.value.code == errno.ECANCELED
        await task  # the sender saw the cancel and finished
        assert closed.is_set() and consumer.wait_released(10)
        consumer.close()

    asyncio.run(main())


def test_close_with_a_reader_blocked_wakes_it():
    consumer = AsyncDeviceStream(window=1)
    consumer.handler_address  # handed to nobody: the reader waits for a schema forever
    errors = []

    def read():
        try:
            consumer.next()
        except (ferry.FerryError, ferry.ClosedError) as exc:
            errors.append(type(exc))

    reader = threading.Thread(target=read)
    reader.start()
    consumer.close(timeout=0)
    reader.join(60)
    assert not reader.is_alive() and len(errors) == 1
    with pytest.raises(ferry.ClosedError):
        consumer.next()


# ---- across runtimes: the C plugin's async entry points (ferry_it.h) ----------------


def c_plugin():
    path = c_plugin_path()
    if not path.exists():
        pytest.skip(f"SKIPPED: {path} is not built (scripts/build.sh)")
    plugin = ctypes.CDLL(str(path))
    if not hasattr(plugin, "ferry_it_export_async"):
        pytest.skip("SKIPPED: the C plugin lacks the async entry points")
    plugin.ferry_it_export_async.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    plugin.ferry_it_check_async.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                            ctypes.POINTER(ctypes.c_void_p)]
    plugin.ferry_it_async_result.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    plugin.ferry_it_last_error.restype = ctypes.c_char_p
    return plugin


def free_checked_handler(handler):
    """Frees the memory of a handler the C checker filled once its verdict
    is in (the verdict 0 says the producer released it exactly once; the
    checker leaves `release` set so that it can see a second call)."""
    handler.release = ferry.raw.ffi.NULL
    ferry.raw.lib.ferry_async_handler_free(handler)


CASES = ["int32", "utf8:nulls=3:offset=2:window=2:batches=4:seed=21",
         "list_int32:device=sim:window=4:batches=6:seed=301", "int32:batches=0"]


def python_batches(spec):
    with ferry_it.make_stream(ferry_it.parse(spec)) as stream:
        return [b.to_pylist() for b in stream]


@pytest.mark.parametrize("spec", CASES)
def test_c_pushes_python_reads_with_asyncio(spec):
    plugin = c_plugin()
    want = python_batches(spec)  # the shared value formula, computed by Python's producer

    async def main():
        with AsyncDeviceStream(window=2) as consumer:
            rc = plugin.ferry_it_export_async(spec.encode(), consumer.handler_address)
            assert rc == 0, plugin.ferry_it_last_error()
            got = []
            async for batch in consumer:
                with batch.to_host() as host:
                    got.append(host.to_pylist())
                batch.close()
            assert consumer.wait_released(10) and consumer.violations == 0
            return got

    assert asyncio.run(main()) == want


@pytest.mark.parametrize("spec", CASES + ["int32:batches=6:cancel=2", "int32:batches=3:fail=get_next@3:window=4",
                                          "int32:batches=4:fail=consumer@3:window=4"])
def test_python_pushes_c_checks(spec):
    plugin = c_plugin()
    handler = ferry.raw.lib.ferry_async_handler_new()
    address = int(ferry.raw.ffi.cast("uintptr_t", handler))
    ticket = ctypes.c_void_p()
    rc = plugin.ferry_it_check_async(spec.encode(), address, ctypes.byref(ticket))
    assert rc == 0, plugin.ferry_it_last_error()
    ferry.export_async(ferry_it.make_stream(ferry_it.parse(spec)), address)
    rc = plugin.ferry_it_async_result(ticket, 20000)
    assert rc == 0, plugin.ferry_it_last_error()
    free_checked_handler(handler)


def test_an_async_generator_pushes_to_the_c_checker():
    plugin = c_plugin()
    spec = "int64:window=2:batches=4:seed=9"
    case = ferry_it.parse(spec)
    handler = ferry.raw.lib.ferry_async_handler_new()
    address = int(ferry.raw.ffi.cast("uintptr_t", handler))
    ticket = ctypes.c_void_p()
    assert plugin.ferry_it_check_async(spec.encode(), address, ctypes.byref(ticket)) == 0

    async def batches():
        for b in range(case.batches):
            yield ferry_it.make_array(case.with_seed(case.seed + b))

    asyncio.run(ferry.export_async_from(ferry_it._schema(case), batches(), address))
    rc = plugin.ferry_it_async_result(ticket, 20000)
    assert rc == 0, plugin.ferry_it_last_error()
    free_checked_handler(handler)
