//! Async device streams (the specification's `ArrowAsyncDeviceStreamHandler`,
//! docs/async.md) over the core's state machines: the consumer is the core's
//! `FerryAsyncConsumer` (a bounded queue, `request` accounting, validation,
//! protocol checks), read here as a blocking [`Iterator`] and, with the
//! feature `futures`, as a `futures::Stream` woken by the core's readiness
//! callback; the producer is the core's pull-to-push driver
//! (`ferry_async_export_stream`) over any [`DeviceArrayStream`] (so any
//! iterator), or, with `futures`, the core's `FerryAsyncSender` fed from a
//! `futures::Stream` on a thread of its own. No request counting, handler
//! serialization or release rule is written here.
use std::fmt;
use std::os::raw::c_void;
use std::ptr;
use std::sync::Mutex;
use std::task::Waker;
use std::time::Duration;

use ferry_arrow_sys as sys;

use crate::array::{DeviceArray, Validation};
use crate::device::DeviceType;
use crate::error::{call, errno, Error, ErrorBuf, Result};
use crate::leak::LeakToken;
use crate::panic::guard_silent;
use crate::schema::Schema;
use crate::stream::DeviceArrayStream;

/// A duration as the core's millisecond timeout (saturating; `None`: wait
/// forever).
fn timeout_ms(timeout: Option<Duration>) -> i64 {
    match timeout {
        None => -1,
        Some(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
    }
}

/// Where the readiness callback finds the task to wake (futures).
struct WakeSlot {
    waker: Mutex<Option<Waker>>,
}

/// The core's readiness callback: wakes the task that last polled.
unsafe extern "C" fn notify_trampoline(user_data: *mut c_void) {
    guard_silent("the readiness callback of an async stream", || {
        // SAFETY: user_data is the stream's boxed WakeSlot, which outlives
        // the registration (cleared, with the core waiting for a callback
        // in flight, before the box is dropped).
        let slot = unsafe { &*(user_data as *const WakeSlot) };
        let waker = slot.waker.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(waker) = waker {
            waker.wake();
        }
    });
}

/// Raw pointers handed to the reaper thread of a dropped stream.
struct Reap {
    consumer: *mut sys::FerryAsyncConsumer,
    handler: *mut sys::ArrowAsyncDeviceStreamHandler,
    _slot: Box<WakeSlot>,
}
// SAFETY: the core's consumer functions may be called from any thread, and
// nothing else uses these pointers once they are handed over.
unsafe impl Send for Reap {}

/// The consuming side of an async device stream: a handler to give to any
/// producer (of any runtime), and the batches it pushes, read with
/// back-pressure: at most `window` batches wait in the core's queue, and
/// the producer is asked for one more as each is taken.
///
/// - Every batch is validated against the stream's schema (by the core, at
///   [`Validation::Default`] unless chosen otherwise) and keeps its sync
///   event ([`DeviceArray::wait`] before reading device memory).
/// - After a failure (the producer's `on_error`, a batch refused by
///   validation, a protocol violation: `EPROTO` naming the rule, a cancel:
///   `ECANCELED`) every later read returns that same error; the end stays the
///   end. The iterator yields `Some(Err(same))` on every call after a
///   failure, as [`DeviceArrayStream`] does: stop at the first error.
/// - `Send`, not `Sync`: reads take `&mut self`. Dropping cancels the
///   stream and releases queued batches; the handler's memory is kept until
///   the producer releases it (waited for up to one second on drop, then by
///   a thread of its own, so a producer that never releases costs a thread,
///   never a use after free).
///
/// ```
/// use ferry_arrow::{AsyncDeviceStream, DeviceArrayStream, DeviceType, Schema};
/// let batches = (0..5).map(|i| ferry_arrow::export_primitive(vec![i; 3], None).map(|(a, _)| a));
/// let producer = DeviceArrayStream::from_iter(DeviceType::CPU, batches, Schema::new("i", None).unwrap()).unwrap();
///
/// let mut consumer = AsyncDeviceStream::new(2).unwrap(); // at most 2 batches queued
/// unsafe { producer.export_async(consumer.handler()).unwrap() }; // pushed from a ferry thread
/// let schema = consumer.schema().unwrap();
/// let firsts: Vec<i32> = consumer
///     .map(|batch| batch.unwrap().host(&schema).unwrap().value::<i32>(0).unwrap())
///     .collect();
/// assert_eq!(firsts, vec![0, 1, 2, 3, 4]);
/// ```
pub struct AsyncDeviceStream {
    consumer: *mut sys::FerryAsyncConsumer,
    /// Heap memory of the core's (`ferry_async_handler_new`): it must stay
    /// valid until the producer releases it, which may be after this
    /// stream is dropped.
    handler: *mut sys::ArrowAsyncDeviceStreamHandler,
    /// True once [`handler`](Self::handler) lent the handler out.
    handed_out: bool,
    /// The end was seen: later reads answer it without a core call.
    ended: bool,
    slot: Box<WakeSlot>,
    notify_set: bool,
    /// The leak report's registration (untracked on drop).
    _leak: LeakToken,
}

// SAFETY: see the type's documentation; the core's reader functions may be
// called from any thread.
unsafe impl Send for AsyncDeviceStream {}

impl AsyncDeviceStream {
    /// A consumer that keeps at most `window` (>= 1) batches queued and
    /// validates them at [`Validation::Default`]. Hand [`handler`](Self::handler)
    /// to one producer.
    pub fn new(window: i64) -> Result<AsyncDeviceStream> {
        AsyncDeviceStream::with_validation(window, Validation::Default)
    }

    /// [`new`](Self::new) with the batches validated at `validation`
    /// (`Validation::None`: the explicit opt-out).
    pub fn with_validation(window: i64, validation: Validation) -> Result<AsyncDeviceStream> {
        if window < 1 {
            return Err(Error::invalid(format!(
                "window {window}: an async consumer must request at least 1 batch"
            )));
        }
        let level = validation.level().unwrap_or(sys::FERRY_VALIDATE_NONE);
        let handler = unsafe { sys::ferry_async_handler_new() };
        if handler.is_null() {
            return Err(Error::new(errno::ENOMEM, "no memory for an async handler"));
        }
        let mut consumer: *mut sys::FerryAsyncConsumer = ptr::null_mut();
        let made = call(|err| unsafe { sys::ferry_async_consumer_create(window, level, handler, &mut consumer, err) });
        if let Err(e) = made {
            unsafe { sys::ferry_async_handler_free(handler) };
            return Err(e);
        }
        Ok(AsyncDeviceStream {
            consumer,
            handler,
            handed_out: false,
            ended: false,
            slot: Box::new(WakeSlot {
                waker: Mutex::new(None),
            }),
            notify_set: false,
            _leak: LeakToken::track(|| format!("AsyncDeviceStream (window {window}) never dropped")),
        })
    }

    /// The handler to give to one producer (any runtime's
    /// `int produce(struct ArrowAsyncDeviceStreamHandler*)`, or
    /// [`DeviceArrayStream::export_async`]). It stays owned by this stream
    /// (the producer borrows it until it calls its `release`); hand it out
    /// once.
    pub fn handler(&mut self) -> *mut sys::ArrowAsyncDeviceStreamHandler {
        self.handed_out = true;
        self.handler
    }

    /// The stream's schema (a new owned copy per call), waiting for the
    /// producer's `on_schema`; the producer's error if it failed first.
    pub fn schema(&mut self) -> Result<Schema> {
        self.schema_timeout(None)
    }

    /// [`schema`](Self::schema), waiting at most `timeout` (`None`:
    /// forever); `ETIMEDOUT` when it has not come.
    pub fn schema_timeout(&mut self, timeout: Option<Duration>) -> Result<Schema> {
        let mut schema = Schema::new_released();
        call(|err| unsafe {
            sys::ferry_async_consumer_get_schema(self.consumer, schema.as_mut_ptr(), timeout_ms(timeout), err)
        })?;
        Ok(schema)
    }

    /// The next batch, waiting for it; `Ok(None)` at the end (and on every
    /// later call); after a failure, that same error on every call.
    pub fn next_array(&mut self) -> Result<Option<DeviceArray>> {
        self.next_timeout(None)
    }

    /// [`next_array`](Self::next_array), waiting at most `timeout` (`None`:
    /// forever, zero: a poll); `ETIMEDOUT` when no batch came (the stream
    /// goes on: it is not a failure).
    pub fn next_timeout(&mut self, timeout: Option<Duration>) -> Result<Option<DeviceArray>> {
        if self.ended {
            return Ok(None);
        }
        let mut array = DeviceArray::released();
        let mut err = ErrorBuf::new();
        let code = unsafe {
            sys::ferry_async_consumer_next(self.consumer, array.raw_mut(), timeout_ms(timeout), err.as_mut_ptr())
        };
        if code != 0 {
            return Err(err.check(code).unwrap_err());
        }
        if array.is_released() {
            self.ended = true;
            return Ok(None);
        }
        array.track_import("AsyncDeviceStream (a batch)");
        Ok(Some(array))
    }

    /// The producer's device type (known once its schema came; 0 before).
    pub fn device_type(&self) -> DeviceType {
        DeviceType(unsafe { sys::ferry_async_consumer_device_type(self.consumer) })
    }

    /// Asks the producer to stop (idempotent): queued batches are released
    /// and reads return `ECANCELED` from now on.
    pub fn cancel(&self) {
        unsafe { sys::ferry_async_consumer_cancel(self.consumer) }
    }

    /// Protocol violations of the producer seen so far (each also fails the
    /// stream with `EPROTO` naming the rule).
    pub fn violations(&self) -> i64 {
        unsafe { sys::ferry_async_consumer_violations(self.consumer) }
    }

    /// Waits at most `timeout` (`None`: forever) for the producer's release
    /// of the handler; true once released.
    pub fn wait_released(&self, timeout: Option<Duration>) -> bool {
        unsafe { sys::ferry_async_consumer_wait_released(self.consumer, timeout_ms(timeout)) == 0 }
    }

    /// A file descriptor readable exactly while a read would not block, for
    /// `poll`/`epoll` event loops (owned by the stream: only poll it).
    pub fn readiness_fd(&self) -> Option<std::os::raw::c_int> {
        let fd = unsafe { sys::ferry_async_consumer_fd(self.consumer) };
        (fd >= 0).then_some(fd)
    }

    /// Registers the readiness callback (once; used by `poll_next`).
    #[cfg_attr(not(feature = "futures"), allow(dead_code))]
    fn ensure_notify(&mut self) {
        if !self.notify_set {
            let slot: *const WakeSlot = &*self.slot;
            unsafe {
                sys::ferry_async_consumer_set_notify(self.consumer, Some(notify_trampoline), slot as *mut c_void)
            };
            self.notify_set = true;
        }
    }
}

impl Iterator for AsyncDeviceStream {
    type Item = Result<DeviceArray>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_array().transpose()
    }
}

