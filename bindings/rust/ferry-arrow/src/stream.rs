//! Device array streams: consuming any producer's stream as an `Iterator` of
//! `Result`s, and exporting any Rust iterator (or [`ArrayProducer`]) as a
//! stream through the core's `ferry_array_stream_init`, with every callback
//! guarded so that no panic reaches the C caller.
use std::fmt;
use std::os::raw::{c_int, c_void};

use ferry_arrow_sys as sys;

use crate::array::{DeviceArray, Validation};
use crate::builder::ArrayBuilder;
use crate::device::{DeviceType, Event, StreamHandle};
use crate::error::{call, check_output, move_out, write_error, Error, ErrorBuf, Result};
use crate::leak::LeakToken;
use crate::panic::{guard, guard_silent};
use crate::schema::{opt_str, Schema};
use crate::words::rewrite_wide;

/// The producing side of a stream written in Rust. `schema` may be called
/// more than once (each call returns a new owned schema); `next` returns
/// `Ok(None)` at the end. An `Err` travels to the consumer as its code plus
/// the stream's last error message; a panic becomes `EIO`.
///
/// ```
/// use ferry_arrow::{ArrayProducer, DeviceArray, DeviceArrayStream, DeviceType, Schema};
/// struct Countdown(i32);
/// impl ArrayProducer for Countdown {
///     fn schema(&mut self) -> ferry_arrow::Result<Schema> {
///         Schema::new("i", Some("n"))
///     }
///     fn next(&mut self) -> ferry_arrow::Result<Option<DeviceArray>> {
///         if self.0 == 0 {
///             return Ok(None);
///         }
///         self.0 -= 1;
///         Ok(Some(ferry_arrow::export_primitive(vec![self.0], None)?.0))
///     }
/// }
/// let stream = DeviceArrayStream::from_producer(DeviceType::CPU, Countdown(3)).unwrap();
/// assert_eq!(stream.count(), 3);
/// ```
///
/// A producer on the hot path also implements [`next_into`](Self::next_into)
/// and builds each batch straight into the consumer's struct (no
/// intermediate [`DeviceArray`], no 144-byte move):
///
/// ```
/// use ferry_arrow::{ArrayBuilder, ArrayProducer, ArraySlot, Buffer, DeviceArray, DeviceArrayStream, DeviceType, Schema};
/// static VALUES: [i64; 3] = [1, 2, 3];
/// struct Repeat(u32);
/// impl ArrayProducer for Repeat {
///     fn schema(&mut self) -> ferry_arrow::Result<Schema> {
///         Schema::new("l", None)
///     }
///     fn next(&mut self) -> ferry_arrow::Result<Option<DeviceArray>> {
///         DeviceArray::produce(|slot| self.next_into(slot))
///     }
///     fn next_into(&mut self, slot: &mut ArraySlot<'_>) -> ferry_arrow::Result<()> {
///         if self.0 == 0 {
///             return Ok(()); // the end: the slot stays empty
///         }
///         self.0 -= 1;
///         slot.build(ArrayBuilder::new(3).buffer(Buffer::null()).buffer(Buffer::from_static(&VALUES)))
///     }
/// }
/// let stream = DeviceArrayStream::from_producer(DeviceType::CPU, Repeat(4)).unwrap();
/// assert_eq!(stream.map(|b| b.unwrap().length()).sum::<i64>(), 12);
/// ```
pub trait ArrayProducer: Send + 'static {
    /// The stream's schema (a new owned copy per call).
    fn schema(&mut self) -> Result<Schema>;
    /// The next batch, or `None` at the end.
    fn next(&mut self) -> Result<Option<DeviceArray>>;
    /// Writes the next batch into `slot` (the consumer's own struct), or
    /// leaves the slot empty at the end of the stream, as the C interface
    /// does with its out-parameter. This is what the stream calls; the
    /// default forwards to [`next`](Self::next) and moves the batch in.
    /// (No `bool` besides the slot: one source of truth, and cheaper: a
    /// returned `Ok(true)` was written as a tag word plus a byte and read
    /// back as words, which stalls store forwarding on every batch.)
    #[inline]
    fn next_into(&mut self, slot: &mut ArraySlot<'_>) -> Result<()> {
        match self.next()? {
            Some(array) => slot.put(array),
            None => Ok(()),
        }
    }
}

