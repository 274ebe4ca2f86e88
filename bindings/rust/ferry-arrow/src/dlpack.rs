//! DLPack: [`DlpackTensor`] owns a `DLManagedTensorVersioned` (DLPack 1.x)
//! and calls its deleter exactly once; [`DeviceArray::to_dlpack`] and
//! [`DeviceArray::from_dlpack`] cross between the two interfaces without
//! copying, through the core's `ferry_device_array_to_dlpack` /
//! `ferry_device_array_from_dlpack`.
use std::fmt;
use std::ptr::{self, NonNull};

use ferry_arrow_sys as sys;

use crate::array::DeviceArray;
use crate::device::{DeviceType, StreamHandle};
use crate::error::{call, Error, Rejected, Result};
use crate::schema::{Schema, SchemaView};

/// An owned DLPack 1.x managed tensor: dropping it calls the producer's
/// deleter once; [`into_raw`](Self::into_raw) hands it (and the duty to
/// call the deleter) to a consumer such as a Python capsule.
///
/// ```
/// use ferry_arrow::DeviceArray;
/// let (array, schema) = ferry_arrow::export_primitive(vec![1.5f64, 2.5, 3.5], None).unwrap();
/// let address = array.buffer(1);
/// let tensor = array.to_dlpack(&schema).unwrap();
/// assert_eq!(tensor.shape(), &[3]);
/// assert_eq!((tensor.dtype().code, tensor.dtype().bits), (2, 64)); // kDLFloat, 64 bits
/// assert_eq!(tensor.data() as *const _, address); // the same memory
/// assert!(tensor.is_read_only());
/// // And back: a non-nullable float64 array over the same memory.
/// let (back, schema) = DeviceArray::from_dlpack(tensor).unwrap();
/// assert_eq!(schema.format(), "g");
/// assert_eq!(back.host(&schema).unwrap().values::<f64>().unwrap(), &[1.5, 2.5, 3.5]);
/// ```
pub struct DlpackTensor {
    raw: NonNull<sys::DLManagedTensorVersioned>,
}

// SAFETY: DLPack lets the deleter run on any thread, and the tensor is used
// by one owner at a time.
unsafe impl Send for DlpackTensor {}

impl DlpackTensor {
    /// Takes ownership of a DLPack 1.x managed tensor (`EINVAL` for NULL or
    /// a major version other than 1: such a tensor's fields cannot be read,
    /// and it stays the caller's).
    ///
    /// # Safety
    /// `ptr` must be NULL or point to a valid `DLManagedTensorVersioned`
    /// that nobody else will delete.
    pub unsafe fn from_raw(ptr: *mut sys::DLManagedTensorVersioned) -> Result<DlpackTensor> {
        let raw = NonNull::new(ptr).ok_or_else(|| Error::invalid("DLPack tensor pointer is NULL"))?;
        let major = (*ptr).version.major;
        if major != sys::DLPACK_MAJOR_VERSION as u32 {
            return Err(Error::invalid(format!(
                "DLPack tensor has major version {major}; ferry reads version {}",
                sys::DLPACK_MAJOR_VERSION
            )));
        }
        Ok(DlpackTensor { raw })
    }

    /// Gives the tensor away: the receiver calls its deleter.
    pub fn into_raw(self) -> *mut sys::DLManagedTensorVersioned {
        let raw = self.raw.as_ptr();
        std::mem::forget(self);
        raw
    }

    /// The raw pointer (still owned by `self`).
    pub fn as_ptr(&self) -> *const sys::DLManagedTensorVersioned {
        self.raw.as_ptr()
    }

    fn tensor(&self) -> &sys::DLTensor {
        // SAFETY: valid for as long as self (from_raw's contract).
        unsafe { &(*self.raw.as_ptr()).dl_tensor }
    }

