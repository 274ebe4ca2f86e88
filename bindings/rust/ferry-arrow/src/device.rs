//! Device types and devices: allocation, copies, streams and events through
//! the core's `ferry_device_*` functions, so Rust code can produce on any
//! device ferry supports (the simulated one included).
//!
//! Streams and events come in two kinds, as file descriptors do in `std`
//! (`OwnedFd` / `BorrowedFd`): [`DeviceStream`] and [`Event`] own their
//! native object and destroy it on drop; [`StreamHandle`] and
//! [`EventHandle`] only name one, which someone else owns: a stream or
//! event of the user's own CUDA or HIP library, wrapped with `from_raw`.
//! Every function that uses a stream or an event takes the handle, and the
//! owning types deref to it.
use std::ffi::{CStr, CString};
use std::fmt;
use std::ops::Deref;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};

use ferry_arrow_sys as sys;

use crate::error::{call, Error, Result};

/// An Arrow device type (`ArrowDeviceType`, an `int32_t`).
///
/// ```
/// use ferry_arrow::DeviceType;
/// assert_eq!(DeviceType::CPU.name(), "cpu");
/// assert_eq!(DeviceType::from_name("sim").unwrap(), DeviceType::EXT_DEV);
/// assert!(DeviceType::from_name("abacus").is_err());
/// assert_eq!(DeviceType::CUDA.raw(), 2);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceType(pub i32);

impl DeviceType {
    /// Host memory.
    pub const CPU: DeviceType = DeviceType(sys::ARROW_DEVICE_CPU);
    /// CUDA device memory.
    pub const CUDA: DeviceType = DeviceType(sys::ARROW_DEVICE_CUDA);
    /// Pinned CUDA host memory.
    pub const CUDA_HOST: DeviceType = DeviceType(sys::ARROW_DEVICE_CUDA_HOST);
    /// OpenCL.
    pub const OPENCL: DeviceType = DeviceType(sys::ARROW_DEVICE_OPENCL);
    /// Vulkan.
    pub const VULKAN: DeviceType = DeviceType(sys::ARROW_DEVICE_VULKAN);
    /// Metal.
    pub const METAL: DeviceType = DeviceType(sys::ARROW_DEVICE_METAL);
    /// Verilog simulator.
    pub const VPI: DeviceType = DeviceType(sys::ARROW_DEVICE_VPI);
    /// ROCm device memory.
    pub const ROCM: DeviceType = DeviceType(sys::ARROW_DEVICE_ROCM);
    /// Pinned ROCm host memory.
    pub const ROCM_HOST: DeviceType = DeviceType(sys::ARROW_DEVICE_ROCM_HOST);
    /// Extension device; ferry's simulated device uses it.
    pub const EXT_DEV: DeviceType = DeviceType(sys::ARROW_DEVICE_EXT_DEV);
    /// ferry's simulated device (an alias of [`DeviceType::EXT_DEV`]).
    pub const SIM: DeviceType = DeviceType(sys::ARROW_DEVICE_EXT_DEV);
    /// CUDA managed memory.
    pub const CUDA_MANAGED: DeviceType = DeviceType(sys::ARROW_DEVICE_CUDA_MANAGED);
    /// oneAPI unified shared memory.
    pub const ONEAPI: DeviceType = DeviceType(sys::ARROW_DEVICE_ONEAPI);
    /// WebGPU.
    pub const WEBGPU: DeviceType = DeviceType(sys::ARROW_DEVICE_WEBGPU);
    /// Qualcomm Hexagon DSP.
    pub const HEXAGON: DeviceType = DeviceType(sys::ARROW_DEVICE_HEXAGON);

    /// The raw `ArrowDeviceType` value.
    pub fn raw(self) -> sys::ArrowDeviceType {
        self.0
    }

