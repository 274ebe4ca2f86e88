// The conversions between ferry and one arrow-rs release, included by
// arrow_rs/mod.rs into that release's module, where `arrow_array` and
// `arrow_schema` name its crates. CPU data crosses without a copy: arrow's
// `FFI_ArrowArray` / `FFI_ArrowSchema` are `#[repr(C)]` mirrors of the same
// Arrow C structs as `ferry_arrow::sys::ArrowArray` / `ArrowSchema` (the
// size assertions below check it), so values move between them bitwise.

use std::fmt;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use arrow_array::ffi::{from_ffi_and_data_type, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::types::{
    ArrowPrimitiveType, Date32Type, Date64Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{make_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, RecordBatchReader, StructArray};
use arrow_array::{BooleanArray, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Fields, SchemaRef};

use crate::builder::Owner;
use crate::panic::guard_quiet;
use crate::sys;
use crate::words::write_device_fields;
use crate::{
    ArrayProducer, ArraySlot, DeviceArray, DeviceArrayStream, DeviceType, Error, Result, Schema, SchemaView, Validation,
};

const _: () = assert!(std::mem::size_of::<FFI_ArrowArray>() == std::mem::size_of::<sys::ArrowArray>());
const _: () = assert!(std::mem::size_of::<FFI_ArrowSchema>() == std::mem::size_of::<sys::ArrowSchema>());

fn arrow_err(what: &str, e: ArrowError) -> Error {
    Error::invalid(format!("{what}: {e}"))
}

/// A ferry error as arrow's: the original stays reachable by downcasting.
fn to_arrow_error(e: Error) -> ArrowError {
    ArrowError::ExternalError(Box::new(e))
}

/// Moves an FFI_ArrowSchema that arrow-rs's exporter has just made into a
/// ferry `Schema`. Not validated: the schema comes from arrow-rs's own code
/// (what it describes is valid arrow), not from a foreign producer, and
/// every import of it (`from_raw`, `to_arrow`, a stream's prepared schema)
/// validates it anyway.
fn schema_from_ffi(ffi: FFI_ArrowSchema) -> Result<Schema> {
    let mut raw = sys::ArrowSchema::default();
    // SAFETY: identical layout; `ffi` is moved in and not dropped here.
    unsafe {
        ptr::write(&mut raw as *mut sys::ArrowSchema as *mut FFI_ArrowSchema, ffi);
        Schema::from_raw_unchecked(&mut raw)
    }
}

/// Moves arrow's export of an array (no schema) into the released device
/// struct `out` as a CPU array: the array is written in place and upgraded
/// by the core's in-place `ferry_device_array_init`, so nothing is copied
/// twice; on failure the array is released.
///
/// # Safety
/// `out` must point to a released, writable `ArrowDeviceArray`.
unsafe fn export_ffi_into(ffi_array: FFI_ArrowArray, out: *mut sys::ArrowDeviceArray) -> Result<()> {
    let embedded = ptr::addr_of_mut!((*out).array);
    ptr::write(embedded as *mut FFI_ArrowArray, ffi_array);
    let result = crate::error::call(|err| {
        sys::ferry_device_array_init(
            out,
            embedded,
            DeviceType::CPU.raw(),
            -1,
            ptr::null_mut(),
            None,
            ptr::null_mut(),
            err,
        )
    });
    if result.is_err() {
        sys::ferry_array_release(embedded);
    }
    result
}

/// Whether arrow-rs reads buffer contents of this type without checking
/// them in safe code (offsets, UTF-8, view lengths, dictionary keys, union
/// type ids, run ends): such arrays must pass FULL validation before they
/// become arrow arrays, whatever level was asked, or safe arrow code could
/// read out of bounds. Fixed-width layouts (primitives, booleans, decimals,
/// fixed-size binary and lists, structs of them) need only the structure.
fn needs_contents_checked(schema: &SchemaView) -> bool {
    // A walk per path never ends on a hostile schema whose children are
    // shared (2^40 paths over 41 nodes): past this many nodes, FULL decides
    // (the validator visits each node once and refuses the sharing).
    let mut budget = 4096;
    contents_checked_within(schema, &mut budget)
}

fn contents_checked_within(schema: &SchemaView, budget: &mut usize) -> bool {
    if *budget == 0 || schema.dictionary().is_some() {
        return true;
    }
    *budget -= 1;
    let f = schema.format_bytes();
    let variable = matches!(
        f,
        b"z" | b"Z" | b"u" | b"U" | b"vz" | b"vu" | b"+l" | b"+L" | b"+vl" | b"+vL" | b"+m" | b"+r"
    ) || f.starts_with(b"+u");
    variable || schema.children().any(|c| contents_checked_within(c, budget))
}

/// The level `to_arrow` runs for `schema` when `validation` was asked.
fn arrow_level(schema: &SchemaView, validation: Validation) -> Validation {
    match validation {
        Validation::Full => Validation::Full,
        _ if needs_contents_checked(schema) => Validation::Full,
        other => other,
    }
}

/// Borrows a ferry schema as arrow's FFI struct.
fn ffi_schema(schema: &SchemaView) -> &FFI_ArrowSchema {
    // SAFETY: identical layout, borrowed for as long as `schema`.
    unsafe { &*(schema.as_ptr() as *const FFI_ArrowSchema) }
}

/// Conversions from arrow-rs schemas to ferry [`Schema`]s.
pub trait ArrowSchemaExt: Sized {
    /// The schema of an arrow `Field` (name, type, nullability, metadata).
    fn from_arrow_field(field: &Field) -> Result<Self>;
    /// The schema of an arrow `DataType` (an unnamed field).
    fn from_arrow_type(data_type: &DataType) -> Result<Self>;
    /// The struct schema ("+s") of an arrow `Schema`, as streams of record
    /// batches carry it.
    fn from_arrow_schema(schema: &arrow_schema::Schema) -> Result<Self>;
}

impl ArrowSchemaExt for Schema {
    fn from_arrow_field(field: &Field) -> Result<Schema> {
        schema_from_ffi(FFI_ArrowSchema::try_from(field).map_err(|e| arrow_err("field cannot be exported", e))?)
    }
    fn from_arrow_type(data_type: &DataType) -> Result<Schema> {
        schema_from_ffi(FFI_ArrowSchema::try_from(data_type).map_err(|e| arrow_err("type cannot be exported", e))?)
    }
    fn from_arrow_schema(schema: &arrow_schema::Schema) -> Result<Schema> {
        schema_from_ffi(FFI_ArrowSchema::try_from(schema).map_err(|e| arrow_err("schema cannot be exported", e))?)
    }
}

/// Conversions from ferry schemas (any [`SchemaView`]: a [`Schema`], a
/// child, a dictionary) to arrow-rs. The schema is validated by the core
/// first; arrow's asserts on what it still refuses become errors.
pub trait ArrowSchemaViewExt {
    /// The arrow `Field` this schema describes.
    fn to_arrow_field(&self) -> Result<Field>;
    /// The arrow `DataType` this schema describes.
    fn to_arrow_type(&self) -> Result<DataType>;
    /// The arrow `Schema` of a struct schema ("+s"): its children become the
    /// fields, its metadata the schema's.
    fn to_arrow_schema(&self) -> Result<arrow_schema::Schema>;
}

impl ArrowSchemaViewExt for SchemaView {
    fn to_arrow_field(&self) -> Result<Field> {
        self.validate()?;
        guard_quiet("arrow cannot import the schema", || {
            Field::try_from(ffi_schema(self)).map_err(|e| arrow_err("arrow cannot import the schema", e))
        })
    }
    fn to_arrow_type(&self) -> Result<DataType> {
        self.validate()?;
        guard_quiet("arrow cannot import the schema", || {
            DataType::try_from(ffi_schema(self)).map_err(|e| arrow_err("arrow cannot import the schema", e))
        })
    }
    fn to_arrow_schema(&self) -> Result<arrow_schema::Schema> {
        let field = self.to_arrow_field()?;
        match field.data_type() {
            DataType::Struct(fields) => {
                Ok(arrow_schema::Schema::new(fields.clone()).with_metadata(field.metadata().clone()))
            }
            other => Err(Error::invalid(format!(
                "a record batch schema must be a struct (\"+s\"), not {other}"
            ))),
        }
    }
}

/// Conversions between ferry arrays and arrow-rs arrays and record batches.
pub trait ArrowArrayExt: Sized {
    /// Exports an arrow array as a CPU device array and its schema, without
    /// copying: the buffers stay arrow's, kept alive until the consumer's
    /// release. The array comes first, as in arrow-rs's `to_ffi`.
    fn from_arrow(array: &dyn Array) -> Result<(Self, Schema)>;
    /// Exports a record batch as a struct array ("+s") and its schema,
    /// without copying.
    fn from_record_batch(batch: &RecordBatch) -> Result<(Self, Schema)>;
    /// Imports into arrow by move, zero-copy on the CPU, validated once
    /// against `schema` at [`Validation::Default`] (the structure: format,
    /// buffer and child counts, device; no buffer read, tens of ns),
    /// raised to [`Validation::Full`] for types whose contents arrow-rs
    /// reads unchecked in safe code (offsets, UTF-8, views, dictionary
    /// keys, union type ids, run ends, at any depth): those are checked
    /// whatever was asked, so that no arrow array made here can be read out
    /// of bounds. An array on another device is brought to the host
    /// ([`DeviceArray::to_host`]: a move where the host can reach the
    /// memory, else a copy) after its structure is checked. A finding is an
    /// `EINVAL` error with the validator's message; the array is released.
    /// Import with [`DeviceArray::from_raw_unchecked`] before this, or the
    /// array is validated twice.
    fn to_arrow(self, schema: &SchemaView) -> Result<ArrayRef>;
    /// [`to_arrow`](Self::to_arrow) at an explicit level:
    /// [`Validation::Full`] also checks the contents of fixed-width arrays
    /// (null counts against the validity bitmap), [`Validation::Default`]
    /// is `to_arrow`. `Validation::None` is refused with `EINVAL`: the
    /// unchecked import is the `unsafe` [`to_arrow_unchecked`](Self::to_arrow_unchecked).
    fn to_arrow_with(self, schema: &SchemaView, validation: Validation) -> Result<ArrayRef>;
    /// [`to_arrow`](Self::to_arrow) without any validation (the array must
    /// be on the CPU, else `EINVAL`).
    ///
    /// # Safety
    /// The array must be a valid array of `schema` whose buffers are as
    /// long as its lengths and offsets say (the caller vouches for the
    /// producer, as for arrow-rs's `from_ffi`).
    unsafe fn to_arrow_unchecked(self, schema: &SchemaView) -> Result<ArrayRef>;
    /// [`to_arrow`](Self::to_arrow) of a struct array ("+s") without
    /// top-level nulls, as a record batch.
    fn to_record_batch(self, schema: &SchemaView) -> Result<RecordBatch>;
}

impl ArrowArrayExt for DeviceArray {
    fn from_arrow(array: &dyn Array) -> Result<(DeviceArray, Schema)> {
        let ffi_schema = guard_quiet("arrow cannot export the array", || {
            FFI_ArrowSchema::try_from(array.data_type()).map_err(|e| arrow_err("arrow cannot export the array", e))
        })?;
        let schema = schema_from_ffi(ffi_schema)?;
        let mut out = DeviceArray::released();
        // SAFETY: `out` is released and ours.
        unsafe { export_array_into(array, out.raw_mut())? };
        Ok((out, schema))
    }

    fn from_record_batch(batch: &RecordBatch) -> Result<(DeviceArray, Schema)> {
        let device_array = export_batch(batch)?;
        // The schema of the batch (its metadata included), not only of the
        // struct array.
        let schema = Schema::from_arrow_schema(batch.schema().as_ref())?;
        Ok((device_array, schema))
    }

    fn to_arrow(self, schema: &SchemaView) -> Result<ArrayRef> {
        self.to_arrow_with(schema, Validation::Default)
    }

    fn to_arrow_with(self, schema: &SchemaView, validation: Validation) -> Result<ArrayRef> {
        if validation == Validation::None {
            return Err(Error::invalid(
                "to_arrow_with(Validation::None) is refused: an unchecked import is the unsafe to_arrow_unchecked",
            ));
        }
        import_checked(self, schema, arrow_level(schema, validation))
    }

    unsafe fn to_arrow_unchecked(self, schema: &SchemaView) -> Result<ArrayRef> {
        if self.device_type() != DeviceType::CPU {
            return Err(Error::invalid(format!(
                "to_arrow_unchecked takes CPU arrays only (this one is on device type {}): use to_arrow",
                self.device_type()
            )));
        }
        import_validated(self, schema)
    }

    fn to_record_batch(self, schema: &SchemaView) -> Result<RecordBatch> {
        let arrow_schema = Arc::new(schema.to_arrow_schema()?);
        record_batch(self.to_arrow(schema)?, arrow_schema)
    }
}

/// A record batch exported as a struct array ("+s"), without a schema.
fn export_batch(batch: &RecordBatch) -> Result<DeviceArray> {
    let mut out = DeviceArray::released();
    // SAFETY: `out` is released and ours.
    unsafe { export_batch_into(batch, out.raw_mut())? };
    Ok(out)
}

/// Validates `array` at `level` (brought to the host first when it is on
/// another device, after a structural check: a move or copy trusts the
/// structure), then imports it.
fn import_checked(array: DeviceArray, schema: &SchemaView, level: Validation) -> Result<ArrayRef> {
    let refused = crate::array::validation_failed;
    let full = level == Validation::Full;
    let array = if array.device_type() == DeviceType::CPU {
        array.validate(schema, full).map_err(refused)?;
        array
    } else {
        array.validate(schema, false).map_err(refused)?;
        let array = array.to_host(schema)?;
        if full {
            array.validate(schema, true).map_err(refused)?;
        }
        array
    };
    import_validated(array, schema)
}

/// Moves a host-readable array, validated as its type needs, into arrow.
fn import_validated(array: DeviceArray, schema: &SchemaView) -> Result<ArrayRef> {
    let moved = take_ffi(array)?;
    let ffi_schema = ffi_schema(schema);
    // A panic inside arrow drops `moved`, which releases the array.
    guard_quiet("arrow cannot import the array", || {
        let data_type = DataType::try_from(ffi_schema).map_err(|e| arrow_err("arrow cannot import the array", e))?;
        let owner = Arc::new(moved);
        // SAFETY: a valid, validated, host-readable array of `data_type`.
        if let Some(array) = unsafe { direct(c_array(&owner), &data_type, &owner) } {
            return Ok(array);
        }
        let moved =
            Arc::try_unwrap(owner).map_err(|_| Error::invalid("arrow cannot import the array: still shared"))?;
        // SAFETY: as above.
        let data = unsafe { from_ffi_and_data_type(moved, data_type) }
            .map_err(|e| arrow_err("arrow cannot import the array", e))?;
        Ok(make_array(data))
    })
}

/// `$f::<T>($args)` for the arrow primitive type `T` of `$data_type` (the
/// flat layouts of the direct export and import, whose values every bit
/// pattern makes valid), else `$other`.
macro_rules! primitive_or {
    ($data_type:expr, $f:ident($($arg:expr),*), $other:expr) => {
        match $data_type {
            DataType::Int8 => $f::<Int8Type>($($arg),*),
            DataType::Int16 => $f::<Int16Type>($($arg),*),
            DataType::Int32 => $f::<Int32Type>($($arg),*),
            DataType::Int64 => $f::<Int64Type>($($arg),*),
            DataType::UInt8 => $f::<UInt8Type>($($arg),*),
            DataType::UInt16 => $f::<UInt16Type>($($arg),*),
            DataType::UInt32 => $f::<UInt32Type>($($arg),*),
            DataType::UInt64 => $f::<UInt64Type>($($arg),*),
            DataType::Float32 => $f::<Float32Type>($($arg),*),
            DataType::Float64 => $f::<Float64Type>($($arg),*),
            DataType::Date32 => $f::<Date32Type>($($arg),*),
            DataType::Date64 => $f::<Date64Type>($($arg),*),
            _ => $other,
        }
    };
}

// ---- Direct export -------------------------------------------------------
//
// arrow-rs's FFI_ArrowArray::new starts from ArrayData (which `to_data`
// builds for the purpose) and allocates the buffer list, the pointer list
// and the private data apart. For the flat layouts (primitives, booleans)
// ferry hands the array's own buffers to the core's `ferry_array_init`:
// one box keeps both arrow buffers alive and the core's release hook drops
// it (the release callback itself is the core's). Other layouts, and slices whose validity
// and values disagree on the offset, go through FFI_ArrowArray::new.

/// A flat array to export: validity `nulls` and `values`, both starting at
/// bit (or element) `offset` of their buffers.
struct Flat {
    length: usize,
    offset: usize,
    null_count: usize,
    validity: Option<Buffer>,
    values: Buffer,
}

impl Flat {
    fn new(length: usize, offset: usize, nulls: Option<&NullBuffer>, values: Buffer) -> Flat {
        Flat {
            length,
            offset,
            null_count: nulls.map_or(0, |n| n.null_count()),
            validity: nulls.map(|n| n.buffer().clone()),
            values,
        }
    }

    /// Fills released `out` through the core's `ferry_array_init`, whose
    /// release hook drops the one box that keeps both buffers alive. On
    /// failure `out` stays released and the buffers are dropped.
    ///
    /// # Safety
    /// `out` must point to a released, writable `ArrowArray`.
    #[inline]
    unsafe fn fill(self, out: *mut sys::ArrowArray) -> Result<()> {
        let Flat {
            length,
            offset,
            null_count,
            validity,
            values,
        } = self;
        let pointers = [
            validity.as_ref().map_or(ptr::null(), |b| b.as_ptr() as *const c_void),
            values.as_ptr() as *const c_void,
        ];
        let (hook, owner) = Owner::new(Box::new((validity, values))).into_raw();
        let (length, offset, null_count) = (length as i64, offset as i64, null_count as i64);
        let result = crate::error::call(|err| {
            sys::ferry_array_init(
                out,
                length,
                null_count,
                offset,
                2,
                pointers.as_ptr(),
                0,
                Some(hook),
                owner,
                err,
            )
        });
        if result.is_err() {
            // The core did not take the owner.
            hook(owner);
        }
        result
    }
}

fn flat_primitive<T: ArrowPrimitiveType>(array: &dyn Array) -> Option<Flat> {
    let array = array.as_any().downcast_ref::<PrimitiveArray<T>>()?;
    // The values are already sliced (offset 0); the validity must be too.
    if array.nulls().is_some_and(|n| n.offset() != 0) {
        return None;
    }
    Some(Flat::new(array.len(), 0, array.nulls(), array.values().inner().clone()))
}

/// The flat export of `array`, or None where FFI_ArrowArray::new must do it.
#[inline]
fn export_flat(array: &dyn Array) -> Option<Flat> {
    primitive_or!(
        array.data_type(),
        flat_primitive(array),
        match array.data_type() {
            DataType::Boolean => {
                let array = array.as_any().downcast_ref::<BooleanArray>()?;
                let values = array.values();
                let offset = values.offset();
                if array.nulls().is_some_and(|n| n.offset() != offset) {
                    return None;
                }
                Some(Flat::new(array.len(), offset, array.nulls(), values.inner().clone()))
            }
            _ => None,
        }
    )
}

/// Exports `array` into released `out` as a CPU array: flat through the
/// core's `ferry_array_init`, anything else through FFI_ArrowArray::new.
///
/// # Safety
/// `out` must point to a released, writable `ArrowDeviceArray`.
unsafe fn export_array_into(array: &dyn Array, out: *mut sys::ArrowDeviceArray) -> Result<()> {
    if let Some(flat) = export_flat(array) {
        flat.fill(ptr::addr_of_mut!((*out).array))?;
        write_device_fields(out, DeviceType::CPU.raw(), -1, ptr::null_mut());
        return Ok(());
    }
    let data = array.to_data();
    let ffi_array = guard_quiet("arrow cannot export the array", || Ok(FFI_ArrowArray::new(&data)))?;
    export_ffi_into(ffi_array, out)
}

/// Exports a record batch into released `out` as a struct array ("+s", no
/// nulls, no schema). When every column is flat, the core's
/// `ferry_array_init` makes the parent and each column is a child of its
/// own (a consumer may move one out and release it apart, as the
/// specification allows); else arrow's export of the batch, as arrow-rs's
/// own stream exporter hands it out.
///
/// # Safety
/// `out` must point to a released, writable `ArrowDeviceArray`.
unsafe fn export_batch_into(batch: &RecordBatch, out: *mut sys::ArrowDeviceArray) -> Result<()> {
    let parent = ptr::addr_of_mut!((*out).array);
    let columns = batch.columns();
    let no_buffer = [ptr::null::<c_void>()];
    crate::error::call(|err| {
        let (rows, n) = (batch.num_rows() as i64, columns.len() as i64);
        sys::ferry_array_init(parent, rows, 0, 0, 1, no_buffer.as_ptr(), n, None, ptr::null_mut(), err)
    })?;
    for (i, column) in columns.iter().enumerate() {
        let Some(child) = export_flat(column.as_ref()) else {
            sys::ferry_array_release(parent);
            let ffi_array = guard_quiet("arrow cannot export the batch", || {
                Ok(FFI_ArrowArray::new(&StructArray::from(batch.clone()).into_data()))
            })?;
            return export_ffi_into(ffi_array, out);
        };
        // On failure the child is left released, which the parent's release skips.
        if let Err(e) = child.fill(sys::ferry_array_child(parent, i as i64)) {
            sys::ferry_array_release(parent);
            return Err(e);
        }
    }
    write_device_fields(out, DeviceType::CPU.raw(), -1, ptr::null_mut());
    Ok(())
}

// ---- Direct import -------------------------------------------------------
//
// arrow-rs's from_ffi goes through ArrayData (a builder, vectors of buffers
// and children, a layout table, a realignment pass) and then make_array. For
// the layouts whose buffers are plain values (primitives, booleans, structs
// of them) ferry builds the arrow arrays straight from the C struct instead,
// after its own validation: each buffer is a view of the C memory kept alive
// by one shared owner (the C array, released when arrow drops the last
// buffer), as from_ffi's are. Any other layout, a NULL or unaligned buffer,
// or a shape arrow would refuse, answers None and the caller falls back to
// from_ffi, which handles (or reports) it.

/// The C struct inside arrow's FFI struct (identical layouts).
fn c_array(owner: &Arc<FFI_ArrowArray>) -> &sys::ArrowArray {
    // SAFETY: identical #[repr(C)] layouts; borrowed for as long as `owner`.
    unsafe { &*(Arc::as_ptr(owner) as *const sys::ArrowArray) }
}

/// A view of `bytes` bytes of C memory at `ptr`, owned by `owner`; None
/// for NULL or a pointer not aligned to `align`.
///
/// # Safety
/// `ptr` must point to at least `bytes` readable bytes that live as long
/// as `owner`.
unsafe fn c_buffer(
    ptr: *const std::os::raw::c_void,
    bytes: usize,
    align: usize,
    owner: &Arc<FFI_ArrowArray>,
) -> Option<Buffer> {
    if ptr.is_null() || (ptr as usize) % align != 0 {
        return None;
    }
    Some(Buffer::from_custom_allocation(
        NonNull::new_unchecked(ptr as *mut u8),
        bytes,
        owner.clone(),
    ))
}

/// The validity of `raw` (buffer 0): Some(None) when nothing is null.
/// The producer's null count is taken as given, as from_ffi takes it (FULL
/// validation checks it); -1 (unknown) is counted.
unsafe fn c_nulls(raw: &sys::ArrowArray, owner: &Arc<FFI_ArrowArray>) -> Option<Option<NullBuffer>> {
    if raw.null_count == 0 {
        return Some(None);
    }
    let (offset, length) = (raw.offset as usize, raw.length as usize);
    let bitmap = c_buffer(*raw.buffers, offset.checked_add(length)?.div_ceil(8), 1, owner)?;
    let bits = BooleanBuffer::new(bitmap, offset, length);
    Some(Some(if raw.null_count > 0 {
        NullBuffer::new_unchecked(bits, raw.null_count as usize)
    } else {
        NullBuffer::new(bits)
    }))
}

/// A primitive array of `T` over `raw`'s validity and values.
unsafe fn c_primitive<T: ArrowPrimitiveType>(raw: &sys::ArrowArray, owner: &Arc<FFI_ArrowArray>) -> Option<ArrayRef> {
    if raw.n_buffers != 2 {
        return None;
    }
    let nulls = c_nulls(raw, owner)?;
    let (offset, length) = (raw.offset as usize, raw.length as usize);
    let size = std::mem::size_of::<T::Native>();
    let values = c_buffer(
        *raw.buffers.add(1),
        offset.checked_add(length)?.checked_mul(size)?,
        std::mem::align_of::<T::Native>(),
        owner,
    )?;
    let values = ScalarBuffer::<T::Native>::new(values, offset, length);
    Some(Arc::new(PrimitiveArray::<T>::try_new(values, nulls).ok()?))
}

/// The arrow array of `raw` (a validated, host-readable array of
/// `data_type`, borrowed from `owner`), or None where from_ffi must do it.
unsafe fn direct(raw: &sys::ArrowArray, data_type: &DataType, owner: &Arc<FFI_ArrowArray>) -> Option<ArrayRef> {
    if raw.length < 0 || raw.offset < 0 || raw.length == 0 || !raw.dictionary.is_null() || raw.buffers.is_null() {
        return None;
    }
    primitive_or!(
        data_type,
        c_primitive(raw, owner),
        match data_type {
            DataType::Boolean => {
                if raw.n_buffers != 2 {
                    return None;
                }
                let nulls = c_nulls(raw, owner)?;
                let (offset, length) = (raw.offset as usize, raw.length as usize);
                let values = c_buffer(*raw.buffers.add(1), offset.checked_add(length)?.div_ceil(8), 1, owner)?;
                Some(Arc::new(BooleanArray::new(
                    BooleanBuffer::new(values, offset, length),
                    nulls,
                )))
            }
            DataType::Struct(fields) => Some(Arc::new(c_struct(raw, fields, owner)?)),
            _ => None,
        }
    )
}

/// The struct array of `raw` (see [`direct`]), its children sliced by its
/// offset as from_ffi slices them.
unsafe fn c_struct(raw: &sys::ArrowArray, fields: &Fields, owner: &Arc<FFI_ArrowArray>) -> Option<StructArray> {
    if raw.n_buffers != 1 || raw.n_children as usize != fields.len() || raw.children.is_null() {
        return None;
    }
    let nulls = c_nulls(raw, owner)?;
    let (offset, length) = (raw.offset as usize, raw.length as usize);
    let mut columns = Vec::with_capacity(fields.len());
    for (i, field) in fields.iter().enumerate() {
        let child = *raw.children.add(i);
        if child.is_null() {
            return None;
        }
        let column = direct(&*child, field.data_type(), owner)?;
        let column = match column.len() {
            n if n == length && offset == 0 => column,
            n if offset.checked_add(length).is_some_and(|end| n >= end) => column.slice(offset, length),
            _ => return None,
        };
        columns.push(column);
    }
    StructArray::try_new(fields.clone(), columns, nulls).ok()
}

/// The embedded C array of `array`, moved into arrow's struct.
fn take_ffi(mut array: DeviceArray) -> Result<FFI_ArrowArray> {
    let mut moved = FFI_ArrowArray::empty();
    // SAFETY: the embedded ArrowArray moves into arrow's struct through
    // the core's move (which leaves ours released); the schema is only
    // borrowed.
    unsafe {
        let embedded = sys::ferry_device_array_array(array.as_mut_ptr());
        if sys::ferry_array_move(embedded, &mut moved as *mut FFI_ArrowArray as *mut sys::ArrowArray) != 0 {
            return Err(Error::invalid("cannot import a released array into arrow"));
        }
    }
    Ok(moved)
}

/// The record batch of an imported struct array, under `schema`.
fn record_batch(array: ArrayRef, schema: SchemaRef) -> Result<RecordBatch> {
    let structs = array
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| Error::invalid("a record batch must be a struct array"))?;
    struct_batch(structs.clone(), schema)
}

/// The record batch of a struct array without null rows, under `schema`.
fn struct_batch(structs: StructArray, schema: SchemaRef) -> Result<RecordBatch> {
    let rows = structs.len();
    if structs.null_count() > 0 {
        return Err(Error::invalid(format!(
            "a record batch cannot have null rows ({} of {rows} are null)",
            structs.null_count()
        )));
    }
    let (_, columns, _) = structs.into_parts();
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, columns, &options).map_err(|e| arrow_err("invalid record batch", e))
}

