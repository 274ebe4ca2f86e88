//! Export of Rust-owned memory without copying: [`Buffer`] keeps the owner
//! (a `Vec`, a boxed slice, an `Arc`, a [`DeviceBuffer`]) alive, and
//! [`ArrayBuilder`] hands the addresses to the core's `ferry_array_init`
//! together with a release hook that drops the owners when the consumer
//! releases the array, exactly once.
use std::fmt;
use std::mem::MaybeUninit;
use std::os::raw::c_void;
use std::ptr;
use std::sync::Arc;

use ferry_arrow_sys as sys;

use crate::array::DeviceArray;
use crate::device::{DeviceType, Event, StreamHandle};
use crate::error::{call, Error, ErrorBuf, Result};
use crate::panic::guard_silent;
use crate::schema::Schema;
use crate::words::{rewrite_wide, write_device_fields, ARRAY_CHUNKS};

/// A type-erased owner: one heap allocation (`Box<O>`) and the
/// monomorphised hook that drops it. A single owner goes to the core as
/// (hook, pointer) directly, with no further allocation.
pub(crate) struct Owner {
    ptr: *mut c_void,
    release: unsafe extern "C" fn(*mut c_void),
}

// SAFETY: only made from `O: Send` values.
unsafe impl Send for Owner {}

unsafe extern "C" fn release_boxed<O>(user_data: *mut c_void) {
    guard_silent("the release hook of a Rust-exported buffer", || {
        // SAFETY: made by Owner::new::<O>; the core calls the hook once.
        drop(unsafe { Box::from_raw(user_data as *mut O) });
    });
}

impl Owner {
    #[inline]
    pub(crate) fn new<O: Send + 'static>(owner: Box<O>) -> Owner {
        Owner {
            ptr: Box::into_raw(owner) as *mut c_void,
            release: release_boxed::<O>,
        }
    }
    /// Hands the owner to C: after this, only the hook may drop it.
    #[inline]
    pub(crate) fn into_raw(self) -> (unsafe extern "C" fn(*mut c_void), *mut c_void) {
        let raw = (self.release, self.ptr);
        std::mem::forget(self);
        raw
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        unsafe { (self.release)(self.ptr) }
    }
}

impl fmt::Debug for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Owner({:p})", self.ptr)
    }
}

/// One buffer of an exported array: an address plus whatever keeps the
/// memory alive. Nothing is copied; the owner is dropped when the consumer
/// releases the array (or when the `Buffer` is dropped unexported).
///
/// ```
/// use std::sync::Arc;
/// use ferry_arrow::Buffer;
/// let v = vec![1i32, 2, 3];
/// let address = v.as_ptr() as *const std::os::raw::c_void;
/// let buffer = Buffer::from_vec(v);
/// assert_eq!(buffer.as_ptr(), address); // zero-copy
/// assert_eq!(buffer.len(), 12);
///
/// let shared: Arc<[u8]> = Arc::from(&b"abc"[..]);
/// let b = Buffer::from_arc(shared.clone());
/// assert_eq!(Arc::strong_count(&shared), 2);
/// drop(b);
/// assert_eq!(Arc::strong_count(&shared), 1);
/// assert!(Buffer::null().as_ptr().is_null());
/// ```
pub struct Buffer {
    ptr: *const c_void,
    len: usize,
    owner: Option<Owner>,
}

// SAFETY: the owner is Send and the address is only read by consumers.
unsafe impl Send for Buffer {}

impl Buffer {
    /// An absent buffer (NULL), e.g. a validity bitmap with no nulls.
    #[inline(always)]
    pub fn null() -> Buffer {
        Buffer {
            ptr: ptr::null(),
            len: 0,
            owner: None,
        }
    }

