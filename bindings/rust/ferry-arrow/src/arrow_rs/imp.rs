// The conversions between ferry and one arrow-rs release, included by
// arrow_rs/mod.rs into that release's module, where `arrow_array` and
// `arrow_schema` name its crates. CPU data crosses without a copy: arrow's
// `FFI_ArrowArray` / `FFI_ArrowSchema` are `#[repr(C)]` mirrors of the same
// Arrow C structs as `ferry_arrow::sys::ArrowArray` / `ArrowSchema` (the
// size assertions below check it), so values move between them bitwise.

use std::fmt;
use std::ptr;
use std::sync::Arc;

use arrow_array::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{make_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, RecordBatchReader, StructArray};
use arrow_schema::{ArrowError, DataType, Field, SchemaRef};

use crate::panic::guard_quiet;
use crate::sys;
use crate::{ArrayProducer, DeviceArray, DeviceArrayStream, DeviceType, Error, Result, Schema, SchemaView};

const _: () = assert!(std::mem::size_of::<FFI_ArrowArray>() == std::mem::size_of::<sys::ArrowArray>());
const _: () = assert!(std::mem::size_of::<FFI_ArrowSchema>() == std::mem::size_of::<sys::ArrowSchema>());

fn arrow_err(what: &str, e: ArrowError) -> Error {
    Error::invalid(format!("{what}: {e}"))
}

/// A ferry error as arrow's: the original stays reachable by downcasting.
fn to_arrow_error(e: Error) -> ArrowError {
    ArrowError::ExternalError(Box::new(e))
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
    /// Imports into arrow by move, zero-copy on the CPU. First the
    /// structure is validated against `schema`; an array on another device
    /// is brought to the host ([`DeviceArray::to_host`]: a move where the
    /// host can reach the memory, else a copy); then the core's FULL
    /// validation runs, because arrow-rs trusts offsets, UTF-8 and
    /// dictionary indices. A finding is an `EINVAL` error with the
    /// validator's message; the array is released.
    fn to_arrow(self, schema: &SchemaView) -> Result<ArrayRef>;
    /// [`to_arrow`](Self::to_arrow) of a struct array ("+s") without
    /// top-level nulls, as a record batch.
    fn to_record_batch(self, schema: &SchemaView) -> Result<RecordBatch>;
}

impl ArrowArrayExt for DeviceArray {
    fn from_arrow(array: &dyn Array) -> Result<(DeviceArray, Schema)> {
        let (ffi_array, ffi_schema) =
            guard_quiet("arrow cannot export the array", || {
                to_ffi(&array.to_data()).map_err(|e| arrow_err("arrow cannot export the array", e))
            })?;
        let schema = schema_from_ffi(ffi_schema)?;
        let mut raw = sys::ArrowArray::default();
        // SAFETY: identical layout; `ffi_array` is moved in.
        unsafe { ptr::write(&mut raw as *mut sys::ArrowArray as *mut FFI_ArrowArray, ffi_array) };
        let mut out = DeviceArray::released();
        let result = crate::error::call(|err| unsafe {
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
        Ok((out, schema))
    }

    fn from_record_batch(batch: &RecordBatch) -> Result<(DeviceArray, Schema)> {
        let array = StructArray::from(batch.clone());
        let (device_array, _) = DeviceArray::from_arrow(&array)?;
        // The schema of the batch (its metadata included), not only of the
        // struct array.
        let schema = Schema::from_arrow_schema(batch.schema().as_ref())?;
        Ok((device_array, schema))
    }

    fn to_arrow(self, schema: &SchemaView) -> Result<ArrayRef> {
        let refused = crate::array::validation_failed;
        let mut array = if self.device_type() == DeviceType::CPU {
            self
        } else {
            // The structure first: a move or copy trusts it.
            self.validate(schema, false).map_err(refused)?;
            self.to_host(schema)?
        };
        array.validate(schema, true).map_err(refused)?;
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
        let ffi_schema = ffi_schema(schema);
        // A panic inside arrow drops `moved`, which releases the array.
        guard_quiet("arrow cannot import the array", || {
            // SAFETY: a valid, validated, host-readable array and its schema.
            let data = unsafe { from_ffi(moved, ffi_schema) }.map_err(|e| arrow_err("arrow cannot import the array", e))?;
            Ok(make_array(data))
        })
    }

    fn to_record_batch(self, schema: &SchemaView) -> Result<RecordBatch> {
        let arrow_schema = Arc::new(schema.to_arrow_schema()?);
        record_batch(self.to_arrow(schema)?, arrow_schema)
    }
}

/// The record batch of an imported struct array, under `schema`.
fn record_batch(array: ArrayRef, schema: SchemaRef) -> Result<RecordBatch> {
    let rows = array.len();
    let structs = array
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| Error::invalid("a record batch must be a struct array"))?;
    if structs.null_count() > 0 {
        return Err(Error::invalid(format!(
            "a record batch cannot have null rows ({} of {rows} are null)",
            structs.null_count()
        )));
    }
    let columns = structs.columns().to_vec();
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
    /// The first failure, reported again on every later call.
    failed: Option<Error>,
}

impl ArrowReader {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match self.stream.next_array()? {
            None => Ok(None),
            Some(batch) => {
                let array = batch.to_arrow(&self.ferry_schema)?;
                record_batch(array, self.schema.clone()).map(Some)
            }
        }
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
        match self.reader.next() {
            None => Ok(None),
            Some(Err(e)) => Err(Error::io(format!("the arrow reader failed: {e}"))),
            Some(Ok(batch)) => DeviceArray::from_record_batch(&batch).map(|(array, _)| Some(array)),
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
        let ferry_schema = self.schema()?;
        let schema = Arc::new(ferry_schema.to_arrow_schema()?);
        Ok(ArrowReader {
            stream: self,
            ferry_schema,
            schema,
            failed: None,
        })
    }
}
