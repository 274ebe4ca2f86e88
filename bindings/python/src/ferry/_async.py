"""Async device streams (the Arrow C Device Data Interface's push interface,
ArrowAsyncDeviceStreamHandler) over the core's state machines (docs/async.md):

- AsyncDeviceStream: a consumer. Hand its handler to any producer (C, another
  runtime, export_async below); read the batches with `async for` on asyncio
  (the event loop is woken through the consumer's readiness file descriptor,
  loop.add_reader), or with plain iteration / next(timeout) from any thread
  (blocking with the GIL released).
- export_async / export_async_from: producers, from an iterator of
  DeviceArrays (pushed from a thread ferry starts) or from an async
  generator (pushed from the event loop).

The request counting, the serialization of handler calls and the release
rules are the core's (FerryAsyncConsumer, FerryAsyncSender); this module
only maps them to Python.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any, AsyncIterator, Iterable, Optional, Union

from . import _device, _errors, _native
from ._array import DeviceArray, Schema
from ._device import DeviceLike
from .raw import call, ffi, lib

_ETIMEDOUT = 110
_FOREVER = -1


def _timeout_ms(timeout: Optional[float]) -> int:
    return _FOREVER if timeout is None else max(0, int(timeout * 1000))


class AsyncDeviceStream(_device.Closeable):
    """A consumer of an async device stream: queues at most `window` batches
    (requesting more as they are read: back-pressure), validates each batch
    against the stream's schema (validate: True/"default", "full",
    False/"none"), and keeps each batch's sync event.

        consumer = ferry.AsyncDeviceStream(window=4)
        some_producer(consumer.handler_address)      # any ArrowAsync producer
        async for batch in consumer:                  # asyncio
            ...
        # or: for batch in consumer: ... (blocking, GIL released)

    After an error (the producer's on_error, a batch refused by validation,
    a protocol violation: EPROTO) every later read raises the same error.
    Reads may come from several threads at once (each batch goes to one
    reader). close() (or `with`) cancels a running stream and gives the
    consumer back; the handler's memory is freed once the producer has
    released it.
    """

    def __init__(self, *, window: int = 4, validate: Union[bool, str] = True) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, not {window}")
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._readers = 0  # reads in flight (GIL released inside the core)
        self._handler = lib.ferry_async_handler_new()
        if self._handler == ffi.NULL:
            raise MemoryError("ferry_async_handler_new")
        out = ffi.new("struct FerryAsyncConsumer**")
        try:
            call(lib.ferry_async_consumer_create, int(window), _native.validate_level(validate),
                 self._handler, out)
        except BaseException:
            lib.ferry_async_handler_free(self._handler)
            raise
        self._consumer = out[0]
        self._handed_out = False
        self._schema: Optional[Schema] = None

    # ---- the producer's side ---------------------------------------------------------

    @property
    def handler_address(self) -> int:
        """The address of the ArrowAsyncDeviceStreamHandler to hand to one
        producer (it stays valid until the producer releases it)."""
        self._check_open()
        self._handed_out = True
        return int(ffi.cast("uintptr_t", self._handler))

    # ---- reading ---------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._consumer is None:
            raise _native.ClosedError("the async stream is closed")

    def _enter(self) -> Any:
        """Counts a read in flight (close() waits for it); the consumer."""
        with self._lock:
            self._check_open()
            self._readers += 1
            return self._consumer

    def _leave(self) -> None:
        with self._lock:
            self._readers -= 1
            if self._readers == 0:
                self._idle.notify_all()

    def schema(self, timeout: Optional[float] = None) -> Schema:
        """The stream's schema, waiting up to `timeout` seconds (None:
        forever; GIL released) for the producer's on_schema. TimeoutError
        when it does not come in time; the producer's error when it failed
        first."""
        schema = self._schema
        if schema is not None:
            return schema
        consumer = self._enter()
        try:
            raw = lib.ferry_schema_new()
            try:
                # a deep copy each call: racing readers each get one, the first kept
                self._call(lib.ferry_async_consumer_get_schema, consumer, raw, _timeout_ms(timeout))
                schema = Schema.from_c(int(ffi.cast("uintptr_t", raw)))
            finally:
                lib.ferry_schema_free(raw)
            with self._lock:
                if self._schema is None:
                    self._schema = schema
                    return schema
            schema.close()
            return self._schema
        finally:
            self._leave()

    def next(self, timeout: Optional[float] = None) -> Optional[DeviceArray]:
        """The next batch, or None at the end of the stream, waiting up to
        `timeout` seconds (None: forever; 0: poll) with the GIL released.
        TimeoutError when nothing came in time."""
        schema = self.schema(timeout)
        consumer = self._enter()
        out = lib.ferry_device_array_new()
        try:
            self._call(lib.ferry_async_consumer_next, consumer, out, _timeout_ms(timeout))
            if out.array.release == ffi.NULL:
                return None
            # validated by the consumer at its level, against the same schema
            return _native.import_batch(DeviceArray, schema, int(ffi.cast("uintptr_t", out)), False)
        finally:
            lib.ferry_device_array_free(out)  # releases the batch if the import failed
            self._leave()

    @staticmethod
    def _call(function: Any, *args: Any) -> None:
        error = ffi.new("struct FerryError*")
        code = function(*args, error)
        if code == _ETIMEDOUT:
            raise TimeoutError(ffi.string(error.message).decode(errors="replace") or "timed out")
        if code != 0:
            raise _errors.from_code(code, ffi.string(error.message).decode(errors="replace"))

    def __iter__(self) -> "AsyncDeviceStream":
        return self

    def __next__(self) -> DeviceArray:
        batch = self.next()
        if batch is None:
            raise StopIteration
        return batch

    def fileno(self) -> int:
        """A file descriptor that is readable exactly while schema() or
        next() would not block (for selectors and event loops; only poll it)."""
        self._check_open()
        fd = lib.ferry_async_consumer_fd(self._consumer)
        if fd < 0:
            raise OSError("the consumer has no readiness descriptor")
        return int(fd)

    async def _ready(self) -> None:
        """Waits, without blocking the event loop, until the consumer is
        ready (loop.add_reader on its descriptor)."""
        loop = asyncio.get_running_loop()
        fd = self.fileno()
        ready = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, wake)
        try:
            await ready
        finally:
            loop.remove_reader(fd)

    async def anext(self) -> Optional[DeviceArray]:
        """next() for asyncio: None at the end."""
        while True:
            try:
                return self.next(timeout=0)
            except TimeoutError:
                await self._ready()

    def __aiter__(self) -> "AsyncDeviceStream":
        return self

    async def __anext__(self) -> DeviceArray:
        batch = await self.anext()
        if batch is None:
            raise StopAsyncIteration
        return batch

    # ---- lifetime --------------------------------------------------------------------

    def cancel(self) -> None:
        """Asks the producer to stop (idempotent, any thread); queued batches
        are released and reads raise ECANCELED from now on."""
        consumer = self._enter()
        try:
            lib.ferry_async_consumer_cancel(consumer)
        finally:
            self._leave()

    def wait_released(self, timeout: Optional[float] = None) -> bool:
        """Waits up to `timeout` seconds for the producer's release of the
        handler; True once released."""
        consumer = self._enter()
        try:
            return lib.ferry_async_consumer_wait_released(consumer, _timeout_ms(timeout)) == 0
        finally:
            self._leave()

    @property
    def violations(self) -> int:
        """Protocol violations of the producer seen so far."""
        consumer = self._enter()
        try:
            return int(lib.ferry_async_consumer_violations(consumer))
        finally:
            self._leave()

    def close(self, timeout: Optional[float] = 10.0) -> None:
        """Gives the consumer back (cancelling a running stream) and frees
        the handler once the producer has released it, waiting up to
        `timeout` seconds for that; a producer that never releases keeps the
        handler's memory (it may still call it). Idempotent."""
        with self._lock:
            if self._consumer is None:
                return
            consumer, handler = self._consumer, self._handler
            self._consumer = self._handler = None  # new reads: ClosedError
            if self._readers:
                # wake blocked readers (they get ECANCELED), then wait for them
                lib.ferry_async_consumer_cancel(consumer)
                while self._readers:
                    self._idle.wait()
            handed_out, schema = self._handed_out, self._schema
        released = not handed_out or lib.ferry_async_consumer_wait_released(consumer, 0) == 0
        if not released:
            lib.ferry_async_consumer_cancel(consumer)
            released = lib.ferry_async_consumer_wait_released(consumer, _timeout_ms(timeout)) == 0
        lib.ferry_async_consumer_free(consumer)
        if released:
            lib.ferry_async_handler_free(handler)  # releases one never handed out
        else:
            _ORPHANED_HANDLERS.append(handler)  # the producer may still call it
        if schema is not None:
            schema.close()

    async def __aenter__(self) -> "AsyncDeviceStream":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close(timeout=0)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