    /// Takes ownership of `owner` and exports the slice it dereferences to.
    /// The owner is boxed before its slice is taken, so the address stays
    /// valid for as long as the owner lives.
    #[inline]
    pub fn from_owner<T, O>(owner: O) -> Buffer
    where
        T: Copy + 'static,
        O: AsRef<[T]> + Send + 'static,
    {
        let boxed: Box<O> = Box::new(owner);
        let slice: &[T] = (*boxed).as_ref();
        let (ptr, len) = (slice.as_ptr() as *const c_void, std::mem::size_of_val(slice));
        Buffer {
            ptr,
            len,
            owner: Some(Owner::new(boxed)),
        }
    }

    /// Exports a `Vec` without copying.
    #[inline]
    pub fn from_vec<T: Copy + Send + 'static>(values: Vec<T>) -> Buffer {
        Buffer::from_owner(values)
    }

    /// Exports a boxed slice without copying.
    #[inline]
    pub fn from_boxed_slice<T: Copy + Send + 'static>(values: Box<[T]>) -> Buffer {
        Buffer::from_owner(values)
    }

    /// Exports shared memory: the array holds one reference until released.
    #[inline]
    pub fn from_arc<T: Copy + Send + Sync + 'static>(values: Arc<[T]>) -> Buffer {
        Buffer::from_owner(values)
    }

    /// Exports a `'static` slice (nothing to free).
    #[inline(always)]
    pub fn from_static<T: Copy + 'static>(values: &'static [T]) -> Buffer {
        Buffer {
            ptr: values.as_ptr() as *const c_void,
            len: std::mem::size_of_val(values),
            owner: None,
        }
    }

    /// Exports device memory; freed on the device at release.
    pub fn from_device(buffer: crate::device::DeviceBuffer) -> Buffer {
        let (ptr, len) = (buffer.as_ptr() as *const c_void, buffer.len());
        Buffer {
            ptr,
            len,
            owner: Some(Owner::new(Box::new(buffer))),
        }
    }

    /// Exports memory described by an address, kept alive by `owner`.
    ///
    /// # Safety
    /// `ptr` must stay valid for `len` bytes while `owner` lives.
    pub unsafe fn from_raw_parts<O: Send + 'static>(ptr: *const c_void, len: usize, owner: O) -> Buffer {
        Buffer {
            ptr,
            len,
            owner: Some(Owner::new(Box::new(owner))),
        }
    }

    /// The exported address.
    pub fn as_ptr(&self) -> *const c_void {
        self.ptr
    }
    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True for a zero-size (or NULL) buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer({:p}, {} bytes)", self.ptr, self.len)
    }
}

/// How [`ArrayBuilder::build_async`] treats the producer's stream.
///
/// ```
/// assert_ne!(ferry_arrow::ExportPolicy::RecordEvent, ferry_arrow::ExportPolicy::Synchronize);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportPolicy {
    /// Record an event on the stream and export it as `sync_event`
    /// (destroyed at release).
    RecordEvent,
    /// Synchronize the stream and export no event.
    Synchronize,
}

/// Builds an exported array from [`Buffer`]s, children and a dictionary.
///
/// ```
/// use ferry_arrow::{ArrayBuilder, Buffer, Schema};
/// // utf8 ["a", "bc"]: offsets and data straight from Rust vectors.
/// let array = ArrayBuilder::new(2)
///     .buffer(Buffer::null())
///     .buffer(Buffer::from_vec(vec![0i32, 1, 3]))
///     .buffer(Buffer::from_vec(b"abc".to_vec()))
///     .build()
///     .unwrap();
/// let schema = Schema::new("u", Some("s")).unwrap();
/// array.validate(&schema, true).unwrap();
/// assert_eq!(array.n_buffers(), 3);
/// ```
#[derive(Debug)]
pub struct ArrayBuilder {
    shape: Shape,
    /// The first owner (arrays rarely have more than one); everything rarer
    /// sits behind one box: the common shape costs no allocation beyond its
    /// owner's.
    owner: Option<Owner>,
    more: Option<Box<More>>,
}

