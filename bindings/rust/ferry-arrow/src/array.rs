//! Arrays: the owned [`DeviceArray`] and the borrowed [`ArrayView`].
use std::fmt;
use std::ops::Deref;
use std::os::raw::c_void;
use std::ptr;

use ferry_arrow_sys as sys;

use crate::device::{Device, DeviceType, StreamHandle};
use crate::error::{call, Error, Rejected, Result};
use crate::host::HostArray;
use crate::leak::LeakToken;
use crate::schema::{Schema, SchemaView};
use crate::stream::ArraySlot;
use crate::words::move_device_array;

/// A borrowed `struct ArrowArray` (the array inside a [`DeviceArray`], a
/// child or a dictionary), read through the core's `ferry_array_*`.
///
/// ```
/// let (array, _schema) = ferry_arrow::export_primitive(vec![1i32, 2, 3], None).unwrap();
/// let view: &ferry_arrow::ArrayView = array.array();
/// assert_eq!(view.length(), 3);
/// assert_eq!(view.n_buffers(), 2);
/// assert!(view.buffer(0).is_null()); // no validity bitmap
/// let values = unsafe { view.buffer_slice::<i32>(1, 3) }.unwrap();
/// assert_eq!(values, &[1, 2, 3]);
/// ```
#[repr(transparent)]
pub struct ArrayView(sys::ArrowArray);

impl ArrayView {
    /// Borrows the array at `ptr`.
    ///
    /// # Safety
    /// `ptr` must point to a valid `ArrowArray` that outlives `'a` and is not
    /// released or moved meanwhile.
    #[inline]
    pub unsafe fn from_ptr<'a>(ptr: *const sys::ArrowArray) -> &'a ArrayView {
        &*(ptr as *const ArrayView)
    }
    /// The raw pointer.
    #[inline]
    pub fn as_ptr(&self) -> *const sys::ArrowArray {
        &self.0
    }
    /// The raw struct (read-only).
    #[inline]
    pub(crate) fn as_raw(&self) -> &sys::ArrowArray {
        &self.0
    }
    // The accessors read the ABI struct's fields as ferry-arrow-sys declares
    // them: generated from core/abi/api.json with the described offsets,
    // which bindings.rs proves at compile time (and the description takes
    // from the C compiler). A call into the core per field read would cost
    // more than the read (these sit on every consumer's hot path). They
    // answer as the core's ferry_array_* accessors do (NULL / 0 when out of
    // range).