    /// The core's lower-case name ("cpu", "cuda", "ext_dev", ... or "unknown").
    pub fn name(self) -> &'static str {
        // SAFETY: the core returns a static string for any value.
        unsafe {
            let name = sys::ferry_device_type_name(self.0);
            if name.is_null() {
                return "unknown";
            }
            CStr::from_ptr(name).to_str().unwrap_or("unknown")
        }
    }

    /// Parses a name the core knows ("cpu", "cuda", "rocm", "sim", ...);
    /// `EINVAL` naming the word otherwise.
    pub fn from_name(name: &str) -> Result<DeviceType> {
        let c_name =
            CString::new(name).map_err(|_| Error::invalid(format!("device name {name:?} contains a NUL byte")))?;
        let mut out: sys::ArrowDeviceType = 0;
        call(|err| unsafe { sys::ferry_device_type_from_name(c_name.as_ptr(), &mut out, err) })?;
        Ok(DeviceType(out))
    }
}

impl fmt::Display for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceType({} = {})", self.name(), self.0)
    }
}

/// A device in ferry's registry. The registry owns it for the life of the
/// process, so `Device` is a cheap `Copy` handle; the core's registry is
/// thread-safe, hence `Send` and `Sync`.
///
/// ```
/// use ferry_arrow::{Device, DeviceType};
/// let cpu = Device::cpu().unwrap();
/// assert_eq!(cpu.device_type(), DeviceType::CPU);
/// assert!(cpu.is_host_accessible());
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Device {
    raw: NonNull<sys::FerryDevice>,
}

// SAFETY: devices are owned by the core's registry for the whole process and
// every device function is thread-safe (ferry.h: "global state is protected
// by locks").
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

impl Device {
    /// Finds the device (`device_type`, `device_id`), loading its backend on
    /// first use; `ENODEV`/`ENOTSUP` with the reason when unavailable.
    pub fn resolve(device_type: DeviceType, device_id: i64) -> Result<Device> {
        let mut out: *mut sys::FerryDevice = ptr::null_mut();
        call(|err| unsafe { sys::ferry_device_resolve(device_type.0, device_id, &mut out, err) })?;
        NonNull::new(out)
            .map(|raw| Device { raw })
            .ok_or_else(|| Error::io("ferry_device_resolve returned no device"))
    }

    /// The host (`ARROW_DEVICE_CPU`, id -1).
    pub fn cpu() -> Result<Device> {
        Device::resolve(DeviceType::CPU, -1)
    }

    /// Simulated device `id` (0 .. [`SIM_DEVICE_COUNT`](crate::SIM_DEVICE_COUNT)).
    pub fn sim(id: i64) -> Result<Device> {
        Device::resolve(DeviceType::SIM, id)
    }

    /// The device type.
    pub fn device_type(&self) -> DeviceType {
        DeviceType(unsafe { sys::ferry_device_type(self.raw.as_ptr()) })
    }

    /// The device id (-1 for the CPU).
    pub fn id(&self) -> i64 {
        unsafe { sys::ferry_device_id(self.raw.as_ptr()) }
    }

    /// True when the host may read this device's memory directly.
    pub fn is_host_accessible(&self) -> bool {
        unsafe { sys::ferry_device_is_host_accessible(self.raw.as_ptr()) != 0 }
    }

    /// Allocations made on this device through ferry and not yet freed.
    pub fn live_allocations(&self) -> i64 {
        unsafe { sys::ferry_device_live_allocations(self.raw.as_ptr()) }
    }

    /// The raw registry pointer.
    pub fn as_ptr(&self) -> *mut sys::FerryDevice {
        self.raw.as_ptr()
    }

    /// Allocates `size` bytes on the device; freed when the buffer is dropped.
    pub fn allocate(&self, size: usize) -> Result<DeviceBuffer> {
        let mut out: *mut c_void = ptr::null_mut();
        call(|err| unsafe { sys::ferry_device_allocate(self.as_ptr(), size as i64, &mut out, err) })?;
        Ok(DeviceBuffer {
            device: *self,
            ptr: out,
            len: size,
        })
    }