/// Everything about a builder that needs no dropping, kept apart (and
/// `Copy`) so that the compiler holds it in registers: a builder that
/// round-trips through memory costs more than the export itself.
#[derive(Debug, Clone, Copy)]
struct Shape {
    length: i64,
    null_count: i64,
    offset: i64,
    /// The addresses of the first three buffers, as fields rather than an
    /// array (a runtime-indexed array lives in memory).
    p0: *const c_void,
    p1: *const c_void,
    p2: *const c_void,
    n_buffers: usize,
}

// SAFETY: as for `Buffer`: every owner is Send and the addresses are only
// read by consumers. A builder may be made on one thread and exported on
// another (an iterator of builders behind a stream, say).
unsafe impl Send for ArrayBuilder {}

#[derive(Debug, Default)]
struct More {
    /// Addresses of buffers 4, 5, ...
    spilled: Vec<*const c_void>,
    /// Owners of buffers after the first owning one, in buffer order.
    buffer_owners: Vec<Owner>,
    children: Vec<ArrayBuilder>,
    dictionary: Option<ArrayBuilder>,
    /// Owners from keep_alive, dropped after the buffers' owners.
    extra_owners: Vec<Owner>,
}

/// Several owners travel to one release hook in a boxed vector.
unsafe extern "C" fn release_owners(user_data: *mut c_void) {
    guard_silent("the release hook of a Rust-exported array", || {
        // SAFETY: user_data came from Box::into_raw in fill(), and the core
        // calls this hook exactly once; dropping each Owner runs its hook.
        drop(unsafe { Box::from_raw(user_data as *mut Vec<Owner>) });
    });
}

unsafe extern "C" fn release_event(user_data: *mut c_void) {
    guard_silent("the event release hook of a Rust-exported array", || {
        drop(unsafe { Box::from_raw(user_data as *mut Event) });
    });
}

#[inline(never)]
fn new_more() -> Box<More> {
    Box::default()
}

/// The message for a negative length, offset or null count, out of line.
#[cold]
#[inline(never)]
fn negative(length: i64, offset: i64, null_count: i64) -> Error {
    Error::invalid(format!(
        "array length {length}, offset {offset} and null_count {null_count} must not be negative"
    ))
}

/// A failed ferry_array_init, out of line: the hook did not run, so the
/// owner is still ours to drop.
#[cold]
#[inline(never)]
fn fill_failed(err: &ErrorBuf, code: i32, hook: sys::FerryReleaseHook, user_data: *mut c_void) -> Result<()> {
    if let Some(hook) = hook {
        unsafe { hook(user_data) };
    }
    err.check(code)
}

/// Any shape: more buffers, several owners, children, a dictionary.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn fill_general(
    out: *mut sys::ArrowArray,
    length: i64,
    null_count: i64,
    offset: i64,
    inline: [*const c_void; 3],
    n_buffers: usize,
    first_owner: Option<Owner>,
    mut more: More,
) -> Result<()> {
    let pointers: Vec<*const c_void> = inline[..n_buffers.min(3)]
        .iter()
        .chain(&more.spilled)
        .copied()
        .collect();
    let owners: Vec<Owner> = first_owner
        .into_iter()
        .chain(more.buffer_owners.drain(..))
        .chain(more.extra_owners.drain(..))
        .collect();
    // One owner goes to the core as (hook, box); several in a boxed vector
    // whose hook drops them all, in order.
    let (hook, user_data): (sys::FerryReleaseHook, *mut c_void) = match owners.len() {
        0 => (None, ptr::null_mut()),
        1 => {
            let (hook, ptr) = owners.into_iter().next().unwrap().into_raw();
            (Some(hook), ptr)
        }
        _ => (Some(release_owners), Box::into_raw(Box::new(owners)) as *mut c_void),
    };
    let result = call(|err| unsafe {
        sys::ferry_array_init(
            out,
            length,
            null_count,
            offset,
            pointers.len() as i64,
            pointers.as_ptr(),
            more.children.len() as i64,
            hook,
            user_data,
            err,
        )
    });
    if let Err(e) = result {
        // The hook is not called on failure: the owners are still ours.
        if let Some(hook) = hook {
            unsafe { hook(user_data) };
        }
        return Err(e);
    }
    // `out` is live now; on any later failure releasing it drops what was
    // built so far, exactly once.
    let mut finish = || -> Result<()> {
        for (i, child) in std::mem::take(&mut more.children).into_iter().enumerate() {
            let slot = unsafe { sys::ferry_array_child(out, i as i64) };
            if slot.is_null() {
                return Err(Error::io(format!("the core gave no slot for child {i}")));
            }
            child
                .fill(slot)
                .map_err(|e| Error::new(e.code(), format!("child {i}: {}", e.message())))?;
        }
        if let Some(dict) = more.dictionary.take() {
            let mut slot: *mut sys::ArrowArray = ptr::null_mut();
            call(|err| unsafe { sys::ferry_array_allocate_dictionary(out, &mut slot, err) })?;
            dict.fill(slot)
                .map_err(|e| Error::new(e.code(), format!("dictionary: {}", e.message())))?;
        }
        Ok(())
    };
    finish().inspect_err(|_| unsafe { sys::ferry_array_release(out) })
}

