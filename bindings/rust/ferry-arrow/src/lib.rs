//! # ferry-arrow: zero-copy Arrow device arrays and streams across runtimes
//!
//! The safe Rust binding of `libferry`, the C core that hands Arrow C Device
//! Data Interface structs (`ArrowDeviceArray`, `ArrowDeviceArrayStream`)
//! between runtimes in one process without copying, on the CPU, CUDA, ROCm
//! or ferry's simulated device.
//!
//! - [`DeviceArray`], [`Schema`] and [`DeviceArrayStream`] own their C
//!   structs and release them exactly once, on drop; none is `Clone`.
//!   `from_raw` imports by move and validates (the array against its
//!   schema, the array first: `DeviceArray::from_raw(array, &schema)`;
//!   each stream batch against the stream's prepared schema) at
//!   [`Validation::Default`]; `from_raw_unchecked` is the explicit opt-out.
//!   `export_to` hands over by move. Exports return `(array, schema)`.
//! - Threads: arrays and schemas are `Send + Sync` (read from many threads;
//!   release needs ownership); streams are `Send`, not `Sync` (`&mut self`
//!   per read). After a stream error every later read returns that same
//!   error and the producer is not called again.
//! - `FERRY_LEAK_REPORT=1`: every live import is named in the core's report
//!   at exit.
//! - Reading: [`DeviceArray::host`] gives a [`HostArray`] whose accessors
//!   (`values`, `value`, `is_valid`, `str`, `list_range`, `child`, ...)
//!   check every index and byte against the array's declared sizes;
//!   [`DeviceArray::to_host`] brings an array on any device to the CPU
//!   (moved where reachable, else copied); [`DeviceArray::validate`] runs
//!   the core's validator.
//! - [`ArrayBuilder`] and [`Buffer`] export Rust memory (`Vec`, boxed
//!   slices, `Arc`s, device buffers) without copying; the owners are dropped
//!   when the consumer releases the array.
//! - [`DeviceArrayStream::from_iter`] / [`from_producer`](DeviceArrayStream::from_producer)
//!   export any iterator as a stream; [`DeviceArrayStream`] is itself an
//!   `Iterator<Item = Result<DeviceArray>>`. Plain `ArrowArrayStream`s (the
//!   C stream interface, CPU data) come in with
//!   [`from_c_stream`](DeviceArrayStream::from_c_stream) and go out with
//!   [`export_to_c_stream`](DeviceArrayStream::export_to_c_stream).
//! - GPUs: [`Device`] allocates, copies, makes [`DeviceStream`]s and
//!   [`Event`]s; [`StreamHandle`] / [`EventHandle`] wrap the user's own
//!   CUDA/HIP stream or event; [`DeviceArray::wait_on`] and
//!   [`DeviceArrayStream::next_on`] hand arrays and batches to a consumer
//!   stream; [`DeviceArray::move_to`] / [`copy_to`](DeviceArray::copy_to)
//!   cross devices; [`DeviceArray::to_dlpack`] / [`from_dlpack`](DeviceArray::from_dlpack)
//!   speak DLPack 1.x.
//! - Hot paths fill the consumer's struct in place instead of moving a
//!   144-byte [`DeviceArray`]: [`ArrayBuilder::build_into`], iterators of
//!   [`ArrayBuilder`]s as streams, [`ArrayProducer::next_into`] with an
//!   [`ArraySlot`], and [`DeviceArrayStream::next_ref`] on the consuming
//!   side.
//! - Async device streams (the specification's push interface):
//!   [`AsyncDeviceStream`] hands a handler to any producer and reads its
//!   batches as a blocking `Iterator` (and, feature `futures`, a
//!   `futures::Stream`); [`DeviceArrayStream::export_async`] pushes any
//!   stream (so any iterator) into any consumer's handler, and
//!   `export_async_stream` (feature `futures`) any `futures::Stream`.
//! - Errors are [`Error`] (errno code + message). No panic crosses a C
//!   boundary: every callback ferry calls into Rust runs inside [`guard`].
//! - arrow-rs: features `arrow-57` ... `arrow-60` (`arrow` = the newest, as
//!   the module `ferry_arrow::arrow`): arrays, record batches, schemas and
//!   `RecordBatchReader` streams both ways; imports are validated first.
//!
//! ```
//! use ferry_arrow::{ArrayBuilder, Buffer, DeviceArray, Schema};
//!
//! // Export a Vec without copying it...
//! let values = vec![1i32, 2, 3, 4];
//! let address = values.as_ptr();
//! let array = ArrayBuilder::new(4)
//!     .buffer(Buffer::null())
//!     .buffer(Buffer::from_vec(values))
//!     .build()
//!     .unwrap();
//! let schema = Schema::new("i", Some("x")).unwrap();
//!
//! // ...hand it to a consumer through the C struct (here, ourselves),
//! // which validates it against its schema on import...
//! let mut c_struct = ferry_arrow::sys::ArrowDeviceArray::default();
//! unsafe { array.export_to(&mut c_struct).unwrap() };
//! let imported = unsafe { DeviceArray::from_raw(&mut c_struct, &schema).unwrap() };
//!
//! // ...which reads the very same memory, checked.
//! let host = imported.host(&schema).unwrap();
//! assert_eq!(host.values::<i32>().unwrap(), &[1, 2, 3, 4]);
//! assert_eq!(host.values::<i32>().unwrap().as_ptr(), address);
//! assert!(host.value::<i32>(4).is_err()); // out of range: an error, not a read
//! drop(imported); // releases once: the Vec is freed here
//! ```
#![warn(missing_docs)]

