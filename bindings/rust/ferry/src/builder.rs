//! Export of Rust-owned memory without copying: [`Buffer`] keeps the owner
//! (a `Vec`, a boxed slice, an `Arc`, a [`DeviceBuffer`]) alive, and
//! [`ArrayBuilder`] hands the addresses to the core's `ferry_array_init`
//! together with a release hook that drops the owners when the consumer
//! releases the array, exactly once.
use std::fmt;
use std::os::raw::c_void;
use std::ptr;
use std::sync::Arc;

use ferry_sys as sys;

use crate::array::DeviceArray;
use crate::device::{Device, DeviceStream, DeviceType, Event};
use crate::error::{call, Error, ErrorBuf, Result};
use crate::panic::guard_silent;
use crate::schema::Schema;

/// A type-erased owner: one heap allocation (`Box<O>`) and the
/// monomorphised hook that drops it. A single owner goes to the core as
/// (hook, pointer) directly, with no further allocation.
struct Owner {
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
    fn new<O: Send + 'static>(owner: Box<O>) -> Owner {
        Owner {
            ptr: Box::into_raw(owner) as *mut c_void,
            release: release_boxed::<O>,
        }
    }
    /// Hands the owner to C: after this, only the hook may drop it.
    #[inline]
    fn into_raw(self) -> (unsafe extern "C" fn(*mut c_void), *mut c_void) {
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
/// use ferry::Buffer;
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
/// assert_ne!(ferry::ExportPolicy::RecordEvent, ferry::ExportPolicy::Synchronize);
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
/// use ferry::{ArrayBuilder, Buffer, Schema};
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
    length: i64,
    null_count: i64,
    offset: i64,
    /// The first buffers live inline (arrays rarely have more than three),
    /// and everything rarer sits behind one box: the common shape costs no
    /// allocation beyond its owners'.
    inline: [Slot; 3],
    n_inline: usize,
    more: Option<Box<More>>,
}

/// A buffer as the builder keeps it: the address and the owner (the size
/// is not needed to export, and a smaller builder moves without memcpy).
#[derive(Debug)]
struct Slot {
    ptr: *const c_void,
    owner: Option<Owner>,
}

impl Slot {
    const NULL: Slot = Slot {
        ptr: ptr::null(),
        owner: None,
    };
}

impl From<Buffer> for Slot {
    #[inline(always)]
    fn from(b: Buffer) -> Slot {
        Slot {
            ptr: b.ptr,
            owner: b.owner,
        }
    }
}