impl ArrayBuilder {
    /// An array of logical `length` with no buffers yet.
    #[inline(always)]
    pub fn new(length: i64) -> Self {
        ArrayBuilder {
            shape: Shape {
                length,
                null_count: 0,
                offset: 0,
                p0: ptr::null(),
                p1: ptr::null(),
                p2: ptr::null(),
                n_buffers: 0,
            },
            owner: None,
            more: None,
        }
    }
    /// Sets the null count (default 0).
    #[inline(always)]
    pub fn null_count(mut self, null_count: i64) -> Self {
        self.shape.null_count = null_count;
        self
    }
    /// Sets the offset (default 0).
    #[inline(always)]
    pub fn offset(mut self, offset: i64) -> Self {
        self.shape.offset = offset;
        self
    }
    /// Appends a buffer.
    #[inline(always)]
    pub fn buffer(mut self, buffer: Buffer) -> Self {
        let Buffer { ptr, owner, .. } = buffer;
        match self.shape.n_buffers {
            0 => self.shape.p0 = ptr,
            1 => self.shape.p1 = ptr,
            2 => self.shape.p2 = ptr,
            _ => self.more().spilled.push(ptr),
        }
        self.shape.n_buffers += 1;
        if let Some(owner) = owner {
            if self.owner.is_none() {
                self.owner = Some(owner);
            } else {
                self.more().buffer_owners.push(owner);
            }
        }
        self
    }
    /// Appends a child array.
    pub fn child(mut self, child: ArrayBuilder) -> Self {
        self.more().children.push(child);
        self
    }
    /// Sets the dictionary array.
    pub fn dictionary(mut self, dictionary: ArrayBuilder) -> Self {
        self.more().dictionary = Some(dictionary);
        self
    }
    /// Keeps `owner` alive until the consumer releases the array, without
    /// exporting a buffer for it (e.g. the device stream the data was
    /// produced on). Owners are dropped in the order they were added,
    /// buffers first.
    pub fn keep_alive(mut self, owner: impl Send + 'static) -> Self {
        self.more().extra_owners.push(Owner::new(Box::new(owner)));
        self
    }

    /// The rarer parts, allocated (out of line) on first use.
    #[inline(always)]
    fn more(&mut self) -> &mut More {
        if self.more.is_none() {
            self.more = Some(new_more());
        }
        match &mut self.more {
            Some(more) => more,
            None => unreachable!(),
        }
    }