/// Something a stream can hand to its consumer as one batch: a finished
/// [`DeviceArray`] (moved in) or an [`ArrayBuilder`] (built in place, the
/// cheaper way). [`DeviceArrayStream::from_iter`] accepts iterators of
/// either.
///
/// ```
/// use ferry_arrow::{ArrayBuilder, Buffer, DeviceArrayStream, DeviceType, Schema};
/// // A stream straight from an iterator of builders: each batch is built
/// // directly in the consumer's struct when it asks for it.
/// let batches = (1..=3i64).map(|n| Ok(ArrayBuilder::new(n).buffer(Buffer::null()).buffer(Buffer::from_vec(vec![n; n as usize]))));
/// let stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, Schema::new("l", None).unwrap()).unwrap();
/// assert_eq!(stream.map(|b| b.unwrap().length()).collect::<Vec<_>>(), vec![1, 2, 3]);
/// ```
pub trait ExportArray {
    /// Hands the batch over into `slot` (which is empty).
    fn export_into(self, slot: &mut ArraySlot<'_>) -> Result<()>;
    /// The batch as an owned array.
    fn into_device_array(self) -> Result<DeviceArray>;
}

impl ExportArray for DeviceArray {
    #[inline(always)]
    fn export_into(self, slot: &mut ArraySlot<'_>) -> Result<()> {
        slot.put(self)
    }
    #[inline(always)]
    fn into_device_array(self) -> Result<DeviceArray> {
        Ok(self)
    }
}

impl ExportArray for ArrayBuilder {
    #[inline(always)]
    fn export_into(self, slot: &mut ArraySlot<'_>) -> Result<()> {
        slot.build(self)
    }
    #[inline(always)]
    fn into_device_array(self) -> Result<DeviceArray> {
        self.build()
    }
}

/// A consumer's released `struct ArrowDeviceArray` lent to a producer to
/// fill in place, at most once: the stream's `get_next` out-parameter, or
/// any C struct through [`ArraySlot::from_raw`]. Filling it hands the batch
/// over (the consumer then owns and releases it); a slot left empty means
/// no batch. The borrow keeps it from outliving the call it was lent for.
///
/// ```
/// use ferry_arrow::{ArrayBuilder, ArraySlot, Buffer, DeviceArray};
/// let mut raw = ferry_arrow::sys::ArrowDeviceArray::default();
/// let mut slot = unsafe { ArraySlot::from_raw(&mut raw) }.unwrap();
/// assert!(!slot.is_filled());
/// slot.build(ArrayBuilder::new(2).buffer(Buffer::null()).buffer(Buffer::from_vec(vec![5u8, 6]))).unwrap();
/// assert!(slot.is_filled());
/// // A second batch is refused (it would leak the first).
/// assert!(slot.build(ArrayBuilder::new(0)).is_err());
/// let array = unsafe { DeviceArray::from_raw_unchecked(&mut raw) }.unwrap();
/// assert_eq!(array.length(), 2);
/// ```
pub struct ArraySlot<'a> {
    raw: &'a mut sys::ArrowDeviceArray,
}

impl<'a> ArraySlot<'a> {
    /// Lends the released struct at `ptr`; `EINVAL` for NULL or a live
    /// (unreleased) struct.
    ///
    /// # Safety
    /// `ptr` must be NULL or point to a writable `ArrowDeviceArray` that
    /// nothing else uses for `'a`.
    #[inline]
    pub unsafe fn from_raw(ptr: *mut sys::ArrowDeviceArray) -> Result<ArraySlot<'a>> {
        check_output(ptr, "device array")?;
        Ok(ArraySlot { raw: &mut *ptr })
    }

    /// A slot over a struct known to be released (the crate's own paths).
    #[inline(always)]
    pub(crate) fn new_released(raw: &'a mut sys::ArrowDeviceArray) -> ArraySlot<'a> {
        debug_assert!(raw.array.release.is_none());
        ArraySlot { raw }
    }

    /// True once a batch has been written.
    #[inline(always)]
    pub fn is_filled(&self) -> bool {
        self.raw.array.release.is_some()
    }

    #[inline(always)]
    fn check_empty(&self) -> Result<()> {
        if self.is_filled() {
            return Err(Error::invalid("the slot already holds a batch"));
        }
        Ok(())
    }

    /// Moves `array` in.
    #[inline(always)]
    pub fn put(&mut self, array: DeviceArray) -> Result<()> {
        self.check_empty()?;
        // SAFETY: the slot is released and exclusively ours.
        unsafe { array.export_to(self.raw) }
    }

    /// Builds a CPU array in place (what [`ArrayBuilder::build`] exports).
    #[inline(always)]
    pub fn build(&mut self, builder: ArrayBuilder) -> Result<()> {
        self.check_empty()?;
        // SAFETY: as above.
        unsafe { builder.build_into(self.raw) }
    }

    /// Builds in place an array on (`device_type`, `device_id`) with an
    /// optional event (what [`ArrayBuilder::build_on`] exports).
    #[inline]
    pub fn build_on(
        &mut self,
        builder: ArrayBuilder,
        device_type: DeviceType,
        device_id: i64,
        sync_event: Option<Event>,
    ) -> Result<()> {
        self.check_empty()?;
        // SAFETY: as above.
        unsafe { builder.build_on_into(self.raw, device_type, device_id, sync_event) }
    }

    /// The raw pointer (for C producers that fill the struct themselves).
    #[inline]
    pub fn as_mut_ptr(&mut self) -> *mut sys::ArrowDeviceArray {
        self.raw
    }
}