# Handlers whose producer never released them: kept, not freed, because the
# producer may still call them (a broken producer; never in a correct run).
_ORPHANED_HANDLERS: list = []


def export_async(stream: Any, handler_address: int) -> None:
    """Pushes a DeviceArrayStream (moved in: the object is closed; make one
    from Python batches with DeviceArrayStream.from_batches, or take any
    producer's) to the async consumer whose ArrowAsyncDeviceStreamHandler is
    at `handler_address`, from a thread ferry starts, at the pace the
    consumer requests (ferry_async_export_stream). A Python producer's
    iterator runs on that thread, taking the GIL for each batch; its
    exceptions reach the consumer through on_error with their errno code and
    message. The handler is released when the stream ends, fails or is
    cancelled, and in every outcome of this call."""
    handler = ffi.cast("struct ArrowAsyncDeviceStreamHandler*", int(handler_address))
    raw = lib.ferry_array_stream_new()
    try:
        try:
            stream.export_to_c(int(ffi.cast("uintptr_t", raw)))
        except BaseException as exc:
            lib.ferry_async_handler_fail(handler, getattr(exc, "code", 22), str(exc).encode())
            raise
        call(lib.ferry_async_export_stream, raw, handler, 0)
    finally:
        lib.ferry_array_stream_free(raw)  # moved into ferry: released there