    /// Fills `out` (released) through ferry_array_init. On failure `out` is
    /// left released and every owner has been dropped.
    #[inline(always)]
    fn fill(self, out: *mut sys::ArrowArray) -> Result<()> {
        let ArrayBuilder { shape, owner, more } = self;
        let Shape {
            length,
            null_count,
            offset,
            p0,
            p1,
            p2,
            n_buffers,
        } = shape;
        if (length | offset) < 0 || null_count < -1 {
            return Err(negative(length, offset, null_count));
        }
        if let Some(more) = more {
            return fill_general(out, length, null_count, offset, [p0, p1, p2], n_buffers, owner, *more);
        }
        // The common shape (at most three buffers, at most one owner, no
        // children or dictionary): nothing to allocate on the Rust side, the
        // owner's own hook and box go to the core as they are.
        let (hook, user_data) = match owner {
            Some(owner) => {
                let (hook, user_data) = owner.into_raw();
                (Some(hook), user_data)
            }
            None => (None, ptr::null_mut()),
        };
        let pointers = [p0, p1, p2];
        let mut err = ErrorBuf::new();
        let code = unsafe {
            sys::ferry_array_init(
                out,
                length,
                null_count,
                offset,
                n_buffers as i64,
                pointers.as_ptr(),
                0,
                hook,
                user_data,
                err.as_mut_ptr(),
            )
        };
        if code != 0 {
            return fill_failed(&err, code, hook, user_data);
        }
        Ok(())
    }

    /// Exports a CPU array (`ARROW_DEVICE_CPU`, id -1, no sync event).
    #[inline(always)]
    pub fn build(self) -> Result<DeviceArray> {
        self.build_on(DeviceType::CPU, -1, None)
    }

    /// Builds straight into a C consumer's struct, which must be released or
    /// zeroed: what `build()?.export_to(out)` does, without the
    /// intermediate move. CPU only; `out` is left released on failure.
    ///
    /// # Safety
    /// `out` must point to a writable `ArrowDeviceArray`.
    #[inline(always)]
    pub unsafe fn build_into(self, out: *mut sys::ArrowDeviceArray) -> Result<()> {
        if out.is_null() || (*out).array.release.is_some() {
            return Err(Error::invalid("output device array is NULL or not released"));
        }
        self.build_on_into(out, DeviceType::CPU, -1, None)
    }

    /// Exports an array whose buffers live on (`device_type`, `device_id`),
    /// with an optional event the consumer must wait on. The event is owned
    /// by the array and destroyed after the array is released.
    #[inline(always)]
    pub fn build_on(self, device_type: DeviceType, device_id: i64, sync_event: Option<Event>) -> Result<DeviceArray> {
        // Not zeroed first: a successful fill writes all 128 bytes (every
        // field of the array through ferry_array_init, every byte after it
        // here), and a failed one is never read. Only `release` must start
        // NULL (ferry_array_init refuses a live struct).
        let mut raw = MaybeUninit::<sys::ArrowDeviceArray>::uninit();
        let p = raw.as_mut_ptr();
        // SAFETY: `p` is ours; on failure nothing is read from it.
        unsafe {
            ptr::addr_of_mut!((*p).array.release).write(None);
            self.build_on_into(p, device_type, device_id, sync_event)?;
            // The value is about to be moved (by the compiler, by
            // export_to): re-store what C wrote so those moves forward.
            rewrite_wide(p, ARRAY_CHUNKS);
            Ok(DeviceArray::from_filled(raw.assume_init()))
        }
    }

    /// [`build_on`](Self::build_on) straight into released `out`, in place:
    /// the array through ferry_array_init into `out.array`, then the device
    /// fields. Without an event that is all ferry_device_array_init would
    /// do, so it is done here and the array is never moved (a 128-byte copy
    /// right after the fill costs more than the rest of the export). An
    /// event needs the core's release wrapper, so that rarer path goes
    /// through ferry_device_array_init. On failure `out` is left released
    /// and every owner has been dropped.
    ///
    /// # Safety
    /// `out` must point to a writable, released `ArrowDeviceArray`.
    #[inline(always)]
    pub(crate) unsafe fn build_on_into(
        self,
        out: *mut sys::ArrowDeviceArray,
        device_type: DeviceType,
        device_id: i64,
        sync_event: Option<Event>,
    ) -> Result<()> {
        if device_type.0 <= 0 {
            return Err(Error::invalid(format!("invalid device type {}", device_type.0)));
        }
        if let Some(event) = sync_event {
            return self.fill_device_with_event(out, device_type, device_id, event);
        }
        self.fill(ptr::addr_of_mut!((*out).array))?;
        write_device_fields(out, device_type.0, device_id, ptr::null_mut());
        Ok(())
    }

