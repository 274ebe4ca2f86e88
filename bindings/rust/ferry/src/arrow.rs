//! Conversions to and from the `arrow` crate (feature `arrow`), for CPU data,
//! through its C data interface types: nothing is copied, the buffers change
//! owner by move.
//!
//! `arrow_data::ffi::FFI_ArrowArray` and `arrow_schema::ffi::FFI_ArrowSchema`
//! are `#[repr(C)]` mirrors of the same Arrow C structs as
//! `ferry::sys::ArrowArray` / `ArrowSchema` (checked by the size assertions
//! below), so a value moves between them bitwise.
use std::ptr;

use arrow_array::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{make_array, Array, ArrayRef};
use arrow_schema::{DataType, Field};

use ferry_sys as sys;

use crate::array::DeviceArray;
use crate::device::DeviceType;
use crate::error::{call, Error, Result};
use crate::panic::guard;
use crate::schema::{Schema, SchemaView};

const _: () = assert!(std::mem::size_of::<FFI_ArrowArray>() == std::mem::size_of::<sys::ArrowArray>());
const _: () = assert!(std::mem::size_of::<FFI_ArrowSchema>() == std::mem::size_of::<sys::ArrowSchema>());

fn arrow_err(what: &str, e: arrow_schema::ArrowError) -> Error {
    Error::invalid(format!("{what}: {e}"))
}

/// Moves an FFI_ArrowSchema into a ferry `Schema`.
fn schema_from_ffi(ffi: FFI_ArrowSchema) -> Result<Schema> {
    let mut raw = sys::ArrowSchema::default();
    // SAFETY: identical layout; `ffi` is moved in and not dropped here.
    unsafe {
        ptr::write(&mut raw as *mut sys::ArrowSchema as *mut FFI_ArrowSchema, ffi);
        Schema::from_raw(&mut raw)
    }
}

impl Schema {
    /// The schema of an arrow `Field` (name, type, nullability, metadata).
    ///
    /// ```
    /// use arrow_schema::{DataType, Field};
    /// let s = ferry::Schema::from_arrow_field(&Field::new("x", DataType::Int32, true)).unwrap();
    /// assert_eq!((s.format(), s.name()), ("i", Some("x")));
    /// assert_eq!(s.to_arrow_field().unwrap(), Field::new("x", DataType::Int32, true));
    /// ```
    pub fn from_arrow_field(field: &Field) -> Result<Schema> {
        schema_from_ffi(FFI_ArrowSchema::try_from(field).map_err(|e| arrow_err("field cannot be exported", e))?)
    }

    /// The schema of an arrow `DataType` (unnamed field).
    pub fn from_arrow_type(data_type: &DataType) -> Result<Schema> {
        schema_from_ffi(FFI_ArrowSchema::try_from(data_type).map_err(|e| arrow_err("type cannot be exported", e))?)
    }
}

impl SchemaView {
    /// The arrow `Field` this schema describes.
    pub fn to_arrow_field(&self) -> Result<Field> {
        // SAFETY: identical layout, borrowed only for the conversion. arrow
        // asserts (panics) on some malformed schemas: contained by guard.
        let ffi = unsafe { &*(self.as_ptr() as *const FFI_ArrowSchema) };
        guard(|| Field::try_from(ffi).map_err(|e| arrow_err("schema cannot be imported into arrow", e)))
    }

    /// The arrow `DataType` this schema describes.
    pub fn to_arrow_type(&self) -> Result<DataType> {
        let ffi = unsafe { &*(self.as_ptr() as *const FFI_ArrowSchema) };
        guard(|| DataType::try_from(ffi).map_err(|e| arrow_err("schema cannot be imported into arrow", e)))
    }
}

impl DeviceArray {
    /// Exports an arrow array as a CPU device array and its schema, without
    /// copying: the buffers stay arrow's, kept alive until release.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use arrow_array::{Array, ArrayRef, Int32Array};
    /// let input: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(3)]));
    /// let (schema, array) = ferry::DeviceArray::from_arrow(&input).unwrap();
    /// assert_eq!((schema.format(), array.length(), array.null_count()), ("i", 3, 1));
    /// let back = array.to_arrow(&schema).unwrap();
    /// assert_eq!(&back, &input);
    /// ```
    pub fn from_arrow(array: &ArrayRef) -> Result<(Schema, DeviceArray)> {
        let (ffi_array, ffi_schema) =
            guard(|| to_ffi(&array.to_data()).map_err(|e| arrow_err("array cannot be exported", e)))?;
        let schema = schema_from_ffi(ffi_schema)?;
        let mut raw = sys::ArrowArray::default();
        // SAFETY: identical layout; `ffi_array` is moved in.
        unsafe { ptr::write(&mut raw as *mut sys::ArrowArray as *mut FFI_ArrowArray, ffi_array) };
        let mut out = DeviceArray::released();
        let result = call(|err| unsafe {
            sys::ferry_device_array_init(
                out.raw_mut(),
                &mut raw,
                DeviceType::CPU.raw(),
                -1,
                ptr::null_mut(),
                None,
                ptr::null_mut(),
                err,
            )
        });
        if let Err(e) = result {
            unsafe { sys::ferry_array_release(&mut raw) };
            return Err(e);
        }
        Ok((schema, out))
    }

    /// Imports into arrow by move (zero-copy for CPU data). Arrays on another
    /// device are first copied to the CPU by the core (after waiting on their
    /// event); CPU arrays are waited on, which returns at once.
    pub fn to_arrow(self, schema: &SchemaView) -> Result<ArrayRef> {
        let mut array = if self.device_type() == DeviceType::CPU {
            self.wait(None)?;
            self
        } else {
            self.copy_to(schema, DeviceType::CPU, -1)?
        };
        let mut moved = FFI_ArrowArray::empty();
        // SAFETY: the embedded ArrowArray moves into arrow's struct through
        // the core's move (which leaves ours released); the schema is only
        // borrowed.
        unsafe {
            let embedded = sys::ferry_device_array_array(array.as_mut_ptr());
            if sys::ferry_array_move(embedded, &mut moved as *mut FFI_ArrowArray as *mut sys::ArrowArray) != 0 {
                return Err(Error::invalid("cannot import a released array into arrow"));
            }
            let ffi_schema = &*(schema.as_ptr() as *const FFI_ArrowSchema);
            // A panic inside arrow drops `moved`, which releases the array.
            guard(|| {
                let data = from_ffi(moved, ffi_schema).map_err(|e| arrow_err("arrow rejected the array", e))?;
                Ok(make_array(data))
            })
        }
    }
}