_EIO, _EINVAL, _ECANCELED = 5, 22, 125
_DEMAND_POLL_MS = 100  # how long one executor wait for demand lasts (cancellation latency)


async def export_async_from(schema: Schema, batches: AsyncIterator[DeviceArray], handler_address: int, *,
                            device: DeviceLike = "cpu") -> None:
    """Pushes the batches of an async generator (or any async iterator of
    DeviceArrays on `device`) to the async consumer whose handler is at
    `handler_address`, from the running event loop, over the core's sender
    (FerryAsyncSender): each batch is awaited once the consumer has asked
    for one (the wait for demand runs in the loop's executor, so the loop
    never blocks), then handed over. An exception of the generator reaches
    the consumer through on_error (a FerryError keeps its code and message;
    anything else is EIO "Type: message"); when the consumer cancels, the
    generator is closed (aclose). Cancelling the task that runs this ends the
    stream with on_error(ECANCELED). Returns once the handler is released."""
    dev = _device.device(device)
    handler = ffi.cast("struct ArrowAsyncDeviceStreamHandler*", int(handler_address))
    out = ffi.new("struct FerryAsyncSender**")
    call(lib.ferry_async_sender_create, handler, dev.type, ffi.NULL, out)  # releases it on failure
    sender = out[0]
    loop = asyncio.get_running_loop()
    code, message = 0, None
    try:
        raw_schema = lib.ferry_schema_new()
        try:
            schema._export_into(int(ffi.cast("uintptr_t", raw_schema)))
            rc = lib.ferry_async_sender_send_schema(sender, raw_schema, ffi.new("struct FerryError*"))
        finally:
            lib.ferry_schema_free(raw_schema)
        while rc == 0:
            error = ffi.new("struct FerryError*")
            waiting = loop.run_in_executor(None, lib.ferry_async_sender_wait_demand, sender,
                                           _DEMAND_POLL_MS, error)
            try:
                rc = await asyncio.shield(waiting)
            except asyncio.CancelledError:
                await asyncio.wait([waiting])  # the sender is not finished under a waiting thread
                code, message = _ECANCELED, "the producer's task was cancelled"
                raise
            if rc == _ETIMEDOUT:
                rc = 0
                continue
            if rc != 0:
                break  # the consumer cancelled or refused: finish without an error of ours
            try:
                batch = await batches.__anext__()
            except StopAsyncIteration:
                break
            except _errors.FerryError as exc:
                code, message = exc.code, exc.message
                break
            except Exception as exc:  # reaches the consumer, as from_batches' errors do
                code, message = _EIO, f"{type(exc).__name__}: {exc}"
                break
            if not isinstance(batch, DeviceArray):
                code, message = _EINVAL, f"a stream batch must be a ferry.DeviceArray, not {type(batch).__name__}"
                break
            raw = lib.ferry_device_array_new()
            try:
                batch.export_to_c(int(ffi.cast("uintptr_t", raw)), move=True)
                batch.close()
                rc = lib.ferry_async_sender_send(sender, raw, ffi.NULL, 0, ffi.new("struct FerryError*"))
                if rc != 0 and raw.array.release != ffi.NULL:
                    lib.ferry_device_array_release(raw)  # not taken (ETIMEDOUT, ECANCELED)
            finally:
                lib.ferry_device_array_free(raw)
    finally:
        aclose = getattr(batches, "aclose", None)
        if aclose is not None:
            try:
                await aclose()
            except Exception:
                pass
        lib.ferry_async_sender_finish(sender, code, message.encode() if message else ffi.NULL)