    /// The event path of [`build_on_into`](Self::build_on_into).
    #[inline(never)]
    unsafe fn fill_device_with_event(
        self,
        out: *mut sys::ArrowDeviceArray,
        device_type: DeviceType,
        device_id: i64,
        event: Event,
    ) -> Result<()> {
        let mut array = sys::ArrowArray::default();
        self.fill(&mut array)?;
        let event_ptr = event.as_ptr();
        let user_data = Box::into_raw(Box::new(event)) as *mut c_void;
        let result = call(|err| {
            sys::ferry_device_array_init(
                out,
                &mut array,
                device_type.0,
                device_id,
                event_ptr,
                Some(release_event),
                user_data,
                err,
            )
        });
        if result.is_err() {
            // Nothing was moved and the hook did not run: both are still ours.
            sys::ferry_array_release(&mut array);
            drop(Box::from_raw(user_data as *mut Event));
        }
        result
    }

    /// Exports an array produced on the stream's device by work queued on
    /// `producer_stream` (ferry's own [`DeviceStream`](crate::DeviceStream)
    /// or the user's, wrapped in a [`StreamHandle`]), recording an event on
    /// it or synchronizing it according to `policy`. The recorded event is
    /// owned by the array and destroyed after its release. With nothing
    /// pending, use [`build_on`](Self::build_on) without an event.
    pub fn build_async(self, producer_stream: &StreamHandle, policy: ExportPolicy) -> Result<DeviceArray> {
        let mut array = sys::ArrowArray::default();
        self.fill(&mut array)?;
        let mut out = DeviceArray::released();
        let policy = match policy {
            ExportPolicy::RecordEvent => sys::FERRY_SYNC_RECORD_EVENT,
            ExportPolicy::Synchronize => sys::FERRY_SYNC_SYNCHRONIZE,
        };
        let device = producer_stream.device();
        let result = call(|err| unsafe {
            sys::ferry_device_array_init_async(
                out.raw_mut(),
                &mut array,
                device.as_ptr(),
                producer_stream.as_ptr(),
                policy,
                err,
            )
        });
        if let Err(e) = result {
            unsafe { sys::ferry_array_release(&mut array) };
            return Err(e);
        }
        Ok(out)
    }
}