pub use ferry_arrow_sys as sys;

mod array;
mod async_stream;
mod builder;
mod device;
mod dlpack;
mod error;
mod host;
mod leak;
mod panic;
mod schema;
mod stream;
mod words;

#[cfg(any(
    feature = "arrow-57",
    feature = "arrow-58",
    feature = "arrow-59",
    feature = "arrow-60"
))]
mod arrow_rs;

#[cfg(feature = "arrow-57")]
pub use arrow_rs::arrow57;
#[cfg(feature = "arrow-58")]
pub use arrow_rs::arrow58;
#[cfg(feature = "arrow-59")]
pub use arrow_rs::arrow59;
#[cfg(feature = "arrow-60")]
pub use arrow_rs::arrow60;
/// Conversions to and from the newest supported arrow-rs release (feature
/// `arrow`; the same module as `arrow60`).
#[cfg(feature = "arrow")]
pub use arrow_rs::arrow60 as arrow;

pub use array::{ArrayAndSchema, ArrayView, DeviceArray, Validation};
#[cfg(feature = "futures")]
pub use async_stream::export_async_stream;
pub use async_stream::AsyncDeviceStream;
pub use builder::{export_primitive, export_utf8, validity_bitmap, ArrayBuilder, Buffer, ExportPolicy, NativeType};
pub use device::{Device, DeviceBuffer, DeviceStream, DeviceType, Event, EventHandle, StreamHandle};
pub use dlpack::DlpackTensor;
pub use error::{errno, errno_name, write_error, Error, Rejected, Result};
pub use host::HostArray;
pub use panic::guard;
pub use schema::{Schema, SchemaBuilder, SchemaView, FLAG_DICTIONARY_ORDERED, FLAG_MAP_KEYS_SORTED, FLAG_NULLABLE};
pub use stream::{ArrayProducer, ArraySlot, CStreamFlags, DeviceArrayStream, ExportArray};

/// Number of simulated devices (ids 0 .. `SIM_DEVICE_COUNT - 1`).
pub const SIM_DEVICE_COUNT: i64 = sys::FERRY_SIM_DEVICE_COUNT as i64;

/// The version of the loaded `libferry` ("0.1.0").
///
/// ```
/// assert!(!ferry_arrow::version().is_empty());
/// ```
pub fn version() -> &'static str {
    unsafe { schema::opt_str(sys::ferry_version()) }.unwrap_or("")
}

/// Checks that the loaded library speaks the ABI these bindings were
/// generated for; `EINVAL` naming both versions otherwise.
///
/// ```
/// ferry_arrow::check_abi().unwrap();
/// ```
pub fn check_abi() -> Result<()> {
    error::call(|err| unsafe { sys::ferry_check_abi_version(sys::FERRY_ABI_VERSION, err) })
}

/// Schemas, arrays and streams made by the core's producer helpers and not
/// yet released, process-wide.
///
/// ```
/// let before = ferry_arrow::live_exports();
/// let exported = ferry_arrow::export_primitive(vec![1u8], None).unwrap();
/// assert!(ferry_arrow::live_exports() > before);
/// drop(exported);
/// assert_eq!(ferry_arrow::live_exports(), before);
/// ```
pub fn live_exports() -> i64 {
    unsafe { sys::ferry_live_exports() }
}

/// Turns the simulated device's strict mode on or off (process-wide).
///
/// ```
/// let was = ferry_arrow::sim_is_strict();
/// ferry_arrow::sim_set_strict(true);
/// assert!(ferry_arrow::sim_is_strict());
/// ferry_arrow::sim_set_strict(was);
/// ```
pub fn sim_set_strict(strict: bool) {
    unsafe { sys::ferry_sim_set_strict(strict as i32) }
}

/// True when the simulated device is in strict mode.
///
/// ```
/// let _strict: bool = ferry_arrow::sim_is_strict();
/// ```
pub fn sim_is_strict() -> bool {
    unsafe { sys::ferry_sim_is_strict() != 0 }
}