    /// Creates a stream (queue) on the device, owned by the result and
    /// destroyed when it is dropped.
    pub fn create_stream(&self) -> Result<DeviceStream> {
        let mut out: *mut c_void = ptr::null_mut();
        call(|err| unsafe { sys::ferry_device_stream_create(self.as_ptr(), &mut out, err) })?;
        Ok(DeviceStream {
            handle: StreamHandle {
                device: *self,
                raw: out,
            },
        })
    }

    /// Creates an event on the device, owned by the result and destroyed
    /// when it is dropped (or, once exported with an array, after that
    /// array's release).
    pub fn create_event(&self) -> Result<Event> {
        let mut out: *mut c_void = ptr::null_mut();
        call(|err| unsafe { sys::ferry_device_event_create(self.as_ptr(), &mut out, err) })?;
        Ok(Event {
            handle: EventHandle {
                device: *self,
                raw: out,
            },
            destroy: Destroy::Ferry,
        })
    }

    /// Copies `size` bytes between devices with the core's
    /// `ferry_device_memcpy`; complete on return when `stream` is `None`.
    ///
    /// # Safety
    /// `dst` and `src` must be valid for `size` bytes on their devices, and
    /// with a stream both must stay valid until the stream's work completes.
    pub unsafe fn memcpy(
        dst_device: &Device,
        dst: *mut c_void,
        src_device: &Device,
        src: *const c_void,
        size: usize,
        stream: Option<&StreamHandle>,
    ) -> Result<()> {
        let stream = stream.map_or(ptr::null_mut(), |s| s.raw);
        call(|err| {
            sys::ferry_device_memcpy(
                dst_device.as_ptr(),
                dst,
                src_device.as_ptr(),
                src,
                size as i64,
                stream,
                err,
            )
        })
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({}:{})", self.device_type(), self.id())
    }
}

/// Memory allocated on a device with `ferry_device_allocate`, freed on drop.
/// Export it without copying through [`Buffer::from_device`](crate::Buffer::from_device).
///
/// ```
/// let sim = ferry_arrow::Device::sim(0).unwrap();
/// let before = sim.live_allocations();
/// let mut buffer = sim.allocate(8).unwrap();
/// buffer.copy_from_host(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
/// let mut back = [0u8; 8];
/// buffer.copy_to_host(&mut back).unwrap();
/// assert_eq!(back, [1, 2, 3, 4, 5, 6, 7, 8]);
/// drop(buffer);
/// assert_eq!(sim.live_allocations(), before);
/// ```
pub struct DeviceBuffer {
    device: Device,
    ptr: *mut c_void,
    len: usize,
}

// SAFETY: the buffer is plain device memory owned by this value; the core's
// device functions are thread-safe.
unsafe impl Send for DeviceBuffer {}
unsafe impl Sync for DeviceBuffer {}

impl DeviceBuffer {
    /// The device it lives on.
    pub fn device(&self) -> Device {
        self.device
    }
    /// The device address.
    pub fn as_ptr(&self) -> *mut c_void {
        self.ptr
    }
    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when the size is 0.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `src` to the start of the buffer, synchronously.
    pub fn copy_from_host(&mut self, src: &[u8]) -> Result<()> {
        self.check_len(src.len())?;
        let cpu = Device::cpu()?;
        // SAFETY: both ranges are valid for src.len() bytes; no stream, so the
        // copy is complete on return.
        unsafe { Device::memcpy(&self.device, self.ptr, &cpu, src.as_ptr().cast(), src.len(), None) }
    }

    /// Queues a copy of `src` to the start of the buffer on `stream`.
    ///
    /// # Safety
    /// `src` must stay alive and unmodified until the stream's work has
    /// completed (the sim device's strict mode runs it only when waited on).
    pub unsafe fn copy_from_host_async(&mut self, src: &[u8], stream: &StreamHandle) -> Result<()> {
        self.check_len(src.len())?;
        let cpu = Device::cpu()?;
        Device::memcpy(
            &self.device,
            self.ptr,
            &cpu,
            src.as_ptr().cast(),
            src.len(),
            Some(stream),
        )
    }