#[cfg(feature = "futures")]
impl futures_core::Stream for AsyncDeviceStream {
    type Item = Result<DeviceArray>;

    /// Polls without blocking; when nothing is ready the task is woken by
    /// the core's readiness callback.
    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = self.get_mut();
        this.ensure_notify();
        // The waker first, then the poll: a batch that arrives in between
        // finds the waker (a wake-up is never lost).
        *this.slot.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
        match this.next_timeout(Some(Duration::ZERO)) {
            Err(e) if e.code() == errno::ETIMEDOUT => std::task::Poll::Pending,
            ready => {
                this.slot.waker.lock().unwrap_or_else(|e| e.into_inner()).take();
                std::task::Poll::Ready(ready.transpose())
            }
        }
    }
}

impl Drop for AsyncDeviceStream {
    fn drop(&mut self) {
        unsafe {
            // The core waits for a callback in flight: the slot may go.
            sys::ferry_async_consumer_set_notify(self.consumer, None, ptr::null_mut());
            if !self.handed_out {
                // No producer ever saw the handler: release it here.
                sys::ferry_async_handler_release(self.handler);
                sys::ferry_async_consumer_free(self.consumer);
                sys::ferry_async_handler_free(self.handler);
                return;
            }
            sys::ferry_async_consumer_cancel(self.consumer);
            if sys::ferry_async_consumer_wait_released(self.consumer, 1000) == 0 {
                sys::ferry_async_consumer_free(self.consumer);
                sys::ferry_async_handler_free(self.handler);
                return;
            }
        }
        // The producer still holds the handler: its memory must outlive
        // the release, whenever that comes.
        let reap = Reap {
            consumer: self.consumer,
            handler: self.handler,
            _slot: std::mem::replace(
                &mut self.slot,
                Box::new(WakeSlot {
                    waker: Mutex::new(None),
                }),
            ),
        };
        let spawned = std::thread::Builder::new()
            .name("ferry-async-reaper".into())
            .spawn(move || {
                let reap = reap;
                unsafe {
                    sys::ferry_async_consumer_wait_released(reap.consumer, -1);
                    sys::ferry_async_consumer_free(reap.consumer);
                    sys::ferry_async_handler_free(reap.handler);
                }
            });
        // Without a thread the memory is leaked: never freed under a
        // producer that may still write to it.
        drop(spawned);
    }
}

