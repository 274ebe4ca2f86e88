//! Device array streams: consuming any producer's stream as an `Iterator` of
//! `Result`s, and exporting any Rust iterator (or [`ArrayProducer`]) as a
//! stream through the core's `ferry_stream_init`, with every callback
//! guarded so that no panic reaches the C caller.
use std::fmt;
use std::os::raw::{c_int, c_void};

use ferry_sys as sys;

use crate::array::DeviceArray;
use crate::device::DeviceType;
use crate::error::{call, write_error, Error, ErrorBuf, Result};
use crate::panic::{guard, guard_silent};
use crate::schema::{opt_str, Schema};

/// The producing side of a stream written in Rust. `schema` may be called
/// more than once (each call returns a new owned schema); `next` returns
/// `Ok(None)` at the end. An `Err` travels to the consumer as its code plus
/// the stream's last error message; a panic becomes `EIO`.
///
/// ```
/// use ferry::{ArrayProducer, DeviceArray, DeviceArrayStream, DeviceType, Schema};
/// struct Countdown(i32);
/// impl ArrayProducer for Countdown {
///     fn schema(&mut self) -> ferry::Result<Schema> {
///         Schema::new("i", Some("n"))
///     }
///     fn next(&mut self) -> ferry::Result<Option<DeviceArray>> {
///         if self.0 == 0 {
///             return Ok(None);
///         }
///         self.0 -= 1;
///         Ok(Some(ferry::export_primitive(vec![self.0], None)?.1))
///     }
/// }
/// let stream = DeviceArrayStream::from_producer(DeviceType::CPU, Countdown(3)).unwrap();
/// assert_eq!(stream.count(), 3);
/// ```
pub trait ArrayProducer: Send + 'static {
    /// The stream's schema (a new owned copy per call).
    fn schema(&mut self) -> Result<Schema>;
    /// The next batch, or `None` at the end.
    fn next(&mut self) -> Result<Option<DeviceArray>>;
}

/// Adapts a schema plus an iterator of batches to [`ArrayProducer`].
struct IterProducer<I> {
    schema: Schema,
    iter: I,
}

impl<I> ArrayProducer for IterProducer<I>
where
    I: Iterator<Item = Result<DeviceArray>> + Send + 'static,
{
    fn schema(&mut self) -> Result<Schema> {
        self.schema.to_owned_schema()
    }
    fn next(&mut self) -> Result<Option<DeviceArray>> {
        self.iter.next().transpose()
    }
}

unsafe extern "C" fn get_schema_trampoline<P: ArrayProducer>(
    user_data: *mut c_void,
    out: *mut sys::ArrowSchema,
    error: *mut sys::FerryError,
) -> c_int {
    // SAFETY: user_data is the Box<P> made in from_producer; the core does
    // not call a stream from two threads at once.
    let producer = &mut *(user_data as *mut P);
    match guard(|| producer.schema().and_then(|s| unsafe { s.export_to(out) })) {
        Ok(()) => 0,
        Err(e) => {
            write_error(error, e.message());
            e.code()
        }
    }
}

unsafe extern "C" fn get_next_trampoline<P: ArrayProducer>(
    user_data: *mut c_void,
    out: *mut sys::ArrowDeviceArray,
    error: *mut sys::FerryError,
) -> c_int {
    let producer = &mut *(user_data as *mut P);
    match guard(|| match producer.next()? {
        Some(array) => unsafe { array.export_to(out) },
        None => Ok(()), // `out` stays released: the end of the stream
    }) {
        Ok(()) => 0,
        Err(e) => {
            write_error(error, e.message());
            e.code()
        }
    }
}

unsafe extern "C" fn release_trampoline<P: ArrayProducer>(user_data: *mut c_void) {
    guard_silent("the release of a Rust stream producer", || {
        // SAFETY: called exactly once by the core, with the Box<P> pointer.
        drop(unsafe { Box::from_raw(user_data as *mut P) });
    });
}

/// An owned `struct ArrowDeviceArrayStream`, released exactly once when
/// dropped. Iterating yields `Result<DeviceArray>` until the end of the
/// stream or the first error (which is yielded once, then iteration stops).
///
/// `Send`: a stream may move between threads, but it is used by one thread
/// at a time (not `Sync`), as the specification requires.
///
/// ```
/// use ferry::{DeviceArrayStream, DeviceType, Schema};
/// let batches = (0..3).map(|i| ferry::export_primitive(vec![i, i + 1], None).map(|(_, a)| a));
/// let mut stream = DeviceArrayStream::from_iter(DeviceType::CPU, Schema::new("i", None).unwrap(), batches).unwrap();
/// assert_eq!(stream.schema().unwrap().format(), "i");
/// let lengths: Vec<i64> = stream.map(|batch| batch.unwrap().length()).collect();
/// assert_eq!(lengths, vec![2, 2, 2]);
/// ```
pub struct DeviceArrayStream {
    raw: sys::ArrowDeviceArrayStream,
    finished: bool,
}

// SAFETY: see the type's documentation.
unsafe impl Send for DeviceArrayStream {}

impl DeviceArrayStream {
    /// Imports the stream at `ptr` by move (`*ptr` is left released).
    ///
    /// # Safety
    /// `ptr` must be NULL or point to a valid `ArrowDeviceArrayStream`.
    pub unsafe fn from_raw(ptr: *mut sys::ArrowDeviceArrayStream) -> Result<DeviceArrayStream> {
        if ptr.is_null() {
            return Err(Error::invalid("stream pointer is NULL"));
        }
        let mut stream = DeviceArrayStream {
            raw: sys::ArrowDeviceArrayStream::default(),
            finished: false,
        };
        if sys::ferry_stream_move(ptr, &mut stream.raw) != 0 {
            return Err(Error::invalid("cannot import a released stream"));
        }
        Ok(stream)
    }