    /// True when the release callback is NULL.
    #[inline]
    pub fn is_released(&self) -> bool {
        self.0.release.is_none()
    }
    /// Logical length.
    #[inline]
    pub fn length(&self) -> i64 {
        self.0.length
    }
    /// Null count (-1 when the producer did not compute it).
    #[inline]
    pub fn null_count(&self) -> i64 {
        self.0.null_count
    }
    /// Offset of the first logical element in the buffers.
    #[inline]
    pub fn offset(&self) -> i64 {
        self.0.offset
    }
    /// Number of buffers.
    #[inline]
    pub fn n_buffers(&self) -> usize {
        self.0.n_buffers.max(0) as usize
    }
    /// Address of buffer `i` (NULL when absent or out of range). It may be
    /// device memory: check the device before dereferencing.
    #[inline]
    pub fn buffer(&self, i: usize) -> *const c_void {
        if self.0.buffers.is_null() || i >= self.n_buffers() {
            return ptr::null();
        }
        // SAFETY: the producer's table holds n_buffers entries.
        unsafe { *self.0.buffers.add(i) }
    }
    /// Number of children.
    #[inline]
    pub fn n_children(&self) -> usize {
        self.0.n_children.max(0) as usize
    }
    /// Child `i`, or `None` when out of range.
    #[inline]
    pub fn child(&self, i: usize) -> Option<&ArrayView> {
        if self.0.children.is_null() || i >= self.n_children() {
            return None;
        }
        // SAFETY: the producer's table holds n_children entries, each a
        // valid array that lives as long as this one.
        let c = unsafe { *self.0.children.add(i) };
        (!c.is_null()).then(|| unsafe { ArrayView::from_ptr(c) })
    }
    /// All children in order.
    pub fn children(&self) -> impl Iterator<Item = &ArrayView> + '_ {
        (0..self.n_children()).filter_map(move |i| self.child(i))
    }
    /// The dictionary, if any.
    #[inline]
    pub fn dictionary(&self) -> Option<&ArrayView> {
        let d = self.0.dictionary;
        (!d.is_null()).then(|| unsafe { ArrayView::from_ptr(d) })
    }

    /// Buffer `i` as a slice of `len` elements of `T`; `None` when the buffer
    /// is NULL.
    ///
    /// # Safety
    /// The memory must be host-readable (CPU, or a host-accessible device
    /// after [`DeviceArray::wait`]), hold at least `len` values of `T` and be
    /// suitably aligned.
    pub unsafe fn buffer_slice<T>(&self, i: usize, len: usize) -> Option<&[T]> {
        let p = self.buffer(i) as *const T;
        if p.is_null() {
            None
        } else if len == 0 {
            Some(&[])
        } else {
            Some(std::slice::from_raw_parts(p, len))
        }
    }

    /// Size in bytes of buffer `i`, computed by the core from `schema`, the
    /// length and the offset (reading the last offset of variable-size
    /// layouts through the device backend if needed).
    pub fn buffer_size(&self, schema: &SchemaView, device_type: DeviceType, device_id: i64, i: usize) -> Result<usize> {
        let mut size = 0i64;
        call(|err| unsafe {
            sys::ferry_array_buffer_size(
                schema.as_ptr(),
                self.as_ptr(),
                device_type.0,
                device_id,
                i as i64,
                &mut size,
                err,
            )
        })?;
        Ok(size.max(0) as usize)
    }
}

impl fmt::Debug for ArrayView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_released() {
            return f.write_str("Array(released)");
        }
        let mut d = f.debug_struct("Array");
        d.field("length", &self.length())
            .field("null_count", &self.null_count())
            .field("offset", &self.offset())
            .field(
                "buffers",
                &(0..self.n_buffers()).map(|i| self.buffer(i)).collect::<Vec<_>>(),
            );
        if self.n_children() > 0 {
            d.field("children", &self.children().collect::<Vec<_>>());
        }
        if let Some(dict) = self.dictionary() {
            d.field("dictionary", &dict);
        }
        d.finish()
    }
}

/// How an import is checked before it is handed out: the binding contract
/// (docs/bindings.md) validates every import at [`Validation::Default`];
/// [`Validation::None`] is the explicit opt-out for producers the caller
/// vouches for.
///
/// ```
/// assert_eq!(ferry_arrow::Validation::default(), ferry_arrow::Validation::Default);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Validation {
    /// No check: the caller trusts the producer (the opt-out).
    None,
    /// The core's structural validation (`FERRY_VALIDATE_DEFAULT`: format,
    /// buffer and child counts, device, reserved words; no buffer contents).
    #[default]
    Default,
    /// Structure plus buffer contents (`FERRY_VALIDATE_FULL`: offsets,
    /// UTF-8, null counts, dictionary indices).
    Full,
}

impl Validation {
    /// The core's level, `None` for no validation.
    pub(crate) fn level(self) -> Option<i32> {
        match self {
            Validation::None => None,
            Validation::Default => Some(sys::FERRY_VALIDATE_DEFAULT),
            Validation::Full => Some(sys::FERRY_VALIDATE_FULL),
        }
    }
}