#[derive(Debug, Default)]
struct More {
    spilled: Vec<Slot>,
    children: Vec<ArrayBuilder>,
    dictionary: Option<ArrayBuilder>,
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

impl ArrayBuilder {
    /// An array of logical `length` with no buffers yet.
    #[inline(always)]
    pub fn new(length: i64) -> Self {
        ArrayBuilder {
            length,
            null_count: 0,
            offset: 0,
            inline: [Slot::NULL, Slot::NULL, Slot::NULL],
            n_inline: 0,
            more: None,
        }
    }
    /// Sets the null count (default 0).
    #[inline(always)]
    pub fn null_count(mut self, null_count: i64) -> Self {
        self.null_count = null_count;
        self
    }
    /// Sets the offset (default 0).
    #[inline(always)]
    pub fn offset(mut self, offset: i64) -> Self {
        self.offset = offset;
        self
    }
    /// Appends a buffer.
    #[inline(always)]
    pub fn buffer(mut self, buffer: Buffer) -> Self {
        if self.n_inline < self.inline.len() {
            self.inline[self.n_inline] = buffer.into();
            self.n_inline += 1;
        } else {
            self.more().spilled.push(buffer.into());
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

    fn more(&mut self) -> &mut More {
        self.more.get_or_insert_with(Default::default)
    }

    /// Fills `out` (released) through ferry_array_init. On failure `out` is
    /// left released and every owner has been dropped.
    #[inline(always)]
    fn fill(&mut self, out: *mut sys::ArrowArray) -> Result<()> {
        if self.length < 0 || self.offset < 0 || self.null_count < -1 {
            return Err(Error::invalid(format!(
                "array length {}, offset {} and null_count {} must not be negative",
                self.length, self.offset, self.null_count
            )));
        }
        let n_owners = self.inline.iter().filter(|b| b.owner.is_some()).count();
        match self.more.take() {
            None if n_owners <= 1 => self.fill_flat(out),
            more => self.fill_general(out, more.map(|m| *m).unwrap_or_default()),
        }
    }

    /// The common shape (at most three buffers, at most one owner, no
    /// children or dictionary) with nothing to allocate on the Rust side:
    /// the owner's own hook and box go to the core as they are.
    #[inline(always)]
    fn fill_flat(&mut self, out: *mut sys::ArrowArray) -> Result<()> {
        let mut pointers: [*const c_void; 3] = [ptr::null(); 3];
        let mut hook: sys::FerryReleaseHook = None;
        let mut user_data: *mut c_void = ptr::null_mut();
        for (slot, b) in pointers.iter_mut().zip(self.inline.iter_mut()) {
            *slot = b.ptr;
            if let Some(owner) = b.owner.take() {
                let (h, p) = owner.into_raw();
                hook = Some(h);
                user_data = p;
            }
        }
        let mut err = ErrorBuf::new();
        let code = unsafe {
            sys::ferry_array_init(
                out,
                self.length,
                self.null_count,
                self.offset,
                self.n_inline as i64,
                pointers.as_ptr(),
                0,
                hook,
                user_data,
                err.as_mut_ptr(),
            )
        };
        if code != 0 {
            // The hook is not called on failure: the owner is still ours.
            if let Some(hook) = hook {
                unsafe { hook(user_data) };
            }
            return err.check(code);
        }
        Ok(())
    }

    /// Any shape: more buffers, several owners, children, a dictionary.
    fn fill_general(&mut self, out: *mut sys::ArrowArray, mut more: More) -> Result<()> {
        let pointers: Vec<*const c_void> = self.inline[..self.n_inline]
            .iter()
            .chain(&more.spilled)
            .map(|b| b.ptr)
            .collect();
        let owners: Vec<Owner> = self.inline[..self.n_inline]
            .iter_mut()
            .chain(more.spilled.iter_mut())
            .filter_map(|b| b.owner.take())
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
                self.length,
                self.null_count,
                self.offset,
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
            for (i, mut child) in std::mem::take(&mut more.children).into_iter().enumerate() {
                let slot = unsafe { sys::ferry_array_child(out, i as i64) };
                if slot.is_null() {
                    return Err(Error::io(format!("the core gave no slot for child {i}")));
                }
                child
                    .fill(slot)
                    .map_err(|e| Error::new(e.code(), format!("child {i}: {}", e.message())))?;
            }
            if let Some(mut dict) = more.dictionary.take() {
                let mut slot: *mut sys::ArrowArray = ptr::null_mut();
                call(|err| unsafe { sys::ferry_array_allocate_dictionary(out, &mut slot, err) })?;
                dict.fill(slot)
                    .map_err(|e| Error::new(e.code(), format!("dictionary: {}", e.message())))?;
            }
            Ok(())
        };
        finish().inspect_err(|_| unsafe { sys::ferry_array_release(out) })
    }

    /// Exports a CPU array (`ARROW_DEVICE_CPU`, id -1, no sync event).
    #[inline(always)]
    pub fn build(self) -> Result<DeviceArray> {
        self.build_on(DeviceType::CPU, -1, None)
    }

    /// Builds straight into a C consumer's struct, which must be released or
    /// zeroed: what `build()?.export_to(out)` does, without the
    /// intermediate move. CPU only; `out` is untouched on failure.
    ///
    /// # Safety
    /// `out` must point to a writable `ArrowDeviceArray`.
    #[inline(always)]
    pub unsafe fn build_into(mut self, out: *mut sys::ArrowDeviceArray) -> Result<()> {
        if out.is_null() || (*out).array.release.is_some() {
            return Err(Error::invalid("output device array is NULL or not released"));
        }
        let mut array = sys::ArrowArray::default();
        self.fill(&mut array)?;
        let mut err = ErrorBuf::new();
        let code = sys::ferry_device_array_init(
            out,
            &mut array,
            DeviceType::CPU.0,
            -1,
            ptr::null_mut(),
            None,
            ptr::null_mut(),
            err.as_mut_ptr(),
        );
        if code != 0 {
            sys::ferry_array_release(&mut array);
            return err.check(code);
        }
        Ok(())
    }

    /// Exports an array whose buffers live on (`device_type`, `device_id`),
    /// with an optional event the consumer must wait on. The event is owned
    /// by the array and destroyed after the array is released.
    #[inline(always)]
    pub fn build_on(
        mut self,
        device_type: DeviceType,
        device_id: i64,
        sync_event: Option<Event>,
    ) -> Result<DeviceArray> {
        let mut array = sys::ArrowArray::default();
        self.fill(&mut array)?;
        let mut out = DeviceArray::released();
        let (event_ptr, hook, user_data): (*mut c_void, sys::FerryReleaseHook, *mut c_void) = match sync_event {
            Some(e) => (
                e.as_ptr(),
                Some(release_event),
                Box::into_raw(Box::new(e)) as *mut c_void,
            ),
            None => (ptr::null_mut(), None, ptr::null_mut()),
        };
        let mut err = ErrorBuf::new();
        let code = unsafe {
            sys::ferry_device_array_init(
                out.raw_mut(),
                &mut array,
                device_type.0,
                device_id,
                event_ptr,
                hook,
                user_data,
                err.as_mut_ptr(),
            )
        };
        if code != 0 {
            unsafe { sys::ferry_array_release(&mut array) };
            if !user_data.is_null() {
                drop(unsafe { Box::from_raw(user_data as *mut Event) });
            }
            return Err(err.check(code).unwrap_err());
        }
        Ok(out)
    }

    /// Exports an array produced on `device` by work queued on
    /// `producer_stream` (`None`: nothing pending), recording an event or
    /// synchronizing according to `policy`.
    pub fn build_async(
        mut self,
        device: &Device,
        producer_stream: Option<&DeviceStream>,
        policy: ExportPolicy,
    ) -> Result<DeviceArray> {
        let mut array = sys::ArrowArray::default();
        self.fill(&mut array)?;
        let mut out = DeviceArray::released();
        let policy = match policy {
            ExportPolicy::RecordEvent => sys::FERRY_EXPORT_RECORD_EVENT,
            ExportPolicy::Synchronize => sys::FERRY_EXPORT_SYNCHRONIZE,
        };
        let stream = producer_stream.map_or(ptr::null_mut(), |s| s.as_ptr());
        let result = call(|err| unsafe {
            sys::ferry_device_array_init_async(out.raw_mut(), &mut array, device.as_ptr(), stream, policy, err)
        });
        if let Err(e) = result {
            unsafe { sys::ferry_array_release(&mut array) };
            return Err(e);
        }
        Ok(out)
    }
}

/// Primitive Rust types with an Arrow format string.
///
/// ```
/// use ferry::NativeType;
/// assert_eq!(<i32 as NativeType>::FORMAT, "i");
/// assert_eq!(<f64 as NativeType>::FORMAT, "g");
/// ```
pub trait NativeType: Copy + Send + Sync + 'static {
    /// The C data interface format string.
    const FORMAT: &'static str;
}

macro_rules! native {
    ($($t:ty => $f:expr),*) => { $(impl NativeType for $t { const FORMAT: &'static str = $f; })* };
}
native!(i8 => "c", u8 => "C", i16 => "s", u16 => "S", i32 => "i", u32 => "I", i64 => "l", u64 => "L", f32 => "f", f64 => "g");

/// Packs `valid` into an Arrow validity bitmap (LSB first) and counts the
/// nulls.
///
/// ```
/// let (bits, nulls) = ferry::validity_bitmap(&[true, false, true]);
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
/// let (schema, array) = ferry::export_primitive(vec![1.5f32, 2.5], None).unwrap();
/// assert_eq!(schema.format(), "f");
/// assert_eq!(array.length(), 2);
/// ```
pub fn export_primitive<T: NativeType>(values: Vec<T>, validity: Option<&[bool]>) -> Result<(Schema, DeviceArray)> {
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
    Ok((schema, array))
}

/// Exports strings as a nullable utf8 CPU array (the offsets and data are
/// built once, then handed over without a further copy).
///
/// ```
/// let (schema, array) = ferry::export_utf8(&[Some("a"), None, Some("xyz")]).unwrap();
/// assert_eq!(schema.format(), "u");
/// assert_eq!(array.null_count(), 1);
/// array.validate(&schema, true).unwrap();
/// ```
pub fn export_utf8<S: AsRef<str>>(values: &[Option<S>]) -> Result<(Schema, DeviceArray)> {
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
    Ok((schema, array))
}