    /// Copies the start of the buffer into `dst`, synchronously.
    pub fn copy_to_host(&self, dst: &mut [u8]) -> Result<()> {
        self.check_len(dst.len())?;
        let cpu = Device::cpu()?;
        // SAFETY: as in copy_from_host.
        unsafe { Device::memcpy(&cpu, dst.as_mut_ptr().cast(), &self.device, self.ptr, dst.len(), None) }
    }

    fn check_len(&self, n: usize) -> Result<()> {
        if n > self.len {
            return Err(Error::invalid(format!(
                "copy of {n} bytes does not fit a device buffer of {} bytes",
                self.len
            )));
        }
        Ok(())
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // A failure here cannot be reported; the core keeps the count honest.
        let _ = call(|err| unsafe { sys::ferry_device_deallocate(self.device.as_ptr(), self.ptr, err) });
    }
}

impl fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceBuffer({:?}, {:p}, {} bytes)", self.device, self.ptr, self.len)
    }
}

/// A device stream (queue) that someone else owns: ferry uses it and never
/// destroys it. Made by [`StreamHandle::from_raw`] for a stream of the
/// user's own CUDA/HIP library, or borrowed from a [`DeviceStream`] (which
/// derefs to one). Not `Clone`: a handle borrowed from a `DeviceStream`
/// cannot outlive it.
///
/// ```
/// use ferry_arrow::{Device, StreamHandle};
/// let sim = Device::sim(0).unwrap();
/// let owned = sim.create_stream().unwrap();
/// // What a user's own library would hand over: the native value.
/// let wrapped = unsafe { StreamHandle::from_raw(sim, owned.as_ptr()) };
/// let event = sim.create_event().unwrap();
/// event.record(&wrapped).unwrap(); // record on "their" stream
/// wrapped.wait_event(&event).unwrap();
/// wrapped.synchronize().unwrap();
/// drop(wrapped); // destroys nothing
/// owned.synchronize().unwrap();
/// ```
pub struct StreamHandle {
    device: Device,
    raw: *mut c_void,
}

// SAFETY: native stream handles (CUDA, HIP, sim) accept work from any thread,
// and the core's device functions are thread-safe.
unsafe impl Send for StreamHandle {}
unsafe impl Sync for StreamHandle {}

impl StreamHandle {
    /// Wraps a native stream of `device`: the `CUstream` / `hipStream_t`
    /// value itself (not a pointer to it; NULL is the driver's default
    /// stream), or a sim stream. The handle never destroys it.
    ///
    /// # Safety
    /// `raw` must be a stream of `device` that stays valid for as long as
    /// the handle (and any work ferry queues on it through the handle) is
    /// in use.
    pub unsafe fn from_raw(device: Device, raw: *mut c_void) -> StreamHandle {
        StreamHandle { device, raw }
    }
    /// The device.
    pub fn device(&self) -> Device {
        self.device
    }
    /// The native handle (what `ferry_device_*` take as `void* stream`:
    /// the `CUstream` / `hipStream_t` value).
    pub fn as_ptr(&self) -> *mut c_void {
        self.raw
    }
    /// Blocks until all queued work is done.
    pub fn synchronize(&self) -> Result<()> {
        call(|err| unsafe { sys::ferry_device_stream_synchronize(self.device.as_ptr(), self.raw, err) })
    }
    /// Makes this stream wait for `event` without blocking the host.
    pub fn wait_event(&self, event: &EventHandle) -> Result<()> {
        call(|err| unsafe { sys::ferry_device_stream_wait_event(self.device.as_ptr(), self.raw, event.raw, err) })
    }
}