/// An owned `struct ArrowDeviceArray`: released exactly once, when dropped
/// (or never, once moved out with [`DeviceArray::export_to`]). Not `Clone`,
/// so it cannot be duplicated into a double release. Derefs to the embedded
/// [`ArrayView`].
///
/// `Send` and `Sync`: the Arrow specification lets a consumer release an
/// array on any thread, and every `&self` method only reads the array (or
/// waits on its event, which the core and the GPU drivers allow from many
/// threads at once), so many threads may read one array (share it in an
/// `Arc`). Releasing needs ownership (`drop`, `release(self)`), which the
/// borrow checker grants only once no thread reads it any more: release
/// while reading cannot compile.
///
/// ```
/// use ferry_arrow::{DeviceArray, DeviceType};
/// let (array, schema) = ferry_arrow::export_primitive(vec![10i64, 20], Some(&[true, false])).unwrap();
/// assert_eq!(array.device_type(), DeviceType::CPU);
/// assert_eq!(array.length(), 2);
/// assert_eq!(array.null_count(), 1);
/// array.validate(&schema, true).unwrap();
///
/// // Move it through a raw C struct and back (what a C consumer would see):
/// // the import validates it against its schema.
/// let mut raw = ferry_arrow::sys::ArrowDeviceArray::default();
/// unsafe { array.export_to(&mut raw).unwrap() };
/// let back = unsafe { DeviceArray::from_raw(&mut raw, &schema).unwrap() };
/// assert_eq!(back.length(), 2);
///
/// // Many threads read one array at once.
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| assert_eq!(back.host(&schema).unwrap().value::<i64>(0).unwrap(), 10));
///     }
/// });
/// ```
///
/// Releasing an array while a thread still reads it does not compile:
///
/// ```compile_fail
/// let (array, schema) = ferry_arrow::export_primitive(vec![1i32], None).unwrap();
/// std::thread::scope(|s| {
///     s.spawn(|| array.host(&schema).map(|h| h.len()));
///     drop(array); // borrowed by the reader: error[E0505]
/// });
/// ```
// 16-byte aligned so that the compiler's 16-byte moves of the value line up
// with the 16-byte stores the crate fills it with (see words.rs).
#[repr(C, align(16))]
pub struct DeviceArray {
    raw: sys::ArrowDeviceArray,
    /// The leak report's registration of an import (none when the report
    /// is off, or for arrays the crate made itself: the core reports those).
    leak: LeakToken,
}

// The C struct (128 bytes) and the leak token, 16-byte aligned: what a
// move of a DeviceArray copies (README, "Fast paths").
const _: () = assert!(std::mem::size_of::<DeviceArray>() == 144);

// SAFETY: see the type's documentation.
unsafe impl Send for DeviceArray {}
unsafe impl Sync for DeviceArray {}

impl DeviceArray {
    /// Imports the array at `ptr` by move and validates it against `schema`
    /// at [`Validation::Default`] (the argument order of arrow-rs's
    /// `from_ffi(array, &schema)`). Once `ptr` holds a live array the result
    /// owns it and `*ptr` is left released, also on failure: an array that
    /// fails validation is released and `EINVAL` names the finding ("the
    /// array fails validation: ..."). `EINVAL` for NULL or an already
    /// released array (nothing taken). `schema` is borrowed.
    ///
    /// # Safety
    /// `ptr` must be NULL or point to a valid `ArrowDeviceArray`.
    #[inline]
    pub unsafe fn from_raw(ptr: *mut sys::ArrowDeviceArray, schema: &SchemaView) -> Result<DeviceArray> {
        DeviceArray::from_raw_with(ptr, schema, Validation::Default)
    }

    /// [`from_raw`](Self::from_raw) at the level `validation` chooses
    /// (`Validation::None` imports without a check, as
    /// [`from_raw_unchecked`](Self::from_raw_unchecked)). Ownership as
    /// `from_raw`.
    ///
    /// ```
    /// use ferry_arrow::{DeviceArray, Validation};
    /// let (array, schema) = ferry_arrow::export_utf8(&[Some("a"), Some("bc")]).unwrap();
    /// let mut raw = ferry_arrow::sys::ArrowDeviceArray::default();
    /// unsafe { array.export_to(&mut raw).unwrap() };
    /// let back = unsafe { DeviceArray::from_raw_with(&mut raw, &schema, Validation::Full) }.unwrap();
    /// assert_eq!(back.length(), 2);
    /// ```
    ///
    /// # Safety
    /// As [`from_raw`](Self::from_raw).
    pub unsafe fn from_raw_with(
        ptr: *mut sys::ArrowDeviceArray,
        schema: &SchemaView,
        validation: Validation,
    ) -> Result<DeviceArray> {
        let array = DeviceArray::from_raw_unchecked(ptr)?;
        if let Some(level) = validation.level() {
            // On a finding `array` is dropped here: released once.
            array.validate_level(schema, level).map_err(validation_failed)?;
        }
        Ok(array)
    }