impl fmt::Debug for ArraySlot<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArraySlot").field("filled", &self.is_filled()).finish()
    }
}

/// Adapts a schema plus an iterator of batches to [`ArrayProducer`].
struct IterProducer<I> {
    schema: Schema,
    iter: I,
}

impl<I, B> ArrayProducer for IterProducer<I>
where
    I: Iterator<Item = Result<B>> + Send + 'static,
    B: ExportArray,
{
    fn schema(&mut self) -> Result<Schema> {
        self.schema.to_owned_schema()
    }
    fn next(&mut self) -> Result<Option<DeviceArray>> {
        self.iter.next().map(|b| b.and_then(B::into_device_array)).transpose()
    }
    #[inline]
    fn next_into(&mut self, slot: &mut ArraySlot<'_>) -> Result<()> {
        match self.iter.next() {
            Some(batch) => batch?.export_into(slot),
            None => Ok(()),
        }
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
    if user_data.is_null() || out.is_null() {
        // The core never does this; a caller bypassing it gets an error.
        write_error(error, "get_next: NULL producer or output array");
        return crate::error::errno::EINVAL;
    }
    let producer = &mut *(user_data as *mut P);
    // SAFETY: the core's get_next passes a struct it has just zeroed, and
    // it is ours to fill until we return.
    let slot = &mut *out;
    // An empty slot on success is the end of the stream.
    let result = guard(|| producer.next_into(&mut ArraySlot::new_released(&mut *slot)));
    match result {
        Ok(()) => 0,
        Err(e) => {
            // A failed call hands nothing over: drop whatever was written.
            sys::ferry_device_array_release(slot);
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

/// A batch of another device type than its stream's is a producer's lie
/// that would send the consumer's reads to the wrong memory: refused (the
/// caller drops, so releases, the batch).
#[inline(always)]
fn check_batch_device(stream: &sys::ArrowDeviceArrayStream, batch: &DeviceArray) -> Result<()> {
    if batch.device_type().0 != stream.device_type {
        return Err(wrong_device(batch.device_type(), DeviceType(stream.device_type)));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn wrong_device(batch: DeviceType, stream: DeviceType) -> Error {
    Error::invalid(format!(
        "the producer returned a batch on device type {batch} from a stream of device type {stream}"
    ))
}

/// A schema prepared once by the core (`ferry_prepared_schema_create`) for
/// validating every batch of a stream without walking the schema again.
struct PreparedSchema(*mut sys::FerryPreparedSchema);

// SAFETY: the core's prepared schema is immutable once made and may be used
// from any thread (ferry.h); it is freed once, on drop.
unsafe impl Send for PreparedSchema {}

impl PreparedSchema {
    fn new(schema: &Schema) -> Result<PreparedSchema> {
        let mut out: *mut sys::FerryPreparedSchema = std::ptr::null_mut();
        call(|err| unsafe {
            sys::ferry_prepared_schema_create(schema.as_ptr(), None, std::ptr::null_mut(), &mut out, err)
        })
        .map_err(|e| {
            Error::new(
                e.code(),
                format!("the stream's schema fails validation: {}", e.message()),
            )
        })?;
        Ok(PreparedSchema(out))
    }

    #[inline]
    fn validate(&self, batch: &DeviceArray, level: i32) -> Result<()> {
        call(|err| unsafe {
            sys::ferry_validate_prepared(self.0, batch.as_ptr(), level, None, std::ptr::null_mut(), err)
        })
        .map_err(crate::array::validation_failed)
    }
}

impl Drop for PreparedSchema {
    fn drop(&mut self) {
        unsafe { sys::ferry_prepared_schema_free(self.0) };
    }
}

/// Options of [`DeviceArrayStream::export_to_c_stream_with`], or-ed with `|`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CStreamFlags(i64);

impl CStreamFlags {
    /// No option: a stream of another device than the CPU is refused.
    pub const NONE: CStreamFlags = CStreamFlags(0);
    /// Batches not on the CPU are brought to the host (moved where the host
    /// can reach the memory, copied otherwise) instead of refused; needs a
    /// validation level other than `None`.
    pub const TO_HOST: CStreamFlags = CStreamFlags(sys::FERRY_CPU_STREAM_COPY_TO_HOST as i64);
    /// A stream whose schema is not a struct ("+s") is presented as record
    /// batches of one column (a struct named "" over the stream's field), as
    /// arrow-rs's and Arrow Java's stream readers require.
    pub const RECORD_BATCHES: CStreamFlags = CStreamFlags(sys::FERRY_CPU_STREAM_RECORD_BATCHES as i64);
}

impl std::ops::BitOr for CStreamFlags {
    type Output = CStreamFlags;
    fn bitor(self, other: CStreamFlags) -> CStreamFlags {
        CStreamFlags(self.0 | other.0)
    }
}

/// Where a stream's reading stands.
enum State {
    /// Batches may follow.
    Open,
    /// The producer signalled the end: every later read is the end too,
    /// without calling the producer again.
    Ended,
    /// A callback failed (or a batch was refused): the producer is never
    /// called again, and every later read returns this same error.
    Failed(Error),
}

/// An owned `struct ArrowDeviceArrayStream`, released exactly once when
/// dropped. Iterating yields `Result<DeviceArray>` until the end of the
/// stream.
///
/// **Validation.** Every batch is validated against the stream's schema at
/// [`Validation::Default`] before it is handed out (the schema is prepared
/// once, on the first batch or the first [`schema`](Self::schema) call, and
/// the per-batch check walks only the batch). [`from_raw_unchecked`](Self::from_raw_unchecked)
/// or [`set_validation`](Self::set_validation)`(Validation::None)` opts out.
///
/// **Errors.** After a failure (of `get_schema`, of `get_next`, or a batch
/// refused by validation or for its device) the producer's callbacks are
/// never called again, and every later read (`next`, [`next_array`](Self::next_array),
/// [`next_ref`](Self::next_ref), [`next_on`](Self::next_on),
/// [`schema`](Self::schema)) returns that same error, code and message. The
/// iterator therefore keeps yielding `Some(Err(same))`: stop at the first
/// error (`?`, `collect::<Result<Vec<_>>>()`, `map_while(Result::ok)`);
/// adaptors that skip errors (`filter_map(Result::ok)`, `flatten`, `count`)
/// never end on a failed stream. The end of the stream stays the end
/// (`None`) and is never confused with an error.
///
/// **Threads.** `Send` but not `Sync`: a stream may move between threads,
/// and every read takes `&mut self`, so one call at a time is enforced by
/// the compiler, as the specification requires of its callbacks; release
/// (drop) needs ownership, so it cannot overlap a read in flight.
///
/// ```
/// use ferry_arrow::{DeviceArrayStream, DeviceType, Schema};
/// let batches = (0..3).map(|i| ferry_arrow::export_primitive(vec![i, i + 1], None).map(|(a, _)| a));
/// let mut stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, Schema::new("i", None).unwrap()).unwrap();
/// assert_eq!(stream.schema().unwrap().format(), "i");
/// let lengths: Vec<i64> = stream.map(|batch| batch.unwrap().length()).collect();
/// assert_eq!(lengths, vec![2, 2, 2]);
/// ```
///
/// Sharing one stream between threads does not compile:
///
/// ```compile_fail
/// use ferry_arrow::{DeviceArrayStream, DeviceType, Schema};
/// let stream = DeviceArrayStream::from_iter(DeviceType::CPU, std::iter::empty::<ferry_arrow::Result<ferry_arrow::DeviceArray>>(), Schema::new("i", None).unwrap()).unwrap();
/// let shared = std::sync::Arc::new(stream);
/// std::thread::spawn(move || drop(shared)); // DeviceArrayStream is not Sync
/// ```
pub struct DeviceArrayStream {
    raw: sys::ArrowDeviceArrayStream,
    state: State,
    validation: Validation,
    /// The schema batches are validated against (made on first use).
    prepared: Option<PreparedSchema>,
    /// The batch lent out by [`next_ref`](Self::next_ref); released by
    /// the next call or on drop. Boxed on first use, so that streams that
    /// are only iterated stay small.
    current: Option<Box<DeviceArray>>,
    /// The leak report's registration of an imported stream.
    leak: LeakToken,
    /// Made here (`from_producer`, `from_iter`, `from_arrays`): ferry's own
    /// batches, not validated again when exported as a plain C stream.
    produced_here: bool,
}

// SAFETY: see the type's documentation.
unsafe impl Send for DeviceArrayStream {}

impl DeviceArrayStream {
    /// A released stream to fill (validating by default).
    fn empty() -> DeviceArrayStream {
        DeviceArrayStream {
            raw: sys::ArrowDeviceArrayStream::default(),
            state: State::Open,
            validation: Validation::Default,
            prepared: None,
            current: None,
            leak: LeakToken::NONE,
            produced_here: false,
        }
    }

    /// Imports the stream at `ptr` by move (`*ptr` is left released); its
    /// batches are validated at [`Validation::Default`]. `EINVAL` for NULL
    /// or a released stream (nothing taken).
    ///
    /// # Safety
    /// `ptr` must be NULL or point to a valid `ArrowDeviceArrayStream`.
    pub unsafe fn from_raw(ptr: *mut sys::ArrowDeviceArrayStream) -> Result<DeviceArrayStream> {
        DeviceArrayStream::from_raw_with(ptr, Validation::Default)
    }

    /// [`from_raw`](Self::from_raw) with the batches validated at
    /// `validation` (`Validation::None`: not at all). Ownership as `from_raw`.
    ///
    /// # Safety
    /// As [`from_raw`](Self::from_raw).
    pub unsafe fn from_raw_with(
        ptr: *mut sys::ArrowDeviceArrayStream,
        validation: Validation,
    ) -> Result<DeviceArrayStream> {
        if ptr.is_null() {
            return Err(Error::invalid("stream pointer is NULL"));
        }
        let mut stream = DeviceArrayStream::empty();
        if sys::ferry_array_stream_move(ptr, &mut stream.raw) != 0 {
            return Err(Error::invalid("cannot import a released stream"));
        }
        stream.validation = validation;
        let device_type = DeviceType(stream.raw.device_type);
        stream.leak = LeakToken::track(|| {
            format!("DeviceArrayStream imported by from_raw never dropped (device type {device_type})")
        });
        Ok(stream)
    }

    /// Imports the stream at `ptr` by move without validating its batches:
    /// the explicit opt-out, for producers the caller vouches for. Ownership
    /// as [`from_raw`](Self::from_raw).
    ///
    /// # Safety
    /// As [`from_raw`](Self::from_raw).
    pub unsafe fn from_raw_unchecked(ptr: *mut sys::ArrowDeviceArrayStream) -> Result<DeviceArrayStream> {
        DeviceArrayStream::from_raw_with(ptr, Validation::None)
    }

    /// Sets how the batches read from now on are validated (a stream starts
    /// at [`Validation::Default`], or `None` from
    /// [`from_raw_unchecked`](Self::from_raw_unchecked)).
    pub fn set_validation(&mut self, validation: Validation) {
        self.validation = validation;
    }

    /// How batches are validated.
    pub fn validation(&self) -> Validation {
        self.validation
    }

    /// Moves the stream into `out` (released or zeroed); the receiver owns it.
    ///
    /// # Safety
    /// `out` must point to a writable `ArrowDeviceArrayStream`.
    pub unsafe fn export_to(mut self, out: *mut sys::ArrowDeviceArrayStream) -> Result<()> {
        move_out(out, "stream", |out| sys::ferry_array_stream_move(&mut self.raw, out))?;
        // The receiver answers for it from now on (in the leak report too).
        self.leak.untrack();
        Ok(())
    }

    /// Imports a plain `ArrowArrayStream` (the C stream interface: CPU data,
    /// what DuckDB, ADBC drivers, Polars or arrow-rs's `FFI_ArrowArrayStream`
    /// hand out) by move, through the core's adapter
    /// (`ferry_array_stream_from_cpu_stream`): the result is a CPU stream
    /// whose batches are validated at [`Validation::Default`] against the
    /// schema prepared once, as [`from_raw`](Self::from_raw)'s are. On success
    /// `*ptr` is left released and the result owns (and releases) it; on
    /// failure nothing is taken. `EINVAL` for NULL or a released stream.
    ///
    /// ```
    /// use ferry_arrow::{DeviceArrayStream, DeviceType, Schema};
    /// let batches = (0..3).map(|i| ferry_arrow::export_primitive(vec![i; 4], None).map(|(a, _)| a));
    /// let stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, Schema::new("i", None).unwrap()).unwrap();
    /// let mut c = ferry_arrow::sys::ArrowArrayStream::default();
    /// unsafe { stream.export_to_c_stream(&mut c).unwrap() };
    /// let back = unsafe { DeviceArrayStream::from_c_stream(&mut c).unwrap() };
    /// assert_eq!(back.map(|b| b.unwrap().length()).sum::<i64>(), 12);
    /// ```
    ///
    /// # Safety
    /// `ptr` must be NULL or point to a valid `ArrowArrayStream`.
    pub unsafe fn from_c_stream(ptr: *mut sys::ArrowArrayStream) -> Result<DeviceArrayStream> {
        DeviceArrayStream::from_c_stream_with(ptr, Validation::Default)
    }

    /// [`from_c_stream`](Self::from_c_stream) with the batches validated at
    /// `validation` (`Validation::None`: not at all, the named opt-out).
    /// Ownership as `from_c_stream`.
    ///
    /// # Safety
    /// As [`from_c_stream`](Self::from_c_stream).
    pub unsafe fn from_c_stream_with(
        ptr: *mut sys::ArrowArrayStream,
        validation: Validation,
    ) -> Result<DeviceArrayStream> {
        if ptr.is_null() {
            return Err(Error::invalid("stream pointer is NULL"));
        }
        if (*ptr).release.is_none() {
            return Err(Error::invalid("cannot import a released stream"));
        }
        let mut stream = DeviceArrayStream::empty();
        // On failure the adapter leaves `*ptr` untouched: still the caller's.
        call(|err| sys::ferry_array_stream_from_cpu_stream(ptr, &mut stream.raw, err))?;
        stream.validation = validation;
        stream.leak = LeakToken::track(|| "DeviceArrayStream imported by from_c_stream never dropped".to_string());
        Ok(stream)
    }

    /// Moves the stream into `out` (released or zeroed) as a plain
    /// `ArrowArrayStream` (the C stream interface, for consumers without the
    /// device interface: arrow-rs's `ArrowArrayStreamReader`, DuckDB,
    /// pyarrow's `RecordBatchReader._import_from_c`), through the core's
    /// adapter (`ferry_array_stream_to_cpu_stream`); the receiver owns it.
    /// Batches are validated in the adapter at the stream's
    /// [`validation`](Self::validation) level when the stream was imported
    /// (so an imported stream passed on stays checked), not at all when it
    /// was made here (`from_iter`, `from_producer`, `from_arrays`: ferry's
    /// own batches). A stream of another device than the CPU is refused with
    /// `EINVAL` (use [`export_to_c_stream_with`](Self::export_to_c_stream_with)
    /// and [`CStreamFlags::TO_HOST`]). A stream that has already failed or
    /// ended is refused (its producer must not be called again): the same
    /// error, or `EINVAL`. On failure `out` is untouched and the stream is
    /// released with `self`.
    ///
    /// # Safety
    /// `out` must point to a writable `ArrowArrayStream`.
    pub unsafe fn export_to_c_stream(self, out: *mut sys::ArrowArrayStream) -> Result<()> {
        let validation = if self.produced_here {
            Validation::None
        } else {
            self.validation
        };
        self.export_to_c_stream_with(out, validation, CStreamFlags::NONE)
    }

    /// [`export_to_c_stream`](Self::export_to_c_stream) with every batch
    /// validated at `validation` in the adapter, and `flags`
    /// ([`CStreamFlags::TO_HOST`]: batches on another device are moved or
    /// copied to the host instead of refused, which needs validation;
    /// [`CStreamFlags::RECORD_BATCHES`]: a non-struct stream is presented as
    /// record batches of one column, as arrow-rs's and Arrow Java's readers
    /// require). Ownership as `export_to_c_stream`.
    ///
    /// # Safety
    /// As [`export_to_c_stream`](Self::export_to_c_stream).
    pub unsafe fn export_to_c_stream_with(
        mut self,
        out: *mut sys::ArrowArrayStream,
        validation: Validation,
        flags: CStreamFlags,
    ) -> Result<()> {
        check_output(out, "stream")?;
        match &self.state {
            State::Open => {}
            State::Ended => return Err(Error::invalid("cannot export a stream that has already ended")),
            State::Failed(e) => return Err(e.clone()),
        }
        let level = validation.level().unwrap_or(sys::FERRY_VALIDATE_NONE);
        // On success the adapter has moved `self.raw` (left released, so the
        // drop below releases nothing); on failure it is untouched and
        // released by that drop.
        call(|err| sys::ferry_array_stream_to_cpu_stream(&mut self.raw, level, flags.0, out, err))?;
        self.leak.untrack();
        Ok(())
    }

    /// A stream of `device_type` driven by `producer`, which is dropped when
    /// the consumer releases the stream.
    pub fn from_producer<P: ArrayProducer>(device_type: DeviceType, producer: P) -> Result<DeviceArrayStream> {
        let user_data = Box::into_raw(Box::new(producer)) as *mut c_void;
        let mut stream = DeviceArrayStream::empty();
        let result = call(|err| unsafe {
            sys::ferry_array_stream_init(
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
        stream.produced_here = true;
        Ok(stream)
    }

    /// A stream of `device_type` yielding each batch of `batches` (an `Err`
    /// batch fails that `get_next` call) under `schema` (batches first, then
    /// the schema, as arrow-rs's `RecordBatchIterator::new`). Owns both.
    /// `batches` yields [`DeviceArray`]s or [`ArrayBuilder`]s (any
    /// [`ExportArray`]); builders are built in place in the consumer's
    /// struct, the cheapest way to stream Rust data.
    pub fn from_iter<I, B>(device_type: DeviceType, batches: I, schema: Schema) -> Result<DeviceArrayStream>
    where
        I: IntoIterator<Item = Result<B>>,
        I::IntoIter: Send + 'static,
        B: ExportArray,
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
    /// `ferry_array_stream_init_from_arrays` (no Rust callback on the way);
    /// owns both (arrays first, then the schema).
    pub fn from_arrays(device_type: DeviceType, arrays: Vec<DeviceArray>, schema: Schema) -> Result<DeviceArrayStream> {
        let mut schema = schema;
        let mut raw_arrays: Vec<sys::ArrowDeviceArray> = Vec::with_capacity(arrays.len());
        for array in arrays {
            let mut slot = sys::ArrowDeviceArray::default();
            unsafe { array.export_to(&mut slot)? };
            raw_arrays.push(slot);
        }
        let mut stream = DeviceArrayStream::empty();
        let result = call(|err| unsafe {
            sys::ferry_array_stream_init_from_arrays(
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
        stream.produced_here = true;
        result.map(|()| stream)
    }

    /// The raw pointer (still owned by `self`).
    pub fn as_mut_ptr(&mut self) -> *mut sys::ArrowDeviceArrayStream {
        &mut self.raw
    }

    /// The device type every batch has.
    pub fn device_type(&self) -> DeviceType {
        DeviceType(unsafe { sys::ferry_array_stream_device_type(&self.raw) })
    }

    /// The stream's schema (a new owned schema per call). After a failure
    /// of the stream, that same error.
    pub fn schema(&mut self) -> Result<Schema> {
        if let State::Failed(e) = &self.state {
            return Err(e.clone());
        }
        let mut schema = Schema::new_released();
        let result = call(|err| unsafe { sys::ferry_array_stream_get_schema(&mut self.raw, schema.as_mut_ptr(), err) });
        if let Err(e) = result {
            return Err(self.fail(e));
        }
        // Prepared from this copy, so that the first batch does not ask the
        // producer for its schema again. A schema the validator refuses is
        // still returned (it is the producer's); the batches then fail.
        if self.validation != Validation::None && self.prepared.is_none() {
            if let Ok(prepared) = PreparedSchema::new(&schema) {
                self.prepared = Some(prepared);
            }
        }
        Ok(schema)
    }

    /// Records the stream's first failure (so that the producer is not
    /// called again) and returns it.
    #[cold]
    fn fail(&mut self, e: Error) -> Error {
        self.state = State::Failed(e.clone());
        e
    }

    /// The stream's state before a read: `Some(result)` when the read must
    /// not reach the producer (ended or failed).
    #[inline(always)]
    fn settled<T>(&self) -> Option<Result<Option<T>>> {
        match &self.state {
            State::Open => None,
            State::Ended => Some(Ok(None)),
            State::Failed(e) => Some(Err(e.clone())),
        }
    }

    /// Checks a batch the producer has just handed over: its device type,
    /// then its structure at the stream's validation level. `Err` leaves the
    /// stream failed; the caller releases the batch.
    #[inline]
    fn check_batch(&mut self, batch: &DeviceArray) -> Result<()> {
        if let Err(e) = check_batch_device(&self.raw, batch) {
            return Err(self.fail(e));
        }
        if let Some(level) = self.validation.level() {
            if self.prepared.is_none() {
                let prepared = self.prepare();
                match prepared {
                    Ok(p) => self.prepared = Some(p),
                    Err(e) => return Err(self.fail(e)),
                }
            }
            if let Some(prepared) = &self.prepared {
                if let Err(e) = prepared.validate(batch, level) {
                    return Err(self.fail(e));
                }
            }
        }
        Ok(())
    }

    /// The prepared schema, asked of the producer.
    #[cold]
    fn prepare(&mut self) -> Result<PreparedSchema> {
        let mut schema = Schema::new_released();
        call(|err| unsafe { sys::ferry_array_stream_get_schema(&mut self.raw, schema.as_mut_ptr(), err) })?;
        PreparedSchema::new(&schema)
    }

    /// Calls the producer's `get_next` into `out` (released). `Ok(true)`
    /// for a batch, checked; `Ok(false)` at the end (the stream is then
    /// ended). On error the stream is failed and `out` released.
    #[inline]
    fn fetch(&mut self, out: &mut DeviceArray, consumer_stream: Option<&StreamHandle>) -> Result<bool> {
        let mut err = ErrorBuf::new();
        let code = unsafe {
            match consumer_stream {
                None => sys::ferry_array_stream_get_next(&mut self.raw, out.raw_mut(), err.as_mut_ptr()),
                Some(s) => {
                    sys::ferry_array_stream_get_next_on(&mut self.raw, out.raw_mut(), s.as_ptr(), err.as_mut_ptr())
                }
            }
        };
        if code != 0 {
            let e = err.check(code).unwrap_err();
            return Err(self.fail(e));
        }
        if out.is_released() {
            self.state = State::Ended;
            return Ok(false);
        }
        if let Err(e) = self.check_batch(out) {
            unsafe { sys::ferry_device_array_release(out.raw_mut()) };
            return Err(e);
        }
        Ok(true)
    }

    /// The next batch, `Ok(None)` at the end of the stream (and on every
    /// later call); after a failure, that same error on every call.
    #[inline]
    pub fn next_array(&mut self) -> Result<Option<DeviceArray>> {
        if let Some(settled) = self.settled() {
            return settled;
        }
        let mut array = DeviceArray::released();
        if !self.fetch(&mut array, None)? {
            return Ok(None);
        }
        // The producer has just written the struct and the value is about
        // to be moved: re-store it so those moves forward (see words.rs).
        unsafe { rewrite_wide(array.raw_mut(), 8) };
        array.track_import("DeviceArrayStream (a batch)");
        Ok(Some(array))
    }

    /// The next batch, handed to `consumer_stream` (a stream of the
    /// batches' device: ferry's own or the user's, wrapped in a
    /// [`StreamHandle`]): that stream is made to wait on the batch's sync
    /// event and the host does not block, so work queued on it afterwards
    /// sees the batch's data. If the wait cannot be queued the batch is
    /// released and the error returned: a batch is never handed out
    /// unordered. `Ok(None)` at the end.
    ///
    /// ```
    /// use ferry_arrow::{ArrayBuilder, Buffer, Device, DeviceArrayStream, DeviceType, ExportPolicy, Schema};
    /// let sim = Device::sim(0).unwrap();
    /// let producer = sim.create_stream().unwrap();
    /// let batches = (0..2).map(move |_| {
    ///     let memory = sim.allocate(4)?;
    ///     ArrayBuilder::new(1)
    ///         .buffer(Buffer::null())
    ///         .buffer(Buffer::from_device(memory))
    ///         .build_async(&producer, ExportPolicy::RecordEvent)
    /// });
    /// let mut stream = DeviceArrayStream::from_iter(DeviceType::SIM, batches, Schema::new("i", None).unwrap()).unwrap();
    /// let consumer = sim.create_stream().unwrap();
    /// let mut n = 0;
    /// while let Some(batch) = stream.next_on(&consumer).unwrap() {
    ///     assert!(!batch.sync_event().is_null()); // the consumer stream waits on it
    ///     n += 1;
    /// }
    /// consumer.synchronize().unwrap();
    /// assert_eq!(n, 2);
    /// ```
    pub fn next_on(&mut self, consumer_stream: &StreamHandle) -> Result<Option<DeviceArray>> {
        if let Some(settled) = self.settled() {
            return settled;
        }
        let mut array = DeviceArray::released();
        if !self.fetch(&mut array, Some(consumer_stream))? {
            return Ok(None);
        }
        array.track_import("DeviceArrayStream::next_on (a batch)");
        Ok(Some(array))
    }

    /// The next batch, lent: it stays in the stream and is released by the
    /// next call to `next_ref` or when the stream is dropped (the borrow
    /// checker ends the loan before either). `Ok(None)` at the end. The
    /// consumer's struct is filled in place and never moved: the cheapest
    /// way to read a stream from Rust; use the `Iterator` (or
    /// [`next_array`](Self::next_array)) to keep batches.
    ///
    /// ```
    /// use ferry_arrow::{DeviceArrayStream, DeviceType, Schema};
    /// let batches = (1..=3).map(|n| ferry_arrow::export_primitive(vec![7i32; n], None).map(|(a, _)| a));
    /// let mut stream = DeviceArrayStream::from_iter(DeviceType::CPU, batches, Schema::new("i", None).unwrap()).unwrap();
    /// let mut total = 0;
    /// while let Some(batch) = stream.next_ref().unwrap() {
    ///     total += batch.length();
    /// }
    /// assert_eq!(total, 6);
    /// ```
    #[inline]
    pub fn next_ref(&mut self) -> Result<Option<&DeviceArray>> {
        if let Some(current) = &mut self.current {
            if !current.is_released() {
                unsafe { sys::ferry_device_array_release(current.raw_mut()) };
            }
        }
        if let Some(settled) = self.settled() {
            return settled;
        }
        // Taken out for the call (fetch borrows the whole stream), put back
        // after: a box, so no 144-byte move.
        let mut current = self.current.take().unwrap_or_else(|| Box::new(DeviceArray::released()));
        let result = self.fetch(&mut current, None);
        let current = &**self.current.insert(current);
        match result? {
            true => Ok(Some(current)),
            false => Ok(None),
        }
    }

    /// The producer's last error message, if any (valid after a failure).
    pub fn last_error(&mut self) -> Option<String> {
        unsafe { opt_str(sys::ferry_array_stream_get_last_error(&mut self.raw)) }.map(str::to_string)
    }
}

impl Iterator for DeviceArrayStream {
    type Item = Result<DeviceArray>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        // See the type's documentation: the end stays the end (None) and a
        // failure is reported again, the same, on every later call.
        self.next_array().transpose()
    }
}

impl Drop for DeviceArrayStream {
    fn drop(&mut self) {
        unsafe { sys::ferry_array_stream_release(&mut self.raw) };
    }
}

impl fmt::Debug for DeviceArrayStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceArrayStream")
            .field("device_type", &self.device_type())
            .field(
                "state",
                &match &self.state {
                    State::Open => "open",
                    State::Ended => "ended",
                    State::Failed(_) => "failed",
                },
            )
            .field("validation", &self.validation)
            .finish()
    }
}