/// Primitive Rust types with an Arrow format string: the integers and
/// floats, for which every bit pattern is a value (sealed: the crate reads
/// foreign bytes as these types).
///
/// ```
/// use ferry_arrow::NativeType;
/// assert_eq!(<i32 as NativeType>::FORMAT, "i");
/// assert_eq!(<f64 as NativeType>::FORMAT, "g");
/// assert!(i32::is_physical_type_of("tdD")); // date32 is stored as i32
/// assert!(i64::is_physical_type_of("tsu:UTC"));
/// assert!(!i64::is_physical_type_of("i"));
/// ```
pub trait NativeType: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The C data interface format string.
    const FORMAT: &'static str;
    /// True when arrays of `format` store their values as this type: the
    /// type's own format, and for `i32`/`i64` the temporal formats of that
    /// width (dates, times, timestamps, durations, month intervals).
    fn is_physical_type_of(format: &str) -> bool {
        format == Self::FORMAT
    }
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! native {
    ($($t:ty => $f:expr),*) => { $(
        impl sealed::Sealed for $t {}
        impl NativeType for $t { const FORMAT: &'static str = $f; }
    )* };
}
native!(i8 => "c", u8 => "C", i16 => "s", u16 => "S", u32 => "I", u64 => "L", f32 => "f");

impl sealed::Sealed for i32 {}
impl NativeType for i32 {
    const FORMAT: &'static str = "i";
    fn is_physical_type_of(format: &str) -> bool {
        matches!(format, "i" | "tdD" | "tts" | "ttm" | "tiM")
    }
}

impl sealed::Sealed for i64 {}
impl NativeType for i64 {
    const FORMAT: &'static str = "l";
    fn is_physical_type_of(format: &str) -> bool {
        matches!(format, "l" | "tdm" | "ttu" | "ttn" | "tDs" | "tDm" | "tDu" | "tDn")
            || ["tss:", "tsm:", "tsu:", "tsn:"].iter().any(|p| format.starts_with(p))
    }
}

impl sealed::Sealed for f64 {}
impl NativeType for f64 {
    const FORMAT: &'static str = "g";
}

/// Packs `valid` into an Arrow validity bitmap (LSB first) and counts the
/// nulls.
///
/// ```
/// let (bits, nulls) = ferry_arrow::validity_bitmap(&[true, false, true]);
/// assert_eq!(bits, vec![0b101]);
/// assert_eq!(nulls, 1);
/// ```
pub fn validity_bitmap(valid: &[bool]) -> (Vec<u8>, i64) {
    let mut bits = vec![0u8; valid.len().div_ceil(8)];
    let mut nulls = 0;
    for (i, v) in valid.iter().enumerate() {
        if *v {
            bits[i / 8] |= 1 << (i % 8);
        } else {
            nulls += 1;
        }
    }
    (bits, nulls)
}

/// Exports `values` (moved, not copied) as a nullable primitive CPU array
/// with an unnamed schema; `validity` (one flag per value) adds a bitmap.
///
/// ```
/// let (array, schema) = ferry_arrow::export_primitive(vec![1.5f32, 2.5], None).unwrap();
/// assert_eq!(schema.format(), "f");
/// assert_eq!(array.length(), 2);
/// ```
pub fn export_primitive<T: NativeType>(values: Vec<T>, validity: Option<&[bool]>) -> Result<(DeviceArray, Schema)> {
    let length = values.len() as i64;
    let mut builder = ArrayBuilder::new(length);
    match validity {
        Some(valid) => {
            if valid.len() != values.len() {
                return Err(Error::invalid(format!(
                    "validity has {} flags for {} values",
                    valid.len(),
                    values.len()
                )));
            }
            let (bits, nulls) = validity_bitmap(valid);
            builder = builder.null_count(nulls).buffer(Buffer::from_vec(bits));
        }
        None => builder = builder.buffer(Buffer::null()),
    }
    let array = builder.buffer(Buffer::from_vec(values)).build()?;
    let schema = Schema::builder(T::FORMAT).name("").nullable(true).build()?;
    Ok((array, schema))
}

/// Exports strings as a nullable utf8 CPU array (the offsets and data are
/// built once, then handed over without a further copy).
///
/// ```
/// let (array, schema) = ferry_arrow::export_utf8(&[Some("a"), None, Some("xyz")]).unwrap();
/// assert_eq!(schema.format(), "u");
/// assert_eq!(array.null_count(), 1);
/// array.validate(&schema, true).unwrap();
/// ```
pub fn export_utf8<S: AsRef<str>>(values: &[Option<S>]) -> Result<(DeviceArray, Schema)> {
    let mut offsets = Vec::with_capacity(values.len() + 1);
    let mut data = Vec::new();
    offsets.push(0i32);
    for v in values {
        if let Some(s) = v {
            data.extend_from_slice(s.as_ref().as_bytes());
        }
        let end = i32::try_from(data.len()).map_err(|_| Error::invalid("utf8 data exceeds 2 GiB; use large_utf8"))?;
        offsets.push(end);
    }
    let valid: Vec<bool> = values.iter().map(Option::is_some).collect();
    let (bits, nulls) = validity_bitmap(&valid);
    let validity = if nulls == 0 {
        Buffer::null()
    } else {
        Buffer::from_vec(bits)
    };
    let array = ArrayBuilder::new(values.len() as i64)
        .null_count(nulls)
        .buffer(validity)
        .buffer(Buffer::from_vec(offsets))
        .buffer(Buffer::from_vec(data))
        .build()?;
    let schema = Schema::builder("u").name("").nullable(true).build()?;
    Ok((array, schema))
}