/// A ferry stream of struct batches read as an arrow-rs
/// `RecordBatchReader` (from [`ArrowStreamExt::into_arrow_reader`]). Each
/// batch is imported as [`ArrowArrayExt::to_arrow`] does (validated, brought
/// to the host). A failure (the stream's or a batch's import) comes as an
/// `ArrowError::ExternalError` holding the ferry [`Error`]; after it the
/// producer is never called again and every later `next` returns that same
/// error (the binding contract, as [`DeviceArrayStream`] does): stop at the
/// first error (`?`, `collect::<Result<Vec<_>, _>>()`). The end stays the
/// end. The stream is released when the reader is dropped.
pub struct ArrowReader {
    stream: DeviceArrayStream,
    ferry_schema: Schema,
    schema: SchemaRef,
    /// The struct type of the batches, made once (not parsed per batch).
    data_type: DataType,
    /// The first failure, reported again on every later call.
    failed: Option<Error>,
}

impl ArrowReader {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let Some(batch) = self.stream.next_array()? else {
            return Ok(None);
        };
        // The stream has validated the batch (against its schema, prepared
        // once) at the level into_arrow_reader set.
        let batch = if batch.device_type() == DeviceType::CPU {
            batch
        } else {
            if self.stream.validation() == Validation::None {
                // A move or copy trusts the structure.
                batch
                    .validate(&self.ferry_schema, false)
                    .map_err(crate::array::validation_failed)?;
            }
            batch.to_host(&self.ferry_schema)?
        };
        let moved = take_ffi(batch)?;
        let data_type = &self.data_type;
        let schema = &self.schema;
        guard_quiet("arrow cannot import the batch", || {
            let owner = Arc::new(moved);
            if let DataType::Struct(fields) = data_type {
                // SAFETY: a valid, validated, host-readable struct array of
                // `data_type` (the stream's schema, as arrow reads it).
                if let Some(structs) = unsafe { c_struct(c_array(&owner), fields, &owner) } {
                    return struct_batch(structs, schema.clone()).map(Some);
                }
            }
            let moved =
                Arc::try_unwrap(owner).map_err(|_| Error::invalid("arrow cannot import the batch: still shared"))?;
            // SAFETY: as above.
            let data = unsafe { from_ffi_and_data_type(moved, data_type.clone()) }
                .map_err(|e| arrow_err("arrow cannot import the batch", e))?;
            struct_batch(StructArray::from(data), schema.clone()).map(Some)
        })
    }
}