impl fmt::Debug for AsyncDeviceStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncDeviceStream")
            .field("device_type", &self.device_type())
            .field("ended", &self.ended)
            .finish()
    }
}

impl DeviceArrayStream {
    /// Pushes this stream into an async consumer's `handler` (any runtime's,
    /// or [`AsyncDeviceStream::handler`]) from a thread ferry starts: the
    /// core calls `get_schema`, then one `get_next` per batch the consumer
    /// requests, then the end marker; a failure becomes `on_error` with the
    /// stream's code and message; a cancel stops it. Any iterator exports
    /// this way through [`DeviceArrayStream::from_iter`]. The stream is
    /// moved in and the handler released in every outcome (an error here
    /// means the thread could not start; the handler got `on_error`).
    ///
    /// # Safety
    /// `handler` must be NULL or a live handler that stays valid until the
    /// producer releases it.
    pub unsafe fn export_async(mut self, handler: *mut sys::ArrowAsyncDeviceStreamHandler) -> Result<()> {
        call(|err| unsafe {
            sys::ferry_async_export_stream(self.as_mut_ptr(), handler, sys::FERRY_ASYNC_EXPORT_DEFAULT, err)
        })
    }

    /// [`export_async`](Self::export_async) on the calling thread,
    /// returning once the handler is released: `Ok` at the end of the
    /// stream, `ECANCELED` when the consumer cancelled or refused, else the
    /// error the consumer was given.
    ///
    /// # Safety
    /// As [`export_async`](Self::export_async).
    pub unsafe fn export_async_run(mut self, handler: *mut sys::ArrowAsyncDeviceStreamHandler) -> Result<()> {
        call(|err| unsafe { sys::ferry_async_export_stream_run(self.as_mut_ptr(), handler, err) })
    }
}