impl fmt::Debug for StreamHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StreamHandle({:?}, {:p})", self.device, self.raw)
    }
}

/// A device stream (queue) made by [`Device::create_stream`], destroyed on
/// drop; derefs to its [`StreamHandle`].
///
/// ```
/// let sim = ferry_arrow::Device::sim(0).unwrap();
/// let stream = sim.create_stream().unwrap();
/// let event = sim.create_event().unwrap();
/// event.record(&stream).unwrap();
/// stream.wait_event(&event).unwrap();
/// stream.synchronize().unwrap();
/// event.synchronize().unwrap();
/// ```
pub struct DeviceStream {
    handle: StreamHandle,
}

impl Deref for DeviceStream {
    type Target = StreamHandle;
    fn deref(&self) -> &StreamHandle {
        &self.handle
    }
}

impl Drop for DeviceStream {
    fn drop(&mut self) {
        let h = &self.handle;
        let _ = call(|err| unsafe { sys::ferry_device_stream_destroy(h.device.as_ptr(), h.raw, err) });
    }
}

impl fmt::Debug for DeviceStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceStream({:?}, {:p})", self.handle.device, self.handle.raw)
    }
}

/// A device event that someone else owns: ferry records, waits on and
/// exports it, and never destroys it. Made by [`EventHandle::from_raw`] for
/// an event of the user's own library, or borrowed from an [`Event`] (which
/// derefs to one). `as_ptr()` is a pointer to the native handle, the value
/// of `ArrowDeviceArray.sync_event`.
pub struct EventHandle {
    device: Device,
    raw: *mut c_void,
}

// SAFETY: native events may be recorded and waited on from any thread.
unsafe impl Send for EventHandle {}
unsafe impl Sync for EventHandle {}

impl EventHandle {
    /// Wraps a native event of `device`. `raw` is what the Arrow C Device
    /// Data Interface calls `sync_event`: a *pointer to* the `CUevent` /
    /// `hipEvent_t` (a `CUevent*`), or a sim event.
    ///
    /// # Safety
    /// `raw` must point to a valid event of `device` for as long as the
    /// handle is in use.
    pub unsafe fn from_raw(device: Device, raw: *mut c_void) -> EventHandle {
        EventHandle { device, raw }
    }
    /// The device.
    pub fn device(&self) -> Device {
        self.device
    }
    /// Pointer to the native handle (the `sync_event` value).
    pub fn as_ptr(&self) -> *mut c_void {
        self.raw
    }
    /// Records the event at the current end of `stream`.
    pub fn record(&self, stream: &StreamHandle) -> Result<()> {
        call(|err| unsafe { sys::ferry_device_event_record(self.device.as_ptr(), self.raw, stream.raw, err) })
    }
    /// Blocks the host until the event has completed.
    pub fn synchronize(&self) -> Result<()> {
        call(|err| unsafe { sys::ferry_device_event_synchronize(self.device.as_ptr(), self.raw, err) })
    }
}

impl fmt::Debug for EventHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EventHandle({:?}, {:p})", self.device, self.raw)
    }
}

/// How an [`Event`] goes away.
enum Destroy {
    /// ferry_device_event_destroy (events ferry created).
    Ferry,
    /// The owner's own destructor (events wrapped with [`Event::from_raw`]).
    Foreign(Box<dyn FnOnce(*mut c_void) + Send>),
}

/// An owned device event: made by [`Device::create_event`], or a foreign
/// event handed to ferry with [`Event::from_raw`] together with its
/// destructor. Destroyed on drop; exported with an array
/// ([`ArrayBuilder::build_on`](crate::ArrayBuilder::build_on)), it is
/// destroyed right after the consumer releases that array. Derefs to its
/// [`EventHandle`].
///
/// ```
/// let sim = ferry_arrow::Device::sim(1).unwrap();
/// let stream = sim.create_stream().unwrap();
/// let event = sim.create_event().unwrap();
/// event.record(&stream).unwrap();
/// event.synchronize().unwrap();
/// assert!(!event.as_ptr().is_null());
/// ```
pub struct Event {
    handle: EventHandle,
    destroy: Destroy,
}