impl Iterator for ArrowReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = &self.failed {
            return Some(Err(to_arrow_error(e.clone())));
        }
        // The end is kept by the stream (it does not call the producer
        // again either).
        match self.next_batch() {
            Ok(Some(batch)) => Some(Ok(batch)),
            Ok(None) => None,
            Err(e) => {
                self.failed = Some(e.clone());
                Some(Err(to_arrow_error(e)))
            }
        }
    }
}

impl RecordBatchReader for ArrowReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl fmt::Debug for ArrowReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArrowReader")
            .field("schema", &self.schema)
            .field("failed", &self.failed)
            .finish()
    }
}

/// An arrow-rs reader behind a ferry stream.
struct ReaderProducer<R> {
    reader: R,
    schema: Schema,
}

impl<R> ArrayProducer for ReaderProducer<R>
where
    R: RecordBatchReader + Send + 'static,
{
    fn schema(&mut self) -> Result<Schema> {
        self.schema.to_owned_schema()
    }
    fn next(&mut self) -> Result<Option<DeviceArray>> {
        DeviceArray::produce(|slot| self.next_into(slot))
    }
    fn next_into(&mut self, slot: &mut ArraySlot<'_>) -> Result<()> {
        match self.reader.next() {
            None => Ok(()),
            Some(Err(e)) => Err(Error::io(format!("the arrow reader failed: {e}"))),
            // Only the array: the stream's schema was made once, in
            // from_arrow_reader. Built in the consumer's struct.
            // SAFETY: the slot is released and lent to us for this call.
            Some(Ok(_)) if slot.is_filled() => Err(Error::invalid("the slot already holds a batch")),
            Some(Ok(batch)) => unsafe { export_batch_into(&batch, slot.as_mut_ptr()) },
        }
    }
}