#[cfg(feature = "futures")]
pub use self::futures_export::export_async_stream;

#[cfg(feature = "futures")]
mod futures_export {
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake};
    use std::thread::Thread;

    use super::*;
    use crate::stream::ExportArray;

    /// Wakes the producer thread that polls the user's stream.
    struct ThreadWaker(Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }

    /// The core's sender, finished exactly once (on drop at the latest).
    struct Sender(*mut sys::FerryAsyncSender);
    // SAFETY: the sender's functions may be called from any thread.
    unsafe impl Send for Sender {}
    impl Sender {
        fn finish(mut self, code: i32, message: &str) {
            let message = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
            let sender = std::mem::replace(&mut self.0, ptr::null_mut());
            unsafe { sys::ferry_async_sender_finish(sender, code, message.as_ptr()) };
        }
    }
    impl Drop for Sender {
        fn drop(&mut self) {
            if !self.0.is_null() {
                unsafe {
                    sys::ferry_async_sender_finish(self.0, errno::EIO, c"the Rust producer ended early".as_ptr())
                };
            }
        }
    }

    /// Pushes `batches` (a `futures::Stream` of [`DeviceArray`]s or
    /// [`ArrayBuilder`](crate::ArrayBuilder)s) under `schema` into an async
    /// consumer's `handler`, through the core's `FerryAsyncSender`, from a
    /// thread of its own: it sends the schema, then polls the stream once
    /// per batch the consumer requests (woken by the stream's waker, never
    /// busy) and sends each batch; the end of the stream is the end marker,
    /// an `Err` item becomes `on_error` with its code and message, and a
    /// cancel stops the polling. The handler is released in every outcome,
    /// an error returned here included.
    ///
    /// # Safety
    /// `handler` must be NULL or a live handler that stays valid until the
    /// producer releases it.
    pub unsafe fn export_async_stream<S, B>(
        handler: *mut sys::ArrowAsyncDeviceStreamHandler,
        device_type: DeviceType,
        batches: S,
        schema: Schema,
    ) -> Result<()>
    where
        S: futures_core::Stream<Item = Result<B>> + Send + 'static,
        B: ExportArray,
    {
        let mut raw: *mut sys::FerryAsyncSender = ptr::null_mut();
        call(|err| unsafe { sys::ferry_async_sender_create(handler, device_type.0, ptr::null(), &mut raw, err) })?;
        let sender = Sender(raw);
        let mut schema = schema;
        let run = move || {
            // The schema too is sent from this thread: a consumer may block
            // in on_schema until its reader runs (arrow-go's does), and that
            // reader may be the thread that called export_async_stream.
            if let Err(e) =
                call(|err| unsafe { sys::ferry_async_sender_send_schema(sender.0, schema.as_mut_ptr(), err) })
            {
                // A refused schema stopped the stream; the core sends no
                // on_error after a refusal.
                return sender.finish(e.code(), e.message());
            }
            let mut batches = Box::pin(batches);
            let waker = Arc::new(ThreadWaker(std::thread::current())).into();
            let mut cx = Context::from_waker(&waker);
            loop {
                // Back-pressure: the stream is polled only for a batch the
                // consumer asked for.
                match call(|err| unsafe { sys::ferry_async_sender_wait_demand(sender.0, -1, err) }) {
                    Ok(()) => {}
                    // Cancelled, refused or request(n <= 0): the core ends
                    // the stream as the specification says.
                    Err(e) => return sender.finish(0, e.message()),
                }
                let item = loop {
                    match crate::panic::guard(|| Ok(Pin::as_mut(&mut batches).poll_next(&mut cx))) {
                        Ok(Poll::Ready(item)) => break item.map(|r| r.and_then(B::into_device_array)),
                        Ok(Poll::Pending) => std::thread::park(),
                        Err(panic) => break Some(Err(panic)),
                    }
                };
                match item {
                    None => return sender.finish(0, ""),
                    Some(Err(e)) => return sender.finish(e.code(), e.message()),
                    Some(Ok(mut array)) => {
                        let sent = call(|err| unsafe {
                            sys::ferry_async_sender_send(sender.0, array.raw_mut(), ptr::null(), -1, err)
                        });
                        // On a refusal the core took (and released) the
                        // batch; on a cancel it is still ours (dropped).
                        if let Err(e) = sent {
                            return sender.finish(0, e.message());
                        }
                    }
                }
            }
        };
        std::thread::Builder::new()
            .name("ferry-async-producer".into())
            .spawn(run)
            .map(drop)
            .map_err(|e| Error::new(errno::EIO, format!("cannot start the producer thread: {e}")))
    }
}