impl Event {
    /// Takes ownership of a native event of `device` (`raw` as in
    /// [`EventHandle::from_raw`]): `destroy(raw)` runs exactly once, when
    /// the `Event` is dropped, or after the release of the array it was
    /// exported with. This is how a producer passes its own CUDA/HIP event
    /// through (docs/events.md, the third policy).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use ferry_arrow::{ArrayBuilder, Buffer, Device, DeviceType, Event};
    /// let sim = Device::sim(0).unwrap();
    /// let (stream, native) = (sim.create_stream().unwrap(), sim.create_event().unwrap());
    /// native.record(&stream).unwrap();
    /// // Pretend the event came from another library: ferry gets the
    /// // pointer and the way to destroy it.
    /// let destroyed = Arc::new(AtomicBool::new(false));
    /// let flag = destroyed.clone();
    /// let raw = native.into_raw();
    /// let event = unsafe {
    ///     Event::from_raw(sim, raw, move |raw| {
    ///         drop(Event::from_raw_ferry(sim, raw)); // the owner's destructor
    ///         flag.store(true, Ordering::SeqCst);
    ///     })
    /// };
    /// let memory = sim.allocate(4).unwrap();
    /// let array = ArrayBuilder::new(1)
    ///     .buffer(Buffer::null())
    ///     .buffer(Buffer::from_device(memory))
    ///     .build_on(DeviceType::SIM, 0, Some(event))
    ///     .unwrap();
    /// assert_eq!(array.sync_event(), raw);
    /// assert!(!destroyed.load(Ordering::SeqCst));
    /// drop(array); // the consumer's release destroys the event
    /// assert!(destroyed.load(Ordering::SeqCst));
    /// ```
    ///
    /// # Safety
    /// `raw` must point to a valid event of `device` until `destroy` runs.
    pub unsafe fn from_raw(
        device: Device,
        raw: *mut c_void,
        destroy: impl FnOnce(*mut c_void) + Send + 'static,
    ) -> Event {
        Event {
            handle: EventHandle { device, raw },
            destroy: Destroy::Foreign(Box::new(destroy)),
        }
    }

    /// Takes back an event that [`Event::into_raw`] gave away (or any
    /// event made by `ferry_device_event_create`); destroyed on drop with
    /// `ferry_device_event_destroy`.
    ///
    /// # Safety
    /// `raw` must come from `ferry_device_event_create` on `device` and be
    /// owned by nobody else.
    pub unsafe fn from_raw_ferry(device: Device, raw: *mut c_void) -> Event {
        Event {
            handle: EventHandle { device, raw },
            destroy: Destroy::Ferry,
        }
    }

    /// Hands ownership of the native event to the caller (not destroyed).
    /// Events made by ferry go back with [`Event::from_raw_ferry`].
    pub fn into_raw(self) -> *mut c_void {
        let raw = self.handle.raw;
        // The destructor (a foreign closure, if any) is dropped unrun.
        let this = std::mem::ManuallyDrop::new(self);
        drop(unsafe { ptr::read(&this.destroy) });
        raw
    }
}

impl Deref for Event {
    type Target = EventHandle;
    fn deref(&self) -> &EventHandle {
        &self.handle
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let (device, raw) = (self.handle.device, self.handle.raw);
        match std::mem::replace(&mut self.destroy, Destroy::Ferry) {
            Destroy::Ferry => {
                let _ = call(|err| unsafe { sys::ferry_device_event_destroy(device.as_ptr(), raw, err) });
            }
            Destroy::Foreign(destroy) => {
                crate::panic::guard_silent("the destructor of a foreign event", || destroy(raw))
            }
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Event({:?}, {:p})", self.handle.device, self.handle.raw)
    }
}