    /// Moves the stream into `out` (released or zeroed); the receiver owns it.
    ///
    /// # Safety
    /// `out` must point to a writable `ArrowDeviceArrayStream`.
    pub unsafe fn export_to(mut self, out: *mut sys::ArrowDeviceArrayStream) -> Result<()> {
        if out.is_null() {
            return Err(Error::invalid("output stream pointer is NULL"));
        }
        if sys::ferry_stream_move(&mut self.raw, out) != 0 {
            return Err(Error::invalid(
                "output stream is not released; refusing to overwrite it",
            ));
        }
        Ok(())
    }

    /// A stream of `device_type` driven by `producer`, which is dropped when
    /// the consumer releases the stream.
    pub fn from_producer<P: ArrayProducer>(device_type: DeviceType, producer: P) -> Result<DeviceArrayStream> {
        let user_data = Box::into_raw(Box::new(producer)) as *mut c_void;
        let mut stream = DeviceArrayStream {
            raw: sys::ArrowDeviceArrayStream::default(),
            finished: false,
        };
        let result = call(|err| unsafe {
            sys::ferry_stream_init(
                &mut stream.raw,
                device_type.0,
                Some(get_schema_trampoline::<P>),
                Some(get_next_trampoline::<P>),
                Some(release_trampoline::<P>),
                user_data,
                err,
            )
        });
        if let Err(e) = result {
            // The hook is not called on failure: the producer is still ours.
            drop(unsafe { Box::from_raw(user_data as *mut P) });
            return Err(e);
        }
        Ok(stream)
    }

    /// A stream of `device_type` yielding `schema` and then each batch of
    /// `batches` (an `Err` batch fails that `get_next` call).
    pub fn from_iter<I>(device_type: DeviceType, schema: Schema, batches: I) -> Result<DeviceArrayStream>
    where
        I: IntoIterator<Item = Result<DeviceArray>>,
        I::IntoIter: Send + 'static,
    {
        DeviceArrayStream::from_producer(
            device_type,
            IterProducer {
                schema,
                iter: batches.into_iter(),
            },
        )
    }

    /// A stream over arrays that already exist, through the core's
    /// `ferry_stream_init_from_arrays` (no Rust callback on the way).
    pub fn from_arrays(device_type: DeviceType, schema: Schema, arrays: Vec<DeviceArray>) -> Result<DeviceArrayStream> {
        let mut schema = schema;
        let mut raw_arrays: Vec<sys::ArrowDeviceArray> = Vec::with_capacity(arrays.len());
        for array in arrays {
            let mut slot = sys::ArrowDeviceArray::default();
            unsafe { array.export_to(&mut slot)? };
            raw_arrays.push(slot);
        }
        let mut stream = DeviceArrayStream {
            raw: sys::ArrowDeviceArrayStream::default(),
            finished: false,
        };
        let result = call(|err| unsafe {
            sys::ferry_stream_init_from_arrays(
                &mut stream.raw,
                device_type.0,
                schema.as_mut_ptr(),
                raw_arrays.as_mut_ptr(),
                raw_arrays.len() as i64,
                err,
            )
        });
        if result.is_err() {
            // Nothing was moved: release what we still own.
            for slot in &mut raw_arrays {
                unsafe { sys::ferry_device_array_release(slot) };
            }
        }
        result.map(|()| stream)
    }

    /// The raw pointer (still owned by `self`).
    pub fn as_mut_ptr(&mut self) -> *mut sys::ArrowDeviceArrayStream {
        &mut self.raw
    }

    /// The device type every batch has.
    pub fn device_type(&self) -> DeviceType {
        DeviceType(unsafe { sys::ferry_stream_device_type(&self.raw) })
    }

    /// The stream's schema (a new owned schema per call).
    pub fn schema(&mut self) -> Result<Schema> {
        let mut schema = Schema::new_released();
        call(|err| unsafe { sys::ferry_stream_get_schema(&mut self.raw, schema.as_mut_ptr(), err) })?;
        Ok(schema)
    }

    /// The next batch, `Ok(None)` at the end of the stream.
    #[inline]
    pub fn next_array(&mut self) -> Result<Option<DeviceArray>> {
        let mut array = DeviceArray::released();
        let mut err = ErrorBuf::new();
        let code = unsafe { sys::ferry_stream_get_next(&mut self.raw, array.raw_mut(), err.as_mut_ptr()) };
        err.check(code)?;
        if array.is_released() {
            return Ok(None);
        }
        Ok(Some(array))
    }

    /// The producer's last error message, if any (valid after a failure).
    pub fn last_error(&mut self) -> Option<String> {
        unsafe { opt_str(sys::ferry_stream_get_last_error(&mut self.raw)) }.map(str::to_string)
    }
}

impl Iterator for DeviceArrayStream {
    type Item = Result<DeviceArray>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        match self.next_array() {
            Ok(Some(array)) => Some(Ok(array)),
            Ok(None) => {
                self.finished = true;
                None
            }
            Err(e) => {
                self.finished = true;
                Some(Err(e))
            }
        }
    }
}

impl Drop for DeviceArrayStream {
    fn drop(&mut self) {
        unsafe { sys::ferry_stream_release(&mut self.raw) };
    }
}

impl fmt::Debug for DeviceArrayStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceArrayStream")
            .field("device_type", &self.device_type())
            .field("finished", &self.finished)
            .finish()
    }
}