/// Bridges between ferry streams and arrow-rs `RecordBatchReader`s.
pub trait ArrowStreamExt: Sized {
    /// A CPU stream yielding the reader's schema (as a struct, "+s") and
    /// each of its batches, exported without copying. The reader is
    /// dropped when the consumer releases the stream; its errors reach the
    /// consumer as `EIO` with arrow's message.
    fn from_arrow_reader<R: RecordBatchReader + Send + 'static>(reader: R) -> Result<Self>;
    /// Reads the stream as an arrow-rs `RecordBatchReader` ([`ArrowReader`]):
    /// gets the schema now (a struct schema, else `EINVAL`).
    fn into_arrow_reader(self) -> Result<ArrowReader>;
}

impl ArrowStreamExt for DeviceArrayStream {
    fn from_arrow_reader<R: RecordBatchReader + Send + 'static>(reader: R) -> Result<DeviceArrayStream> {
        let schema = Schema::from_arrow_schema(reader.schema().as_ref())?;
        DeviceArrayStream::from_producer(DeviceType::CPU, ReaderProducer { reader, schema })
    }

    fn into_arrow_reader(mut self) -> Result<ArrowReader> {
        // The level first: schema() prepares the schema once for it.
        let ferry_schema = self.schema()?;
        let level = arrow_level(&ferry_schema, self.validation());
        self.set_validation(level);
        let schema = Arc::new(ferry_schema.to_arrow_schema()?);
        let data_type = DataType::Struct(schema.fields().clone());
        Ok(ArrowReader {
            stream: self,
            ferry_schema,
            schema,
            data_type,
            failed: None,
        })
    }
}