    /// Imports an array and its schema together, by move, and validates the
    /// array against the schema at `validation` (the schema is checked with
    /// it): the everyday import of what a C producer hands over as two
    /// pointers (array first, as arrow-rs's `from_ffi`). Each pointer that
    /// holds a live struct is taken whatever happens, so both are released
    /// on any failure (the first error is returned: NULL, released, or the
    /// validator's finding).
    ///
    /// ```
    /// use ferry_arrow::{DeviceArray, Validation};
    /// let (array, schema) = ferry_arrow::export_primitive(vec![1i32, 2], None).unwrap();
    /// let (mut raw_array, mut raw_schema) = Default::default();
    /// unsafe {
    ///     array.export_to(&mut raw_array).unwrap();
    ///     schema.export_to(&mut raw_schema).unwrap();
    /// }
    /// let (array, schema) = unsafe { DeviceArray::import(&mut raw_array, &mut raw_schema, Validation::Default) }.unwrap();
    /// assert_eq!(array.host(&schema).unwrap().value::<i32>(1).unwrap(), 2);
    /// ```
    ///
    /// # Safety
    /// Each pointer must be NULL or point to a valid struct.
    pub unsafe fn import(
        array: *mut sys::ArrowDeviceArray,
        schema: *mut sys::ArrowSchema,
        validation: Validation,
    ) -> Result<(DeviceArray, Schema)> {
        // Both taken before anything can fail; the array's validation
        // covers the schema (format, children, dictionary).
        let array = DeviceArray::from_raw_unchecked(array);
        let schema = Schema::from_raw_unchecked(schema);
        let (array, schema) = (array?, schema?);
        if let Some(level) = validation.level() {
            array.validate_level(&schema, level).map_err(validation_failed)?;
        }
        Ok((array, schema))
    }

    /// Imports the array at `ptr` by move without validating it: the
    /// explicit opt-out of the contract's validation, for producers the
    /// caller vouches for (the lean path); the result owns the array and
    /// `*ptr` is left released. `EINVAL` for NULL or an already released
    /// array. Read it through [`host`](Self::host), whose accessors still
    /// check every index against the array's declared sizes, or check it
    /// later with [`validate`](Self::validate).
    ///
    /// # Safety
    /// `ptr` must be NULL or point to a valid `ArrowDeviceArray`.
    #[inline]
    pub unsafe fn from_raw_unchecked(ptr: *mut sys::ArrowDeviceArray) -> Result<DeviceArray> {
        if ptr.is_null() {
            return Err(Error::invalid("device array pointer is NULL"));
        }
        if (*ptr).array.release.is_none() {
            return Err(Error::invalid("cannot import a released device array"));
        }
        // The same bitwise move as ferry_device_array_move, done here with
        // 8-byte loads: the producer has usually just written `*ptr` (see
        // words.rs).
        let mut array = DeviceArray::released();
        move_device_array(&mut array.raw, ptr);
        (*ptr).array.release = None;
        array.track_import("DeviceArray::from_raw");
        Ok(array)
    }

    /// Registers this array, just imported by `how`, with the leak report.
    #[inline]
    pub(crate) fn track_import(&mut self, how: &'static str) {
        let raw = &self.raw;
        self.leak = LeakToken::track(|| {
            format!(
                "DeviceArray imported by {how} never dropped (device {}:{}, length {})",
                DeviceType(raw.device_type),
                raw.device_id,
                raw.array.length
            )
        });
    }