    /// The DLPack version (major, minor).
    pub fn version(&self) -> (u32, u32) {
        let v = unsafe { &(*self.raw.as_ptr()).version };
        (v.major, v.minor)
    }
    /// The `DLPACK_FLAG_BITMASK_*` flags.
    pub fn flags(&self) -> u64 {
        unsafe { (*self.raw.as_ptr()).flags }
    }
    /// True when the consumer must not write (ferry's exports always are:
    /// Arrow data is immutable).
    pub fn is_read_only(&self) -> bool {
        self.flags() & sys::DLPACK_FLAG_BITMASK_READ_ONLY as u64 != 0
    }
    /// The device: DLPack's device type values are Arrow's.
    pub fn device(&self) -> (DeviceType, i64) {
        let d = self.tensor().device;
        (DeviceType(d.device_type as i32), i64::from(d.device_id))
    }
    /// The address of element 0: `data` plus `byte_offset`. Device memory
    /// for a device tensor.
    pub fn data(&self) -> *mut std::os::raw::c_void {
        let t = self.tensor();
        (t.data as *mut u8).wrapping_add(t.byte_offset as usize) as *mut _
    }
    /// The element type.
    pub fn dtype(&self) -> sys::DLDataType {
        self.tensor().dtype
    }
    /// The shape (`ndim` extents).
    pub fn shape(&self) -> &[i64] {
        let t = self.tensor();
        if t.shape.is_null() || t.ndim <= 0 {
            return &[];
        }
        // SAFETY: DLPack: shape holds ndim entries, valid with the tensor.
        unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }
    }
    /// The strides in elements, or `None` (compact row-major).
    pub fn strides(&self) -> Option<&[i64]> {
        let t = self.tensor();
        if t.strides.is_null() || t.ndim <= 0 {
            return None;
        }
        // SAFETY: as for shape.
        Some(unsafe { std::slice::from_raw_parts(t.strides, t.ndim as usize) })
    }
}

impl Drop for DlpackTensor {
    fn drop(&mut self) {
        let raw = self.raw.as_ptr();
        // SAFETY: we own the tensor; DLPack's deleter may be NULL.
        unsafe {
            if let Some(deleter) = (*raw).deleter {
                deleter(raw);
            }
        }
    }
}

impl fmt::Debug for DlpackTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dtype = self.dtype();
        f.debug_struct("DlpackTensor")
            .field("device", &self.device())
            .field("dtype", &(dtype.code, dtype.bits, dtype.lanes))
            .field("shape", &self.shape())
            .field("data", &self.data())
            .finish()
    }
}

impl DeviceArray {
    /// Exports a fixed-width array without nulls (integers, floats, dates,
    /// times, timestamps, durations) as a one-dimensional DLPack tensor over
    /// the same memory, on the array's device. A tensor carries no event,
    /// so the host first waits on the array's (use
    /// [`to_dlpack_on`](Self::to_dlpack_on) to hand it to a consumer stream
    /// instead). The tensor owns the array: its deleter releases it. On
    /// failure the array comes back untouched.
    pub fn to_dlpack(self, schema: &SchemaView) -> std::result::Result<DlpackTensor, Rejected<DeviceArray>> {
        self.dlpack_with(schema, ptr::null_mut())
    }

    /// [`to_dlpack`](Self::to_dlpack), made safe for work on
    /// `consumer_stream` (DLPack's `stream=` protocol): that stream (of the
    /// array's device) waits on the array's event, and the host does not.
    pub fn to_dlpack_on(
        self,
        schema: &SchemaView,
        consumer_stream: &StreamHandle,
    ) -> std::result::Result<DlpackTensor, Rejected<DeviceArray>> {
        self.dlpack_with(schema, consumer_stream.as_ptr())
    }

    fn dlpack_with(
        mut self,
        schema: &SchemaView,
        consumer_stream: *mut std::os::raw::c_void,
    ) -> std::result::Result<DlpackTensor, Rejected<DeviceArray>> {
        let mut out: *mut sys::DLManagedTensorVersioned = ptr::null_mut();
        let result = call(|err| unsafe {
            sys::ferry_device_array_to_dlpack(schema.as_ptr(), self.as_mut_ptr(), consumer_stream, &mut out, err)
        });
        if let Err(error) = result {
            return Err(Rejected::new(error, self));
        }
        // The array now lives in the tensor (self is left released), and the
        // core's tensor is ours.
        match NonNull::new(out) {
            Some(raw) => Ok(DlpackTensor { raw }),
            None => Err(Rejected::new(
                Error::io("ferry_device_array_to_dlpack returned no tensor"),
                self,
            )),
        }
    }

    /// Imports a one-dimensional, contiguous DLPack tensor of integers or
    /// floats as a non-nullable Arrow array on the tensor's device, without
    /// copying: the tensor's deleter runs when the array is released. On
    /// failure the tensor comes back untouched (its deleter not called).
    /// Returns the array and its schema, the array first.
    pub fn from_dlpack(tensor: DlpackTensor) -> std::result::Result<(DeviceArray, Schema), Rejected<DlpackTensor>> {
        let mut schema = Schema::new_released();
        let mut array = DeviceArray::released();
        let raw = tensor.raw.as_ptr();
        let result = call(|err| unsafe {
            sys::ferry_device_array_from_dlpack(raw, schema.as_mut_ptr(), array.as_mut_ptr(), err)
        });
        match result {
            Ok(()) => {
                // Moved in: the array's release calls the deleter.
                std::mem::forget(tensor);
                Ok((array, schema))
            }
            Err(error) => Err(Rejected::new(error, tensor)),
        }
    }
}