    /// Moves the array into `out` (which must be released or zeroed); the
    /// receiver then owns it and must release it.
    ///
    /// # Safety
    /// `out` must point to a writable `ArrowDeviceArray`.
    #[inline]
    pub unsafe fn export_to(mut self, out: *mut sys::ArrowDeviceArray) -> Result<()> {
        if out.is_null() {
            return Err(Error::invalid("output device array pointer is NULL"));
        }
        if (*out).array.release.is_some() {
            return Err(Error::invalid(
                "output device array is not released; refusing to overwrite it",
            ));
        }
        if self.raw.array.release.is_none() {
            return Err(Error::invalid("cannot export a released device array"));
        }
        // A bitwise move (as ferry_device_array_move does); `self` is then
        // forgotten, so nothing is released here. A plain copy: the crate
        // writes the arrays it makes in 16-byte words (see words.rs).
        ptr::copy_nonoverlapping(&self.raw, out, 1);
        // The receiver answers for it from now on (in the leak report too).
        self.leak.untrack();
        std::mem::forget(self);
        Ok(())
    }

    /// Lends a slot over a new, released array to `fill` (say an
    /// [`ArrayProducer::next_into`](crate::ArrayProducer::next_into)) and
    /// returns the array if `fill` wrote one, `Ok(None)` if it left the
    /// slot empty.
    ///
    /// ```
    /// use ferry_arrow::{ArrayBuilder, Buffer, DeviceArray};
    /// let array = DeviceArray::produce(|slot| {
    ///     slot.build(ArrayBuilder::new(1).buffer(Buffer::null()).buffer(Buffer::from_vec(vec![9i16])))
    /// })
    /// .unwrap()
    /// .unwrap();
    /// assert_eq!(array.length(), 1);
    /// assert!(DeviceArray::produce(|_| Ok(())).unwrap().is_none());
    /// ```
    pub fn produce(fill: impl FnOnce(&mut ArraySlot<'_>) -> Result<()>) -> Result<Option<DeviceArray>> {
        let mut array = DeviceArray::released();
        // On failure `array` is dropped, releasing whatever was written.
        fill(&mut ArraySlot::new_released(&mut array.raw))?;
        Ok((!array.is_released()).then_some(array))
    }

    /// Takes ownership of a struct the crate has just filled.
    #[inline(always)]
    pub(crate) fn from_filled(raw: sys::ArrowDeviceArray) -> DeviceArray {
        DeviceArray {
            raw,
            leak: LeakToken::NONE,
        }
    }

    /// A zeroed (released) array used as an out-parameter inside the crate.
    #[inline]
    pub(crate) fn released() -> DeviceArray {
        DeviceArray {
            raw: sys::ArrowDeviceArray::default(),
            leak: LeakToken::NONE,
        }
    }

    /// The raw struct, for filling as an out-parameter.
    #[inline]
    pub(crate) fn raw_mut(&mut self) -> &mut sys::ArrowDeviceArray {
        &mut self.raw
    }

    /// The raw pointer (still owned by `self`).
    pub fn as_ptr(&self) -> *const sys::ArrowDeviceArray {
        &self.raw
    }

    /// The raw mutable pointer (still owned by `self`).
    pub fn as_mut_ptr(&mut self) -> *mut sys::ArrowDeviceArray {
        &mut self.raw
    }

    /// The embedded array.
    #[inline]
    pub fn array(&self) -> &ArrayView {
        // The first member (what ferry_device_array_array returns), read
        // directly like every hot accessor here.
        unsafe { ArrayView::from_ptr(&self.raw.array) }
    }

    /// The device type.
    #[inline]
    pub fn device_type(&self) -> DeviceType {
        DeviceType(self.raw.device_type)
    }

    /// The device id.
    #[inline]
    pub fn device_id(&self) -> i64 {
        self.raw.device_id
    }

    /// The device, resolved in ferry's registry.
    pub fn device(&self) -> Result<Device> {
        Device::resolve(self.device_type(), self.device_id())
    }

    /// The producer's sync event (a pointer to the native handle), or NULL.
    #[inline]
    pub fn sync_event(&self) -> *mut c_void {
        self.raw.sync_event
    }

    /// True when the reserved words are zero, as the specification requires.
    pub fn reserved_is_zero(&self) -> bool {
        unsafe { sys::ferry_device_array_reserved_is_zero(&self.raw) != 0 }
    }

    /// Blocks the host until the producer's sync event has completed (at
    /// once without an event). Call it before reading the buffers on the
    /// host; [`host`](Self::host) calls it for you.
    #[inline]
    pub fn wait(&self) -> Result<()> {
        // Nothing to wait for without an event (the common CPU case, kept
        // off the core call).
        if self.raw.sync_event.is_null() && self.raw.array.release.is_some() {
            return Ok(());
        }
        call(|err| unsafe { sys::ferry_device_array_wait(&self.raw, ptr::null_mut(), err) })
    }

    /// Hands the array to `consumer_stream` (a stream of the array's
    /// device: ferry's own [`DeviceStream`](crate::DeviceStream) or the
    /// user's, wrapped in a [`StreamHandle`]): the stream is made to wait
    /// on the producer's event, and the host does not block. Work queued on
    /// the stream afterwards sees the producer's data. Returns at once
    /// without an event.
    pub fn wait_on(&self, consumer_stream: &StreamHandle) -> Result<()> {
        call(|err| unsafe { sys::ferry_device_array_wait(&self.raw, consumer_stream.as_ptr(), err) })
    }

    /// Validates against `schema` with the core; `full` also reads buffer
    /// contents (offsets, UTF-8, validity). `EINVAL` with the validator's
    /// first finding.
    pub fn validate(&self, schema: &SchemaView, full: bool) -> Result<()> {
        let level = if full {
            sys::FERRY_VALIDATE_FULL
        } else {
            sys::FERRY_VALIDATE_DEFAULT
        };
        self.validate_level(schema, level)
    }

    fn validate_level(&self, schema: &SchemaView, level: i32) -> Result<()> {
        call(|err| unsafe {
            sys::ferry_validate_device_array(schema.as_ptr(), &self.raw, level, None, ptr::null_mut(), err)
        })
    }

    /// Deep-copies to (`device_type`, `device_id`) after waiting on the sync
    /// event; the copy has no pending work and `self` is left as it was.
    pub fn copy_to(&self, schema: &SchemaView, device_type: DeviceType, device_id: i64) -> Result<DeviceArray> {
        let mut out = DeviceArray::released();
        call(|err| unsafe {
            sys::ferry_device_array_copy(schema.as_ptr(), &self.raw, device_type.0, device_id, &mut out.raw, err)
        })?;
        Ok(out)
    }

    /// Moves the array to (`device_type`, `device_id`): without copying
    /// when the destination can reach the memory (the same device; pinned
    /// or managed memory to the CPU, after the host waited on the event;
    /// managed memory to its CUDA device), else by a deep copy, after which
    /// the original is released. On failure the array comes back untouched
    /// in the [`Rejected`].
    ///
    /// ```
    /// use ferry_arrow::DeviceType;
    /// let (array, schema) = ferry_arrow::export_primitive(vec![1i32, 2], None).unwrap();
    /// let on_sim = array.move_to(&schema, DeviceType::SIM, 0).unwrap();
    /// assert_eq!(on_sim.device_type(), DeviceType::SIM);
    /// let back = on_sim.move_to(&schema, DeviceType::CPU, -1).unwrap();
    /// assert_eq!(back.host(&schema).unwrap().values::<i32>().unwrap(), &[1, 2]);
    /// ```
    pub fn move_to(
        mut self,
        schema: &SchemaView,
        device_type: DeviceType,
        device_id: i64,
    ) -> std::result::Result<DeviceArray, Rejected<DeviceArray>> {
        let mut out = DeviceArray::released();
        let result = call(|err| unsafe {
            sys::ferry_device_array_move_to_device(
                schema.as_ptr(),
                &mut self.raw,
                device_type.0,
                device_id,
                &mut out.raw,
                err,
            )
        });
        match result {
            Ok(()) => {
                // The same import, now elsewhere (or a copy of it): the
                // registration follows it.
                out.leak = self.leak.take();
                Ok(out)
            }
            Err(error) => Err(Rejected::new(error, self)),
        }
    }

    /// Brings the array to the host: the same array on the CPU
    /// (`ARROW_DEVICE_CPU`, no sync event), moved without a copy where the
    /// host can reach the memory (CPU, pinned and managed memory) and
    /// deep-copied otherwise (CUDA or ROCm device memory, the sim device),
    /// after waiting on the producer's event. This is the way to read any
    /// device's array on the host; [`host`](Self::host) reads memory the
    /// host can reach where it lies.
    ///
    /// ```
    /// use ferry_arrow::{ArrayBuilder, Buffer, Device, DeviceType, ExportPolicy, Schema};
    /// let sim = Device::sim(0).unwrap();
    /// let stream = sim.create_stream().unwrap();
    /// let mut memory = sim.allocate(8).unwrap();
    /// let bytes: Vec<u8> = [5i32, 6].iter().flat_map(|v| v.to_ne_bytes()).collect();
    /// unsafe { memory.copy_from_host_async(&bytes, &stream).unwrap() };
    /// let array = ArrayBuilder::new(2)
    ///     .buffer(Buffer::null())
    ///     .buffer(Buffer::from_device(memory))
    ///     .build_async(&stream, ExportPolicy::RecordEvent)
    ///     .unwrap();
    /// let schema = Schema::new("i", None).unwrap();
    /// let host = array.to_host(&schema).unwrap();
    /// assert_eq!(host.device_type(), DeviceType::CPU);
    /// assert_eq!(host.host(&schema).unwrap().values::<i32>().unwrap(), &[5, 6]);
    /// ```
    pub fn to_host(self, schema: &SchemaView) -> std::result::Result<DeviceArray, Rejected<DeviceArray>> {
        self.move_to(schema, DeviceType::CPU, -1)
    }

    /// A host-side view for reading values safely: waits on the producer's
    /// event, then every accessor of [`HostArray`] checks its index and the
    /// bytes it reads against the sizes the array's own structure declares
    /// (cheap: nothing is walked up front; [`validate`](Self::validate)
    /// reports every structural problem at once). `EINVAL` when the host
    /// cannot read the device's memory: bring the array over with
    /// [`to_host`](Self::to_host) first.
    ///
    /// ```
    /// let (array, schema) = ferry_arrow::export_utf8(&[Some("a"), None, Some("xyz")]).unwrap();
    /// let host = array.host(&schema).unwrap();
    /// assert_eq!(host.str(2).unwrap(), "xyz");
    /// assert!(!host.is_valid(1).unwrap());
    /// assert!(host.str(3).is_err()); // out of range: an error, never a read
    /// ```
    pub fn host<'a>(&'a self, schema: &'a SchemaView) -> Result<HostArray<'a>> {
        HostArray::new(self, schema)
    }

    /// Releases now (the same as dropping).
    pub fn release(self) {}
}

impl Deref for DeviceArray {
    type Target = ArrayView;
    #[inline]
    fn deref(&self) -> &ArrayView {
        self.array()
    }
}

impl Drop for DeviceArray {
    #[inline]
    fn drop(&mut self) {
        unsafe { sys::ferry_device_array_release(&mut self.raw) };
    }
}

/// The import-time validation error: the validator's finding, named as
/// every import path names it.
#[cold]
pub(crate) fn validation_failed(e: Error) -> Error {
    Error::new(e.code(), format!("the array fails validation: {}", e.message()))
}

impl fmt::Debug for DeviceArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceArray")
            .field("device_type", &self.device_type())
            .field("device_id", &self.device_id())
            .field("sync_event", &self.sync_event())
            .field("array", self.array())
            .finish()
    }
}

/// An array and its schema (what an export produces), the array first as
/// in arrow-rs's `to_ffi`.
///
/// ```
/// let (array, schema): ferry_arrow::ArrayAndSchema = ferry_arrow::export_primitive(vec![1u32], None).unwrap();
/// array.validate(&schema, false).unwrap();
/// ```
pub type ArrayAndSchema = (DeviceArray, Schema);
